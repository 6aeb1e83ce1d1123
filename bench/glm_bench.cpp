// tessera-bench-glm: fits a GLM and times it.
//   --x X.npy --y y.npy | --rows N --cols P --seed S   the data (from files, or synthetic: X standard
//                         normal, y drawn from the family with coefficients 1/sqrt(P) and intercept 0.25)
//   --family logistic|normal|poisson --solver S --regularizer R --lambda L --l1-ratio A
//   --chunk-rows C --max-iter I --tol T --workers W --threads T --repeat R
//   --backend cpu|sparse|cuda   where X's chunks live (the same fit code runs on each)
//   --scheduler tcp://HOST:PORT   fit on a running cluster of node processes instead of an embedded one
//   --out coef.npy        writes the intercept followed by the coefficients
// Prints one JSON line: the median fit time (the data already persisted on the workers: the time covers
// making the partitions, the solver's rounds and the answer), iterations, convergence and the
// per-round overhead beyond the workers' own compute.
#include <cstdio>
#include <iostream>
#include <memory>

#include <tessera/array.hpp>
#include <tessera/glm.hpp>
#include <tessera/io.hpp>
#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using namespace tessera;

std::pair<Array, Array> load_data(const tessera::cli::FlagTable& flags, const std::string& family) {
  const std::int64_t chunk = flags.integer("chunk-rows");
  if (const std::string x = flags.str("x"); !x.empty())
    return {io::from_npy(x, {.chunk_rows = chunk}), io::from_npy(flags.str("y"), {.chunk_rows = chunk})};
  const std::int64_t rows = flags.integer("rows"), cols = flags.integer("cols");
  ArrayOptions o;
  o.chunks = {chunk, cols};
  o.seed = static_cast<std::uint64_t>(flags.integer("seed"));
  o.distribution = "normal";
  const Array x = Array::random({rows, cols}, o);
  const Array eta = x.dot(Array::full({cols}, 1.0 / std::sqrt(static_cast<double>(cols)))) + 0.25;
  ArrayOptions u;
  u.chunks = {chunk};
  u.seed = o.seed + 1;
  if (family == "logistic") return {x, Array::random({rows}, u) < eta.sigmoid()};
  if (family == "normal") {
    u.distribution = "normal";
    return {x, eta + Array::random({rows}, u)};
  }
  // Poisson counts are not drawn here: the expected counts stand in (the fit takes non-negative reals).
  return {x, (eta * 0.5).exp()};
}

std::unique_ptr<glm::GeneralizedLinearModel> make_model(const std::string& family, const glm::Options& o) {
  if (family == "logistic") return std::make_unique<glm::LogisticRegression>(o);
  if (family == "normal") return std::make_unique<glm::LinearRegression>(o);
  if (family == "poisson") return std::make_unique<glm::PoissonRegression>(o);
  throw std::invalid_argument("unknown family '" + family + "' (logistic, normal, poisson)");
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-glm",
      "fits a GLM and times it; prints one JSON line (see the comment at the top of bench/glm_bench.cpp).");
  flags.text("x", "", "X.npy (with --y); otherwise synthetic data")
      .text("y", "", "y.npy")
      .integer("rows", 100000, 1, 1000000000, "synthetic rows")
      .integer("cols", 100, 1, 1000000, "synthetic columns")
      .integer("seed", 1, 0, std::numeric_limits<std::uint64_t>::max(), "the synthetic data's seed")
      .choice("family", "logistic", {"logistic", "normal", "poisson"}, "the model")
      .text("solver", "lbfgs", "the solver (lbfgs, newton, admm, gradient_descent, proximal_grad)")
      .text("regularizer", "none", "none, l1, l2 or elastic_net")
      .real("lambda", 0, 0, 1e12, "the regularization strength")
      .real("l1-ratio", 0.5, 0, 1, "elastic net: the share of l1")
      .integer("chunk-rows", 100000, 1, 1000000000, "rows per partition")
      .integer("max-iter", 0, 0, 100000000, "iterations at most (0: the solver's default)")
      .real("tol", 1e-6, 0, 1e6, "the convergence tolerance")
      .integer("workers", 1, 1, 1024, "embedded workers")
      .integer("threads", 2, 1, 1024, "threads per embedded worker")
      .integer("repeat", 3, 1, 1000, "fits (the median is reported)")
      .text("scheduler", "", "fit on this tessera-node, tcp://HOST:PORT, instead of an embedded cluster")
      .text("out", "", "write the intercept and the coefficients to this .npy file")
      .text("backend", "cpu", "where X's chunks live: cpu, sparse or cuda");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string family = flags.str("family");
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<Client> client;
  if (const std::string address = flags.str("scheduler"); !address.empty()) {
    client = std::make_unique<Client>(address);
  } else {
    cluster = std::make_unique<LocalCluster>(
        ClusterOptions{.workers = static_cast<std::uint32_t>(flags.integer("workers")),
                       .threads_per_worker = static_cast<std::uint32_t>(flags.integer("threads"))});
    client = std::make_unique<Client>(*cluster);
  }
  auto [x_in, y_in] = load_data(flags, family);
  const Array x = x_in.to_backend(flags.str("backend")).persist(*client);
  const Array y = y_in.persist(*client);
  (void)(x.sum() + y.sum()).compute_scalar(*client);  // the data exists before the clock starts

  glm::Options o;
  o.solver = flags.str("solver");
  o.regularizer = flags.str("regularizer");
  o.lambda = flags.real("lambda");
  o.l1_ratio = flags.real("l1-ratio");
  o.max_iter = flags.integer("max-iter");
  o.tol = flags.real("tol");
  auto model = make_model(family, o);
  std::vector<double> times;
  for (long long r = 0; r < flags.integer("repeat"); ++r) {
    const auto start = std::chrono::steady_clock::now();
    model->fit(*client, x, y);
    times.push_back(bench::seconds_since(start));
  }
  const auto& report = model->report();
  std::printf(
      "{\"bench\":\"glm\",\"family\":\"%s\",\"solver\":\"%s\",\"regularizer\":\"%s\",\"lambda\":%g,\"rows\":%"
      "lld,"
      "\"cols\":%lld,\"chunk_rows\":%lld,\"placement\":\"%s\",\"backend\":\"%s\",\"seconds\":%.4f,\"min_"
      "seconds\":%.4f,"
      "\"iterations\":%lld,\"converged\":%s,\"evaluations\":%lld,\"rounds\":%lld,\"overhead_us_per_round\":%."
      "1f,"
      "\"solver_seconds\":%.4f,\"round_seconds\":%.4f,\"worker_seconds\":%.4f,\"objective\":%.12g}\n",
      family.c_str(), o.solver.c_str(), o.regularizer.c_str(), o.lambda, static_cast<long long>(x.rows()),
      static_cast<long long>(x.cols()), flags.integer("chunk-rows"), cluster ? "embedded" : "processes",
      flags.str("backend").c_str(), bench::median(times), *std::min_element(times.begin(), times.end()),
      static_cast<long long>(report.iterations), report.converged ? "true" : "false",
      static_cast<long long>(report.evaluations), static_cast<long long>(report.rounds),
      report.overhead_per_round() * 1e6, report.seconds, report.round_seconds, report.worker_seconds,
      report.objective);
  if (const std::string out = flags.str("out"); !out.empty()) {
    Eigen::VectorXd all(model->coef().size() + 1);
    all << model->intercept(), model->coef();
    io::write_npy(out, all);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-glm: " << e.what() << "\n";
  return 1;
}
