#include "actors/python_launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "actors/simulation_child.hpp"

extern char** environ;

namespace tessera {

PythonCommand python_command(const PythonEnvironment& environment,
                             const std::vector<std::string>& arguments) {
  PythonCommand command;
  command.argv_text.reserve(arguments.size() + environment.modules.size() + 4);
  command.argv_text.push_back(environment.executable);
  command.argv_text.emplace_back(std::string_view("-m"));
  command.argv_text.emplace_back(std::string_view("tessera._worker"));
  command.argv_text.insert(command.argv_text.end(), arguments.begin(), arguments.end());
  command.argv_text.emplace_back(std::string_view("--"));
  command.argv_text.insert(command.argv_text.end(), environment.modules.begin(), environment.modules.end());
  std::string path = environment.package_path;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("PYTHONPATH=")) {
      if (entry.size() > 11) {
        if (!path.empty()) path += ':';
        path.append(entry.substr(11));
      }
      continue;
    }
    command.env_text.emplace_back(entry);
  }
  if (!path.empty()) command.env_text.push_back("PYTHONPATH=" + path);
#ifdef TESSERA_SANITIZER_PRELOAD
  // This build's module is sanitized and Debian's interpreter is not: the runtime must come first, and
  // the interpreter's own leaks are not ours to report.
  const auto has = [&](std::string_view name) {
    return std::any_of(command.env_text.begin(), command.env_text.end(),
                       [&](const std::string& e) { return e.starts_with(name); });
  };
  if (!has("LD_PRELOAD=")) command.env_text.emplace_back("LD_PRELOAD=" TESSERA_SANITIZER_PRELOAD);
  if (!has("ASAN_OPTIONS=")) command.env_text.emplace_back("ASAN_OPTIONS=detect_leaks=0");
#endif
  for (auto& a : command.argv_text) command.argv.push_back(a.data());
  command.argv.push_back(nullptr);
  for (auto& e : command.env_text) command.envp.push_back(e.data());
  command.envp.push_back(nullptr);
  return command;
}

void exec_python(const PythonCommand& command, std::span<const int> descriptors, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent went between the fork and the line above
  reset_child_signals();
  // Moved up first, so that placing one at 3 + i never closes another not yet placed.
  int high[8];
  if (descriptors.size() > 8) ::_exit(126);
  for (std::size_t i = 0; i < descriptors.size(); ++i)
    if ((high[i] = ::fcntl(descriptors[i], F_DUPFD, 16)) < 0) ::_exit(126);
  for (std::size_t i = 0; i < descriptors.size(); ++i)
    if (::dup2(high[i], 3 + static_cast<int>(i)) < 0) ::_exit(126);
  ::syscall(SYS_close_range, 3u + static_cast<unsigned>(descriptors.size()), ~0u, 0u);
  ::execve(command.argv[0], command.argv.data(), command.envp.data());
  static const char message[] = "tessera: the Python interpreter could not be started\n";
  [[maybe_unused]] auto ignored = ::write(2, message, sizeof message - 1);
  ::_exit(127);
}

}  // namespace tessera
