// "an integer", "a table", ...: how a config message names the TOML type a key was given.
#pragma once

#include <toml++/toml.h>
#include <string>

namespace tessera {

inline std::string toml_type_of(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

}  // namespace tessera
