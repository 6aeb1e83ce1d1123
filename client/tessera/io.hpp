// Arrays to and from NumPy .npy files, so data moves between Tessera and Python.
#pragma once

#include <string>

#include "tessera/array.hpp"

namespace tessera::io {

struct NpyOptions {
  std::int64_t chunk_rows = 0;  // 0: one chunk of all rows
  std::int64_t chunk_cols = 0;  // 0: all columns in each chunk
  std::string backend = "cpu";
};

// Reads the header now (a bad file is an error at the call); each chunk reads its own block of the file
// when computed, where it is computed (a path every worker can reach).
Array from_npy(const std::string& path, const NpyOptions& options = {});
// Computes the array and writes it (Fortran order, the array's dtype; 1-D arrays as 1-D).
void to_npy(const Array& array, const std::string& path, Client& client);
// Writes a matrix or vector the caller already holds.
void write_npy(const std::string& path, const Eigen::MatrixXd& matrix);
void write_npy(const std::string& path, const Eigen::VectorXd& vector);

}  // namespace tessera::io
