// The cuda backend of a build without the CUDA toolkit: no kernels, and a reason for anyone who asks.
#include "backends/dispatch.hpp"

namespace tessera::backends {

void register_cuda_kernels(Dispatch& dispatch) {
  dispatch.set_availability(Backend::cuda, {false,
                                            "this build of Tessera has no CUDA (the toolkit was not found "
                                            "when it was configured)"});
}

}  // namespace tessera::backends
