// The tessera CLI's commands over what a cluster can run: `functions` and `simulations` (the scheduler's
// registries, through Client::functions and Client::simulations) and `map` (a node's task function over
// the rows of a CSV file, called by name: the CLI loads no plugin).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cli_streams.hpp"

namespace tessera::cli {

// One JSON value on a line of stdout. Names are the peers' bytes: invalid UTF-8 becomes U+FFFD instead
// of an exception.
void print_json(const nlohmann::ordered_json& json);

int list_functions(const Target& target, bool json);
int list_simulations(const Target& target, bool json);

struct MapOptions {
  std::string function, input, output;
  HeaderRule header = HeaderRule::automatic;
};
// One task per row of --input: the row's cells are the function's arguments in order, each read as the
// cluster declares that argument (int, double, bool; a function of one vector<double> takes the whole
// row). Writes id, the row's cells, result and error as CSV to --output (or stdout). Exit codes: 0 every
// task succeeded; 1 some failed, or the node refused (an unknown function, a wrong argument count or
// type, named); 2 an input refused before anything ran (unreadable, malformed, a cell the argument's
// type cannot hold).
int map_function(const Target& target, const MapOptions& options);

}  // namespace tessera::cli
