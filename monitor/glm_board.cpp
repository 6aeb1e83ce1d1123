#include "monitor/glm_board.hpp"

#include <algorithm>
#include <cmath>

#include "graph/stream_record.hpp"

namespace tessera::monitor {

GlmFitFigures* GlmBoard::find(std::uint64_t session) {
  for (auto& fit : fits_)
    if (fit.session == session) return &fit;
  return nullptr;
}

void GlmBoard::started(std::uint64_t session, std::string solver, std::string family,
                       std::uint64_t partitions) {
  std::lock_guard lock(mutex_);
  GlmFitFigures fit;
  fit.session = session;
  fit.solver = std::move(solver);
  fit.family = std::move(family);
  fit.partitions = partitions;
  fit.loss = NAN;
  fit.started_at = timeline_now();
  fits_.push_front(std::move(fit));
  // Ended fits go first when the board is full; running ones are never dropped.
  while (fits_.size() > kKept) {
    auto oldest_ended = std::find_if(fits_.rbegin(), fits_.rend(), [](const auto& f) { return !f.running; });
    if (oldest_ended == fits_.rend()) break;
    fits_.erase(std::next(oldest_ended).base());
  }
}

void GlmBoard::round(std::uint64_t session, double loss) {
  std::lock_guard lock(mutex_);
  auto* fit = find(session);
  if (!fit) return;
  ++fit->rounds;
  if (std::isfinite(loss)) {
    fit->loss = loss;
    if (fit->losses.size() == GlmFitFigures::kLossesKept) fit->losses.erase(fit->losses.begin());
    fit->losses.push_back(loss);
  }
  fit->seconds = timeline_now() - fit->started_at;
}

void GlmBoard::ended(std::uint64_t session, bool converged, std::uint64_t iterations, double objective,
                     std::string error) {
  std::lock_guard lock(mutex_);
  auto* fit = find(session);
  if (!fit) return;
  fit->running = false;
  fit->converged = converged;
  fit->iterations = iterations;
  fit->objective = objective;
  fit->error = std::move(error);
  fit->seconds = timeline_now() - fit->started_at;
}

std::vector<GlmFitFigures> GlmBoard::figures() const {
  std::lock_guard lock(mutex_);
  std::vector<GlmFitFigures> out(fits_.begin(), fits_.end());
  const double now = timeline_now();
  for (auto& fit : out)
    if (fit.running) fit.seconds = now - fit.started_at;
  std::stable_partition(out.begin(), out.end(), [](const auto& f) { return f.running; });
  return out;
}

}  // namespace tessera::monitor
