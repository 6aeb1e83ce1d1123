// Arrays: creation, meta known without computing, elementwise operations with broadcasting, products,
// layout and reductions, on ragged chunkings, checked against Eigen on the same values; sparse chunks
// against their dense equivalents; and the errors a wrong shape or a missing kernel gets.
#include <gtest/gtest.h>

#include <tessera/array.hpp>
#include <tessera/tessera.hpp>

#include "backends/dispatch.hpp"

namespace {

using tessera::Array;
using tessera::ArrayOptions;

Eigen::MatrixXd test_matrix(std::int64_t rows, std::int64_t cols, double shift = 0.0) {
  Eigen::MatrixXd m(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      m(i, j) = std::sin(0.7 * static_cast<double>(i) + 1.3 * static_cast<double>(j)) + shift;
  return m;
}

ArrayOptions chunked(std::vector<std::int64_t> chunks) {
  ArrayOptions o;
  o.chunks = std::move(chunks);
  return o;
}

Eigen::MatrixXd block_function(std::int64_t row0, std::int64_t col0, std::int64_t rows, std::int64_t cols) {
  Eigen::MatrixXd m(rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) m(i, j) = static_cast<double>(100 * (row0 + i) + col0 + j);
  return m;
}
TESSERA_TASK(block_function);

class ArrayTest : public ::testing::Test {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
};

TEST_F(ArrayTest, MetaAndChunksAreKnownWithoutComputing) {
  auto x = Array::random({10, 7}, chunked({4, 3}));
  EXPECT_EQ(x.shape(), (std::vector<std::int64_t>{10, 7}));
  EXPECT_EQ(x.chunks(), (std::vector<std::vector<std::int64_t>>{{4, 4, 2}, {3, 3, 1}}));
  EXPECT_EQ(x.nchunks(), 9u);
  EXPECT_EQ(x.meta(), (tessera::Meta{tessera::backends::Backend::cpu, tessera::backends::DType::float64}));
  auto y = (x.astype("float32") * 2.0).sum(0);
  EXPECT_EQ(y.ndim(), 1);
  EXPECT_EQ(y.shape(), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(y.meta().dtype, tessera::backends::DType::float32);
  EXPECT_EQ(x.to_backend("sparse").exp().meta().backend, tessera::backends::Backend::cpu);
  EXPECT_EQ(x.to_backend("sparse").abs().meta().backend, tessera::backends::Backend::sparse);
}

TEST_F(ArrayTest, FromEigenRoundTripsOnRaggedChunks) {
  const Eigen::MatrixXd m = test_matrix(13, 5);
  for (auto chunks : std::vector<std::vector<std::int64_t>>{{13, 5}, {4, 2}, {1, 1}, {5}}) {
    EXPECT_EQ(Array::from_eigen(m, chunked(chunks)).compute(client), m);
  }
  const Eigen::VectorXd v = test_matrix(9, 1).col(0);
  auto a = Array::from_eigen(v, chunked({4}));
  EXPECT_EQ(a.ndim(), 1);
  EXPECT_EQ(a.compute_vector(client), v);
}

TEST_F(ArrayTest, RandomIsTheSameWhateverTheChunksAndWorkers) {
  ArrayOptions o = chunked({7, 3});
  o.seed = 42;
  const Eigen::MatrixXd a = Array::random({20, 9}, o).compute(client);
  o.chunks = {20, 9};
  const Eigen::MatrixXd b = Array::random({20, 9}, o).compute(client);
  EXPECT_EQ(a, b);
  tessera::LocalCluster other{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client other_client{other};
  o.chunks = {3, 4};
  EXPECT_EQ(Array::random({20, 9}, o).compute(other_client), a);
  EXPECT_GE(a.minCoeff(), 0.0);
  EXPECT_LT(a.maxCoeff(), 1.0);
  o.seed = 43;
  EXPECT_NE(Array::random({20, 9}, o).compute(client), a);
  o.distribution = "normal";
  o.low = 5.0;
  o.high = 2.0;
  const Eigen::MatrixXd n = Array::random({300, 100}, o).compute(client);
  EXPECT_NEAR(n.mean(), 5.0, 0.05);
  EXPECT_NEAR(std::sqrt((n.array() - n.mean()).square().mean()), 2.0, 0.05);
}

TEST_F(ArrayTest, FilledArraysAndBlockFunctions) {
  EXPECT_EQ(Array::zeros({5, 4}, chunked({2, 3})).compute(client), Eigen::MatrixXd::Zero(5, 4));
  EXPECT_EQ(Array::ones({6}, chunked({4})).compute_vector(client), Eigen::VectorXd::Ones(6));
  EXPECT_EQ(Array::full({3, 3}, 2.5).compute(client), Eigen::MatrixXd::Constant(3, 3, 2.5));
  const Eigen::MatrixXd f = Array::from_function("block_function", {7, 5}, chunked({3, 2})).compute(client);
  EXPECT_EQ(f, block_function(0, 0, 7, 5));
  EXPECT_THROW(Array::from_function("no_such_function", {2, 2}), tessera::SubmissionError);
}

TEST_F(ArrayTest, ElementwiseWithScalarsAndBroadcasting) {
  const Eigen::MatrixXd m = test_matrix(11, 6), n = test_matrix(11, 6, 3.0);
  auto a = Array::from_eigen(m, chunked({4, 4}));
  auto b = Array::from_eigen(n, chunked({5, 3}));  // different chunks: b is regridded to a's
  EXPECT_TRUE((a + b).compute(client).isApprox(m + n));
  EXPECT_TRUE((a - b).compute(client).isApprox(m - n));
  EXPECT_TRUE((a * b).compute(client).isApprox(m.cwiseProduct(n)));
  EXPECT_TRUE((a / b).compute(client).isApprox(m.cwiseQuotient(n)));
  EXPECT_TRUE((2.0 - a * 3.0).compute(client).isApprox((2.0 - 3.0 * m.array()).matrix()));
  EXPECT_TRUE((1.0 / b).compute(client).isApprox(n.cwiseInverse()));
  EXPECT_TRUE((-a).compute(client).isApprox(-m));
  EXPECT_TRUE(b.log().exp().compute(client).isApprox(n));
  EXPECT_TRUE(a.abs().sqrt().square().compute(client).isApprox(m.cwiseAbs()));
  EXPECT_TRUE(a.sigmoid().compute(client).isApprox((1.0 / (1.0 + (-m.array()).exp())).matrix()));
  EXPECT_TRUE(b.pow(2.0).compute(client).isApprox(n.cwiseProduct(n)));
  EXPECT_TRUE(a.maximum(b * 0.0).compute(client).isApprox(m.cwiseMax(0.0)));
  // A row (1-D or 1 x n) broadcasts down the rows; a column (m x 1) along them.
  const Eigen::VectorXd row = test_matrix(6, 1).col(0), column = test_matrix(11, 1, 1.0).col(0);
  auto r = Array::from_eigen(row, chunked({4}));
  auto c = Array::from_eigen(Eigen::MatrixXd(column), chunked({3, 1}));
  EXPECT_TRUE((a + r).compute(client).isApprox(m.rowwise() + row.transpose()));
  EXPECT_TRUE((a * c).compute(client).isApprox((m.array().colwise() * column.array()).matrix()));
  EXPECT_TRUE((a - a.mean(0)).compute(client).isApprox(m.rowwise() - m.colwise().mean()));
}

TEST_F(ArrayTest, FusedElementwiseChainsAndTheirReductionsMatchEigen) {
  const Eigen::MatrixXd m = test_matrix(3000, 7);
  auto a = Array::from_eigen(m, chunked({1100, 3}));
  auto chain = ((a * 2.0 + 1.0).abs().sqrt() - 0.5).square();
  const Eigen::ArrayXXd expected = ((2.0 * m.array() + 1.0).abs().sqrt() - 0.5).square();
  EXPECT_TRUE(chain.compute(client).isApprox(expected.matrix()));
  EXPECT_NEAR(chain.sum().compute_scalar(client), expected.sum(), 1e-9);
  EXPECT_TRUE(chain.sum(0).compute_vector(client).isApprox(expected.colwise().sum().transpose().matrix()));
  EXPECT_TRUE(chain.max(1).compute_vector(client).isApprox(expected.rowwise().maxCoeff().matrix()));
  EXPECT_EQ(chain.min().compute_scalar(client), expected.minCoeff());
  EXPECT_NEAR(chain.norm().compute_scalar(client), expected.matrix().norm(), 1e-9);
  EXPECT_NEAR((1.0 - a).mean().compute_scalar(client), (1.0 - m.array()).mean(), 1e-12);
  // A persisted chain is the start of new ones.
  auto kept = (a * 3.0).persist(client);
  EXPECT_TRUE(
      (kept + 1.0).sum(1).compute_vector(client).isApprox((3.0 * m.array() + 1.0).rowwise().sum().matrix()));
  EXPECT_THROW(a.pow(2.0).log().sum(7), tessera::SubmissionError);
}

TEST_F(ArrayTest, ComparisonsGiveMasksAndWhereChooses) {
  const Eigen::MatrixXd m = test_matrix(9, 4);
  auto a = Array::from_eigen(m, chunked({4, 3}));
  const Eigen::MatrixXd mask = (a > 0.0).compute(client);
  EXPECT_EQ(mask, (m.array() > 0.0).cast<double>().matrix());
  EXPECT_EQ((a <= a * 0.5).compute(client), (m.array() <= 0.5 * m.array()).cast<double>().matrix());
  EXPECT_EQ(tessera::where(a > 0.0, a, 0.0).compute(client), m.cwiseMax(0.0));
  EXPECT_EQ(tessera::where(a < 0.0, -1.0, a).compute(client), (m.array() < 0).select(-1.0, m));
  EXPECT_EQ(a.eq(a).compute(client), Eigen::MatrixXd::Ones(9, 4));
}

TEST_F(ArrayTest, MatmulContractsOverMismatchedChunks) {
  const Eigen::MatrixXd m = test_matrix(23, 17), n = test_matrix(17, 9, 0.5);
  auto a = Array::from_eigen(m, chunked({5, 4}));
  auto b = Array::from_eigen(n, chunked({6, 4}));
  EXPECT_TRUE(a.dot(b).compute(client).isApprox(m * n, 1e-12));
  EXPECT_TRUE(a.T().dot(a).compute(client).isApprox(m.transpose() * m, 1e-12));
  EXPECT_TRUE(b.T().dot(a.T()).compute(client).isApprox(n.transpose() * m.transpose(), 1e-12));
  EXPECT_TRUE(a.T().compute(client).isApprox(m.transpose()));
  EXPECT_EQ(a.T().T().compute(client), m);
  const Eigen::VectorXd v = test_matrix(17, 1).col(0), w = test_matrix(23, 1).col(0);
  auto av = a.dot(Array::from_eigen(v, chunked({3})));
  EXPECT_EQ(av.ndim(), 1);
  EXPECT_TRUE(av.compute_vector(client).isApprox(m * v, 1e-12));
  auto wa = Array::from_eigen(w, chunked({7})).dot(a);
  EXPECT_EQ(wa.ndim(), 1);
  EXPECT_TRUE(wa.compute_vector(client).isApprox(m.transpose() * w, 1e-12));
  auto ww = Array::from_eigen(w, chunked({7})).dot(Array::from_eigen(w, chunked({5})));
  EXPECT_EQ(ww.ndim(), 0);
  EXPECT_NEAR(ww.compute_scalar(client), w.squaredNorm(), 1e-12);
  // More than eight chunk pairs along the contraction: partial products summed by a tree.
  auto tall = Array::from_eigen(test_matrix(40, 3), chunked({2, 3}));
  EXPECT_TRUE(tall.T().dot(tall).compute(client).isApprox(test_matrix(40, 3).transpose() * test_matrix(40, 3),
                                                          1e-12));
}

TEST_F(ArrayTest, SlicingConcatenationAndRechunking) {
  const Eigen::MatrixXd m = test_matrix(14, 9);
  auto a = Array::from_eigen(m, chunked({4, 4}));
  EXPECT_EQ(a.slice_rows(3, 11).compute(client), m.middleRows(3, 8));
  EXPECT_EQ(a.slice_cols(2, 9).compute(client), m.middleCols(2, 7));
  EXPECT_EQ(a.slice_rows(5, 5).rows(), 0);
  EXPECT_EQ(a.rechunk({5, 2}).chunks(), (std::vector<std::vector<std::int64_t>>{{5, 5, 4}, {2, 2, 2, 2, 1}}));
  EXPECT_EQ(a.rechunk({5, 2}).compute(client), m);
  EXPECT_EQ(a.rechunk({14, 9}).nchunks(), 1u);
  auto b = Array::from_eigen(test_matrix(3, 9, 1.0), chunked({2, 3}));
  Eigen::MatrixXd stacked(17, 9);
  stacked << m, test_matrix(3, 9, 1.0);
  EXPECT_EQ(tessera::concatenate({a, b}, 0).compute(client), stacked);
  Eigen::MatrixXd side(14, 18);
  side << m, m;
  EXPECT_EQ(tessera::concatenate({a, a.rechunk({7, 9})}, 1).compute(client), side);
  EXPECT_THROW(tessera::concatenate({a, b}, 1), tessera::SubmissionError);
  EXPECT_THROW(a.slice_rows(3, 15), tessera::SubmissionError);
}

TEST_F(ArrayTest, ReductionsOverEachAxis) {
  const Eigen::MatrixXd m = test_matrix(13, 7);
  auto a = Array::from_eigen(m, chunked({4, 3}));
  EXPECT_NEAR(a.sum().compute_scalar(client), m.sum(), 1e-12);
  EXPECT_TRUE(a.sum(0).compute_vector(client).isApprox(m.colwise().sum().transpose()));
  EXPECT_TRUE(a.sum(1).compute_vector(client).isApprox(m.rowwise().sum()));
  EXPECT_TRUE(a.mean(1).compute_vector(client).isApprox(m.rowwise().mean()));
  EXPECT_EQ(a.min().compute_scalar(client), m.minCoeff());
  EXPECT_EQ(a.max(0).compute_vector(client), m.colwise().maxCoeff().transpose());
  EXPECT_EQ(a.min(-1).compute_vector(client), m.rowwise().minCoeff());
  EXPECT_NEAR(a.norm().compute_scalar(client), m.norm(), 1e-12);
  Eigen::Index r, c;
  m.maxCoeff(&r, &c);
  EXPECT_EQ(a.argmax().compute_scalar(client), static_cast<double>(r * 7 + c));
  const Eigen::VectorXd column_argmin = a.argmin(0).compute_vector(client);
  for (Eigen::Index j = 0; j < 7; ++j) {
    Eigen::Index at;
    m.col(j).minCoeff(&at);
    EXPECT_EQ(column_argmin(j), static_cast<double>(at)) << "column " << j;
  }
  const Eigen::VectorXd row_argmax = a.argmax(1).compute_vector(client);
  for (Eigen::Index i = 0; i < 13; ++i) {
    Eigen::Index at;
    m.row(i).maxCoeff(&at);
    EXPECT_EQ(row_argmax(i), static_cast<double>(at)) << "row " << i;
  }
  const Eigen::VectorXd v = m.col(0);
  EXPECT_NEAR(Array::from_eigen(v, chunked({5})).norm().compute_scalar(client), v.norm(), 1e-12);
  EXPECT_THROW(a.sum(2), tessera::SubmissionError);
}

TEST_F(ArrayTest, Float32StaysFloat32AndPromotesWithFloat64) {
  const Eigen::MatrixXd m = test_matrix(10, 4);
  auto a = Array::from_eigen(Eigen::MatrixXf(m.cast<float>()), chunked({3, 4}));
  EXPECT_EQ(a.meta().dtype, tessera::backends::DType::float32);
  EXPECT_TRUE(a.T().dot(a).compute(client).isApprox(m.transpose() * m, 1e-5));
  auto mixed = a + Array::from_eigen(m, chunked({5, 2}));
  EXPECT_EQ(mixed.meta().dtype, tessera::backends::DType::float64);
  EXPECT_TRUE(mixed.compute(client).isApprox(2 * m, 1e-6));
}

TEST_F(ArrayTest, PersistKeepsChunksOnTheWorkers) {
  const Eigen::MatrixXd m = test_matrix(12, 5);
  auto a = (Array::from_eigen(m, chunked({4, 5})) * 2.0).persist(client);
  EXPECT_EQ(a.nchunks(), 3u);
  EXPECT_TRUE((a + 1.0).compute(client).isApprox((2.0 * m.array() + 1.0).matrix()));
  EXPECT_TRUE(a.sum(0).compute_vector(client).isApprox(2.0 * m.colwise().sum().transpose()));
}

TEST_F(ArrayTest, SparseChunksMatchTheirDenseValues) {
  ArrayOptions o = chunked({30, 20});
  o.backend = "sparse";
  o.density = 0.05;
  o.seed = 7;
  auto s = Array::random({100, 50}, o);
  EXPECT_EQ(s.meta().backend, tessera::backends::Backend::sparse);
  const Eigen::MatrixXd d = s.compute(client);
  const double stored = static_cast<double>((d.array() != 0.0).count());
  EXPECT_GT(stored, 0.02 * 5000);
  EXPECT_LT(stored, 0.08 * 5000);
  const Eigen::MatrixXd dense = test_matrix(50, 8);
  auto x = Array::from_eigen(dense, chunked({20, 8}));
  auto product = s.dot(x);
  EXPECT_EQ(product.meta().backend, tessera::backends::Backend::cpu);
  EXPECT_TRUE(product.compute(client).isApprox(d * dense, 1e-12));
  auto gram = s.T().dot(s);
  EXPECT_EQ(gram.meta().backend, tessera::backends::Backend::sparse);
  EXPECT_TRUE(gram.compute(client).isApprox(d.transpose() * d, 1e-12));
  EXPECT_TRUE((s * 3.0).compute(client).isApprox(3.0 * d));
  EXPECT_TRUE((s + s).compute(client).isApprox(2.0 * d));
  EXPECT_TRUE(s.exp().compute(client).isApprox(d.array().exp().matrix()));
  EXPECT_NEAR(s.sum().compute_scalar(client), d.sum(), 1e-12);
  EXPECT_TRUE(s.sum(0).compute_vector(client).isApprox(d.colwise().sum().transpose()));
  EXPECT_EQ(s.max(1).compute_vector(client), d.rowwise().maxCoeff());
  EXPECT_EQ(s.slice_rows(10, 70).compute(client), d.middleRows(10, 60));
  EXPECT_EQ(s.to_backend("cpu").to_backend("sparse").compute(client), d);
  Eigen::SparseMatrix<double> eigen_sparse = d.sparseView();
  auto from_sparse = Array::from_sparse(eigen_sparse, chunked({40, 50}));
  EXPECT_EQ(from_sparse.meta().backend, tessera::backends::Backend::sparse);
  EXPECT_EQ(from_sparse.compute(client), d);
  EXPECT_TRUE(from_sparse.compute_sparse(client).isApprox(eigen_sparse));
}

TEST_F(ArrayTest, WrongShapesAreErrorsAtTheCallNamingBothShapes) {
  auto a = Array::zeros({4, 3});
  auto b = Array::zeros({5, 3});
  try {
    (void)(a + b);
    FAIL() << "no error";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("(4, 3)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(5, 3)"), std::string::npos) << e.what();
  }
  try {
    (void)a.dot(b);
    FAIL() << "no error";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("do not contract"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Array::zeros({2, 2}, ArrayOptions{.backend = "tpu"}), tessera::SubmissionError);
  EXPECT_THROW(Array::zeros({2, 2}, ArrayOptions{.dtype = "int8"}), tessera::SubmissionError);
  EXPECT_THROW(Array::zeros({2, 2, 2}), tessera::SubmissionError);
}

TEST_F(ArrayTest, CudaArraysMatchCpuOrSkipLoudly) {
  const auto availability =
      tessera::backends::Dispatch::global().availability(tessera::backends::Backend::cuda);
  if (!availability.available) {
    EXPECT_THROW(Array::zeros({2, 2}).to_backend("cuda"), tessera::SubmissionError);
    GTEST_SKIP() << "cuda backend unavailable: " << availability.reason;
  }
  const Eigen::MatrixXd m = test_matrix(37, 11);
  auto a = Array::from_eigen(m, chunked({10, 11}));
  auto g = a.to_backend("cuda");
  EXPECT_EQ(g.meta().backend, tessera::backends::Backend::cuda);
  EXPECT_TRUE(((g * 2.0 + 1.0).exp().sum(0))
                  .compute(client)
                  .isApprox(((a * 2.0 + 1.0).exp().sum(0)).compute(client), 1e-12));
  EXPECT_TRUE(g.T().dot(g).compute(client).isApprox(m.transpose() * m, 1e-12));
  EXPECT_EQ(g.argmax(0).compute(client), a.argmax(0).compute(client));
}

}  // namespace
