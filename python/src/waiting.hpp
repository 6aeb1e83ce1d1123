// Waiting from Python: the GIL released, in slices short enough that Ctrl-C (a KeyboardInterrupt
// raised by PyErr_CheckSignals between slices) interrupts any wait.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <functional>
#include <optional>

namespace tessera::python {

namespace py = pybind11;
using Clock = std::chrono::steady_clock;

// A timeout in seconds from Python: None waits for ever; a negative, NaN or infinite one is a ValueError
// naming `what`.
std::optional<Clock::time_point> deadline_after(const std::optional<double>& timeout, const char* what);

// Calls `until(slice_end)` with the GIL released until it returns true (done) or `deadline` passes
// (false). Between slices, signals are checked with the GIL held: a pending KeyboardInterrupt is thrown.
bool wait_interruptibly(const std::function<bool(Clock::time_point)>& until,
                        std::optional<Clock::time_point> deadline);

// Between calls that cannot be interrupted (a long push loop): throws if Ctrl-C was pressed.
void check_signals();

}  // namespace tessera::python

#include <future>
#include <memory>
#include <thread>

namespace tessera::python {

// Runs `work` (a blocking call of the client library with no deadline of its own: compute, fit) on a
// thread of its own and waits for it interruptibly. On Ctrl-C the KeyboardInterrupt is raised at once;
// the work finishes in the background and its result is dropped, so `work` must own what it uses (copies
// of arrays, the ClientPtr), never references to Python objects.
template <class F>
auto call_interruptibly(F work) -> decltype(work()) {
  using Result = decltype(work());
  auto task = std::make_shared<std::packaged_task<Result()>>(std::move(work));
  std::future<Result> result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  wait_interruptibly(
      [&](Clock::time_point slice_end) { return result.wait_until(slice_end) == std::future_status::ready; },
      std::nullopt);
  py::gil_scoped_release released;  // a large result is moved out without the GIL
  return result.get();
}

}  // namespace tessera::python
