// The cuda backend of a build with CUDA: libtessera_cuda.so, beside this library, loaded the first time
// the backend is asked for, and only where an NVIDIA driver is present. Its CUDA libraries (cuBLASLt alone)
// put about 190 MB in the resident memory of every process that maps them, GPU or not; a worker's memory
// limit counts that.
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "backends/device_queue.hpp"
#include "backends/dispatch.hpp"

namespace tessera::backends {
namespace {

struct CudaModule {
  void (*register_kernels)(Dispatch*) = nullptr;
  int (*device_count)() = nullptr;
  void (*make_device_queues)(int, int, std::vector<std::shared_ptr<DeviceQueue>>*) = nullptr;
  std::string unavailable;  // why, when the module is not loaded
};

// A Linux driver's control device, its /proc entry, or WSL's GPU paravirtualization device.
bool nvidia_driver_present() {
  for (const char* path : {"/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/dxg"})
    if (::access(path, F_OK) == 0) return true;
  return false;
}

CudaModule load() {
  CudaModule module;
  if (!nvidia_driver_present()) {
    module.unavailable =
        "no NVIDIA driver on this machine (none of /dev/nvidiactl, /proc/driver/nvidia/version, /dev/dxg)";
    return module;
  }
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&register_cuda_kernels), &self) == 0 || self.dli_fname == nullptr) {
    module.unavailable = "cannot tell where libtessera_backends is, to load libtessera_cuda.so beside it";
    return module;
  }
  const auto path = std::filesystem::path(self.dli_fname).parent_path() / "libtessera_cuda.so";
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    module.unavailable = "cannot load " + path.string() + ": " + (error ? error : "unknown error");
    return module;
  }
  module.register_kernels =
      reinterpret_cast<void (*)(Dispatch*)>(::dlsym(handle, "tessera_cuda_register_kernels"));
  module.device_count = reinterpret_cast<int (*)()>(::dlsym(handle, "tessera_cuda_device_count"));
  module.make_device_queues =
      reinterpret_cast<void (*)(int, int, std::vector<std::shared_ptr<DeviceQueue>>*)>(
          ::dlsym(handle, "tessera_cuda_make_device_queues"));
  if (!module.register_kernels || !module.device_count || !module.make_device_queues) {
    module = CudaModule{};
    module.unavailable = path.string() + " lacks the tessera_cuda_* entry points (another build's?)";
  }
  return module;  // the handle stays open for the process's life
}

const CudaModule& cuda_module() {
  static const CudaModule module = load();
  return module;
}

}  // namespace

void register_cuda_kernels(Dispatch& dispatch) {
  const auto& module = cuda_module();
  if (!module.register_kernels) {
    dispatch.set_availability(Backend::cuda, {false, module.unavailable});
    return;
  }
  module.register_kernels(&dispatch);
}

int device_count() {
  const auto& module = cuda_module();
  return module.device_count ? module.device_count() : 0;
}

std::vector<std::shared_ptr<DeviceQueue>> make_device_queues(int device, int streams) {
  std::vector<std::shared_ptr<DeviceQueue>> queues;
  if (const auto& module = cuda_module(); module.make_device_queues)
    module.make_device_queues(device, streams, &queues);
  return queues;
}

}  // namespace tessera::backends
