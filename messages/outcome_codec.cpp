#include "messages/outcome_codec.hpp"

#include "messages/wire_codec.hpp"

namespace tessera::wire {

void encode(const tessera::ProgramOutcome& outcome, ProgramOutcome::Builder out) {
  out.setExitStatus(outcome.exit_status);
  out.setSignal(outcome.signal);
  out.setStdoutTail(outcome.stdout_tail);
  out.setStderrTail(outcome.stderr_tail);
}

tessera::ProgramOutcome decode(ProgramOutcome::Reader in, const std::string& where, bool strict) {
  constexpr std::size_t kTail = tessera::ProgramOutcome::kTailBytes;
  const auto tail = [&](capnp::Text::Reader text, const char* which) {
    std::string bytes(text.cStr(), text.size());
    if (bytes.size() <= kTail) return bytes;
    if (strict)
      throw WireError(where + " carries " + std::to_string(bytes.size()) + " bytes of " + which +
                      ", more than the " + std::to_string(kTail) + " a record keeps");
    return bytes.substr(bytes.size() - kTail);
  };
  tessera::ProgramOutcome outcome;
  outcome.exit_status = in.getExitStatus();
  outcome.signal = in.getSignal();
  if (outcome.signal < 0 || outcome.signal > 128) {
    if (strict)
      throw WireError(where + " names signal " + std::to_string(outcome.signal) + ", which is no signal");
    outcome.signal = 0;
  }
  outcome.stdout_tail = tail(in.getStdoutTail(), "stdout");
  outcome.stderr_tail = tail(in.getStderrTail(), "stderr");
  return outcome;
}

}  // namespace tessera::wire
