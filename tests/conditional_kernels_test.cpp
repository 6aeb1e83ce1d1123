// The kernels behind the SVD's Gram path, run through the dispatch table on real chunks: gram_svd against
// LAPACK's SVD of X and its acceptance by condition number (refusing NaN); Gram products through symmetric
// rank updates equal to the general product; gated running or skipping another kernel by a flag; choose
// passing one of two results on, or rows of the second; bad parameters named.
#include <gtest/gtest.h>

#include <Eigen/SVD>

#include <cmath>
#include <limits>
#include <string>

#include "backends/kernel_params.hpp"
#include "expect_error.hpp"

namespace {

namespace b = tessera::backends;
using b::Chunk;
using b::ChunkPtr;
using b::Dispatch;

ChunkPtr dense(const Eigen::MatrixXd& m) {
  return Chunk::dense<double>(m);
}

b::Chunks run(std::string_view op, std::vector<ChunkPtr> in, const b::Params& params = {}) {
  return Dispatch::global().run(op, in, params);
}

ChunkPtr flag(bool set) {
  return dense(Eigen::MatrixXd::Constant(1, 1, set ? 1.0 : 0.0));
}

// A 60 x 8 matrix with singular values graded from 1 to 1 / condition.
Eigen::MatrixXd graded(double condition) {
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(60, 8);
  for (int j = 0; j < 8; ++j) x.col(j) *= std::pow(condition, -j / 7.0);
  return x;
}

// `make` throws a KernelError whose message contains `expected`.
template <class F>
void expect_kernel_error(F&& make, const std::string& expected) {
  tessera::testing::expect_error<b::KernelError>(std::forward<F>(make), expected);
}

TEST(ConditionalKernels, GramProductsOfOneChunkWithItselfEqualTheGeneralProduct) {
  const Eigen::MatrixXd x1 = Eigen::MatrixXd::Random(50, 7), x2 = Eigen::MatrixXd::Random(30, 7);
  const ChunkPtr c1 = dense(x1), c2 = dense(x2);
  const b::Params transpose_a = b::MatmulParams{true, false}.to_params();
  const Eigen::MatrixXd gram = run(b::ops::matmul, {c1, c2, c1, c2}, transpose_a).front()->dense<double>();
  const Eigen::MatrixXd expected = x1.transpose() * x1 + x2.transpose() * x2;
  EXPECT_LT((gram - expected).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(gram, gram.transpose());  // both triangles filled
  // A pair of two different chunks keeps the general product.
  const Eigen::MatrixXd y = Eigen::MatrixXd::Random(50, 7);
  const Eigen::MatrixXd mixed =
      run(b::ops::matmul, {c1, c1, c1, dense(y)}, transpose_a).front()->dense<double>();
  EXPECT_LT((mixed - (x1.transpose() * x1 + x1.transpose() * y)).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(ConditionalKernels, GramSvdMatchesTheSvdAndIsAcceptedUpToTheConditionLimit) {
  const Eigen::MatrixXd x = graded(10.0);
  const auto out = run(b::ops::gram_svd, {dense(x.transpose() * x)}, b::GramSvdParams{100.0}.to_params());
  ASSERT_EQ(out.size(), 3u);
  const Eigen::JacobiSVD<Eigen::MatrixXd> reference(x, Eigen::ComputeThinV);
  const auto& s = out[0]->dense<double>();
  const auto& vt = out[1]->dense<double>();
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(s(i, 0), reference.singularValues()(i), 1e-12 * reference.singularValues()(i)) << i;
    // Singular vectors are unique up to sign.
    EXPECT_NEAR(std::abs(vt.row(i).dot(reference.matrixV().col(i))), 1.0, 1e-10) << i;
  }
  EXPECT_EQ(out[2]->dense<double>()(0, 0), 1.0);
  const Eigen::MatrixXd ill = graded(1e3);
  EXPECT_EQ(run(b::ops::gram_svd, {dense(ill.transpose() * ill)}, b::GramSvdParams{100.0}.to_params())[2]
                ->dense<double>()(0, 0),
            0.0);
  Eigen::MatrixXd with_nan = x.transpose() * x;
  with_nan(2, 3) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(
      run(b::ops::gram_svd, {dense(with_nan)}, b::GramSvdParams{100.0}.to_params())[2]->dense<double>()(0, 0),
      0.0);
  expect_kernel_error(
      [&] {
        run(b::ops::gram_svd, {dense(Eigen::MatrixXd::Zero(3, 4))}, b::GramSvdParams{100.0}.to_params());
      },
      "not square");
  expect_kernel_error(
      [&] { run(b::ops::gram_svd, {dense(x.transpose() * x)}, b::GramSvdParams{0.5}.to_params()); },
      "max_condition");
}

TEST(ConditionalKernels, GatedRunsTheInnerKernelOnlyWhenTheFlagAgrees) {
  const Eigen::MatrixXd x = Eigen::MatrixXd::Random(6, 4);
  const b::GatedParams transpose_when_set{b::ops::transpose, true, 1, {}};
  const auto ran = run(b::ops::gated, {flag(true), dense(x)}, transpose_when_set.to_params());
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0]->dense<double>(), x.transpose());
  const auto skipped = run(b::ops::gated, {flag(false), dense(x)}, transpose_when_set.to_params());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]->size(), 0);
  // The inner kernel's parameters pass through; as many empty results as it has.
  const b::GatedParams factor_when_clear{b::ops::qr_factor, false, 2, {}};
  EXPECT_EQ(run(b::ops::gated, {flag(false), dense(x)}, factor_when_clear.to_params()).size(), 2u);
  const auto none = run(b::ops::gated, {flag(true), dense(x)}, factor_when_clear.to_params());
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[1]->size(), 0);
  const b::GatedParams scale{b::ops::scale_columns, true, 1, b::ScaleColumnsParams{true}.to_params()};
  const auto scaled =
      run(b::ops::gated, {flag(true), dense(x), dense(Eigen::VectorXd::Constant(4, 2.0))}, scale.to_params());
  EXPECT_LT((scaled[0]->dense<double>() - x / 2).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(ConditionalKernels, GatedNamesBadParametersAndFlags) {
  const ChunkPtr x = dense(Eigen::MatrixXd::Random(3, 3));
  expect_kernel_error([&] { run(b::ops::gated, {flag(true), x}, b::Params{}); }, "inner operation");
  expect_kernel_error(
      [&] {
        run(b::ops::gated, {flag(true), x}, b::Params{"gated", {1, 1}, {}});
      },
      "cannot gate itself");
  expect_kernel_error(
      [&] {
        run(b::ops::gated, {flag(true), x}, b::Params{"transpose", {1, 99}, {}});
      },
      "outputs");
  expect_kernel_error(
      [&] {
        run(b::ops::gated, {flag(true), x}, b::Params{"no_such_op", {1, 1}, {}});
      },
      "no_such_op");
  expect_kernel_error(
      [&] {
        run(b::ops::gated, {x, x}, b::GatedParams{b::ops::transpose, true, 1, {}}.to_params());
      },
      "flag must be a 1 x 1");
  expect_kernel_error(
      [&] {
        b::GatedParams{b::ops::unary, true, 1, b::Params{"exp", {}, {}}}.to_params();
      },
      "takes a name");
}

TEST(ConditionalKernels, ChoosePassesOnOneResultOrRowsOfTheOther) {
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(2, 3), big = Eigen::MatrixXd::Random(7, 3);
  const ChunkPtr ca = dense(a), cb = dense(big);
  EXPECT_EQ(run(b::ops::choose, {flag(true), ca, cb}, b::ChooseParams{2, 2}.to_params()).front(), ca);
  EXPECT_EQ(run(b::ops::choose, {flag(false), ca, cb}, b::ChooseParams{}.to_params()).front(), cb);
  EXPECT_EQ(
      run(b::ops::choose, {flag(false), ca, cb}, b::ChooseParams{2, 3}.to_params()).front()->dense<double>(),
      big.middleRows(2, 3));
  expect_kernel_error(
      [&] {
        run(b::ops::choose, {flag(false), ca, cb}, b::ChooseParams{5, 3}.to_params());
      },
      "rows [5, 8) of a cpu float64 7x3");
  expect_kernel_error(
      [&] {
        run(b::ops::choose, {flag(false), ca}, b::ChooseParams{}.to_params());
      },
      "needs the flag, A and B");
}

}  // namespace
