// load_plugin: dlopen with every symbol resolved now, so that a plugin built against another Tessera
// fails here, naming the symbol, and not at its first call.
#include "tessera/plugins.hpp"

#include <dlfcn.h>

#include "graph/printable.hpp"

namespace tessera {

void load_plugin(const std::string& path) {
  if (path.empty()) throw PluginError("load_plugin: the plugin path is empty");
  // RTLD_GLOBAL: a plugin that depends on another finds its symbols.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* reason = dlerror();
    throw PluginError("plugin \"" + printable(path, 300) +
                      "\" cannot be loaded: " + printable(reason ? reason : "unknown reason", 300));
  }
}

}  // namespace tessera
