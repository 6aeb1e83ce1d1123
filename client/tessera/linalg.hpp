// Linear algebra on chunked arrays, written once against the dispatch table (so it runs on every backend
// with the kernels): TSQR (Benson, Gleich and Demmel), QR, SVD, randomized SVD and least squares.
#pragma once

#include "tessera/array.hpp"

namespace tessera::linalg {

struct QR {
  Array q;  // m x k, orthonormal columns (k = min(m, n))
  Array r;  // k x n, upper triangular
};

struct SVD {
  Array u;   // m x k, orthonormal columns; chunked by TSQR's leaves (groups of adjacent input chunks)
  Array s;   // k singular values, descending (1-D)
  Array vt;  // k x n, orthonormal rows
};

struct TsqrOptions {
  // Rows per leaf of the reduction tree: adjacent chunks are grouped up to at least this many rows
  // (0: 4 x columns, past which a leaf's own QR outweighs its share of the reduction).
  std::int64_t leaf_rows = 0;
  // R factors stacked per node of the reduction tree.
  std::size_t fan_in = 8;
};

// The QR factorization of a tall-skinny array (rows >= columns); its columns are brought into one chunk.
QR tsqr(const Array& a, const TsqrOptions& options = {});
// QR of any 2-D array: tall-skinny through tsqr, short-fat in one chunk.
QR qr(const Array& a);
// The thin SVD: tall-skinny through TSQR, short-fat through the transpose.
SVD svd(const Array& a, const TsqrOptions& options = {});

struct SvdCompressedOptions {
  std::int64_t oversampling = 10;
  int power_iterations = 0;
  std::uint64_t seed = 0;
};
// Rank-k randomized SVD (Halko, Martinsson and Tropp), with subspace (power) iterations.
SVD svd_compressed(const Array& a, std::int64_t k, const SvdCompressedOptions& options = {});

struct Lstsq {
  Array x;          // n (or n x nrhs) minimum-norm solution
  Array residuals;  // squared 2-norm of a x - b (per column of b)
  Array rank;       // 0-d: singular values above rcond * largest
  Array s;          // singular values of a
};
// Least squares through the SVD, as numpy.linalg.lstsq (rcond < 0: machine epsilon * max(m, n)).
Lstsq lstsq(const Array& a, const Array& b, double rcond = -1.0);

}  // namespace tessera::linalg
