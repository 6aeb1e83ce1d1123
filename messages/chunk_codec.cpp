#include "messages/chunk_codec.hpp"

#include <cstring>
#include <limits>

#include "backends/dispatch.hpp"
#include "backends/operations.hpp"

namespace tessera::wire {
namespace {

using backends::Backend;
using backends::DType;

void encode_blob(const void* data, std::size_t bytes, const tessera::Value& owner, Blob::Builder out,
                 Attachments& attachments, const EncodeOptions& options) {
  out.setSize(bytes);
  if (bytes >= options.attachment_threshold) {
    out.setAttachment(static_cast<std::uint32_t>(attachments.frames.size()));
    attachments.frames.emplace_back(static_cast<const std::byte*>(data), bytes);
    attachments.keep.push_back(owner);
    return;
  }
  out.setInline(kj::arrayPtr(static_cast<const kj::byte*>(data), bytes));
}

// The blob's bytes, checked to be exactly `expected` long.
std::span<const std::byte> blob_bytes(Blob::Reader in, const Frames& frames, std::size_t expected,
                                      const char* what) {
  std::span<const std::byte> bytes;
  if (in.isInline()) {
    auto data = in.getInline();
    bytes = {reinterpret_cast<const std::byte*>(data.begin()), data.size()};
  } else {
    const auto index = in.getAttachment();
    if (index >= frames.size())
      throw WireError(std::string("chunk ") + what + ": refers to frame " + std::to_string(index) +
                      ", the message has " + std::to_string(frames.size()));
    bytes = frames[index];
  }
  if (bytes.size() != in.getSize() || bytes.size() != expected)
    throw WireError(std::string("chunk ") + what + ": carries " + std::to_string(bytes.size()) +
                    " bytes, declares " + std::to_string(in.getSize()) + ", the shape needs " +
                    std::to_string(expected));
  return bytes;
}

// Blobs from this size up are adopted rather than copied, when their frame has an owner: below it a copy
// costs less than keeping a received message alive for one small chunk.
constexpr std::size_t kAdoptBytes = std::size_t{64} << 10;

// The owner of the blob's frame when the decoded chunk may keep it as its storage: an attachment of at
// least kAdoptBytes, with an owner, whose bytes are aligned for T.
template <class T>
std::shared_ptr<const void> adoptable(Blob::Reader in, const Frames& frames,
                                      std::span<const std::byte> bytes) {
  if (in.isInline() || bytes.size() < kAdoptBytes) return nullptr;
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(T) != 0) return nullptr;
  return frames.owner(in.getAttachment());
}

template <class T>
backends::ChunkPtr decode_dense(Chunk::Reader in, const Frames& frames, std::int64_t rows, std::int64_t cols,
                                std::size_t elements) {
  const auto bytes = blob_bytes(in.getValues(), frames, elements * sizeof(T), "values");
  if (auto owner = adoptable<T>(in.getValues(), frames, bytes))
    return backends::Chunk::adopt_dense<T>(std::move(owner), reinterpret_cast<const T*>(bytes.data()), rows,
                                           cols);
  backends::DenseMatrix<T> m(rows, cols);
  if (elements) std::memcpy(m.data(), bytes.data(), bytes.size());  // the frame may be unaligned
  return backends::Chunk::dense<T>(std::move(m));
}

template <class T>
std::vector<T> copy_out(std::span<const std::byte> bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());  // frames may be unaligned
  return out;
}

std::size_t checked_product(std::uint64_t a, std::uint64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / 16 / a)
    throw WireError(std::string("chunk ") + what + ": " + std::to_string(a) + " x " + std::to_string(b) +
                    " overflows");
  return static_cast<std::size_t>(a * b);
}

template <class T>
backends::ChunkPtr decode_sparse(Chunk::Reader in, const Frames& frames, std::int64_t rows,
                                 std::int64_t cols) {
  const auto outer = copy_out<std::int64_t>(
      blob_bytes(in.getOuterStarts(), frames, (static_cast<std::size_t>(cols) + 1) * 8, "outer starts"));
  const std::int64_t nonzeros = outer.back();
  if (outer.front() != 0 || nonzeros < 0 ||
      static_cast<std::uint64_t>(nonzeros) >
          static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols))
    throw WireError("sparse chunk: outer starts run from " + std::to_string(outer.front()) + " to " +
                    std::to_string(nonzeros));
  for (std::size_t j = 0; j + 1 < outer.size(); ++j)
    if (outer[j + 1] < outer[j])
      throw WireError("sparse chunk: outer starts decrease at column " + std::to_string(j));
  const auto inner = copy_out<std::int64_t>(
      blob_bytes(in.getInnerIndices(), frames, static_cast<std::size_t>(nonzeros) * 8, "inner indices"));
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t k = outer[static_cast<std::size_t>(j)]; k < outer[static_cast<std::size_t>(j) + 1];
         ++k) {
      const auto row = inner[static_cast<std::size_t>(k)];
      if (row < 0 || row >= rows ||
          (k > outer[static_cast<std::size_t>(j)] && inner[static_cast<std::size_t>(k) - 1] >= row))
        throw WireError("sparse chunk: row index " + std::to_string(row) + " in column " + std::to_string(j) +
                        " is out of range or out of order");
    }
  const auto values = copy_out<T>(
      blob_bytes(in.getValues(), frames, static_cast<std::size_t>(nonzeros) * sizeof(T), "values"));
  backends::SparseMatrix<T> m(rows, cols);
  m.reserve(nonzeros);
  m.resizeNonZeros(nonzeros);
  std::memcpy(m.outerIndexPtr(), outer.data(), outer.size() * sizeof(std::int64_t));
  if (nonzeros > 0) {
    std::memcpy(m.innerIndexPtr(), inner.data(), inner.size() * sizeof(std::int64_t));
    std::memcpy(m.valuePtr(), values.data(), values.size() * sizeof(T));
  }
  return backends::Chunk::sparse<T>(std::move(m));
}

}  // namespace

void encode_chunk(const backends::ChunkPtr& chunk_in, Chunk::Builder out, Attachments& attachments,
                  const EncodeOptions& options) {
  backends::ChunkPtr chunk = chunk_in;
  if (chunk->backend() == Backend::cuda)
    chunk = backends::Dispatch::global().run(backends::ops::to_host, std::array{chunk}, {}).front();
  const tessera::Value owner(chunk);  // keeps the elements alive until the frames are sent
  out.setRows(static_cast<std::uint64_t>(chunk->rows()));
  out.setCols(static_cast<std::uint64_t>(chunk->cols()));
  out.setDtype(static_cast<std::uint8_t>(chunk->dtype()));
  out.setBackend(static_cast<std::uint8_t>(chunk_in->backend()));
  if (chunk->backend() == Backend::sparse) {
    backends::visit_sparse(*chunk, [&](const auto& m) {
      using T = typename std::decay_t<decltype(m)>::Scalar;
      encode_blob(m.outerIndexPtr(), static_cast<std::size_t>(m.cols() + 1) * 8, owner, out.initOuterStarts(),
                  attachments, options);
      encode_blob(m.innerIndexPtr(), static_cast<std::size_t>(m.nonZeros()) * 8, owner,
                  out.initInnerIndices(), attachments, options);
      encode_blob(m.valuePtr(), static_cast<std::size_t>(m.nonZeros()) * sizeof(T), owner, out.initValues(),
                  attachments, options);
    });
    return;
  }
  backends::visit_dense(*chunk, [&](const auto& m) {
    encode_blob(m.data(), static_cast<std::size_t>(m.size()) * sizeof(m.data()[0]), owner, out.initValues(),
                attachments, options);
  });
}

backends::ChunkPtr decode_chunk(Chunk::Reader in, const Frames& frames) {
  const std::uint64_t rows = in.getRows(), cols = in.getCols();
  if (rows > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()) ||
      cols > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    throw WireError("chunk: shape " + std::to_string(rows) + " x " + std::to_string(cols) + " is too large");
  if (in.getDtype() > 1) throw WireError("chunk: unknown element type " + std::to_string(in.getDtype()));
  if (in.getBackend() > 2) throw WireError("chunk: unknown backend " + std::to_string(in.getBackend()));
  const auto dtype = static_cast<DType>(in.getDtype());
  const auto backend = static_cast<Backend>(in.getBackend());
  const auto r = static_cast<std::int64_t>(rows), c = static_cast<std::int64_t>(cols);
  const std::size_t elements = checked_product(rows, cols, "shape");
  backends::ChunkPtr chunk;
  if (backend == Backend::sparse) {
    chunk = dtype == DType::float64 ? decode_sparse<double>(in, frames, r, c)
                                    : decode_sparse<float>(in, frames, r, c);
  } else if (dtype == DType::float64) {
    chunk = decode_dense<double>(in, frames, r, c, elements);
  } else {
    chunk = decode_dense<float>(in, frames, r, c, elements);
  }
  // A cuda chunk goes back onto this process's GPU; without one it stays a host chunk (same values).
  if (backend == Backend::cuda && backends::Dispatch::global().availability(Backend::cuda).available)
    chunk = backends::Dispatch::global().run(backends::ops::to_cuda, std::array{chunk}, {}).front();
  return chunk;
}

}  // namespace tessera::wire
