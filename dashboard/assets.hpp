// The dashboard's pages, script, style sheet and Debian's Chart.js, compiled into the library
// (embed_assets.cmake), so a node serves them with nothing to find at run time.
#pragma once

#include <string_view>

namespace tessera::dashboard {

struct Asset {
  std::string_view content;
  std::string_view content_type;
};

// The asset named `name` ("page.html", "dashboard.js", "dashboard.css", "chart.min.js"); an empty
// content when there is none.
Asset asset(std::string_view name);

}  // namespace tessera::dashboard
