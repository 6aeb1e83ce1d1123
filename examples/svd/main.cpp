// The SVD article in C++: the thin SVD of a 10000 x 1000 random array in chunks of 5000 rows, on the cpu
// backend, then — the only change — on the cuda backend when a GPU is present. Prints both times and
// the largest singular values.
//   build/bin/svd_example [--rows 10000] [--cols 1000] [--chunk-rows 5000]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include <tessera/array.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

#include "backends/dispatch.hpp"
#include "cli_options.hpp"

namespace {

// The SVD of x on its own backend: the time to compute U, S and Vt into this program, and S.
std::pair<double, Eigen::VectorXd> timed_svd(tessera::Client& client, const tessera::Array& x) {
  const auto start = std::chrono::steady_clock::now();
  auto [u, s, vt] = tessera::linalg::svd(x);
  auto [U, S, Vt] = tessera::compute(client, u, s, vt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, S.col(0)};
}

}  // namespace

int main(int argc, char** argv) try {
  using tessera::cli::unsigned_in;
  std::int64_t rows = 10000, cols = 1000, chunk_rows = 5000;
  CLI::App app{
      "The SVD article: the thin SVD of a random rows x cols array in chunks of chunk-rows rows, on the cpu "
      "backend, then on the cuda backend when a GPU is present.",
      "svd_example"};
  app.add_option("--rows", rows, "the array's rows (default 10000)")->check(unsigned_in(1, 100'000'000));
  app.add_option("--cols", cols, "the array's columns (default 1000)")->check(unsigned_in(1, 100'000));
  app.add_option("--chunk-rows", chunk_rows, "rows per chunk (default 5000)")
      ->check(unsigned_in(1, 100'000'000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::cli::parse_failure(app, e);
  }
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};

  auto x = tessera::Array::random({rows, cols}, {.chunks = {chunk_rows, cols}, .seed = 1})
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
} catch (const std::exception& e) {
  std::fprintf(stderr, "svd_example: %s\n", e.what());
  return 1;
}
