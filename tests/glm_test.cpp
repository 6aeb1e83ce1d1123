// GLMs against scikit-learn (tests/data/make_glm_reference.py wrote glm_reference.csv) on the Wisconsin
// breast-cancer and diabetes data sets and on synthetic data: every solver that applies to a family and
// regularizer must land within 1e-4 (relative to the largest coefficient) of the reference. Also: the
// per-chunk kernels against their composed form, sparse input, KKT conditions where scikit-learn has no
// estimator (Poisson with l1), and the errors bad input must get.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <tessera/array.hpp>
#include <tessera/glm.hpp>
#include <tessera/tessera.hpp>

#include "actors/glm/spec.hpp"
#include "backends/cpu/cpu_features.hpp"
#include "backends/glm_partials.hpp"

namespace {

using tessera::Array;
namespace glm = tessera::glm;

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/";

std::vector<std::vector<double>> read_rows(const std::string& path, char separator, int skip) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::vector<double>> rows;
  std::string line;
  for (int i = 0; i < skip; ++i) std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::replace(line.begin(), line.end(), separator, ' ');
    std::istringstream fields(line);
    std::vector<double> row;
    for (double v; fields >> v;) row.push_back(v);
    rows.push_back(std::move(row));
  }
  return rows;
}

Eigen::MatrixXd to_matrix(const std::vector<std::vector<double>>& rows, std::size_t cols) {
  Eigen::MatrixXd m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < cols; ++j)
      m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
  return m;
}

// Mean 0 and population standard deviation 1 per column, as the reference script does.
Eigen::MatrixXd standardize(Eigen::MatrixXd x) {
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    auto c = x.col(j).array();
    c -= c.mean();
    c /= std::sqrt(c.square().mean());
  }
  return x;
}

struct Dataset {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
};

Dataset load(const std::string& name) {
  if (name == "breast_cancer") {
    auto rows = read_rows(kData + "breast_cancer.csv", ',', 1);
    Eigen::MatrixXd all = to_matrix(rows, 31);
    return {standardize(all.leftCols(30)), all.col(30)};
  }
  if (name == "diabetes") {
    Eigen::MatrixXd x = to_matrix(read_rows(kData + "diabetes_data_raw.csv", ' ', 0), 10);
    Eigen::MatrixXd y = to_matrix(read_rows(kData + "diabetes_target.csv", ' ', 0), 1);
    return {standardize(x), y.col(0)};
  }
  auto rows = read_rows(kData + "glm_" + name + ".csv", ',', 0);
  Eigen::MatrixXd all = to_matrix(rows, rows.at(0).size());
  return {all.leftCols(all.cols() - 1), all.col(all.cols() - 1)};
}

struct Reference {
  std::string name, data, family, regularizer;
  double lambda, l1_ratio, intercept;
  Eigen::VectorXd coef;
};

std::vector<Reference> references() {
  std::ifstream in(kData + "glm_reference.csv");
  std::vector<Reference> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) f.push_back(cell);
    Reference r{f[0], f[1], f[2], f[3], std::stod(f[4]), std::stod(f[5]), std::stod(f[6]), {}};
    r.coef.resize(static_cast<Eigen::Index>(f.size() - 7));
    for (std::size_t i = 7; i < f.size(); ++i) r.coef[static_cast<Eigen::Index>(i - 7)] = std::stod(f[i]);
    out.push_back(std::move(r));
  }
  return out;
}

std::unique_ptr<glm::GeneralizedLinearModel> make_model(const std::string& family, glm::Options options) {
  if (family == "logistic") return std::make_unique<glm::LogisticRegression>(std::move(options));
  if (family == "normal") return std::make_unique<glm::LinearRegression>(std::move(options));
  return std::make_unique<glm::PoissonRegression>(std::move(options));
}

std::vector<std::string> solvers_for(const Reference& r) {
  if (r.regularizer == "l1" || r.regularizer == "elastic_net") return {"proximal_grad", "admm"};
  // Gradient descent needs thousands of iterations on the collinear breast-cancer features.
  if (r.data == "breast_cancer") return {"newton", "lbfgs", "proximal_grad", "admm"};
  return {"gradient_descent", "newton", "lbfgs", "proximal_grad", "admm"};
}

glm::Options tight(const Reference& r, const std::string& solver) {
  glm::Options o;
  o.solver = solver;
  o.regularizer = r.regularizer;
  o.lambda = r.lambda;
  o.l1_ratio = r.l1_ratio;
  o.tol = 1e-8;
  o.max_iter = 100000;
  o.abstol = 1e-10;
  o.reltol = 1e-9;
  return o;
}

double relative_error(const glm::GeneralizedLinearModel& model, const Reference& r) {
  Eigen::VectorXd ours(r.coef.size() + 1), theirs(r.coef.size() + 1);
  ours << model.intercept(), model.coef();
  theirs << r.intercept, r.coef;
  return (ours - theirs).lpNorm<Eigen::Infinity>() / theirs.lpNorm<Eigen::Infinity>();
}

class GlmReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new tessera::LocalCluster({.workers = 2, .threads_per_worker = 1});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static tessera::LocalCluster* cluster_;
};
tessera::LocalCluster* GlmReference::cluster_ = nullptr;

TEST_F(GlmReference, EverySolverMatchesScikitLearnOnRealAndSyntheticData) {
  tessera::Client client{*cluster_};
  const auto refs = references();
  ASSERT_EQ(refs.size(), 14u) << "regenerate tests/data/glm_reference.csv";
  std::map<std::string, Dataset> data;
  for (const auto& r : refs) {
    if (!data.count(r.data)) data[r.data] = load(r.data);
    const auto& d = data[r.data];
    for (const auto& solver : solvers_for(r)) {
      auto options = tight(r, solver);
      options.chunk_rows = (d.x.rows() + 3) / 4;  // four partitions over two workers
      auto model = make_model(r.family, options);
      model->fit(client, d.x, d.y);
      const double error = relative_error(*model, r);
      std::printf("%-36s %-16s %7lld iterations %8.3f s  relative error %.1e\n", r.name.c_str(),
                  solver.c_str(), static_cast<long long>(model->report().iterations), model->report().seconds,
                  error);
      EXPECT_LE(error, 1e-4) << r.name << " with " << solver << ": " << model->report().iterations
                             << " iterations, converged " << model->report().converged;
      EXPECT_TRUE(model->report().converged) << r.name << " with " << solver;
    }
  }
}

TEST_F(GlmReference, SparseInputGivesTheDenseCoefficients) {
  tessera::Client client{*cluster_};
  for (const auto& r : references()) {
    if (r.name != "synthetic_logistic_l2" && r.name != "diabetes_normal_l1") continue;
    const auto d = load(r.data);
    Eigen::MatrixXd x = d.x;
    x = (x.array().abs() < 0.5).select(0.0, x);  // mostly zeros, then stored sparse
    const Eigen::SparseMatrix<double> sparse = x.sparseView();
    const std::int64_t chunk = (x.rows() + 2) / 3;
    const std::string solver = r.regularizer == "l2" ? "lbfgs" : "proximal_grad";
    auto dense_model = make_model(r.family, tight(r, solver));
    dense_model->fit(client, Array::from_eigen(x, {.chunks = {chunk}}),
                     Array::from_eigen(d.y, {.chunks = {chunk}}));
    auto sparse_model = make_model(r.family, tight(r, solver));
    const Array xs = Array::from_sparse(sparse, {.chunks = {chunk}});
    ASSERT_EQ(xs.meta().backend, tessera::backends::Backend::sparse);
    sparse_model->fit(client, xs, Array::from_eigen(d.y, {.chunks = {chunk}}));
    EXPECT_NEAR(sparse_model->intercept(), dense_model->intercept(),
                1e-7 * (1 + std::abs(dense_model->intercept())));
    EXPECT_LE((sparse_model->coef() - dense_model->coef()).lpNorm<Eigen::Infinity>(),
              1e-7 * (1 + dense_model->coef().lpNorm<Eigen::Infinity>()))
        << r.name;
  }
}

// scikit-learn has no Poisson estimator with an l1 penalty: the optimality (KKT) conditions are the
// reference. At the minimum, |gradient_j| <= lambda_1 where beta_j = 0 and gradient_j = -lambda_1
// sign(beta_j) otherwise (gradient of the smooth part, ridge included).
TEST_F(GlmReference, PoissonWithL1AndElasticNetMeetsTheOptimalityConditions) {
  tessera::Client client{*cluster_};
  const auto d = load("synthetic_poisson");
  for (const std::string regularizer : {"l1", "elastic_net"}) {
    std::vector<Eigen::VectorXd> solutions;
    for (const std::string solver : {"proximal_grad", "admm"}) {
      glm::Options o;
      o.solver = solver;
      o.regularizer = regularizer;
      o.lambda = 0.1;
      o.l1_ratio = 0.6;
      o.tol = 1e-10;
      o.abstol = 1e-11;
      o.reltol = 1e-10;
      o.max_iter = 100000;
      o.chunk_rows = 250;
      glm::PoissonRegression model(o);
      model.fit(client, d.x, d.y);
      ASSERT_TRUE(model.report().converged) << regularizer << " " << solver;
      Eigen::VectorXd beta(d.x.cols() + 1);
      beta << model.intercept(), model.coef();
      solutions.push_back(beta);
      // The smooth part's gradient, computed here from the data.
      const Eigen::VectorXd mu = ((d.x * model.coef()).array() + model.intercept()).exp();
      const Eigen::VectorXd residual = mu - d.y;
      const double n = static_cast<double>(d.x.rows());
      const double l1 = regularizer == "l1" ? o.lambda : o.lambda * o.l1_ratio;
      const double l2 = regularizer == "l1" ? 0 : o.lambda * (1 - o.l1_ratio);
      EXPECT_NEAR(residual.sum() / n, 0, 1e-7) << "the intercept's gradient";
      int zeros = 0;
      for (Eigen::Index j = 0; j < d.x.cols(); ++j) {
        const double g = d.x.col(j).dot(residual) / n + l2 * model.coef()[j];
        if (model.coef()[j] == 0) {
          ++zeros;
          EXPECT_LE(std::abs(g), l1 + 1e-7) << regularizer << " " << solver << " coefficient " << j;
        } else {
          EXPECT_NEAR(g, -l1 * (model.coef()[j] > 0 ? 1 : -1), 1e-6)
              << regularizer << " " << solver << " coefficient " << j;
        }
      }
      EXPECT_GE(zeros, 1) << "the l1 term should zero the two null coefficients";
    }
    EXPECT_LE((solutions[0] - solutions[1]).lpNorm<Eigen::Infinity>(), 1e-5) << regularizer;
  }
}

TEST_F(GlmReference, EstimatorsPredictAndScoreLikeScikitLearn) {
  tessera::Client client{*cluster_};
  const auto d = load("breast_cancer");
  glm::LogisticRegression model({.solver = "newton", .regularizer = "l2", .lambda = 1.0 / 569, .tol = 1e-10});
  const Array x = Array::from_eigen(d.x, {.chunks = {200}});
  const Array y = Array::from_eigen(d.y, {.chunks = {200}});
  model.fit(client, x, y);
  const Eigen::VectorXd proba = model.predict_proba(x).compute_vector(client);
  const Eigen::VectorXd local = model.predict_proba(d.x);
  EXPECT_LE((proba - local).lpNorm<Eigen::Infinity>(), 1e-12);
  EXPECT_TRUE((proba.array() >= 0).all() && (proba.array() <= 1).all());
  const Eigen::VectorXd labels = model.predict(x).compute_vector(client);
  EXPECT_LE((labels - model.predict(d.x)).lpNorm<Eigen::Infinity>(), 0.0);
  // scikit-learn's training accuracy for C = 1 on the standardized data is 0.9876977 (562 of 569).
  EXPECT_NEAR(model.score(client, x, y), 562.0 / 569, 1e-12);

  glm::LinearRegression linear({.solver = "newton"});
  const auto diabetes = load("diabetes");
  linear.fit(client, diabetes.x, diabetes.y);
  // scikit-learn's LinearRegression R^2 on the full diabetes data: 0.5177484222203499.
  EXPECT_NEAR(linear.score(client, Array::from_eigen(diabetes.x, {.chunks = {100}}),
                           Array::from_eigen(diabetes.y, {.chunks = {100}})),
              0.5177484222203499, 1e-9);
}

TEST_F(GlmReference, WithoutAnInterceptTheInterceptStaysZero) {
  tessera::Client client{*cluster_};
  const auto d = load("diabetes");
  glm::LinearRegression model({.solver = "lbfgs", .fit_intercept = false, .tol = 1e-10});
  model.fit(client, d.x, d.y);
  EXPECT_EQ(model.intercept(), 0);
  // Least squares without an intercept, in closed form.
  const Eigen::VectorXd exact = d.x.colPivHouseholderQr().solve(d.y);
  EXPECT_LE((model.coef() - exact).lpNorm<Eigen::Infinity>(), 1e-4 * exact.lpNorm<Eigen::Infinity>());
}

TEST_F(GlmReference, BadInputIsAClearErrorBeforeSolving) {
  tessera::Client client{*cluster_};
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(100, 3);
  Eigen::VectorXd labels = (Eigen::VectorXd::Random(100).array() > 0).cast<double>();
  auto message_of = [&](auto&& call) {
    try {
      call();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  glm::LogisticRegression logistic;
  EXPECT_NE(message_of([&] {
              logistic.fit(client, x, Eigen::VectorXd(labels.head(99)));
            }).find("X has 100 rows but y has 99"),
            std::string::npos);
  Eigen::VectorXd three = labels;
  three[57] = 2;
  const auto bad_label = message_of([&] { logistic.fit(client, x, three); });
  EXPECT_NE(bad_label.find("label other than 0 or 1"), std::string::npos) << bad_label;
  EXPECT_NE(bad_label.find("row 57"), std::string::npos) << bad_label;
  Eigen::MatrixXd with_nan = x;
  with_nan(81, 2) = std::numeric_limits<double>::quiet_NaN();
  const auto nan = message_of([&] { logistic.fit(client, with_nan, labels); });
  EXPECT_NE(nan.find("X has a non-finite value at row 81, column 2"), std::string::npos) << nan;
  Eigen::MatrixXd with_inf = x;
  with_inf(3, 0) = std::numeric_limits<double>::infinity();
  EXPECT_NE(message_of([&] { glm::LinearRegression().fit(client, with_inf, labels); }).find("non-finite"),
            std::string::npos);
  Eigen::VectorXd negative = labels;
  negative[12] = -1;
  const auto counts = message_of([&] { glm::PoissonRegression().fit(client, x, negative); });
  EXPECT_NE(counts.find("negative count"), std::string::npos) << counts;
  EXPECT_NE(counts.find("row 12"), std::string::npos) << counts;
  EXPECT_THROW(glm::LogisticRegression({.solver = "sgd"}), tessera::SubmissionError);
  EXPECT_NE(message_of([] {
              glm::LogisticRegression({.solver = "lbfgs", .regularizer = "l1", .lambda = 0.1});
            }).find("regularizer l1 takes proximal_grad or admm"),
            std::string::npos);
  EXPECT_THROW(glm::LinearRegression({.regularizer = "ridge"}), tessera::SubmissionError);
  EXPECT_THROW(glm::LinearRegression({.lambda = -1}), tessera::SubmissionError);
  EXPECT_NE(message_of([&] { glm::LinearRegression().predict(x); }).find("before fit()"), std::string::npos);
  glm::LinearRegression fitted;
  fitted.fit(client, x, labels);
  EXPECT_NE(message_of([&] {
              fitted.predict(Eigen::MatrixXd(Eigen::MatrixXd::Random(5, 4)));
            }).find("X has 4 columns"),
            std::string::npos);
  // The cluster kept working through all of it.
  EXPECT_TRUE(fitted.report().converged);
}

// Each round broadcasts coefficients to the partitions that already hold the rows: the fit adds the
// partition tasks to the cluster once, however many rounds it takes.
TEST_F(GlmReference, NoGraphIsBuiltPerIteration) {
  tessera::Client client{*cluster_};
  const auto d = load("synthetic_logistic");
  const Array x = Array::from_eigen(d.x, {.chunks = {250}}).persist(client);
  const Array y = Array::from_eigen(d.y, {.chunks = {250}}).persist(client);
  (void)(x.sum() + y.sum()).compute_scalar(client);
  const auto before = cluster_->status().tasks_done;
  glm::LogisticRegression model({.solver = "gradient_descent", .max_iter = 300, .tol = 0});
  model.fit(client, x, y);
  EXPECT_FALSE(model.report().converged);
  EXPECT_EQ(model.report().iterations, 300);
  EXPECT_GE(model.report().rounds, 300);
  EXPECT_EQ(cluster_->status().tasks_done - before, 4u) << "one task per partition, none per round";
}

// The example runs and finds the seed's line, y = 0.5 x + 1.
TEST(GlmExample, FitsTheLineAndDrawsIt) {
  const auto png =
      std::filesystem::temp_directory_path() / ("tessera-glm-example-" + std::to_string(::getpid()) + ".png");
  const std::string command = std::string(TESSERA_GLM_EXAMPLE) + " " + png.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  ASSERT_EQ(::pclose(pipe), 0) << output;
  double coefficient = 0, intercept = 0;
  ASSERT_EQ(std::sscanf(output.c_str(), "coefficient %lf, intercept %lf", &coefficient, &intercept), 2)
      << output;
  EXPECT_NEAR(coefficient, 0.5, 1e-3);
  EXPECT_NEAR(intercept, 1.0, 0.1);
  // gnuplot's figure: a PNG of the size asked for, with axes, labels and a legend (looked at by eye; the
  // size of the file says it is more than a line on a background).
  std::ifstream file(png, std::ios::binary);
  unsigned char header[24] = {};
  file.read(reinterpret_cast<char*>(header), 24);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(header) + 1, 3), "PNG");
  const auto be32 = [&](int at) {
    return (std::uint32_t{header[at]} << 24) | (std::uint32_t{header[at + 1]} << 16) |
           (std::uint32_t{header[at + 2]} << 8) | header[at + 3];
  };
  EXPECT_EQ(be32(16), 960u) << "width";
  EXPECT_EQ(be32(20), 640u) << "height";
  EXPECT_GT(std::filesystem::file_size(png), 20000u);
  std::filesystem::remove(png);
}

// The fused per-chunk kernels and their composition from other operations (what a backend without a
// fused kernel, such as cuda, runs) agree, for every family and order.
TEST(GlmPartials, FusedAndComposedKernelsAgree) {
  namespace bg = tessera::backends::glm;
  using tessera::backends::Chunk;
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(700, 9);
  Eigen::VectorXd beta = Eigen::VectorXd::Random(10) * 0.3;
  for (auto family : {bg::Family::logistic, bg::Family::normal, bg::Family::poisson}) {
    Eigen::MatrixXd y = (Eigen::MatrixXd::Random(700, 1).array() > 0).cast<double>() * 3.0;
    if (family == bg::Family::logistic) y /= 3.0;
    const auto xc = Chunk::dense<double>(x);
    const auto yc = Chunk::dense<double>(y);
    const auto fused = bg::evaluate(xc, yc, beta, family, 2);
    const auto composed = bg::evaluate_composed(xc, yc, beta, family, 2);
    const double scale = 1 + std::abs(fused.loss);
    EXPECT_NEAR(fused.loss, composed.loss, 1e-10 * scale) << bg::family_name(family);
    EXPECT_LE((fused.gradient - composed.gradient).lpNorm<Eigen::Infinity>(), 1e-9 * scale)
        << bg::family_name(family);
    EXPECT_LE((fused.hessian - composed.hessian).lpNorm<Eigen::Infinity>(), 1e-9 * scale)
        << bg::family_name(family);
    // The gradient is the loss's derivative (central differences).
    for (Eigen::Index j : {0, 4}) {
      Eigen::VectorXd step = Eigen::VectorXd::Zero(10);
      step[j] = 1e-6;
      const double numeric = (bg::evaluate(xc, yc, beta + step, family, 0).loss -
                              bg::evaluate(xc, yc, beta - step, family, 0).loss) /
                             2e-6;
      EXPECT_NEAR(numeric, fused.gradient[j], 1e-5 * scale) << bg::family_name(family) << " " << j;
    }
  }
}

// evaluate() runs the x86-64-v4 (AVX-512) build of the dense pass for float64 where the CPU has it; it and
// the portable build agree to rounding for every family and order, over rows that are not a whole number of
// the pass's 1024-row blocks, and with X's values large enough that exp would overflow if written naively.
TEST(GlmPartials, WideAndPortableBuildsOfTheDensePassAgree) {
  namespace bg = tessera::backends::glm;
  using tessera::backends::Chunk;
  if (!tessera::backends::cpu::wide_kernels_available())
    GTEST_SKIP() << "SKIPPED: this CPU has no AVX-512 (F, DQ, BW, VL) or this build no "
                    "libtessera_wide_kernels: only the portable build runs here";
  if (!tessera::backends::cpu::wide_kernels_enabled())
    GTEST_SKIP()
        << "SKIPPED: TESSERA_WIDE_KERNELS=off in this environment: evaluate() runs the portable build";
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(2500, 13);
  x.row(17) *= 400;  // |eta| in the hundreds: e^eta overflows a double
  const Eigen::VectorXd beta = Eigen::VectorXd::Random(14) * 0.3;
  for (auto family : {bg::Family::logistic, bg::Family::normal, bg::Family::poisson}) {
    Eigen::MatrixXd y = (Eigen::MatrixXd::Random(2500, 1).array() > 0).cast<double>() * 3.0;
    if (family == bg::Family::logistic) y /= 3.0;
    Eigen::MatrixXd xf = x;
    if (family == bg::Family::poisson) xf.row(17) /= 400;  // a Poisson mean of e^100 is not a test
    const auto xc = Chunk::dense<double>(xf);
    const auto yc = Chunk::dense<double>(y);
    for (int order : {0, 1, 2}) {
      const auto wide = bg::evaluate(xc, yc, beta, family, order);
      const auto portable = bg::evaluate_portable(*xc, *yc, beta, family, order);
      const std::string what = std::string(bg::family_name(family)) + " order " + std::to_string(order);
      const double scale = 1 + std::abs(portable.loss);
      ASSERT_TRUE(std::isfinite(wide.loss)) << what;
      EXPECT_NEAR(wide.loss, portable.loss, 1e-12 * scale) << what;
      ASSERT_EQ(wide.gradient.size(), portable.gradient.size()) << what;
      EXPECT_LE((wide.gradient - portable.gradient).lpNorm<Eigen::Infinity>(),
                1e-12 * (1 + portable.gradient.lpNorm<Eigen::Infinity>()))
          << what;
      ASSERT_EQ(wide.hessian.size(), portable.hessian.size()) << what;
      if (order == 2) {
        EXPECT_LE((wide.hessian - portable.hessian).lpNorm<Eigen::Infinity>(),
                  1e-12 * (1 + portable.hessian.lpNorm<Eigen::Infinity>()))
            << what;
      }
    }
  }
}

}  // namespace
