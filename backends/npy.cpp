#include "backends/npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>

namespace tessera::backends::npy {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw KernelError("npy file " + path + ": " + what);
}

}  // namespace

Header read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be opened");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(path, "is not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_length = 0;
  std::int64_t prefix = 0;
  if (major == 1) {
    unsigned char len[2];
    if (!in.read(reinterpret_cast<char*>(len), 2)) fail(path, "truncated header");
    header_length = static_cast<std::uint32_t>(len[0] | (len[1] << 8));
    prefix = 10;
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    if (!in.read(reinterpret_cast<char*>(len), 4)) fail(path, "truncated header");
    header_length = static_cast<std::uint32_t>(len[0] | (len[1] << 8) | (len[2] << 16) |
                                               (static_cast<std::uint32_t>(len[3]) << 24));
    prefix = 12;
  } else {
    fail(path, "format version " + std::to_string(major) + " is not supported");
  }
  if (header_length > (1u << 20))
    fail(path, "header of " + std::to_string(header_length) + " bytes is implausible");
  std::string text(header_length, '\0');
  if (!in.read(text.data(), header_length)) fail(path, "truncated header");
  Header h;
  h.data_offset = prefix + header_length;
  // The header is a Python dict literal; its three keys are found by hand (std::regex draws false
  // -Wmaybe-uninitialized warnings from g++ 12 in sanitizer builds).
  auto value_after = [&](const std::string& key) -> std::size_t {
    const auto at = text.find("'" + key + "'");
    if (at == std::string::npos) fail(path, "header has no " + key);
    const auto colon = text.find(':', at);
    if (colon == std::string::npos) fail(path, "header has no value for " + key);
    return text.find_first_not_of(" \t", colon + 1);
  };
  const auto descr_at = value_after("descr");
  const auto descr_end = descr_at == std::string::npos ? std::string::npos : text.find('\'', descr_at + 1);
  if (descr_at == std::string::npos || text[descr_at] != '\'' || descr_end == std::string::npos)
    fail(path, "header's descr is not a string");
  const std::string descr = text.substr(descr_at + 1, descr_end - descr_at - 1);
  if (descr == "<f8")
    h.dtype = DType::float64;
  else if (descr == "<f4")
    h.dtype = DType::float32;
  else
    fail(path, "dtype '" + descr + "' is not supported (little-endian float64 '<f8' or float32 '<f4')");
  const auto order_at = value_after("fortran_order");
  if (order_at != std::string::npos && text.compare(order_at, 4, "True") == 0)
    h.fortran_order = true;
  else if (order_at != std::string::npos && text.compare(order_at, 5, "False") == 0)
    h.fortran_order = false;
  else
    fail(path, "header's fortran_order is not True or False");
  const auto shape_at = value_after("shape");
  const auto shape_end = shape_at == std::string::npos ? std::string::npos : text.find(')', shape_at);
  if (shape_at == std::string::npos || text[shape_at] != '(' || shape_end == std::string::npos)
    fail(path, "header's shape is not a tuple");
  const std::string dims = text.substr(shape_at + 1, shape_end - shape_at - 1);
  for (std::size_t i = 0; i < dims.size();) {
    if (!std::isdigit(static_cast<unsigned char>(dims[i]))) {
      if (dims[i] != ',' && dims[i] != ' ') fail(path, "shape (" + dims + ") is not a tuple of extents");
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < dims.size() && std::isdigit(static_cast<unsigned char>(dims[end]))) ++end;
    if (end - i > 15) fail(path, "shape (" + dims + ") has an implausible extent");
    h.shape.push_back(std::stoll(dims.substr(i, end - i)));
    i = end;
  }
  if (h.shape.empty() || h.shape.size() > 2) fail(path, "shape (" + dims + ") is not 1-D or 2-D");
  in.seekg(0, std::ios::end);
  const auto file_bytes = static_cast<std::int64_t>(in.tellg());
  const auto needed = h.data_offset + h.rows() * h.cols() * static_cast<std::int64_t>(dtype_size(h.dtype));
  if (file_bytes < needed)
    fail(path,
         "holds " + std::to_string(file_bytes) + " bytes, its header promises " + std::to_string(needed));
  return h;
}

ChunkPtr read_block(const std::string& path, const Header& h, std::int64_t row0, std::int64_t rows,
                    std::int64_t col0, std::int64_t cols) {
  if (row0 < 0 || rows < 0 || row0 + rows > h.rows() || col0 < 0 || cols < 0 || col0 + cols > h.cols())
    fail(path, "block out of range");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be opened");
  auto read_into = [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    const auto element = static_cast<std::int64_t>(sizeof(T));
    auto read_run = [&](std::int64_t first_element, std::int64_t count, T* dest) {
      in.seekg(h.data_offset + first_element * element);
      if (!in.read(reinterpret_cast<char*>(dest), count * element)) fail(path, "truncated data");
    };
    if (h.fortran_order) {
      for (std::int64_t j = 0; j < cols; ++j) read_run((col0 + j) * h.rows() + row0, rows, out + j * rows);
    } else {
      // Row-major on disk: read whole rows, then scatter into column-major storage.
      std::vector<T> row_major(static_cast<std::size_t>(rows * cols));
      if (cols == h.cols()) {
        read_run(row0 * h.cols(), rows * cols, row_major.data());
      } else {
        for (std::int64_t i = 0; i < rows; ++i)
          read_run((row0 + i) * h.cols() + col0, cols, row_major.data() + i * cols);
      }
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          out[j * rows + i] = row_major[static_cast<std::size_t>(i * cols + j)];
    }
  };
  if (h.dtype == DType::float64) {
    DenseMatrix<double> m(rows, cols);
    read_into(m.data());
    return Chunk::dense<double>(std::move(m));
  }
  DenseMatrix<float> m(rows, cols);
  read_into(m.data());
  return Chunk::dense<float>(std::move(m));
}

template <class T>
void write(const std::string& path, const DenseMatrix<T>& matrix, bool one_dimensional) {
  std::string header = std::string("{'descr': '") + (std::is_same_v<T, double> ? "<f8" : "<f4") +
                       "', 'fortran_order': True, 'shape': (" + std::to_string(matrix.rows()) +
                       (one_dimensional ? std::string(",") : ", " + std::to_string(matrix.cols())) + "), }";
  // Padded with spaces so the data starts at a multiple of 64 bytes, ending in a newline.
  const std::size_t total = ((10 + header.size() + 1 + 63) / 64) * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot be created");
  const char prefix[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(prefix, 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(matrix.data()),
            static_cast<std::streamsize>(matrix.size() * sizeof(T)));
  if (!out) fail(path, "write failed");
}

template void write<double>(const std::string&, const DenseMatrix<double>&, bool);
template void write<float>(const std::string&, const DenseMatrix<float>&, bool);

}  // namespace tessera::backends::npy
