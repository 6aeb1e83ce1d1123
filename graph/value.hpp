// Value: the one dynamic type every task argument and result converts to and from.
// Scalars live inline; everything larger lives behind a shared pointer to const, so a copy of a
// Value is a reference (a refcount increment), never a copy of the data.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backends/chunk.hpp"

namespace tessera {

class Value;

// A byte string, distinct from text so that codecs can tell them apart.
struct Bytes {
  std::vector<std::uint8_t> data;
  bool operator==(const Bytes&) const = default;
};

// A user type carried as its codec's name plus an encoded payload.
struct CustomValue {
  std::string type_name;
  std::shared_ptr<const Value> payload;
};

enum class ValueKind : std::uint8_t {
  none,
  integer,
  real,
  boolean,
  string,
  bytes,
  doubles,  // std::vector<double>
  vector,   // Eigen::VectorXd
  matrix,   // Eigen::MatrixXd
  list,     // std::vector<Value>: tuples and vectors of values
  custom,
  chunk,  // a block of an array (backends::Chunk)
};

std::string_view kind_name(ValueKind kind);

class Value {
 public:
  using List = std::vector<Value>;

  Value() = default;
  Value(std::int64_t v) : data_(v) {}
  Value(double v) : data_(v) {}
  Value(bool v) : data_(v) {}
  Value(std::string v) : data_(std::make_shared<const std::string>(std::move(v))) {}
  Value(const char* v) : Value(std::string(v)) {}
  Value(Bytes v) : data_(std::make_shared<const Bytes>(std::move(v))) {}
  Value(std::vector<double> v) : data_(std::make_shared<const std::vector<double>>(std::move(v))) {}
  Value(Eigen::VectorXd v) : data_(std::make_shared<const Eigen::VectorXd>(std::move(v))) {}
  Value(Eigen::MatrixXd v) : data_(std::make_shared<const Eigen::MatrixXd>(std::move(v))) {}
  Value(List v) : data_(std::make_shared<const List>(std::move(v))) {}
  Value(CustomValue v) : data_(std::make_shared<const CustomValue>(std::move(v))) {}
  Value(backends::ChunkPtr v) : data_(std::move(v)) {}

  ValueKind kind() const { return static_cast<ValueKind>(data_.index()); }
  bool is_none() const { return kind() == ValueKind::none; }

  // Typed access; each throws TypeError naming the expected and the actual kind.
  std::int64_t as_int() const;
  double as_double() const;  // an integer widens to double, as in Python
  bool as_bool() const;
  const std::string& as_string() const;
  const Bytes& as_bytes() const;
  const std::vector<double>& as_doubles() const;
  const Eigen::VectorXd& as_vector() const;
  const Eigen::MatrixXd& as_matrix() const;
  const List& as_list() const;
  const CustomValue& as_custom() const;
  const backends::ChunkPtr& as_chunk() const;

  // Shallow structural equality (deep for lists and custom payloads).
  bool operator==(const Value& other) const;

  // A short human-readable rendering for error messages and debugging.
  std::string to_string(std::size_t max_chars = 80) const;

  // A hash of the content (used for content-derived task keys); cheap for large payloads' sizes.
  std::uint64_t content_hash() const;

  // The number of bytes this value keeps alive (scalars count zero).
  std::size_t payload_bytes() const;

 private:
  using Storage =
      std::variant<std::monostate, std::int64_t, double, bool, std::shared_ptr<const std::string>,
                   std::shared_ptr<const Bytes>, std::shared_ptr<const std::vector<double>>,
                   std::shared_ptr<const Eigen::VectorXd>, std::shared_ptr<const Eigen::MatrixXd>,
                   std::shared_ptr<const List>, std::shared_ptr<const CustomValue>, backends::ChunkPtr>;
  [[noreturn]] void throw_kind(ValueKind expected) const;
  Storage data_;
};

}  // namespace tessera
