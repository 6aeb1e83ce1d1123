// tessera: the command line over a scheduler node.
//   tessera keygen [--out PREFIX]                 a CURVE key pair: PREFIX.key (secret), PREFIX.pub
//   tessera --scheduler ADDR status [--json]      what the scheduler is doing
//   tessera --scheduler ADDR workers [--json]     its workers: name, address, threads, memory, tasks
//   tessera --scheduler ADDR stream push --simulation NAME --input FILE.csv [--output FILE.csv]
//   tessera --scheduler ADDR results --stream ID [--where FILTER] [--format summary|count|csv|json]
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli_session.hpp"
#include "cli_streams.hpp"
#include "nodes/transport.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tessera keygen [--out PREFIX]\n"
    "       tessera --scheduler tcp://HOST:PORT status [--json]\n"
    "       tessera --scheduler tcp://HOST:PORT workers [--json]\n"
    "       tessera --scheduler tcp://HOST:PORT stream push --simulation NAME --input FILE.csv\n"
    "               [--pool-size N] [--max-in-flight N] [--output FILE.csv] [--quiet]\n"
    "       tessera --scheduler tcp://HOST:PORT results --stream ID [--where 'result > 2']\n"
    "               [--format summary|count|csv|json] [--field 'result[0]'] [--bins N] [--output FILE]\n";

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

using tessera::cli::Session;

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes == 0) return "no limit";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

int workers(const std::string& scheduler, bool json) {
  Session session(scheduler);
  tessera::transport::Outgoing request;
  request.envelope().setWorkersRequest();
  auto answer = session.ask(request, "a list of workers");
  if (!answer.envelope().isWorkers())
    throw std::runtime_error(scheduler + " did not answer with its workers");
  auto list = answer.envelope().getWorkers();
  if (json) {
    std::cout << "[";
    for (unsigned i = 0; i < list.size(); ++i) {
      auto w = list[i];
      std::cout << (i ? "," : "") << "{\"id\":" << w.getWorkerId() << ",\"name\":" << json_string(w.getName())
                << ",\"address\":" << json_string(w.getAddress()) << ",\"threads\":" << w.getThreads()
                << ",\"memory_limit\":" << w.getMemoryLimit() << ",\"tasks\":" << w.getTasksAssigned()
                << ",\"retiring\":" << (w.getRetiring() ? "true" : "false") << "}";
    }
    std::cout << "]\n";
    return 0;
  }
  std::printf("%-4s %-16s %-28s %7s %12s %8s\n", "id", "name", "address", "threads", "memory", "tasks");
  for (auto w : list)
    std::printf("%-4u %-16s %-28s %7u %12s %8llu%s\n", w.getWorkerId(), std::string(w.getName()).c_str(),
                std::string(w.getAddress()).c_str(), w.getThreads(), bytes_text(w.getMemoryLimit()).c_str(),
                static_cast<unsigned long long>(w.getTasksAssigned()), w.getRetiring() ? " (retiring)" : "");
  return 0;
}

int status(const std::string& scheduler, bool json) {
  Session session(scheduler);
  tessera::transport::Outgoing request;
  request.envelope().setStatusRequest();
  auto answer = session.ask(request, "a status");
  if (!answer.envelope().isStatus()) throw std::runtime_error(scheduler + " did not answer with a status");
  auto s = answer.envelope().getStatus();
  if (json) {
    std::cout << "{\"name\":\"" << std::string(s.getName()) << "\",\"workers\":" << s.getWorkers()
              << ",\"retiring_workers\":" << s.getRetiringWorkers() << ",\"operations\":" << s.getOperations()
              << ",\"tasks_pending\":" << s.getTasksPending() << ",\"results_held\":" << s.getResultsHeld()
              << ",\"tasks_done\":" << s.getTasksDone() << ",\"tasks_erred\":" << s.getTasksErred()
              << ",\"tasks_cancelled\":" << s.getTasksCancelled()
              << ",\"tasks_stolen\":" << s.getTasksStolen() << ",\"clients\":" << s.getClients()
              << ",\"workers_lost\":" << s.getWorkersLost()
              << ",\"tasks_recomputed\":" << s.getTasksRecomputed() << "}\n";
  } else {
    std::cout << "scheduler " << std::string(s.getName()) << " at " << scheduler << "\n"
              << "  workers         " << s.getWorkers() << " (" << s.getRetiringWorkers() << " retiring)\n"
              << "  clients         " << s.getClients() << "\n"
              << "  operations      " << s.getOperations() << "\n"
              << "  tasks pending   " << s.getTasksPending() << "\n"
              << "  results held    " << s.getResultsHeld() << "\n"
              << "  tasks done      " << s.getTasksDone() << ", erred " << s.getTasksErred() << ", cancelled "
              << s.getTasksCancelled() << ", stolen " << s.getTasksStolen() << "\n"
              << "  workers lost    " << s.getWorkersLost() << " (tasks recomputed " << s.getTasksRecomputed()
              << ")\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string scheduler, command, out = "tessera";
  bool json = false;
  tessera::cli::Options options;
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
    } else if (arg == "--quiet") {
      options.emplace("quiet", "1");
    } else if (arg.rfind("--", 0) == 0 && i + 1 < argc &&
               (arg == "--simulation" || arg == "--input" || arg == "--output" || arg == "--stream" ||
                arg == "--where" || arg == "--format" || arg == "--field" || arg == "--bins" ||
                arg == "--pool-size" || arg == "--max-in-flight")) {
      options[arg.substr(2)] = argv[++i];
    } else if (arg.rfind("--", 0) != 0 && (command.empty() || command == "stream")) {
      command = command.empty() ? arg : command + " " + arg;
    } else {
      std::cerr << "tessera: unknown argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (command == "keygen") return keygen(out);
  if (command == "workers") {
    if (scheduler.empty()) {
      std::cerr << "tessera: workers needs --scheduler tcp://HOST:PORT\n";
      return 2;
    }
    return workers(scheduler, json);
  }
  if (command == "stream push" || command == "results") {
    if (scheduler.empty()) {
      std::cerr << "tessera: " << command << " needs --scheduler tcp://HOST:PORT\n";
      return 2;
    }
    return command == "results" ? tessera::cli::results(scheduler, options)
                                : tessera::cli::stream_push(scheduler, options);
  }
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
