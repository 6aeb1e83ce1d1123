#include "cli_checkpoints.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <iomanip>
#include <iostream>

#include "graph/printable.hpp"

namespace tessera::cli {
namespace {

std::string utc(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

int list_checkpoints(const Target& target, const CheckpointsOptions& options) {
  Client client(target.scheduler, target.connect);
  const auto entries = client.checkpoints(options.function);
  if (options.json) {
    auto out = nlohmann::json::array();
    for (const auto& e : entries)
      out.push_back({{"key", e.key},
                     {"function", e.function},
                     {"task", e.task},
                     {"bytes", e.bytes},
                     {"written", utc(e.written_ms)}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::uint64_t bytes = 0;
  for (const auto& e : entries) {
    std::cout << e.key.substr(0, 16) << "  " << std::left << std::setw(24) << printable(e.function, 60) << " "
              << std::setw(36) << printable(e.task, 60) << std::right << std::setw(12) << e.bytes << "  "
              << utc(e.written_ms) << "\n";
    bytes += e.bytes;
  }
  std::cout << entries.size() << " checkpoints, " << bytes << " bytes\n";
  return 0;
}

int drop_checkpoints(const Target& target, const CheckpointsOptions& options) {
  if (!options.all && options.function.empty() && options.keys.empty()) {
    std::cerr
        << "tessera: checkpoints drop needs --all, --function NAME or keys (see tessera checkpoints list)\n";
    return 2;
  }
  Client client(target.scheduler, target.connect);
  const auto dropped = client.drop_checkpoints(
      CheckpointSelection{.all = options.all, .function = options.function, .keys = options.keys});
  std::cout << "dropped " << dropped << " checkpoints\n";
  return 0;
}

}  // namespace tessera::cli
