// The cuda backend against the cpu backend on the same values: every operation of the dispatch table, in
// both element types, then TSQR, the SVD, the randomized SVD and least squares. In an embedded cluster the
// cuda tasks go through each worker's GPU device actor. Without a GPU every test skips, saying why.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <tessera/array.hpp>
#include <tessera/glm.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

#include "backends/device_queue.hpp"
#include "backends/dispatch.hpp"

namespace {

using tessera::Array;
using tessera::ArrayOptions;
namespace linalg = tessera::linalg;

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto cuda = tessera::backends::Dispatch::global().availability(tessera::backends::Backend::cuda);
    if (!cuda.available) GTEST_SKIP() << "cuda backend unavailable: " << cuda.reason;
    cluster = std::make_unique<tessera::LocalCluster>(
        tessera::ClusterOptions{.workers = 2, .threads_per_worker = 2});
    client = std::make_unique<tessera::Client>(*cluster);
  }

  Array random(std::vector<std::int64_t> shape, std::vector<std::int64_t> chunks, std::uint64_t seed,
               const std::string& dtype = "float64") {
    ArrayOptions o;
    o.chunks = std::move(chunks);
    o.seed = seed;
    o.distribution = "normal";
    o.dtype = dtype;
    return Array::random(shape, o);
  }

  // x on cpu and x moved to cuda give the same values through `f`.
  template <class F>
  void expect_same(const Array& x, F&& f, double tolerance = 1e-12) {
    const Eigen::MatrixXd on_cpu = f(x).compute(*client);
    const Array on_device = f(x.to_backend("cuda"));
    EXPECT_EQ(on_device.meta().backend, tessera::backends::Backend::cuda);
    const Eigen::MatrixXd on_cuda = on_device.compute(*client);
    ASSERT_EQ(on_cuda.rows(), on_cpu.rows());
    ASSERT_EQ(on_cuda.cols(), on_cpu.cols());
    const double scale = std::max(1.0, on_cpu.cwiseAbs().maxCoeff());
    EXPECT_LE((on_cuda - on_cpu).cwiseAbs().maxCoeff(), tolerance * scale);
  }

  std::unique_ptr<tessera::LocalCluster> cluster;
  std::unique_ptr<tessera::Client> client;
};

TEST_F(CudaTest, TheProcessHasGpuQueuesForTheDeviceActors) {
  EXPECT_GT(tessera::backends::device_count(), 0);
  EXPECT_EQ(tessera::backends::make_device_queues(0, 2).size(), 2u);
}

TEST_F(CudaTest, RandomArraysHoldTheCpuValues) {
  ArrayOptions o;
  o.chunks = {30, 7};
  o.seed = 9;
  const Eigen::MatrixXd cpu = Array::random({100, 20}, o).compute(*client);
  o.backend = "cuda";
  EXPECT_EQ(Array::random({100, 20}, o).compute(*client), cpu);
}

TEST_F(CudaTest, ElementwiseOperationsMatchCpu) {
  for (std::string dtype : {"float64", "float32"}) {
    const double tolerance = dtype == "float64" ? 1e-12 : 1e-5;
    Array x = random({57, 13}, {20, 5}, 1, dtype);
    Array positive = x.abs() + 0.5;
    for (std::string fn : {"exp", "log", "abs", "sqrt", "sigmoid", "neg", "square"})
      expect_same(
          positive,
          [&](const Array& a) {
            if (fn == "exp") return a.exp();
            if (fn == "log") return a.log();
            if (fn == "abs") return a.abs();
            if (fn == "sqrt") return a.sqrt();
            if (fn == "sigmoid") return a.sigmoid();
            if (fn == "neg") return -a;
            return a.square();
          },
          tolerance);
    expect_same(
        x, [](const Array& a) { return (2.0 - a * 3.0) / 4.0 + 1.0; }, tolerance);
    expect_same(
        x, [](const Array& a) { return a + a.T().T() * a; }, tolerance);
    expect_same(
        x, [](const Array& a) { return a - a.mean(0); }, tolerance);  // row broadcast
    expect_same(
        x, [](const Array& a) { return a * a.sum(1).reshape_row().T(); }, tolerance);  // column
    expect_same(
        x, [](const Array& a) { return tessera::where(a > 0.0, a, 0.0); }, tolerance);
    expect_same(
        x, [](const Array& a) { return (a <= a * 0.5) + a.eq(a); }, tolerance);
    expect_same(
        x, [](const Array& a) { return a.astype("float32").astype("float64"); }, tolerance);
  }
}

TEST_F(CudaTest, LayoutProductsAndReductionsMatchCpu) {
  Array x = random({83, 29}, {25, 10}, 2);
  expect_same(x, [](const Array& a) { return a.T(); });
  expect_same(x, [](const Array& a) { return a.slice_rows(7, 70).slice_cols(3, 22); });
  expect_same(x, [](const Array& a) { return a.rechunk({40, 29}); });
  expect_same(x, [](const Array& a) { return tessera::concatenate({a, a}, 0); });
  expect_same(x, [](const Array& a) { return a.T().dot(a); });
  expect_same(x, [](const Array& a) { return a.dot(a.T()); });
  expect_same(x, [](const Array& a) { return a.sum(); });
  expect_same(x, [](const Array& a) { return a.sum(0); });
  expect_same(x, [](const Array& a) { return a.max(1); });
  expect_same(x, [](const Array& a) { return a.min(); });
  expect_same(x, [](const Array& a) { return a.norm(); });
  expect_same(
      x, [](const Array& a) { return a.argmax(0); }, 0.0);
  expect_same(
      x, [](const Array& a) { return a.argmin(1); }, 0.0);
  expect_same(
      x, [](const Array& a) { return a.argmax(); }, 0.0);
}

TEST_F(CudaTest, FactorizationsMatchCpu) {
  Array x = random({600, 40}, {130, 40}, 3);
  auto cpu = linalg::svd(x);
  auto cuda = linalg::svd(x.to_backend("cuda"));
  const Eigen::VectorXd s_cpu = cpu.s.compute_vector(*client), s_cuda = cuda.s.compute_vector(*client);
  EXPECT_LE(((s_cuda - s_cpu).cwiseAbs().array() / s_cpu.array()).maxCoeff(), 1e-12);
  const Eigen::MatrixXd u = cuda.u.compute(*client), vt = cuda.vt.compute(*client), m = x.compute(*client);
  EXPECT_LT((u.transpose() * u - Eigen::MatrixXd::Identity(40, 40)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((u * s_cuda.asDiagonal() * vt - m).cwiseAbs().maxCoeff(), 1e-11);
  auto qr = linalg::tsqr(x.to_backend("cuda"));
  const Eigen::MatrixXd q = qr.q.compute(*client), r = qr.r.compute(*client);
  EXPECT_LT((q * r - m).cwiseAbs().maxCoeff(), 1e-12);
  // Rank-deficient: the descent through the tree on the device.
  Array low = random({300, 4}, {70, 4}, 4).dot(random({4, 30}, {4, 30}, 5));
  auto low_cpu = linalg::svd(low).s.compute_vector(*client);
  auto low_cuda = linalg::svd(low.to_backend("cuda"));
  EXPECT_LE((low_cuda.s.compute_vector(*client) - low_cpu).cwiseAbs().maxCoeff(), 1e-12 * low_cpu(0));
  const Eigen::MatrixXd u_low = low_cuda.u.compute(*client).leftCols(4);
  EXPECT_LT((u_low.transpose() * u_low - Eigen::MatrixXd::Identity(4, 4)).cwiseAbs().maxCoeff(), 1e-12);
  auto f32 = linalg::svd(x.astype("float32").to_backend("cuda")).s.compute_vector(*client);
  EXPECT_LE(((f32 - s_cpu).cwiseAbs().array() / s_cpu.array()).maxCoeff(), 1e-5);
  expect_same(
      x, [](const Array& a) { return linalg::svd_compressed(a, 5, {.power_iterations = 1, .seed = 2}).s; },
      1e-9);
  Array b = random({600}, {130}, 6);
  const Eigen::VectorXd solution = linalg::lstsq(x, b).x.compute_vector(*client);
  EXPECT_TRUE(linalg::lstsq(x.to_backend("cuda"), b.to_backend("cuda"))
                  .x.compute_vector(*client)
                  .isApprox(solution, 1e-10));
}

// GLM fits on cuda arrays run the composed per-chunk operations on the GPU: the same coefficients as on cpu.
TEST_F(CudaTest, GlmFitsOnCudaArraysGiveTheCpuCoefficients) {
  const Array x = random({4000, 12}, {1000, 12}, 21);
  ArrayOptions uniform;
  uniform.chunks = {1000};
  uniform.seed = 22;
  const Array y = Array::random({4000}, uniform) < (x.dot(Array::full({12}, 0.3)) + 0.1).sigmoid();
  for (const std::string solver : {"lbfgs", "newton", "admm"}) {
    tessera::glm::LogisticRegression on_cpu(
        {.solver = solver, .regularizer = "l2", .lambda = 0.01, .tol = 1e-10});
    on_cpu.fit(*client, x, y);
    tessera::glm::LogisticRegression on_cuda(
        {.solver = solver, .regularizer = "l2", .lambda = 0.01, .tol = 1e-10});
    on_cuda.fit(*client, x.to_backend("cuda"), y.to_backend("cuda"));
    EXPECT_LE((on_cuda.coef() - on_cpu.coef()).lpNorm<Eigen::Infinity>(), 1e-7) << solver;
    EXPECT_NEAR(on_cuda.intercept(), on_cpu.intercept(), 1e-7) << solver;
  }
}

// The cuda backend's library (and with it cuBLAS, cuBLASLt, cuSOLVER: about 190 MB resident) is loaded
// only where an NVIDIA driver is: without one, no process maps it, whatever the build.
bool nvidia_driver_present() {
  for (const char* path : {"/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/dxg"})
    if (::access(path, F_OK) == 0) return true;
  return false;
}

std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str();
}

TEST(CudaLoading, WithoutADriverNoProcessMapsTheCudaLibraries) {
  if (nvidia_driver_present()) GTEST_SKIP() << "an NVIDIA driver is present: the cuda backend is loaded";
  const auto cuda = tessera::backends::Dispatch::global().availability(tessera::backends::Backend::cuda);
  EXPECT_FALSE(cuda.available);
  EXPECT_FALSE(cuda.reason.empty());
  EXPECT_EQ(tessera::backends::device_count(), 0);
  EXPECT_TRUE(tessera::backends::make_device_queues(0, 2).empty());
  const auto maps = mapped_files();
  EXPECT_EQ(maps.find("libcublas"), std::string::npos);
  EXPECT_EQ(maps.find("libcusolver"), std::string::npos);
  EXPECT_EQ(maps.find("libtessera_cuda"), std::string::npos);
}

// The library itself, loaded as the loader loads it: its three entry points answer, and without a GPU it
// has no device and no queues.
TEST(CudaLoading, TheBackendLibraryLoadsAndAnswersThroughItsEntryPoints) {
#ifndef TESSERA_CUDA_MODULE
  GTEST_SKIP() << "this build has no CUDA (the toolkit was not found when it was configured)";
#else
  void* handle = ::dlopen(TESSERA_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto count = reinterpret_cast<int (*)()>(::dlsym(handle, "tessera_cuda_device_count"));
  auto queues =
      reinterpret_cast<void (*)(int, int, std::vector<std::shared_ptr<tessera::backends::DeviceQueue>>*)>(
          ::dlsym(handle, "tessera_cuda_make_device_queues"));
  ASSERT_NE(count, nullptr);
  ASSERT_NE(queues, nullptr);
  ASSERT_NE(::dlsym(handle, "tessera_cuda_register_kernels"), nullptr);
  // Everything else binds inside it: a lookup of register_cuda_kernels through it finds the loader's, in
  // libtessera_backends, never its own.
  if (void* found = ::dlsym(handle, "_ZN7tessera8backends21register_cuda_kernelsERNS0_8DispatchE")) {
    Dl_info where{};
    ASSERT_NE(::dladdr(found, &where), 0);
    EXPECT_EQ(std::string(where.dli_fname).find("libtessera_cuda"), std::string::npos) << where.dli_fname;
  }
  const int devices = count();
  EXPECT_GE(devices, 0);
  std::vector<std::shared_ptr<tessera::backends::DeviceQueue>> made;
  if (devices == 0) {
    queues(0, 2, &made);
    EXPECT_TRUE(made.empty());
  } else {
    EXPECT_EQ(devices, tessera::backends::device_count());
  }
#endif
}

}  // namespace
