// tessera-bench-svd: the thin SVD of a tall-skinny matrix through TSQR, timed on an embedded cluster.
//   --input X.npy | --rows M --cols N --seed S   the matrix (from a file, or standard normal, seeded)
//   --chunk-rows C --backend cpu|cuda --workers W --threads T --repeat R
//   --output-dir DIR      also writes U.npy, S.npy and Vt.npy there
//   --check-against B     also runs the SVD on backend B and prints the largest relative difference of the
//                         singular values (the cuda backend's check against cpu)
// Prints one JSON line per measurement. The input is persisted on the workers before timing: the time is
// the SVD and the transfer of U, S and Vt back to this program, as for NumPy's svd.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <tessera/array.hpp>
#include <tessera/io.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

#include "backends/dispatch.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using namespace tessera;

Array load_input(const tessera::cli::FlagTable& flags) {
  const std::string input = flags.str("input");
  if (!input.empty()) return io::from_npy(input, {.chunk_rows = flags.integer("chunk-rows")});
  ArrayOptions o;
  o.chunks = {flags.integer("chunk-rows"), flags.integer("cols")};
  o.seed = static_cast<std::uint64_t>(flags.integer("seed"));
  o.distribution = "normal";
  return Array::random({flags.integer("rows"), flags.integer("cols")}, o);
}

struct Timed {
  double median_seconds, min_seconds;
  std::array<Eigen::MatrixXd, 3> usv;
};

Timed time_svd(Client& client, const Array& x, int repeat) {
  std::vector<double> times;
  Timed out{};
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto f = linalg::svd(x);
    out.usv = tessera::compute(client, f.u, f.s, f.vt);
    times.push_back(bench::seconds_since(start));
  }
  out.median_seconds = bench::median(times);
  out.min_seconds = *std::min_element(times.begin(), times.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-svd",
      "the thin SVD of a tall-skinny matrix through TSQR, timed on an embedded cluster (see the comment at "
      "the top of bench/svd_bench.cpp). Prints one JSON line per measurement.");
  flags.text("input", "", "X.npy; otherwise a standard normal matrix")
      .integer("rows", 10000, 1, 1000000000, "rows of the random matrix")
      .integer("cols", 1000, 1, 100000, "columns of the random matrix")
      .integer("seed", 1, 0, std::numeric_limits<std::uint64_t>::max(), "the random matrix's seed")
      .integer("chunk-rows", 5000, 1, 1000000000, "rows per chunk")
      .text("backend", "cpu", "cpu or cuda")
      .integer("workers", 1, 1, 1024, "embedded workers")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("repeat", 5, 1, 1000, "repetitions (the median is reported)")
      .text("output-dir", "", "also write U.npy, S.npy and Vt.npy there")
      .text("check-against", "",
            "also run the SVD on this backend and print the largest relative difference");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string backend = flags.str("backend");
  const auto availability = backends::Dispatch::global().availability(
      backends::parse_backend(backend).value_or(backends::Backend::cpu));
  if (!availability.available) {
    std::cerr << "tessera-bench-svd: the " << backend << " backend is unavailable: " << availability.reason
              << "\n";
    return 2;
  }
  LocalCluster cluster{{.workers = static_cast<std::uint32_t>(flags.integer("workers")),
                        .threads_per_worker = static_cast<std::uint32_t>(flags.integer("threads"))}};
  Client client{cluster};
  const Array input = load_input(flags);
  const Array x = input.to_backend(backend).persist(client);
  (void)x.sum().compute_scalar(client);  // the chunks exist before the clock starts
  const int repeat = static_cast<int>(flags.integer("repeat"));
  (void)time_svd(client, x, 1);  // warm-up: first-touch allocations, BLAS buffers
  const Timed t = time_svd(client, x, repeat);
  std::printf(
      "{\"bench\":\"svd\",\"rows\":%lld,\"cols\":%lld,\"chunk_rows\":%lld,\"backend\":\"%s\",\"workers\":%"
      "lld,"
      "\"threads\":%lld,\"repeat\":%d,\"seconds\":%.4f,\"min_seconds\":%.4f}\n",
      static_cast<long long>(x.rows()), static_cast<long long>(x.cols()), flags.integer("chunk-rows"),
      backend.c_str(), flags.integer("workers"), flags.integer("threads"), repeat, t.median_seconds,
      t.min_seconds);
  if (const std::string other = flags.str("check-against"); !other.empty()) {
    auto f = linalg::svd(input.to_backend(other));
    const Eigen::VectorXd s_other = f.s.compute_vector(client);
    const Eigen::VectorXd s = t.usv[1].col(0);
    const double difference =
        ((s - s_other).cwiseAbs().array() / s_other.cwiseAbs().array().max(1e-300)).maxCoeff();
    const Eigen::MatrixXd& u = t.usv[0];
    const double orthogonality =
        (u.transpose() * u - Eigen::MatrixXd::Identity(u.cols(), u.cols())).cwiseAbs().maxCoeff();
    std::printf(
        "{\"bench\":\"svd_check\",\"backend\":\"%s\",\"against\":\"%s\",\"max_relative_difference\":%.3e,"
        "\"u_orthogonality_error\":%.3e}\n",
        backend.c_str(), other.c_str(), difference, orthogonality);
  }
  if (const std::string dir = flags.str("output-dir"); !dir.empty()) {
    std::filesystem::create_directories(dir);
    io::write_npy(dir + "/U.npy", t.usv[0]);
    io::write_npy(dir + "/S.npy", Eigen::VectorXd(t.usv[1].col(0)));
    io::write_npy(dir + "/Vt.npy", t.usv[2]);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-svd: " << e.what() << "\n";
  return 1;
}
