#include "tessera/io.hpp"

#include "backends/npy.hpp"
#include "client/array_graph.hpp"
#include "graph/array_tasks.hpp"

namespace tessera::io {

using namespace tessera::detail;

Array from_npy(const std::string& path, const NpyOptions& options) {
  backends::npy::Header header;
  try {
    header = backends::npy::read_header(path);
  } catch (const backends::KernelError& e) {
    throw SubmissionError(std::string("io::from_npy: ") + e.what());
  }
  const int ndim = static_cast<int>(header.shape.size());
  const auto row_chunks = regular_chunks(header.rows(), options.chunk_rows, "io::from_npy");
  const auto col_chunks = ndim == 2 ? regular_chunks(header.cols(), options.chunk_cols, "io::from_npy")
                                    : std::vector<std::int64_t>{1};
  const auto row_offsets = chunk_offsets(row_chunks), col_offsets = chunk_offsets(col_chunks);
  std::vector<DelayedArg> blocks;
  for (std::size_t i = 0; i < row_chunks.size(); ++i)
    for (std::size_t j = 0; j < col_chunks.size(); ++j)
      blocks.emplace_back(std::shared_ptr<DelayedNode>(
          new DelayedNode{&array_npy_function(),
                          {Value(path), Value(row_offsets[i]), Value(row_chunks[i]), Value(col_offsets[j]),
                           Value(col_chunks[j])}}));
  Array out = make_array(ndim, row_chunks, col_chunks, Meta{Backend::cpu, header.dtype}, std::move(blocks));
  return options.backend == "cpu" ? out : out.to_backend(options.backend);
}

void to_npy(const Array& array, const std::string& path, Client& client) {
  const Eigen::MatrixXd m = array.compute(client);
  const bool one_dimensional = array.ndim() == 1;
  try {
    if (array.meta().dtype == DType::float32)
      backends::npy::write<float>(path, m.cast<float>(), one_dimensional);
    else
      backends::npy::write<double>(path, m, one_dimensional);
  } catch (const backends::KernelError& e) {
    throw SubmissionError(std::string("io::to_npy: ") + e.what());
  }
}

void write_npy(const std::string& path, const Eigen::MatrixXd& matrix) {
  backends::npy::write<double>(path, matrix);
}
void write_npy(const std::string& path, const Eigen::VectorXd& vector) {
  backends::npy::write<double>(path, Eigen::MatrixXd(vector), true);
}

}  // namespace tessera::io
