// The SVD article in C++: the thin SVD of a 10000 x 1000 random array in chunks of 5000 rows, on the cpu
// backend, then — the only change — on the cuda backend when a GPU is present. Prints both times and
// the largest singular values.
//   build/bin/svd_example [--rows 10000] [--cols 1000] [--chunk-rows 5000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <tessera/array.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

#include "backends/dispatch.hpp"

namespace {

// The SVD of x on its own backend: the time to compute U, S and Vt into this program, and S.
std::pair<double, Eigen::VectorXd> timed_svd(tessera::Client& client, const tessera::Array& x) {
  const auto start = std::chrono::steady_clock::now();
  auto [u, s, vt] = tessera::linalg::svd(x);
  auto [U, S, Vt] = tessera::compute(client, u, s, vt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, S.col(0)};
}

std::int64_t flag(int argc, char** argv, const char* name, std::int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rows = flag(argc, argv, "--rows", 10000), cols = flag(argc, argv, "--cols", 1000);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};

  auto x = tessera::Array::random({rows, cols},
                                  {.chunks = {flag(argc, argv, "--chunk-rows", 5000), cols}, .seed = 1})
               .persist(client);  // the article leaves out making and copying the array too
  std::printf("%s\n", x.describe().c_str());
  auto [cpu_seconds, cpu_s] = timed_svd(client, x);
  std::printf("cpu:  %.3f s, largest singular values %.6f %.6f %.6f\n", cpu_seconds, cpu_s(0), cpu_s(1),
              cpu_s(2));

  const auto cuda = tessera::backends::Dispatch::global().availability(tessera::backends::Backend::cuda);
  if (!cuda.available) {
    std::printf("cuda: skipped (%s)\n", cuda.reason.c_str());
    return 0;
  }
  auto y = x.to_backend("cuda").persist(client);  // the only change
  (void)timed_svd(client, y);                     // warm-up: CUDA context, cuBLAS and cuSOLVER handles
  auto [cuda_seconds, cuda_s] = timed_svd(client, y);
  std::printf("cuda: %.3f s, largest singular values %.6f %.6f %.6f (max relative difference to cpu %.1e)\n",
              cuda_seconds, cuda_s(0), cuda_s(1), cuda_s(2),
              ((cuda_s - cpu_s).cwiseAbs().array() / cpu_s.array()).maxCoeff());
  return 0;
}
