// A node's [simulations.NAME] tables: programs the operator declares as simulations (graph/program_spec.hpp
// has the keys' meaning). Every problem is a ConfigError naming the file, the line and the key.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "graph/program_spec.hpp"
#include "nodes/node_config.hpp"

namespace tessera {

// The [simulations] table's programs. Template files and workdir_root resolve against `base_dir`; the
// templates are read now (they travel with the declaration).
std::vector<DeclaredProgram> parse_program_declarations(const toml::node& simulations,
                                                        std::string_view source,
                                                        const std::filesystem::path& base_dir);

// What `tessera-node --help` says of [simulations.NAME].
std::string program_declaration_help();

}  // namespace tessera
