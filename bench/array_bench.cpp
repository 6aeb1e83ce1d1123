// tessera-bench-arrays: array throughput against the machine's own limits, measured in the same run.
//   elementwise: ((x * 2 + 1).sqrt()).sum() over a persisted float64 array, as bytes read per second,
//                beside this machine's read bandwidth (Eigen's sum of the same bytes, one and all threads).
//   sparse:      a chunked sparse x dense product against Eigen's own product of the same matrices.
// Prints one JSON line per measurement.
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include <tessera/array.hpp>
#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using namespace tessera;

template <class F>
double median_seconds(int repeat, F&& body) {
  std::vector<double> times;
  body();  // warm-up
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(bench::seconds_since(start));
  }
  return bench::median(times);
}

// Read bandwidth with `threads` threads summing disjoint parts of `data`.
double read_bandwidth(const Eigen::VectorXd& data, int threads, int repeat) {
  std::vector<double> partial(static_cast<std::size_t>(threads));
  const double seconds = median_seconds(repeat, [&] {
    std::vector<std::thread> pool;
    const Eigen::Index part = data.size() / threads;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const Eigen::Index begin = t * part, size = t + 1 == threads ? data.size() - begin : part;
        partial[static_cast<std::size_t>(t)] = data.segment(begin, size).sum();
      });
    for (auto& th : pool) th.join();
  });
  return static_cast<double>(data.size()) * 8.0 / seconds;
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-arrays",
      "array throughput against the machine's own limits: an elementwise reduction beside the read "
      "bandwidth, and a sparse x dense product beside Eigen's. Prints one JSON line per measurement.");
  flags.integer("elements", 50000000, 1, 1000000000, "elements of the dense array")
      .integer("chunk", 2500000, 1, 1000000000, "elements per chunk")
      .integer("threads", 2, 1, 1024, "compute threads")
      .integer("repeat", 5, 1, 1000, "repetitions (the median is reported)")
      .integer("sparse-rows", 200000, 1, 100000000, "rows of the sparse matrix")
      .integer("sparse-cols", 20000, 1, 100000000, "columns of the sparse matrix")
      .real("density", 0.0005, 1e-12, 1, "fraction of non-zero elements of the sparse matrix")
      .integer("dense-cols", 64, 1, 100000, "columns of the dense factor");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const int repeat = static_cast<int>(flags.integer("repeat"));
  const int threads = static_cast<int>(flags.integer("threads"));
  LocalCluster cluster{{.workers = 1, .threads_per_worker = static_cast<std::uint32_t>(threads)}};
  Client client{cluster};

  const std::int64_t n = flags.integer("elements");
  ArrayOptions o;
  o.chunks = {flags.integer("chunk")};
  o.seed = 5;
  const Array x = Array::random({n}, o).persist(client);
  (void)x.sum().compute_scalar(client);
  const Eigen::VectorXd data = Eigen::VectorXd::Random(n);
  const double bandwidth_one = read_bandwidth(data, 1, repeat);
  const double bandwidth_all = read_bandwidth(data, threads, repeat);
  // A plain reduction, a light fused chain and one with a square root per element.
  const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> expressions{
      {"x.sum()", [](const Array& a) { return a.sum(); }},
      {"(x*2+1).sum()", [](const Array& a) { return (a * 2.0 + 1.0).sum(); }},
      {"(x*2+1).sqrt().sum()", [](const Array& a) { return (a * 2.0 + 1.0).sqrt().sum(); }}};
  for (const auto& [text, expression] : expressions) {
    double result = 0;
    const double seconds = median_seconds(repeat, [&] { result = expression(x).compute_scalar(client); });
    const double rate = static_cast<double>(n) * 8.0 / seconds;
    std::printf(
        "{\"bench\":\"elementwise_reduction\",\"expression\":\"%s\",\"elements\":%lld,\"chunk\":%lld,"
        "\"threads\":%d,\"seconds\":%.4f,\"gb_per_s\":%.2f,\"read_bandwidth_gb_per_s\":%.2f,"
        "\"read_bandwidth_one_thread_gb_per_s\":%.2f,\"fraction_of_bandwidth\":%.3f,\"result\":%.6e}\n",
        text.c_str(), static_cast<long long>(n), flags.integer("chunk"), threads, seconds, rate / 1e9,
        bandwidth_all / 1e9, bandwidth_one / 1e9, rate / bandwidth_all, result);
  }

  const std::int64_t rows = flags.integer("sparse-rows"), cols = flags.integer("sparse-cols"),
                     dense_cols = flags.integer("dense-cols");
  ArrayOptions so;
  so.backend = "sparse";
  so.density = flags.real("density");
  so.seed = 6;
  so.chunks = {rows / (2 * threads), cols};
  const Array s = Array::random({rows, cols}, so).persist(client);
  ArrayOptions dop;
  dop.seed = 7;
  dop.chunks = {cols, dense_cols};
  const Array d = Array::random({cols, dense_cols}, dop).persist(client);
  Eigen::MatrixXd product;
  const double tessera_sparse = median_seconds(repeat, [&] { product = s.dot(d).compute(client); });
  // Eigen alone on the same matrices (one thread: Eigen's sparse product is sequential).
  const Eigen::SparseMatrix<double> es = s.compute_sparse(client);
  const Eigen::MatrixXd ed = d.compute(client);
  Eigen::MatrixXd eigen_product;
  const double eigen_sparse = median_seconds(repeat, [&] { eigen_product = es * ed; });
  std::printf(
      "{\"bench\":\"sparse_matmul\",\"rows\":%lld,\"cols\":%lld,\"nonzeros\":%lld,\"dense_cols\":%lld,"
      "\"threads\":%d,"
      "\"seconds\":%.4f,\"eigen_seconds\":%.4f,\"speedup_over_eigen\":%.2f,\"max_difference\":%.3e}\n",
      static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(es.nonZeros()),
      static_cast<long long>(dense_cols), threads, tessera_sparse, eigen_sparse,
      eigen_sparse / tessera_sparse, (product - eigen_product).cwiseAbs().maxCoeff());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "tessera-bench-arrays: %s\n", e.what());
  return 1;
}
