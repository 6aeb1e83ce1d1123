// NumPy .npy files (format versions 1-3): little-endian float64 ('<f8') and float32 ('<f4'), 1-D or 2-D, C or
// Fortran order. Blocks of rows are read straight from the file, so each chunk of an array reads only its
// own bytes. Anything else (another dtype, a big-endian file, a truncated one) is a KernelError naming the
// file and what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/chunk.hpp"

namespace tessera::backends::npy {

struct Header {
  DType dtype = DType::float64;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;  // 1 or 2 extents
  std::int64_t data_offset = 0;     // bytes before the first element
  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::int64_t cols() const { return shape.size() == 2 ? shape[1] : 1; }
};

Header read_header(const std::string& path);
// Rows [row0, row0 + rows) and columns [col0, col0 + cols) as a dense cpu chunk of the file's dtype.
ChunkPtr read_block(const std::string& path, const Header& header, std::int64_t row0, std::int64_t rows,
                    std::int64_t col0, std::int64_t cols);
// Writes a column-major matrix as a Fortran-order .npy file (1-D when `one_dimensional`).
template <class T>
void write(const std::string& path, const DenseMatrix<T>& matrix, bool one_dimensional = false);

}  // namespace tessera::backends::npy
