#include "graph/value.hpp"

#include <sstream>

#include "graph/errors.hpp"

namespace tessera {

std::string_view kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::none:
      return "none";
    case ValueKind::integer:
      return "int";
    case ValueKind::real:
      return "double";
    case ValueKind::boolean:
      return "bool";
    case ValueKind::string:
      return "string";
    case ValueKind::bytes:
      return "bytes";
    case ValueKind::doubles:
      return "vector<double>";
    case ValueKind::vector:
      return "Eigen::VectorXd";
    case ValueKind::matrix:
      return "Eigen::MatrixXd";
    case ValueKind::list:
      return "list";
    case ValueKind::custom:
      return "custom";
    case ValueKind::chunk:
      return "chunk";
  }
  return "unknown";
}

void Value::throw_kind(ValueKind expected) const {
  std::string actual(kind_name(kind()));
  if (kind() == ValueKind::custom) actual = std::get<std::shared_ptr<const CustomValue>>(data_)->type_name;
  throw TypeError("expected " + std::string(kind_name(expected)) + ", got " + actual);
}

std::int64_t Value::as_int() const {
  if (auto* v = std::get_if<std::int64_t>(&data_)) return *v;
  throw_kind(ValueKind::integer);
}

double Value::as_double() const {
  if (auto* v = std::get_if<double>(&data_)) return *v;
  if (auto* v = std::get_if<std::int64_t>(&data_)) return static_cast<double>(*v);
  throw_kind(ValueKind::real);
}

bool Value::as_bool() const {
  if (auto* v = std::get_if<bool>(&data_)) return *v;
  throw_kind(ValueKind::boolean);
}

#define TESSERA_VALUE_ACCESSOR(method, type, kind_value)                        \
  const type& Value::method() const {                                           \
    if (auto* v = std::get_if<std::shared_ptr<const type>>(&data_)) return **v; \
    throw_kind(kind_value);                                                     \
  }
TESSERA_VALUE_ACCESSOR(as_string, std::string, ValueKind::string)
TESSERA_VALUE_ACCESSOR(as_bytes, Bytes, ValueKind::bytes)
TESSERA_VALUE_ACCESSOR(as_doubles, std::vector<double>, ValueKind::doubles)
TESSERA_VALUE_ACCESSOR(as_vector, Eigen::VectorXd, ValueKind::vector)
TESSERA_VALUE_ACCESSOR(as_matrix, Eigen::MatrixXd, ValueKind::matrix)
TESSERA_VALUE_ACCESSOR(as_list, Value::List, ValueKind::list)
TESSERA_VALUE_ACCESSOR(as_custom, CustomValue, ValueKind::custom)

const backends::ChunkPtr& Value::as_chunk() const {
  if (auto* v = std::get_if<backends::ChunkPtr>(&data_)) return *v;
  throw_kind(ValueKind::chunk);
}
#undef TESSERA_VALUE_ACCESSOR

bool Value::operator==(const Value& other) const {
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case ValueKind::none:
      return true;
    case ValueKind::integer:
      return as_int() == other.as_int();
    case ValueKind::real:
      return as_double() == other.as_double();
    case ValueKind::boolean:
      return as_bool() == other.as_bool();
    case ValueKind::string:
      return as_string() == other.as_string();
    case ValueKind::bytes:
      return as_bytes() == other.as_bytes();
    case ValueKind::doubles:
      return as_doubles() == other.as_doubles();
    case ValueKind::vector:
      return as_vector() == other.as_vector();
    case ValueKind::matrix: {
      const auto &a = as_matrix(), &b = other.as_matrix();
      return a.rows() == b.rows() && a.cols() == b.cols() && a == b;
    }
    case ValueKind::list:
      return as_list() == other.as_list();
    case ValueKind::custom:
      return as_custom().type_name == other.as_custom().type_name &&
             *as_custom().payload == *other.as_custom().payload;
    case ValueKind::chunk:
      return as_chunk() == other.as_chunk();  // chunks are immutable: the same chunk, not equal elements
  }
  return false;
}

std::string Value::to_string(std::size_t max_chars) const {
  std::ostringstream out;
  switch (kind()) {
    case ValueKind::none:
      out << "none";
      break;
    case ValueKind::integer:
      out << as_int();
      break;
    case ValueKind::real:
      out << as_double();
      break;
    case ValueKind::boolean:
      out << (as_bool() ? "true" : "false");
      break;
    case ValueKind::string:
      out << '"' << as_string() << '"';
      break;
    case ValueKind::bytes:
      out << "bytes[" << as_bytes().data.size() << "]";
      break;
    case ValueKind::doubles: {
      out << '[';
      const auto& v = as_doubles();
      for (std::size_t i = 0; i < v.size() && out.tellp() < static_cast<std::streamoff>(max_chars); ++i)
        out << (i ? ", " : "") << v[i];
      out << ']';
      break;
    }
    case ValueKind::vector:
      out << "VectorXd[" << as_vector().size() << "]";
      break;
    case ValueKind::matrix:
      out << "MatrixXd[" << as_matrix().rows() << "x" << as_matrix().cols() << "]";
      break;
    case ValueKind::list: {
      out << '(';
      const auto& v = as_list();
      for (std::size_t i = 0; i < v.size() && out.tellp() < static_cast<std::streamoff>(max_chars); ++i)
        out << (i ? ", " : "") << v[i].to_string(max_chars);
      out << ')';
      break;
    }
    case ValueKind::custom:
      out << as_custom().type_name << '{' << as_custom().payload->to_string(max_chars) << '}';
      break;
    case ValueKind::chunk:
      out << "chunk(" << as_chunk()->describe() << ')';
      break;
  }
  std::string text = out.str();
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

namespace {
std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t h = 14695981039346656037ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

// A chunk's shape and type plus up to 1024 evenly spread elements: chunks are large, and keys need only
// tell different chunks apart, not prove them equal.
std::uint64_t chunk_hash(const backends::Chunk& chunk, std::uint64_t h) {
  const std::int64_t header[] = {chunk.rows(), chunk.cols(), static_cast<std::int64_t>(chunk.dtype()),
                                 static_cast<std::int64_t>(chunk.backend())};
  h = hash_bytes(header, sizeof header, h);
  if (chunk.backend() != backends::Backend::cpu || chunk.size() == 0) return h;
  return backends::visit_dense(chunk, [&](const auto& m) {
    const std::int64_t step = std::max<std::int64_t>(1, m.size() / 1024);
    for (std::int64_t i = 0; i < m.size(); i += step) h = hash_bytes(m.data() + i, sizeof(m.data()[0]), h);
    return h;
  });
}
}  // namespace

std::uint64_t Value::content_hash() const {
  const std::uint64_t seed = static_cast<std::uint64_t>(kind()) * 0x9e3779b97f4a7c15ULL;
  switch (kind()) {
    case ValueKind::none:
      return seed;
    case ValueKind::integer:
      return seed ^ static_cast<std::uint64_t>(as_int()) * 0xff51afd7ed558ccdULL;
    case ValueKind::real: {
      const double d = as_double();
      return hash_bytes(&d, sizeof d, seed);
    }
    case ValueKind::boolean:
      return seed + as_bool();
    case ValueKind::string:
      return hash_bytes(as_string().data(), as_string().size(), seed);
    case ValueKind::bytes:
      return hash_bytes(as_bytes().data.data(), as_bytes().data.size(), seed);
    case ValueKind::doubles:
      return hash_bytes(as_doubles().data(), as_doubles().size() * sizeof(double), seed);
    case ValueKind::vector:
      return hash_bytes(as_vector().data(), as_vector().size() * sizeof(double), seed);
    case ValueKind::matrix: {
      const auto& m = as_matrix();
      return hash_bytes(m.data(), m.size() * sizeof(double), seed ^ static_cast<std::uint64_t>(m.rows()));
    }
    case ValueKind::list: {
      std::uint64_t h = seed;
      for (const auto& v : as_list()) h = (h ^ v.content_hash()) * 1099511628211ULL;
      return h;
    }
    case ValueKind::custom:
      return hash_bytes(as_custom().type_name.data(), as_custom().type_name.size(),
                        as_custom().payload->content_hash());
    case ValueKind::chunk:
      return chunk_hash(*as_chunk(), seed);
  }
  return seed;
}

std::size_t Value::payload_bytes() const {
  switch (kind()) {
    case ValueKind::string:
      return as_string().size();
    case ValueKind::bytes:
      return as_bytes().data.size();
    case ValueKind::doubles:
      return as_doubles().size() * sizeof(double);
    case ValueKind::vector:
      return static_cast<std::size_t>(as_vector().size()) * sizeof(double);
    case ValueKind::matrix:
      return static_cast<std::size_t>(as_matrix().size()) * sizeof(double);
    case ValueKind::list: {
      std::size_t total = 0;
      for (const auto& v : as_list()) total += sizeof(Value) + v.payload_bytes();
      return total;
    }
    case ValueKind::custom:
      return as_custom().payload->payload_bytes();
    case ValueKind::chunk:
      return as_chunk()->bytes();
    default:
      return 0;
  }
}

}  // namespace tessera
