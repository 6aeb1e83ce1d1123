#include "programs/program_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace tessera::programs {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::string errno_text(int error) {
  return std::string(std::strerror(error)) + " (errno " + std::to_string(error) + ")";
}

// Reads what is there now, 1 MiB at most (a program that writes faster than this reads must not keep the
// caller from its interrupts); false at end of file.
bool drain(Fd& fd, OutputTail& tail) {
  char buffer[16384];
  for (int reads = 0; reads < 64; ++reads) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      tail.append(std::string_view(buffer, static_cast<std::size_t>(n)));
      continue;
    }
    if (n == 0) {
      fd.reset();
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    fd.reset();
    return false;
  }
  return true;
}

// The spawn attributes every run shares: a session of its own, no blocked signals, default dispositions.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
};

void kill_group(pid_t group, int signal) {
  if (group > 0) ::kill(-group, signal);
}

}  // namespace

void OutputTail::append(std::string_view bytes) {
  total_ += bytes.size();
  if (capacity_ == 0) return;
  if (bytes.size() >= capacity_) {
    text_.assign(bytes.substr(bytes.size() - capacity_));
    return;
  }
  text_.append(bytes);
  // Trimmed in halves so that a stream of small writes costs amortised O(1) a byte.
  if (text_.size() > 2 * capacity_) text_.erase(0, text_.size() - capacity_);
}

std::string OutputTail::last(std::size_t bytes) const {
  return text_.size() <= bytes ? text_ : text_.substr(text_.size() - bytes);
}

Interrupter::Interrupter() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::runtime_error("eventfd: " + errno_text(errno));
}

Interrupter::~Interrupter() {
  if (fd_ >= 0) ::close(fd_);
}

void Interrupter::interrupt() {
  flag_.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

void Interrupter::reset() {
  flag_.store(false, std::memory_order_release);
  std::uint64_t value;
  [[maybe_unused]] const ssize_t n = ::read(fd_, &value, sizeof value);
}

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signal);
}

std::vector<int> processes_with_token(std::string_view token) {
  std::vector<int> found;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  const pid_t self = ::getpid();
  std::string environ;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    std::ifstream in("/proc/" + std::string(entry->d_name) + "/environ", std::ios::binary);
    if (!in) continue;
    environ.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::size_t start = 0;
    while (start < environ.size()) {
      std::size_t stop = environ.find('\0', start);
      if (stop == std::string::npos) stop = environ.size();
      if (std::string_view(environ).substr(start, stop - start) == token) {
        found.push_back(static_cast<int>(pid));
        break;
      }
      start = stop + 1;
    }
  }
  ::closedir(proc);
  return found;
}

Exit run_program(const LaunchRequest& request, Interrupter& interrupter) {
  static const SpawnAttributes attributes;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw StartError("pipe: " + errno_text(errno), errno);
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw StartError("pipe: " + errno_text(errno), errno);
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);
  // The child's ends block, as a program expects of its stdout.
  ::fcntl(out_write.get(), F_SETFL, 0);
  ::fcntl(err_write.get(), F_SETFL, 0);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  posix_spawn_file_actions_addchdir_np(&actions, request.directory.c_str());
  // Nothing of the worker's (sockets, RocksDB files) reaches the program.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  std::vector<char*> argv, envp;
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : request.environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const auto started = Clock::now();
  pid_t pid = -1;
  const bool search = request.argv.front().find('/') == std::string::npos;
  const int spawned =
      search ? ::posix_spawnp(&pid, argv[0], &actions, &attributes.attr, argv.data(), envp.data())
             : ::posix_spawn(&pid, argv[0], &actions, &attributes.attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw StartError("cannot start " + request.argv.front() + ": " + errno_text(spawned), spawned);
  out_write.reset();
  err_write.reset();

  Exit exit;
  exit.out = OutputTail(request.stdout_capacity);
  exit.err = OutputTail(request.stderr_capacity);
  Fd process(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  bool running = true;
  Clock::time_point exited_at{};
  // Whether the program has ended, without reaping it: until it is reaped its pid stays taken, so its
  // group can still be signalled without hitting a process that reused the number.
  const auto ended = [&] {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid;
  };
  // Ends the tree: SIGTERM to the group, SIGKILL to it after the grace period.
  const auto end_tree = [&] {
    kill_group(pid, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::duration<double>(request.grace_seconds);
    while (!ended()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) break;
      pollfd wait{process.get(), POLLIN, 0};
      if (process.get() >= 0) {
        ::poll(&wait, 1, static_cast<int>(std::min<long long>(left, 50)));
      } else {
        ::usleep(10000);  // no pidfd (an old kernel): look again in 10 ms
      }
      if (out_read.get() >= 0) drain(out_read, exit.out);
      if (err_read.get() >= 0) drain(err_read, exit.err);
    }
    running = false;
  };

  for (;;) {
    pollfd fds[4];
    nfds_t count = 0;
    const auto add = [&](int fd) {
      if (fd >= 0) fds[count++] = pollfd{fd, POLLIN, 0};
    };
    add(out_read.get());
    add(err_read.get());
    add(interrupter.fd());
    if (running) add(process.get());
    const bool pipes_open = out_read.get() >= 0 || err_read.get() >= 0;
    if (!running && !pipes_open) break;
    // Without a pidfd the child's end is noticed when its pipes close, or by a look every 100 ms.
    const int timeout = running && process.get() < 0 ? 100 : (running ? -1 : 200);
    const int ready = ::poll(fds, count, timeout);
    if (ready < 0 && errno != EINTR) break;
    if (interrupter.interrupted()) {
      exit.interrupted = true;
      end_tree();
      break;
    }
    if (out_read.get() >= 0) drain(out_read, exit.out);
    if (err_read.get() >= 0) drain(err_read, exit.err);
    if (running && ended()) {
      running = false;
      exited_at = Clock::now();
      // What the program left behind in its group (a background child holding stdout) ends with it.
      kill_group(pid, SIGKILL);
    }
    if (!running && ready == 0) break;  // the pipes stayed open 200 ms after the group was killed
    // A daemon of another session that keeps writing to them: 1 s after the program, they are let go.
    if (!running && Clock::now() - exited_at > std::chrono::seconds(1)) break;
  }
  // Whatever is left of the group (all of it, when the loop ended on an error) is killed before the
  // program is reaped.
  kill_group(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  {
    // Daemons that made sessions of their own still carry the token: a set's processes end with it,
    // interrupted or not.
    // SIGKILL lands asynchronously: the run ends once they are gone (1 s at most), so that what
    // follows (the next attempt in the same directory, a test counting them) does not meet them.
    for (const auto& variable : request.environment)
      if (variable.starts_with("TESSERA_RUN=")) {
        const auto until = Clock::now() + std::chrono::seconds(1);
        for (auto left = processes_with_token(variable); !left.empty() && Clock::now() < until;
             left = processes_with_token(variable)) {
          for (int other : left) ::kill(other, SIGKILL);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        break;
      }
  }
  if (out_read.get() >= 0) drain(out_read, exit.out);
  if (err_read.get() >= 0) drain(err_read, exit.err);
  exit.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.code = WTERMSIG(status);
  } else {
    exit.code = WEXITSTATUS(status);
  }
  return exit;
}

}  // namespace tessera::programs
