#include "actors/simulation_process.hpp"

#include <fcntl.h>
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

#include "actors/python_launch.hpp"
#include "actors/simulation_child.hpp"
#include "graph/errors.hpp"
#include "storage/value_record.hpp"

namespace tessera {

namespace {

// The simulation's process and its process group (what it started), with SIGKILL: the group first, while
// its leader is not reaped yet and the group id cannot have been taken by another.
void kill_tree(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

using namespace child_frames;
static_assert(kChildSocketFd == 3 && kChildProgressFd == 4, "exec_python places descriptors from 3 on");
constexpr std::uint32_t kIdle = SimulationProgress::kIdle;
// How long an interpreter may take to start and import its modules before it is taken for hung.
constexpr double kInterpreterStartSeconds = 120.0;

std::string signal_text(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  const char* description = sigdescr_np(signal);
  std::string text = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
  if (description) text += std::string(" (") + description + ")";
  return text;
}

// ---- The child ----

void close_inherited(int keep) {
  // Keeps stdio (the simulation's output joins the worker's) and the socket to the parent.
  if (keep > 3) ::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
  ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);
}

[[noreturn]] void forked_child(int socket, const SimulationType& type, const Config& config,
                               SimulationProgress* progress, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent went between the fork and the line above
  reset_child_signals();
  close_inherited(socket);
  serve_simulation_jobs(
      socket, progress, type.name, [&] { return type.make(config); }, kMaxFrame / 2);
}

// An interpreter's command: its mode and, but for the task functions', what it serves.
PythonCommand python_exec_line(const SimulationType& type) {
  const PythonDefinition& python = *type.python;
  switch (python.kind) {
    case PythonDefinition::Kind::tasks:
      return python_command(*python.environment, {"--serve-tasks"});
    case PythonDefinition::Kind::generator:
      return python_command(*python.environment, {"--serve-generator", type.name});
    case PythonDefinition::Kind::simulation:
      break;
  }
  return python_command(*python.environment, {"--serve-simulation", type.name});
}

}  // namespace

SimulationProcess::SimulationProcess(const SimulationType& type, std::shared_ptr<const Config> config,
                                     std::string node)
    : type_(type), config_(std::move(config)), node_(std::move(node)) {
  // A memfd rather than an anonymous mapping, so that an exec'd child can map the same page.
  progress_fd_ = ::memfd_create("tessera-simulation-progress", MFD_CLOEXEC);
  void* page = MAP_FAILED;
  if (progress_fd_ >= 0 && ::ftruncate(progress_fd_, sizeof(SimulationProgress)) == 0)
    page = ::mmap(nullptr, sizeof(SimulationProgress), PROT_READ | PROT_WRITE, MAP_SHARED, progress_fd_, 0);
  if (page == MAP_FAILED) {
    const int error = errno;
    if (progress_fd_ >= 0) ::close(progress_fd_);
    throw std::runtime_error("simulation '" + type_.name +
                             "': no shared page for its process: " + std::strerror(error));
  }
  progress_ = new (page) SimulationProgress{};
  progress_->index.store(kIdle);
}

SimulationProcess::~SimulationProcess() {
  if (pid_.load() > 0) {
    kill_tree(pid_.load());
    reap();
  }
  if (socket_ >= 0) ::close(socket_);
  progress_->~SimulationProgress();
  ::munmap(progress_, sizeof(SimulationProgress));
  ::close(progress_fd_);
}

void SimulationProcess::start() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw std::runtime_error("simulation '" + type_.name +
                             "': no socket for its process: " + std::strerror(errno));
  progress_->index.store(kIdle);
  progress_->building.store(0);
  std::optional<PythonCommand> exec_line;
  if (type_.python) exec_line = python_exec_line(type_);
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
    // A process group of its own: what it starts (a subprocess of the Python code) ends with it.
    ::setpgid(0, 0);
    ::close(pair[0]);
    if (exec_line) {
      const int descriptors[] = {pair[1], progress_fd_};  // kChildSocketFd, kChildProgressFd
      exec_python(*exec_line, descriptors, parent);
    }
    forked_child(pair[1], type_, *config_, progress_, parent);
  }
  ::setpgid(child, child);  // as the child does: whichever runs first, the group exists before a kill
  ::close(pair[1]);
  socket_ = pair[0];
  if (exec_line) {
    // An interpreter has none of the worker's memory: the stream's config is its first frame. A child
    // already gone shows as a dead socket at the job that follows.
    std::string frame = new_frame() + encode_start(type_.python->environment->max_result_bytes, *config_);
    send_frame(socket_, frame);
  }
  pid_.store(child);
  killed_by_request_.store(false);
  started_ += 1;
}

void SimulationProcess::kill() {
  std::lock_guard lock(reap_mutex_);
  const pid_t pid = pid_.load();
  if (pid <= 0) return;
  killed_by_request_.store(true);
  kill_tree(pid);
}

void SimulationProcess::reap_if_ended() {
  std::lock_guard lock(reap_mutex_);
  const pid_t pid = pid_.load();
  if (pid <= 0) return;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return;
  pid_.store(0);
  if (socket_ >= 0) {
    ::close(socket_);
    socket_ = -1;
  }
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
                                                    const std::vector<double>& timeouts,
                                                    const std::atomic<bool>* stop) {
  JobResult result;
  if (ids.empty()) return result;
  if (timeouts.size() != ids.size())
    throw std::logic_error("SimulationProcess::run: " + std::to_string(timeouts.size()) + " timeouts for " +
                           std::to_string(ids.size()) + " parameter sets");
  // Sets with timeouts of their own: the child moves on to the next set without a message, so the
  // deadline is looked at again every 50 ms.
  const bool mixed =
      std::adjacent_find(timeouts.begin(), timeouts.end(), std::not_equal_to<>()) != timeouts.end();
  // The timeout of the set the child is on (of the first, before it took the job). An interpreter that
  // has not taken the job yet may still be starting (importing the modules): that is not the set's time,
  // and it gets a deadline of its own.
  const auto timeout_now = [&] {
    const std::uint32_t on = progress_->index.load();
    if (on == kIdle && type_.python) return kInterpreterStartSeconds;
    return timeouts[on == kIdle || on >= ids.size() ? 0 : on];
  };
  if (pid_.load() <= 0) start();
  const pid_t pid = pid_.load();
  // Stopped before kill() could find this child: nothing was sent, the job goes back whole. (kill()
  // reads the pid after `stop` is set, this reads `stop` after the pid is: one of them sees the other.)
  if (stop && stop->load()) {
    if (killed_by_request_.load()) reap();  // the next job starts a fresh child
    result.unrun = ids;
    return result;
  }

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
    // A starting interpreter takes the job without a message: its sets' own deadlines begin then, so
    // the page is looked at every 50 ms until it has.
    const bool starting = type_.python && progress_->index.load() == kIdle;
    int wait_ms = mixed || starting ? 50 : -1;
    const double timeout_seconds = timeout_now();
    if (timeout_seconds > 0) {
      const std::int64_t deadline =
          progress_->started_ns.load() + static_cast<std::int64_t>(timeout_seconds * 1e9);
      const std::int64_t left = deadline - now_ns();
      if (left <= 0) {
        kill_tree(pid);
        return ended(Failure::timeout, "");
      }
      wait_ms =
          static_cast<int>(std::min<std::int64_t>(left / 1'000'000 + 1, mixed || starting ? 50 : 60'000));
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
      kill_tree(pid);
      return ended(Failure::crash, "sent a malformed answer and was killed");
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      std::uint8_t kind = 0;
      std::string_view bytes;
      if (!get(in, kind) || !get_bytes(in, bytes)) {
        kill_tree(pid);
        return ended(Failure::crash, "sent a malformed answer and was killed");
      }
      StreamRecord record;
      record.id = ids[result.records.size()];
      if (!get(in, record.timeline.started) || !get(in, record.timeline.finished)) {
        kill_tree(pid);
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
        kill_tree(pid);
        return ended(Failure::crash, "answered too few sets and was killed");
      }
      // Between jobs the child is on no set: a cancellation arriving now stops nothing.
      progress_->index.store(kIdle);
      return result;
    }
  }
}

}  // namespace tessera
