#include "cli_stream_store.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

#include "graph/printable.hpp"

namespace tessera::cli {

int list_streams(const Target& target, bool json) {
  Client client(target.scheduler, target.connect);
  const auto streams = client.streams();
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& s : streams)
      out.push_back({{"id", s.id},
                     {"simulation", s.simulation},
                     {"state", stream_state(s)},
                     {"pushed", s.pushed},
                     {"stored", s.stored},
                     {"input_sets", s.input_sets},
                     {"ended_early", s.ended_early}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (streams.empty()) {
    std::cout << "no streams\n";
    return 0;
  }
  std::cout << std::left << std::setw(8) << "stream" << std::setw(28) << "simulation" << std::setw(12)
            << "state" << std::right << std::setw(14) << "stored" << std::setw(14) << "pushed"
            << std::setw(14) << "input"
            << "\n";
  for (const auto& s : streams)
    std::cout << std::left << std::setw(8) << s.id << std::setw(28) << printable(s.simulation, 26)
              << std::setw(12) << stream_state(s) << std::right << std::setw(14) << s.stored << std::setw(14)
              << s.pushed << std::setw(14) << (s.input_sets ? std::to_string(s.input_sets) : std::string("-"))
              << "\n";
  // What an incomplete stream is missing, and how to push it.
  for (const auto& s : streams)
    if (!s.ended_early.empty())
      std::cout << "stream " << s.id << ": " << printable(s.ended_early, 200)
                << (s.input_sets ? "; push the rest with: tessera stream push --resume " +
                                       std::to_string(s.id) + " --input FILE (the file it was pushed from)"
                                 : std::string())
                << "\n";
  return 0;
}

int drop_stream(const Target& target, std::uint64_t stream) {
  Client client(target.scheduler, target.connect);
  client.drop_stream(stream);
  std::cout << "dropped stream " << stream << ": its results and records are deleted\n";
  return 0;
}

}  // namespace tessera::cli
