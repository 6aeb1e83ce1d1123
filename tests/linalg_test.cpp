// Linear algebra on chunked arrays against LAPACK (dgesdd/sgesdd through LAPACKE) on the same matrices:
// singular values within 1e-12 relative (1e-5 for float32), orthonormal factors, reconstruction at
// rounding level; on ragged chunkings, single-chunk arrays, many-chunk reduction trees, short-fat and
// rank-deficient matrices.
#include <gtest/gtest.h>
#include <lapacke.h>

#include <Eigen/QR>

#include <tessera/array.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

namespace {

using tessera::Array;
using tessera::ArrayOptions;
namespace linalg = tessera::linalg;

Eigen::VectorXd lapack_singular_values(Eigen::MatrixXd a) {
  const auto m = static_cast<lapack_int>(a.rows()), n = static_cast<lapack_int>(a.cols());
  Eigen::VectorXd s(std::min(m, n));
  EXPECT_EQ(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, a.data(), m, s.data(), nullptr, 1, nullptr, 1), 0);
  return s;
}

Eigen::VectorXf lapack_singular_values(Eigen::MatrixXf a) {
  const auto m = static_cast<lapack_int>(a.rows()), n = static_cast<lapack_int>(a.cols());
  Eigen::VectorXf s(std::min(m, n));
  EXPECT_EQ(LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'N', m, n, a.data(), m, s.data(), nullptr, 1, nullptr, 1), 0);
  return s;
}

Eigen::MatrixXd random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  ArrayOptions o;
  o.seed = seed;
  o.distribution = "normal";
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  return Array::random({rows, cols}, o).compute(client);
}

ArrayOptions chunked(std::vector<std::int64_t> chunks) {
  ArrayOptions o;
  o.chunks = std::move(chunks);
  return o;
}

double orthonormality_error(const Eigen::MatrixXd& q) {
  return (q.transpose() * q - Eigen::MatrixXd::Identity(q.cols(), q.cols())).cwiseAbs().maxCoeff();
}

struct Case {
  std::int64_t rows, cols, chunk_rows;
  int rank;  // 0: full rank
};

class SvdTest : public ::testing::TestWithParam<Case> {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
};

TEST_P(SvdTest, MatchesLapack) {
  const Case c = GetParam();
  Eigen::MatrixXd m = random_matrix(c.rows, c.cols, 11);
  if (c.rank > 0) m = random_matrix(c.rows, c.rank, 12) * random_matrix(c.rank, c.cols, 13);
  auto x = Array::from_eigen(m, chunked({c.chunk_rows}));
  auto f = linalg::svd(x);
  auto [u, s, vt] = tessera::compute(client, f.u, f.s, f.vt);
  const Eigen::VectorXd reference = lapack_singular_values(m);
  const std::int64_t k = std::min(c.rows, c.cols);
  ASSERT_EQ(u.rows(), c.rows);
  ASSERT_EQ(u.cols(), k);
  ASSERT_EQ(s.rows(), k);
  ASSERT_EQ(vt.rows(), k);
  ASSERT_EQ(vt.cols(), c.cols);
  const double largest = reference(0);
  for (std::int64_t i = 0; i < k; ++i)
    EXPECT_NEAR(s(i, 0), reference(i), 1e-12 * largest) << "singular value " << i;
  const int usable = c.rank > 0 ? c.rank : static_cast<int>(k);
  EXPECT_LT(orthonormality_error(vt.transpose()), 1e-12);
  if (c.rank == 0) {
    EXPECT_LT(orthonormality_error(u), 1e-12);
  } else {
    // Left vectors of zero singular values are any orthonormal completion: check the nonzero ones.
    EXPECT_LT(orthonormality_error(u.leftCols(usable)), 1e-12);
  }
  const Eigen::MatrixXd rebuilt = u * s.col(0).asDiagonal() * vt;
  EXPECT_LT((rebuilt - m).cwiseAbs().maxCoeff(),
            1e-12 * std::max(1.0, m.cwiseAbs().maxCoeff()) * static_cast<double>(k));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SvdTest,
                         ::testing::Values(Case{200, 30, 64, 0},   // ragged chunks
                                           Case{200, 30, 200, 0},  // one chunk
                                           Case{120, 30, 13,
                                                0},  // chunks shorter than columns: grouped leaves
                                           Case{2000, 5, 10, 0},  // 200 chunks: a reduction tree of depth 2
                                           Case{60, 60, 17, 0},   // square
                                           Case{25, 90, 7, 0},    // short-fat, through the transpose
                                           Case{300, 40, 70, 8},  // rank-deficient: the descent path
                                           Case{150, 20, 150, 3}));

TEST(LinalgTest, IllConditionedFullRankTakesTheDescentAndStaysOrthonormal) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  // Columns graded from 1 to 1e-8: condition number ~1e8, past the X V / S shortcut's limit.
  Eigen::MatrixXd m = random_matrix(400, 20, 41);
  for (int j = 0; j < 20; ++j) m.col(j) *= std::pow(10.0, -8.0 * j / 19.0);
  auto f = linalg::svd(Array::from_eigen(m, chunked({45})));
  auto [u, s, vt] = tessera::compute(client, f.u, f.s, f.vt);
  const Eigen::VectorXd reference = lapack_singular_values(m);
  for (Eigen::Index i = 0; i < reference.size(); ++i)
    EXPECT_NEAR(s(i, 0), reference(i), 1e-12 * reference(0)) << i;
  EXPECT_LT(orthonormality_error(u), 1e-12);
  EXPECT_LT(orthonormality_error(vt.transpose()), 1e-12);
  EXPECT_LT((u * s.col(0).asDiagonal() * vt - m).cwiseAbs().maxCoeff(), 1e-13);
}

// Columns graded from 1 to 1 / condition, so the singular values span about that range.
Eigen::MatrixXd graded(std::int64_t rows, std::int64_t cols, double condition, std::uint64_t seed) {
  Eigen::MatrixXd m = random_matrix(rows, cols, seed);
  for (std::int64_t j = 0; j < cols; ++j)
    m.col(j) *= std::pow(condition, -static_cast<double>(j) / static_cast<double>(cols - 1));
  return m;
}

// Each singular value within 1e-10 of LAPACK's, relative to itself, on either side of the Gram path's limit
// (condition number 100): below it the Gram path runs; above it the graph's TSQR path does.
TEST(LinalgTest, EverySingularValueKeepsRelativeAccuracyOnBothPaths) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  for (double condition : {1.0, 30.0, 300.0, 1e6}) {
    const Eigen::MatrixXd m = graded(600, 25, condition, 43);
    auto f = linalg::svd(Array::from_eigen(m, chunked({110})));
    auto [u, s, vt] = tessera::compute(client, f.u, f.s, f.vt);
    const Eigen::VectorXd reference = lapack_singular_values(m);
    for (Eigen::Index i = 0; i < reference.size(); ++i)
      EXPECT_NEAR(s(i, 0), reference(i), 1e-10 * reference(i))
          << "condition " << condition << ", value " << i;
    EXPECT_LT(orthonormality_error(u), 1e-12) << condition;
    EXPECT_LT(orthonormality_error(vt.transpose()), 1e-12) << condition;
    EXPECT_LT((u * s.col(0).asDiagonal() * vt - m).cwiseAbs().maxCoeff(), 1e-13) << condition;
  }
}

TEST(LinalgTest, ANanInTheMatrixIsNamedWhicheverPathRuns) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  Eigen::MatrixXd m = random_matrix(300, 10, 44);
  m(123, 4) = std::numeric_limits<double>::quiet_NaN();
  auto f = linalg::svd(Array::from_eigen(m, chunked({100})));
  try {
    tessera::compute(client, f.u, f.s, f.vt);
    ADD_FAILURE() << "an SVD of a matrix holding NaN gave a result";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
  }
  // The cluster keeps working.
  const Eigen::MatrixXd fine = random_matrix(300, 10, 45);
  auto g = linalg::svd(Array::from_eigen(fine, chunked({100})));
  EXPECT_NEAR(g.s.compute(client)(0, 0), lapack_singular_values(fine)(0),
              1e-10 * lapack_singular_values(fine)(0));
}

TEST(LinalgTest, TsqrGivesOrthonormalQAndUpperTriangularR) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  const Eigen::MatrixXd m = random_matrix(500, 25, 3);
  for (std::int64_t chunk : {500, 77, 9}) {
    linalg::TsqrOptions options;
    options.fan_in = 3;
    options.leaf_rows = 30;
    auto f = linalg::tsqr(Array::from_eigen(m, chunked({chunk, 25})), options);
    auto [q, r] = tessera::compute(client, f.q, f.r);
    EXPECT_LT(orthonormality_error(q), 1e-13) << "chunks of " << chunk;
    EXPECT_EQ(r.rows(), 25);
    EXPECT_TRUE(r.isUpperTriangular(0.0)) << "chunks of " << chunk;
    EXPECT_LT((q * r - m).cwiseAbs().maxCoeff(), 1e-12) << "chunks of " << chunk;
  }
  auto short_fat = linalg::qr(Array::from_eigen(Eigen::MatrixXd(m.transpose()), chunked({25, 100})));
  auto [q, r] = tessera::compute(client, short_fat.q, short_fat.r);
  EXPECT_LT(orthonormality_error(q), 1e-13);
  EXPECT_LT((q * r - m.transpose()).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_THROW(linalg::tsqr(Array::from_eigen(Eigen::MatrixXd(m.transpose()))), tessera::SubmissionError);
}

TEST(LinalgTest, Float32SingularValuesWithin1e5OfLapack) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  const Eigen::MatrixXf m = random_matrix(400, 30, 5).cast<float>();
  auto f = linalg::svd(Array::from_eigen(m, chunked({90})));
  EXPECT_EQ(f.s.meta().dtype, tessera::backends::DType::float32);
  const Eigen::VectorXd s = f.s.compute_vector(client);
  const Eigen::VectorXf reference = lapack_singular_values(m);
  for (Eigen::Index i = 0; i < s.size(); ++i) EXPECT_NEAR(s(i), reference(i), 1e-5 * reference(0)) << i;
  EXPECT_LT(orthonormality_error(f.u.compute(client)), 1e-5);
}

TEST(LinalgTest, CompressedSvdFindsTheLeadingSingularTriplets) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  // Rank 5 plus small noise: the randomized SVD with two power iterations recovers the top 5.
  const Eigen::MatrixXd m =
      random_matrix(600, 5, 21) * random_matrix(5, 80, 22) + 1e-6 * random_matrix(600, 80, 23);
  linalg::SvdCompressedOptions options;
  options.power_iterations = 2;
  options.seed = 4;
  auto f = linalg::svd_compressed(Array::from_eigen(m, chunked({150})), 5, options);
  auto [u, s, vt] = tessera::compute(client, f.u, f.s, f.vt);
  const Eigen::VectorXd reference = lapack_singular_values(m);
  ASSERT_EQ(s.rows(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(s(i, 0), reference(i), 1e-8 * reference(0)) << i;
  EXPECT_LT(orthonormality_error(u), 1e-12);
  EXPECT_LT((u * s.col(0).asDiagonal() * vt - m).norm() / m.norm(), 1e-6);
  EXPECT_THROW(linalg::svd_compressed(Array::from_eigen(m), 0), tessera::SubmissionError);
}

TEST(LinalgTest, LeastSquaresMatchesTheMinimumNormSolution) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  const Eigen::MatrixXd a = random_matrix(300, 12, 31);
  const Eigen::VectorXd b = random_matrix(300, 1, 32).col(0);
  auto result = linalg::lstsq(Array::from_eigen(a, chunked({64})), Array::from_eigen(b, chunked({50})));
  const Eigen::VectorXd expected = a.colPivHouseholderQr().solve(b);
  EXPECT_TRUE(result.x.compute_vector(client).isApprox(expected, 1e-10));
  EXPECT_EQ(result.rank.compute_scalar(client), 12.0);
  EXPECT_NEAR(result.residuals.compute_scalar(client), (a * expected - b).squaredNorm(), 1e-9);
  // Rank-deficient: two equal columns; the minimum-norm solution splits their weight.
  Eigen::MatrixXd d = a;
  d.col(1) = d.col(0);
  auto deficient = linalg::lstsq(Array::from_eigen(d, chunked({64})), Array::from_eigen(b));
  EXPECT_EQ(deficient.rank.compute_scalar(client), 11.0);
  const Eigen::VectorXd x = deficient.x.compute_vector(client);
  EXPECT_TRUE(x.isApprox(d.completeOrthogonalDecomposition().solve(b), 1e-9));
  // Several right-hand sides.
  const Eigen::MatrixXd bs = random_matrix(300, 3, 33);
  auto multi = linalg::lstsq(Array::from_eigen(a, chunked({100})), Array::from_eigen(bs, chunked({100, 3})));
  EXPECT_TRUE(multi.x.compute(client).isApprox(a.colPivHouseholderQr().solve(bs), 1e-10));
  EXPECT_THROW(linalg::lstsq(Array::from_eigen(a), Array::from_eigen(Eigen::VectorXd(b.head(10)))),
               tessera::SubmissionError);
}

TEST(LinalgTest, SparseArraysNameTheMissingFactorization) {
  ArrayOptions o;
  o.backend = "sparse";
  try {
    (void)linalg::svd(Array::random({100, 10}, o));
    FAIL() << "no error";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("qr_factor"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sparse"), std::string::npos) << e.what();
  }
}

}  // namespace
