// Codec<T>: how a C++ type converts to and from a Value. Built-in for integers, doubles, booleans,
// strings, byte strings, vectors of doubles, Eigen vectors and matrices, tuples, pairs and vectors of these.
// A user type gets a codec by specializing tessera::Codec<T> with
//   static std::string type_name();
//   static Value encode(const T&);
//   static T decode(const Value&);   // throws TypeError on a value it cannot read
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graph/errors.hpp"
#include "graph/value.hpp"

namespace tessera {

template <class T, class Enable = void>
struct Codec;  // no codec: the static_assert in HasCodec's users names the type

template <class T>
concept HasCodec = requires(const T& t, const Value& v) {
  { Codec<T>::encode(t) } -> std::convertible_to<Value>;
  { Codec<T>::decode(v) } -> std::convertible_to<T>;
  { Codec<T>::type_name() } -> std::convertible_to<std::string>;
};

template <>
struct Codec<Value> {
  static std::string type_name() { return "Value"; }
  static Value encode(const Value& v) { return v; }
  static Value decode(const Value& v) { return v; }
  static bool accepts(const Value&) { return true; }
};

template <std::integral T>
requires(!std::same_as<T, bool>) struct Codec<T> {
  static std::string type_name() { return "int"; }
  static Value encode(T v) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      if (v > static_cast<T>(std::numeric_limits<std::int64_t>::max()))
        throw TypeError("integer " + std::to_string(v) + " does not fit a 64-bit signed Value");
    }
    return Value(static_cast<std::int64_t>(v));
  }
  static T decode(const Value& v) {
    const std::int64_t x = v.as_int();
    if constexpr (std::is_signed_v<T>) {
      if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max())
        throw TypeError("integer " + std::to_string(x) + " is out of range for this argument");
    } else {
      if (x < 0 || static_cast<std::uint64_t>(x) > std::numeric_limits<T>::max())
        throw TypeError("integer " + std::to_string(x) + " is out of range for this argument");
    }
    return static_cast<T>(x);
  }
};

template <std::floating_point T>
struct Codec<T> {
  static std::string type_name() { return "double"; }
  static Value encode(T v) { return Value(static_cast<double>(v)); }
  static T decode(const Value& v) { return static_cast<T>(v.as_double()); }
};

template <>
struct Codec<bool> {
  static std::string type_name() { return "bool"; }
  static Value encode(bool v) { return Value(v); }
  static bool decode(const Value& v) { return v.as_bool(); }
};

template <>
struct Codec<std::string> {
  static std::string type_name() { return "string"; }
  static Value encode(const std::string& v) { return Value(v); }
  static std::string decode(const Value& v) { return v.as_string(); }
  static bool accepts(const Value& v) { return v.kind() == ValueKind::string; }
};

template <>
struct Codec<Bytes> {
  static std::string type_name() { return "bytes"; }
  static Value encode(const Bytes& v) { return Value(v); }
  static Bytes decode(const Value& v) { return v.as_bytes(); }
  static bool accepts(const Value& v) { return v.kind() == ValueKind::bytes; }
};

template <>
struct Codec<std::vector<double>> {
  static std::string type_name() { return "vector<double>"; }
  static Value encode(const std::vector<double>& v) { return Value(v); }
  static std::vector<double> decode(const Value& v) {
    switch (v.kind()) {
      case ValueKind::doubles:
        return v.as_doubles();
      case ValueKind::vector: {
        const auto& e = v.as_vector();
        return std::vector<double>(e.data(), e.data() + e.size());
      }
      case ValueKind::list: {
        std::vector<double> out;
        out.reserve(v.as_list().size());
        for (const auto& item : v.as_list()) out.push_back(item.as_double());
        return out;
      }
      default:
        return v.as_doubles();  // throws, naming both kinds
    }
  }
};

template <>
struct Codec<Eigen::VectorXd> {
  static std::string type_name() { return "Eigen::VectorXd"; }
  static Value encode(const Eigen::VectorXd& v) { return Value(v); }
  static Eigen::VectorXd decode(const Value& v) {
    if (v.kind() == ValueKind::doubles) {
      const auto& d = v.as_doubles();
      return Eigen::Map<const Eigen::VectorXd>(d.data(), static_cast<Eigen::Index>(d.size()));
    }
    return v.as_vector();
  }
  static bool accepts(const Value& v) {
    return v.kind() == ValueKind::vector || v.kind() == ValueKind::doubles;
  }
};

template <>
struct Codec<Eigen::MatrixXd> {
  static std::string type_name() { return "Eigen::MatrixXd"; }
  static Value encode(const Eigen::MatrixXd& v) { return Value(v); }
  static Eigen::MatrixXd decode(const Value& v) { return v.as_matrix(); }
  static bool accepts(const Value& v) { return v.kind() == ValueKind::matrix; }
};

namespace detail {
inline void check_list_size(const Value::List& list, std::size_t expected, const std::string& type) {
  if (list.size() != expected)
    throw TypeError("expected " + type + " of " + std::to_string(expected) + " elements, got " +
                    std::to_string(list.size()));
}
}  // namespace detail

template <HasCodec... Ts>
struct Codec<std::tuple<Ts...>> {
  static std::string type_name() {
    std::string name = "tuple<";
    ((name += Codec<Ts>::type_name() + ","), ...);
    if (name.back() == ',') name.pop_back();
    return name + ">";
  }
  static Value encode(const std::tuple<Ts...>& t) {
    Value::List list;
    list.reserve(sizeof...(Ts));
    std::apply([&](const auto&... x) { (list.push_back(Codec<std::decay_t<decltype(x)>>::encode(x)), ...); },
               t);
    return Value(std::move(list));
  }
  static std::tuple<Ts...> decode(const Value& v) {
    const auto& list = v.as_list();
    detail::check_list_size(list, sizeof...(Ts), type_name());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>(Codec<Ts>::decode(list[I])...);
    }
    (std::index_sequence_for<Ts...>{});
  }
};

template <HasCodec A, HasCodec B>
struct Codec<std::pair<A, B>> {
  static std::string type_name() {
    return "pair<" + Codec<A>::type_name() + "," + Codec<B>::type_name() + ">";
  }
  static Value encode(const std::pair<A, B>& p) {
    return Value(Value::List{Codec<A>::encode(p.first), Codec<B>::encode(p.second)});
  }
  static std::pair<A, B> decode(const Value& v) {
    const auto& list = v.as_list();
    detail::check_list_size(list, 2, type_name());
    return {Codec<A>::decode(list[0]), Codec<B>::decode(list[1])};
  }
};

template <HasCodec T>
requires(!std::same_as<T, double>) struct Codec<std::vector<T>> {
  static std::string type_name() { return "vector<" + Codec<T>::type_name() + ">"; }
  static Value encode(const std::vector<T>& items) {
    Value::List list;
    list.reserve(items.size());
    for (const auto& item : items) list.push_back(Codec<T>::encode(item));
    return Value(std::move(list));
  }
  static std::vector<T> decode(const Value& v) {
    const auto& list = v.as_list();
    std::vector<T> out;
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      try {
        out.push_back(Codec<T>::decode(list[i]));
      } catch (const TypeError& e) {
        throw TypeError("element " + std::to_string(i) + ": " + e.what());
      }
    }
    return out;
  }
};

// Encode/decode helpers that name the type in the error.
template <HasCodec T>
Value to_value(const T& x) {
  return Codec<T>::encode(x);
}

template <HasCodec T>
T from_value(const Value& v) {
  return Codec<T>::decode(v);
}

// Whether a value can be read as T (used to check arguments at submission).
template <HasCodec T>
bool value_accepts(const Value& v) {
  if constexpr (requires { Codec<T>::accepts(v); }) return Codec<T>::accepts(v);
  try {
    (void)Codec<T>::decode(v);
    return true;
  } catch (const TypeError&) {
    return false;
  }
}

}  // namespace tessera
