#include "waiting.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace tessera::python {

namespace {
// Short enough that Ctrl-C feels immediate, long enough that an idle wait costs nothing measurable.
constexpr auto kSlice = std::chrono::milliseconds(50);
}  // namespace

std::optional<Clock::time_point> deadline_after(const std::optional<double>& timeout, const char* what) {
  if (!timeout) return std::nullopt;
  if (!std::isfinite(*timeout) || *timeout < 0)
    throw std::invalid_argument(std::string(what) +
                                ": timeout must be a finite number of seconds >= 0, got " +
                                std::to_string(*timeout));
  // Past a year is for ever (and keeps the time_point arithmetic from overflowing).
  if (*timeout > 365.0 * 24 * 3600) return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*timeout));
}

void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

bool wait_interruptibly(const std::function<bool(Clock::time_point)>& until,
                        std::optional<Clock::time_point> deadline) {
  for (;;) {
    auto slice_end = Clock::now() + kSlice;
    if (deadline && *deadline < slice_end) slice_end = *deadline;
    bool done;
    {
      py::gil_scoped_release released;
      done = until(slice_end);
    }
    if (done) return true;
    check_signals();
    if (deadline && Clock::now() >= *deadline) return false;
  }
}

}  // namespace tessera::python
