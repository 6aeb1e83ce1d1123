#include "graph/stream_settings.hpp"

#include <cmath>
#include <sstream>

namespace tessera {

std::string StreamSettings::check() const {
  const std::string where = "stream of '" + simulation + "': ";
  if (pool_size > kMaxPoolSize)
    return where + "pool_size " + std::to_string(pool_size) + " exceeds the limit of " +
           std::to_string(kMaxPoolSize) + " simulation actors per worker";
  if (!std::isfinite(timeout_seconds) || timeout_seconds < 0 || timeout_seconds > kMaxTimeoutSeconds) {
    std::ostringstream text;
    text << where << "timeout " << timeout_seconds << " s is not a number of seconds in [0, "
         << kMaxTimeoutSeconds << "] (0: none)";
    return text.str();
  }
  if (!generator.empty() && (budget == 0 || budget > kMaxBudget))
    return where + "the budget of generator '" + generator + "' is " + std::to_string(budget) +
           " parameter sets; it must be in [1, " + std::to_string(kMaxBudget) + "]";
  if (generator.empty() && budget != 0)
    return where + "a budget of " + std::to_string(budget) + " parameter sets needs a generator";
  if (retries > kMaxRetries)
    return where + "retries " + std::to_string(retries) + " exceeds the limit of " +
           std::to_string(kMaxRetries);
  if (parameter_names.size() > kMaxParameterNames)
    return where + std::to_string(parameter_names.size()) + " parameter names exceed the limit of " +
           std::to_string(kMaxParameterNames);
  for (std::size_t i = 0; i < parameter_names.size(); ++i)
    if (parameter_names[i].size() > kMaxParameterNameBytes)
      return where + "parameter name " + std::to_string(i + 1) + " is " +
             std::to_string(parameter_names[i].size()) + " bytes, over the limit of " +
             std::to_string(kMaxParameterNameBytes);
  if (input.name.size() > StreamInput::kMaxNameBytes || input.digest.size() > StreamInput::kMaxDigestBytes)
    return where + "its input's name (" + std::to_string(input.name.size()) + " bytes) or digest (" +
           std::to_string(input.digest.size()) + " bytes) is over the limit of " +
           std::to_string(StreamInput::kMaxNameBytes) + " and " +
           std::to_string(StreamInput::kMaxDigestBytes);
  if (!generator.empty() && input.sets != 0)
    return where + "an ensemble's sets come from generator '" + generator +
           "': its client cannot say how many it will push";
  return {};
}

}  // namespace tessera
