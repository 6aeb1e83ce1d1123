// A stream's settings, spelled once: what a client opens a stream with (client/tessera/stream.hpp's
// StreamOptions is its public face, converted in one place), what the wire carries (nodes/stream_codec),
// what the store keeps under the stream's settings key (storage/result_store) and what the stream actor
// runs by. Checked here, naming the setting, wherever it comes from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/simulation.hpp"

namespace tessera {

// What a client says it will push, when it knows (tessera stream push: a CSV's rows, the file's name, a
// digest of its bytes). A stream closed before it accepted `sets` of them is incomplete, not finished,
// and a resume must be given an input with the same digest.
struct StreamInput {
  std::uint64_t sets = 0;  // 0: not said
  std::string name{};
  std::string digest{};
  static constexpr std::size_t kMaxNameBytes = 4096;
  static constexpr std::size_t kMaxDigestBytes = 128;
};

struct StreamSettings {
  std::string simulation;
  std::shared_ptr<const Config> config = std::make_shared<Config>();
  std::uint32_t pool_size = 0;  // simulation actors per worker; 0: one per compute thread
  static constexpr std::uint32_t kMaxPoolSize = 1024;  // a peer's stream must not spawn without end
  // Parameter sets accepted and not answered at once, enforced by the stream whatever the client does.
  std::uint64_t max_in_flight = 0;
  static constexpr std::uint64_t kDefaultMaxInFlight = 4096;
  // Unset: the cluster's default (EmbeddedCluster resolves it when the stream opens; stored resolved).
  std::optional<Isolation> isolation{};
  double timeout_seconds = 0;  // per set; 0: none; at most kMaxTimeoutSeconds
  static constexpr double kMaxTimeoutSeconds = 30.0 * 24 * 3600;
  std::uint32_t retries = 0;  // at most kMaxRetries
  static constexpr std::uint32_t kMaxRetries = 100;
  // What the parameters are called, for exports' headers and filters (empty: unnamed).
  std::vector<std::string> parameter_names{};
  static constexpr std::size_t kMaxParameterNames = 4096;
  static constexpr std::size_t kMaxParameterNameBytes = 256;
  // An ensemble: the generator registered under this name proposes the sets (empty: the client pushes
  // them), built from generator_config, at most `budget` of them (in [1, kMaxBudget]).
  std::string generator{};
  std::shared_ptr<const Config> generator_config = std::make_shared<Config>();
  std::uint64_t budget = 0;
  static constexpr std::uint64_t kMaxBudget = 1'000'000'000;
  StreamInput input{};  // a client's stream: what it says it will push

  // What is wrong with these settings (naming the setting and the stream's simulation), or empty.
  std::string check() const;
};

}  // namespace tessera
