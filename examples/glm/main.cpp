// The seed's scikit-learn example, written with Tessera: 40000 points y = 0.5 x + 1 + noise, a linear
// regression fitted with L-BFGS on the cluster, predictions on a linspace, and a PNG of the data and the
// line.
//   build/bin/glm_example [out.png]    (default: TMPDIR/tessera-examples/glm_example.png)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <tessera/array.hpp>
#include <tessera/glm.hpp>
#include <tessera/tessera.hpp>

#include "../example_output.hpp"
#include "cli_options.hpp"
#include "plots/figure.hpp"

int main(int argc, char** argv) try {
  using namespace tessera;
  std::string out;  // empty: example::default_output("glm_example.png")
  CLI::App app{
      "The scikit-learn example with Tessera: 40000 points y = 0.5 x + 1 + noise, a linear regression fitted "
      "with L-BFGS on an embedded cluster, predictions on a linspace, and a PNG of the data and the line.",
      "glm_example"};
  app.add_option("out", out, "the PNG to write (default: glm_example.png in TMPDIR/tessera-examples)")
      ->check(tessera::cli::text_at_most(4096));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::cli::parse_failure(app, e);
  }
  if (out.empty()) out = example::default_output("glm_example.png");
  LocalCluster cluster;
  Client client{cluster};

  const double N = 1000;
  // x from 0 to N
  ArrayOptions uniform;
  uniform.chunks = {10000};
  uniform.seed = 1;
  const Array x = (Array::random({40000, 1}, uniform) * N).persist(client);
  // y = a*x + b with noise
  ArrayOptions normal = uniform;
  normal.seed = 2;
  normal.distribution = "normal";
  const Array y = (0.5 * x + 1.0 + Array::random({40000, 1}, normal)).persist(client);

  // create a linear regression model
  glm::LinearRegression est({.solver = "lbfgs"});
  auto start = std::chrono::steady_clock::now();
  est.fit(client, x, y);
  const double fit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // predict y from the data
  const Eigen::VectorXd x_new = Eigen::VectorXd::LinSpaced(100, 0, N);
  start = std::chrono::steady_clock::now();
  const Eigen::VectorXd y_new = est.predict(Array::from_eigen(Eigen::MatrixXd(x_new))).compute_vector(client);
  const double predict_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::printf("coefficient %.6f, intercept %.6f (%lld iterations, converged %s)\n", est.coef()[0],
              est.intercept(), static_cast<long long>(est.report().iterations),
              est.report().converged ? "yes" : "no");
  std::printf("fit %.2f ms, predict %.2f ms\n", fit_ms, predict_ms);

  // plot the results
  const Eigen::VectorXd xs = x.compute_vector(client), ys = y.compute_vector(client);
  plots::Figure figure;
  char fitted[96];
  std::snprintf(fitted, sizeof fitted, "y = %.4f x + %.4f", est.coef()[0], est.intercept());
  figure.title = std::string("Linear regression with L-BFGS on 40,000 points: ") + fitted;
  figure.x_label = "x";
  figure.y_label = "y";
  figure.series.push_back(
      {"data: y = 0.5 x + 1 + N(0, 1)", std::vector<double>(xs.data(), xs.data() + xs.size()),
       std::vector<double>(ys.data(), ys.data() + ys.size()), plots::Series::Style::points, "#8da0cb"});
  figure.series.push_back({"fitted line (predict on a linspace)",
                           std::vector<double>(x_new.data(), x_new.data() + x_new.size()),
                           std::vector<double>(y_new.data(), y_new.data() + y_new.size()),
                           plots::Series::Style::lines, "#d62728"});
  plots::write_png(figure, out);
  std::printf("plot: %s (x from %.1f to %.1f, y from %.1f to %.1f)\n", out.c_str(), xs.minCoeff(),
              xs.maxCoeff(), ys.minCoeff(), ys.maxCoeff());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "glm_example: " << e.what() << "\n";
  return 1;
}
