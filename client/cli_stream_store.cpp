#include "cli_stream_store.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

#include "graph/printable.hpp"

namespace tessera::cli {
namespace {

// What a person reads: a stream still taking pushes, one closed whose sets are still answered, or done.
const char* state_of(const StreamListing& s) {
  return s.closed ? "finished" : s.close_requested ? "closing" : "open";
}

}  // namespace

int list_streams(const Target& target, bool json) {
  Client client(target.scheduler, target.connect);
  const auto streams = client.streams();
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& s : streams)
      out.push_back({{"id", s.id},
                     {"simulation", s.simulation},
                     {"state", state_of(s)},
                     {"pushed", s.pushed},
                     {"stored", s.stored}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (streams.empty()) {
    std::cout << "no streams\n";
    return 0;
  }
  std::cout << std::left << std::setw(8) << "stream" << std::setw(28) << "simulation" << std::setw(10)
            << "state" << std::right << std::setw(14) << "stored" << std::setw(14) << "pushed"
            << "\n";
  for (const auto& s : streams)
    std::cout << std::left << std::setw(8) << s.id << std::setw(28) << printable(s.simulation, 26)
              << std::setw(10) << state_of(s) << std::right << std::setw(14) << s.stored << std::setw(14)
              << s.pushed << "\n";
  return 0;
}

int drop_stream(const Target& target, std::uint64_t stream) {
  Client client(target.scheduler, target.connect);
  client.drop_stream(stream);
  std::cout << "dropped stream " << stream << ": its results and records are deleted\n";
  return 0;
}

}  // namespace tessera::cli
