#include "actors/simulation_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <new>
#include <string_view>

#include "graph/errors.hpp"
#include "storage/value_record.hpp"

namespace tessera {

struct SimulationProcess::Progress {
  // The set of the current job the child is on; kIdle until it took the job.
  std::atomic<std::uint32_t> index;
  std::atomic<std::int64_t> started_ns;  // when it began that set (steady clock, shared by all processes)
  std::atomic<std::uint32_t> building;   // 1 while the instance is being constructed
};

namespace {

constexpr std::uint32_t kIdle = 0xffffffffu;
// A frame larger than this is a broken peer, not a job: the parent treats it as a crash.
constexpr std::uint64_t kMaxFrame = std::uint64_t{1} << 34;
// The child sends what it has at least this often, so a crash late in a long job loses little.
constexpr std::chrono::milliseconds kFlushEvery{20};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
bool get(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}

bool get_bytes(std::string_view& in, std::string_view& bytes) {
  std::uint64_t n = 0;
  if (!get(in, n) || n > in.size()) return false;
  bytes = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

bool send_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    n -= static_cast<std::size_t>(sent);
  }
  return true;
}

bool read_all(int fd, char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, data, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// A frame: its length, then the payload. False at the end of the stream or on a frame too large.
bool read_frame(int fd, std::string& payload) {
  std::uint64_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n) || n > kMaxFrame) return false;
  payload.resize(n);
  return read_all(fd, payload.data(), n);
}

bool send_frame(int fd, std::string& frame) {
  // The first 8 bytes were reserved for the length.
  const std::uint64_t n = frame.size() - sizeof(std::uint64_t);
  std::memcpy(frame.data(), &n, sizeof n);
  return send_all(fd, frame.data(), frame.size());
}

std::string new_frame() {
  return std::string(sizeof(std::uint64_t), '\0');
}

std::string signal_text(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  const char* description = sigdescr_np(signal);
  std::string text = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
  if (description) text += std::string(" (") + description + ")";
  return text;
}

// ---- The child ----

// Default dispositions and an empty mask, set through the kernel directly so that a sanitizer's handler
// in the worker cannot keep a crash from ending the child with its signal.
void reset_signals() {
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    unsigned long kernel_action[8] = {};  // SIG_DFL, no flags, no mask, in any architecture's layout
    ::syscall(SYS_rt_sigaction, s, kernel_action, nullptr, sizeof(unsigned long));
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

void close_inherited(int keep) {
  // Keeps stdio (the simulation's output joins the worker's) and the socket to the parent.
  if (keep > 3) ::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
  ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);
}

// One answer: its kind (0 a value, 1 an error), its bytes, and when its run began and ended.
void add_record(std::string& frame, const Value* value, std::string_view error, double started,
                double finished) {
  if (value) {
    put<std::uint8_t>(frame, 0);
    const std::string record = ValueRecord(*value).flat();
    put<std::uint64_t>(frame, record.size());
    frame += record;
  } else {
    put<std::uint8_t>(frame, 1);
    put<std::uint64_t>(frame, error.size());
    frame += error;
  }
  put<double>(frame, started);
  put<double>(frame, finished);
}

[[noreturn]] void child_main(int socket, const SimulationType& type, const Config& config,
                             SimulationProcess::Progress* progress, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent went between the fork and the line above
  reset_signals();
  close_inherited(socket);
  std::unique_ptr<Simulation> simulation;
  std::string build_error;
  bool built = false;
  std::string job;
  std::vector<Value> parameters;
  while (read_frame(socket, job)) {
    std::string_view in(job);
    std::uint32_t count = 0;
    if (!get(in, count)) ::_exit(3);
    parameters.clear();
    for (std::uint32_t i = 0; i < count; ++i) {
      std::string_view bytes;
      if (!get_bytes(in, bytes)) ::_exit(3);
      parameters.push_back(ValueRecord::decode(bytes));
    }
    progress->started_ns.store(now_ns());
    progress->index.store(0);
    if (!built) {
      progress->building.store(1);
      try {
        simulation = type.make(config);
      } catch (const std::exception& e) {
        build_error = e.what();
      } catch (...) {
        build_error = "unknown exception";
      }
      progress->building.store(0);
      built = true;
    }
    std::string frame = new_frame();
    std::uint32_t in_frame = 0;
    std::size_t header_at = frame.size();
    const auto begin_frame = [&] {
      frame = new_frame();
      header_at = frame.size();
      put<std::uint8_t>(frame, 0);   // last: patched when sent
      put<std::uint32_t>(frame, 0);  // count: patched when sent
      in_frame = 0;
    };
    const auto flush = [&](bool last) {
      frame[header_at] = static_cast<char>(last ? 1 : 0);
      std::memcpy(frame.data() + header_at + 1, &in_frame, sizeof in_frame);
      if (!send_frame(socket, frame)) ::_exit(0);  // the parent is gone
      begin_frame();
    };
    begin_frame();
    auto last_flush = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < count; ++i) {
      progress->started_ns.store(now_ns());
      progress->index.store(i);
      const double started = timeline_now();
      if (!simulation) {
        add_record(frame, nullptr, "simulation '" + type.name + "' could not be built: " + build_error,
                   started, timeline_now());
      } else {
        try {
          const Value result = simulation->run(parameters[i]);
          add_record(frame, &result, {}, started, timeline_now());
        } catch (const std::exception& e) {
          add_record(frame, nullptr, e.what(), started, timeline_now());
        } catch (...) {
          add_record(frame, nullptr, "unknown exception", started, timeline_now());
        }
      }
      ++in_frame;
      const auto now = std::chrono::steady_clock::now();
      if (i + 1 < count && now - last_flush >= kFlushEvery) {
        flush(false);
        last_flush = now;
      }
    }
    flush(true);
  }
  ::_exit(0);
}

}  // namespace

SimulationProcess::SimulationProcess(const SimulationType& type, std::shared_ptr<const Config> config,
                                     std::string node)
    : type_(type), config_(std::move(config)), node_(std::move(node)) {
  void* page = ::mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED)
    throw std::runtime_error("simulation '" + type_.name +
                             "': no shared page for its process: " + std::strerror(errno));
  progress_ = new (page) Progress{};
  progress_->index.store(kIdle);
}

SimulationProcess::~SimulationProcess() {
  if (pid_.load() > 0) {
    ::kill(pid_.load(), SIGKILL);
    reap();
  }
  if (socket_ >= 0) ::close(socket_);
  progress_->~Progress();
  ::munmap(progress_, sizeof(Progress));
}

void SimulationProcess::start() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw std::runtime_error("simulation '" + type_.name +
                             "': no socket for its process: " + std::strerror(errno));
  progress_->index.store(kIdle);
  progress_->building.store(0);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(pair[0]);
    ::close(pair[1]);
    throw std::runtime_error("simulation '" + type_.name +
                             "': its process could not be started: " + std::strerror(error));
  }
  if (child == 0) {
    ::close(pair[0]);
    child_main(pair[1], type_, *config_, progress_, parent);
  }
  ::close(pair[1]);
  socket_ = pair[0];
  pid_.store(child);
  killed_by_request_.store(false);
  started_ += 1;
}

void SimulationProcess::kill() {
  std::lock_guard lock(reap_mutex_);
  const pid_t pid = pid_.load();
  if (pid <= 0) return;
  killed_by_request_.store(true);
  ::kill(pid, SIGKILL);
}

std::optional<std::size_t> SimulationProcess::running_index() const {
  const std::uint32_t on = progress_->index.load();
  if (on == kIdle || pid_.load() <= 0) return std::nullopt;
  return on;
}

std::string SimulationProcess::reap() {
  std::lock_guard lock(reap_mutex_);
  const pid_t pid = pid_.exchange(0);
  if (socket_ >= 0) {
    ::close(socket_);
    socket_ = -1;
  }
  if (pid <= 0) return "it was not running";
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return "killed by " + signal_text(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

SimulationProcess::JobResult SimulationProcess::run(const std::vector<std::uint64_t>& ids,
                                                    const std::vector<Value>& parameters,
                                                    const std::vector<double>& timeouts) {
  JobResult result;
  if (ids.empty()) return result;
  if (timeouts.size() != ids.size())
    throw std::logic_error("SimulationProcess::run: " + std::to_string(timeouts.size()) + " timeouts for " +
                           std::to_string(ids.size()) + " parameter sets");
  // Sets with timeouts of their own: the child moves on to the next set without a message, so the
  // deadline is looked at again every 50 ms.
  const bool mixed =
      std::adjacent_find(timeouts.begin(), timeouts.end(), std::not_equal_to<>()) != timeouts.end();
  // The timeout of the set the child is on (of the first, before it took the job).
  const auto timeout_now = [&] {
    const std::uint32_t on = progress_->index.load();
    return timeouts[on == kIdle || on >= ids.size() ? 0 : on];
  };
  if (pid_.load() <= 0) start();
  const pid_t pid = pid_.load();

  std::string frame = new_frame();
  put<std::uint32_t>(frame, static_cast<std::uint32_t>(ids.size()));
  for (const auto& p : parameters) {
    const std::string record = ValueRecord(p).flat();
    put<std::uint64_t>(frame, record.size());
    frame += record;
  }
  progress_->index.store(kIdle);
  progress_->started_ns.store(now_ns());

  // The child died or was killed while on progress_->index: that set fails, what it had not answered
  // before and after goes back unrun.
  const auto ended = [&](Failure failure, const std::string& how) {
    const double timeout_seconds = timeout_now();
    const std::uint32_t on = progress_->index.load();
    const bool building = progress_->building.load() != 0;
    const std::string ending = reap();
    if (killed_by_request_.load()) {  // stopped on purpose: nothing is charged
      for (std::size_t i = result.records.size(); i < ids.size(); ++i) result.unrun.push_back(ids[i]);
      return result;
    }
    std::string why;
    if (failure == Failure::timeout)
      why = timeout_reason(timeout_seconds) + " (its simulation process " + std::to_string(pid) +
            " was killed and replaced)";
    else
      why = "simulation process " + std::to_string(pid) + " " + (how.empty() ? ending : how) +
            (building ? " while building simulation '" + type_.name + "'" : " while running this set");
    // A child that died before it took the job (killed from outside between jobs) is charged to the
    // job's first set, so that nothing can send the same job to dying processes for ever.
    const std::size_t charged =
        on == kIdle ? result.records.size() : std::max<std::size_t>(on, result.records.size());
    for (std::size_t i = result.records.size(); i < ids.size(); ++i) {
      if (i == charged) {
        StreamRecord record;
        record.id = ids[i];
        record.failed = true;
        record.failure = failure;
        record.error = on == kIdle ? "simulation process " + std::to_string(pid) + " " + ending +
                                         " before it began this set"
                                   : why;
        record.node = node_;
        record.timeline.finished = timeline_now();
        if (on != kIdle)
          record.timeline.started =
              record.timeline.finished - static_cast<double>(now_ns() - progress_->started_ns.load()) / 1e9;
        result.records.push_back(std::move(record));
      } else {
        result.unrun.push_back(ids[i]);
      }
    }
    return result;
  };

  if (!send_frame(socket_, frame)) return ended(Failure::crash, "");
  std::string answer;
  for (;;) {
    int wait_ms = mixed ? 50 : -1;
    const double timeout_seconds = timeout_now();
    if (timeout_seconds > 0) {
      const std::int64_t deadline =
          progress_->started_ns.load() + static_cast<std::int64_t>(timeout_seconds * 1e9);
      const std::int64_t left = deadline - now_ns();
      if (left <= 0) {
        ::kill(pid, SIGKILL);
        return ended(Failure::timeout, "");
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left / 1'000'000 + 1, mixed ? 50 : 60'000));
    }
    pollfd watched{socket_, POLLIN, 0};
    const int ready = ::poll(&watched, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    if (!read_frame(socket_, answer)) return ended(Failure::crash, "");
    std::string_view in(answer);
    std::uint8_t last = 0;
    std::uint32_t count = 0;
    if (!get(in, last) || !get(in, count) || count > ids.size() - result.records.size()) {
      ::kill(pid, SIGKILL);
      return ended(Failure::crash, "sent a malformed answer and was killed");
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      std::uint8_t kind = 0;
      std::string_view bytes;
      if (!get(in, kind) || !get_bytes(in, bytes)) {
        ::kill(pid, SIGKILL);
        return ended(Failure::crash, "sent a malformed answer and was killed");
      }
      StreamRecord record;
      record.id = ids[result.records.size()];
      if (!get(in, record.timeline.started) || !get(in, record.timeline.finished)) {
        ::kill(pid, SIGKILL);
        return ended(Failure::crash, "sent a malformed answer and was killed");
      }
      if (kind == 0) {
        try {
          record.value = ValueRecord::decode(bytes);
        } catch (const std::exception& e) {
          record.failed = true;
          record.failure = Failure::error;
          record.error = std::string("its result does not decode: ") + e.what();
        }
      } else {
        record.failed = true;
        record.failure = Failure::error;
        record.error = std::string(bytes);
      }
      if (record.failed) record.node = node_;
      result.records.push_back(std::move(record));
    }
    if (last) {
      if (result.records.size() != ids.size()) {
        ::kill(pid, SIGKILL);
        return ended(Failure::crash, "answered too few sets and was killed");
      }
      // Between jobs the child is on no set: a cancellation arriving now stops nothing.
      progress_->index.store(kIdle);
      return result;
    }
  }
}

}  // namespace tessera
