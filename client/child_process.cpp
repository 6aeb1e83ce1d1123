#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace tessera::cli {
namespace {

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

struct SpawnAttributes {
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_t actions;
  SpawnAttributes() {
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_init(&actions);
    // The launcher blocks its stop signals to take them with sigtimedwait: its children must not inherit
    // that, or SIGTERM from Slurm would never reach them.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) sigaddset(&defaults, signal);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
};

pid_t start(const std::vector<std::string>& argv, const Environment& extra,
            SpawnAttributes& spawn_attributes) {
  if (argv.empty()) throw SpawnError("no program to start");
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    const auto name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [key, value] : extra) replaced = replaced || key == name;
    if (!replaced) environment.emplace_back(text);
  }
  for (const auto& [key, value] : extra) environment.push_back(key + "=" + value);
  std::vector<char*> args, envp;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t child = 0;
  const int error = posix_spawnp(&child, argv[0].c_str(), &spawn_attributes.actions,
                                 &spawn_attributes.attributes, args.data(), envp.data());
  if (error != 0) throw SpawnError("cannot start " + argv[0] + ": " + std::strerror(error));
  return child;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const Environment& extra) {
  SpawnAttributes attributes;
  return start(argv, extra, attributes);
}

std::optional<int> poll_exit(pid_t child) {
  int status = 0;
  const pid_t done = waitpid(child, &status, WNOHANG);
  if (done == child) return exit_status(status);
  if (done < 0 && errno == ECHILD) return 1;  // already reaped: nothing more to wait for
  return std::nullopt;
}

int stop_child(pid_t child, std::chrono::milliseconds grace) {
  if (auto done = poll_exit(child)) return *done;
  kill(child, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto done = poll_exit(child)) return *done;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  return exit_status(status);
}

std::string capture_output(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw SpawnError("cannot run " + argv.at(0) + ": " + std::strerror(errno));
  SpawnAttributes attributes;
  posix_spawn_file_actions_adddup2(&attributes.actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&attributes.actions, err[1], STDERR_FILENO);
  pid_t child = 0;
  try {
    child = start(argv, {}, attributes);
  } catch (...) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    throw;
  }
  close(out[1]);
  close(err[1]);
  std::string output, errors;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_pipes = 2;
  bool late = false;
  while (open_pipes > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      late = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? output : errors).append(buffer, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const auto& fd : fds)
    if (fd.fd >= 0) close(fd.fd);
  // Its pipes closed: it is ending. Wait for that within what is left of the timeout.
  std::optional<int> ended;
  while (!late && !(ended = poll_exit(child))) {
    if (std::chrono::steady_clock::now() >= deadline)
      late = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const int status = ended ? *ended : stop_child(child, std::chrono::milliseconds(500));
  if (late)
    throw SpawnError(argv[0] + " did not finish within " + std::to_string(timeout.count() / 1000) + " s");
  if (status != 0) {
    while (!errors.empty() && (errors.back() == '\n' || errors.back() == ' ')) errors.pop_back();
    throw SpawnError(argv[0] + " failed (exit " + std::to_string(status) + ")" +
                     (errors.empty() ? std::string() : ": " + errors.substr(0, 600)));
  }
  return output;
}

std::string own_directory() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw SpawnError("cannot find this program's own path (/proc/self/exe): " + error.message());
  return exe.parent_path().string();
}

}  // namespace tessera::cli
