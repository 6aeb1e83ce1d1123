// tessera: the command line over a scheduler node.
//   tessera keygen [--out PREFIX]                 a CURVE key pair: PREFIX.key (secret), PREFIX.pub
//   tessera --scheduler ADDR status [--json]      what the scheduler is doing
#include <sys/stat.h>

#include <fstream>
#include <iostream>

#include "nodes/transport.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tessera keygen [--out PREFIX]\n"
    "       tessera --scheduler tcp://HOST:PORT status [--json]\n";

int keygen(const std::string& prefix) {
  const auto keys = tessera::transport::generate_curve_keys();
  {
    std::ofstream secret(prefix + ".key");
    if (!secret) throw std::runtime_error("cannot write " + prefix + ".key");
    secret << keys.secret_key << "\n";
  }
  chmod((prefix + ".key").c_str(), S_IRUSR | S_IWUSR);  // the secret stays private
  std::ofstream(prefix + ".pub") << keys.public_key << "\n";
  std::cout << "wrote " << prefix << ".key (secret) and " << prefix << ".pub; public key " << keys.public_key
            << "\n";
  return 0;
}

int status(const std::string& scheduler, bool json) {
  tessera::transport::Connection connection(
      tessera::transport::ConnectionOptions{.address = scheduler, .name = "tessera-cli"});
  tessera::transport::Outgoing request;
  request.envelope().setStatusRequest();
  connection.send(request);
  auto answer = connection.receive(std::chrono::seconds(10));
  if (!answer || !answer->envelope().isStatus())
    throw std::runtime_error(scheduler + " did not answer with a status");
  auto s = answer->envelope().getStatus();
  if (json) {
    std::cout << "{\"name\":\"" << std::string(s.getName()) << "\",\"workers\":" << s.getWorkers()
              << ",\"retiring_workers\":" << s.getRetiringWorkers() << ",\"operations\":" << s.getOperations()
              << ",\"tasks_pending\":" << s.getTasksPending() << ",\"results_held\":" << s.getResultsHeld()
              << ",\"tasks_done\":" << s.getTasksDone() << ",\"tasks_erred\":" << s.getTasksErred()
              << ",\"tasks_cancelled\":" << s.getTasksCancelled()
              << ",\"tasks_stolen\":" << s.getTasksStolen() << ",\"clients\":" << s.getClients() << "}\n";
  } else {
    std::cout << "scheduler " << std::string(s.getName()) << " at " << scheduler << "\n"
              << "  workers         " << s.getWorkers() << " (" << s.getRetiringWorkers() << " retiring)\n"
              << "  clients         " << s.getClients() << "\n"
              << "  operations      " << s.getOperations() << "\n"
              << "  tasks pending   " << s.getTasksPending() << "\n"
              << "  results held    " << s.getResultsHeld() << "\n"
              << "  tasks done      " << s.getTasksDone() << ", erred " << s.getTasksErred() << ", cancelled "
              << s.getTasksCancelled() << ", stolen " << s.getTasksStolen() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string scheduler, command, out = "tessera";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--scheduler" && i + 1 < argc) {
      scheduler = argv[++i];
    } else if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--json") {
      json = true;
    } else if (command.empty() && arg.rfind("--", 0) != 0) {
      command = arg;
    } else {
      std::cerr << "tessera: unknown argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (command == "keygen") return keygen(out);
  if (command == "status") {
    if (scheduler.empty()) {
      std::cerr << "tessera: status needs --scheduler tcp://HOST:PORT\n";
      return 2;
    }
    return status(scheduler, json);
  }
  std::cerr << (command.empty() ? "tessera: no command given\n"
                                : "tessera: unknown command '" + command + "'\n")
            << kUsage;
  return 2;
} catch (const std::exception& e) {
  std::cerr << "tessera: " << e.what() << "\n";
  return 1;
}
