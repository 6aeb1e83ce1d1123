// Plugins in this process: the task functions, simulations and generators of a shared library built
// with tessera_add_plugin, registered here (as tessera-node does with its [plugins] paths), so that a
// client can submit them by name and a LocalCluster can run them.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

// A plugin that cannot be loaded: the message names the path and the loader's reason.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads the plugin at `path` (once: loading it again does nothing). Throws PluginError.
void load_plugin(const std::string& path);

}  // namespace tessera
