// tessera-bench-zmq-floor: the floor under a submit + result across processes. Three processes on
// loopback TCP, bare libzmq and nothing else: a client DEALER, a scheduler with a ROUTER for clients and a
// ROUTER for workers, and a worker DEALER; a message goes client -> scheduler -> worker -> scheduler ->
// client, the two round trips a Tessera submission makes. Prints one JSON line with p50/p99 in us.
// Then the floor under chunks between worker processes: 8 MiB messages from one process to another,
// zero-copy from one buffer, over TCP loopback and over an ipc:// socket file, with Tessera's socket
// options (no high-water marks); one JSON line each with GiB/s (the median of --repeat runs).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

constexpr int kDeadlineMs = 10000;  // any hop slower than this means a peer is gone
pid_t g_children[2] = {0, 0};       // ended by main's error path, which would otherwise leave them waiting

std::vector<zmq::message_t> receive_all(zmq::socket_t& socket) {
  std::vector<zmq::message_t> parts;
  do {
    parts.emplace_back();
    if (!socket.recv(parts.back())) throw std::runtime_error("receive timed out");
  } while (parts.back().more());
  return parts;
}

void send_all(zmq::socket_t& socket, std::vector<zmq::message_t>& parts, std::size_t from = 0) {
  for (std::size_t i = from; i < parts.size(); ++i)
    socket.send(parts[i], i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

// Binds both routers, reports their endpoints on `report`, then relays until the client says "stop".
[[noreturn]] void scheduler(int report) {
  zmq::context_t context{1};
  zmq::socket_t clients{context, zmq::socket_type::router}, workers{context, zmq::socket_type::router};
  clients.bind("tcp://127.0.0.1:*");
  workers.bind("tcp://127.0.0.1:*");
  const std::string endpoints =
      clients.get(zmq::sockopt::last_endpoint) + "\n" + workers.get(zmq::sockopt::last_endpoint) + "\n";
  if (write(report, endpoints.data(), endpoints.size()) != static_cast<ssize_t>(endpoints.size())) _exit(3);
  close(report);
  // The worker's hello names it.
  zmq::pollitem_t hello[] = {{workers.handle(), 0, ZMQ_POLLIN, 0}};
  if (zmq::poll(hello, 1, std::chrono::milliseconds(kDeadlineMs)) == 0) _exit(4);
  auto first = receive_all(workers);
  zmq::message_t worker_id{first[0].data(), first[0].size()};
  zmq::pollitem_t items[] = {{clients.handle(), 0, ZMQ_POLLIN, 0}, {workers.handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    if (zmq::poll(items, 2, std::chrono::milliseconds(kDeadlineMs)) == 0) _exit(5);
    if (items[0].revents & ZMQ_POLLIN) {
      auto parts = receive_all(clients);  // [client id, payload]
      if (parts.back().to_string_view() == "stop") {
        zmq::message_t stop{"stop", 4};
        workers.send(zmq::message_t{worker_id.data(), worker_id.size()}, zmq::send_flags::sndmore);
        workers.send(stop, zmq::send_flags::none);
        // _exit skips the context's shutdown, which is what sends the stop: close first.
        workers.set(zmq::sockopt::linger, 1000);
        workers.close();
        clients.close();
        context.close();
        _exit(0);
      }
      workers.send(zmq::message_t{worker_id.data(), worker_id.size()}, zmq::send_flags::sndmore);
      send_all(workers, parts);
    }
    if (items[1].revents & ZMQ_POLLIN) {
      auto parts = receive_all(workers);  // [worker id, client id, payload]
      send_all(clients, parts, 1);
    }
  }
}

[[noreturn]] void worker(const std::string& endpoint) {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
  socket.set(zmq::sockopt::rcvtimeo, kDeadlineMs);
  socket.connect(endpoint);
  socket.send(zmq::str_buffer("hello"));
  for (;;) {
    auto parts = receive_all(socket);  // [client id, payload] or [stop]
    if (parts.back().to_string_view() == "stop") _exit(0);
    send_all(socket, parts);
  }
}

// Receives `count` messages on a ROUTER bound at `endpoint`, then answers "done" to their sender.
[[noreturn]] void chunk_receiver(const std::string& endpoint, long long count, int report) {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::rcvhwm, 0);
  socket.set(zmq::sockopt::rcvtimeo, kDeadlineMs);
  socket.bind(endpoint);
  const std::string bound = socket.get(zmq::sockopt::last_endpoint) + "\n";
  if (write(report, bound.data(), bound.size()) != static_cast<ssize_t>(bound.size())) _exit(3);
  close(report);
  zmq::message_t sender;
  for (long long i = 0; i < count; ++i) {
    auto parts = receive_all(socket);  // [sender id, chunk]
    if (parts.size() != 2) _exit(4);
    sender = std::move(parts[0]);
  }
  socket.send(sender, zmq::send_flags::sndmore);
  socket.send(zmq::str_buffer("done"));
  socket.set(zmq::sockopt::linger, 1000);
  socket.close();
  context.close();
  _exit(0);
}

// Seconds to move `count` chunks of `bytes` to a receiver process listening at `endpoint`.
double chunk_run(const std::string& endpoint, long long count, std::size_t bytes,
                 const std::vector<char>& chunk) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t receiver = g_children[0] = fork();
  if (receiver == 0) {
    close(pipe_fds[0]);
    chunk_receiver(endpoint, count, pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::string bound;
  char buffer[512];
  for (ssize_t got; (got = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) bound.append(buffer, got);
  close(pipe_fds[0]);
  if (bound.empty()) throw std::runtime_error("the chunk receiver reported no endpoint");
  bound.pop_back();
  double seconds = 0;
  {
    zmq::context_t context{1};
    zmq::socket_t socket{context, zmq::socket_type::dealer};
    socket.set(zmq::sockopt::sndhwm, 0);
    socket.set(zmq::sockopt::rcvhwm, 0);
    socket.set(zmq::sockopt::rcvtimeo, kDeadlineMs);
    socket.set(zmq::sockopt::linger, 1000);
    socket.connect(bound);
    const auto start = std::chrono::steady_clock::now();
    for (long long i = 0; i < count; ++i) {
      zmq::message_t message(const_cast<char*>(chunk.data()), bytes, nullptr, nullptr);  // zero-copy
      socket.send(message, zmq::send_flags::none);
    }
    zmq::message_t done;
    if (!socket.recv(done)) throw std::runtime_error("the chunk receiver did not answer within 10 s");
    seconds = tessera::bench::seconds_since(start);
  }
  int status = 0;
  waitpid(receiver, &status, 0);
  g_children[0] = 0;
  return seconds;
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags("tessera-bench-zmq-floor",
                                "bare libzmq, client -> scheduler -> worker and back across three processes: "
                                "the floor under a submit + result. Prints one JSON line.");
  flags.integer("samples", 2000, 1, 10000000, "round trips timed one at a time")
      .integer("repeat", 1, 1, 1000,
               "round trips: accepted for the guard's sake (the samples are pooled); "
               "chunks: runs per transport, the median reported")
      .integer("chunks", 64, 0, 100000, "8 MiB messages per chunk run (0: no chunk runs)");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t scheduler_pid = g_children[0] = fork();
  if (scheduler_pid == 0) {
    close(pipe_fds[0]);
    scheduler(pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::string endpoints;
  char buffer[256];
  for (ssize_t got; (got = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) endpoints.append(buffer, got);
  close(pipe_fds[0]);
  const auto newline = endpoints.find('\n');
  if (newline == std::string::npos || endpoints.size() < newline + 2)
    throw std::runtime_error("the scheduler process reported no endpoints");
  const std::string client_endpoint = endpoints.substr(0, newline);
  const std::string worker_endpoint =
      endpoints.substr(newline + 1, endpoints.find('\n', newline + 1) - newline - 1);
  const pid_t worker_pid = g_children[1] = fork();
  if (worker_pid == 0) worker(worker_endpoint);

  std::vector<double> latencies;
  {
    zmq::context_t context{1};
    zmq::socket_t socket{context, zmq::socket_type::dealer};
    socket.set(zmq::sockopt::rcvtimeo, kDeadlineMs);
    socket.set(zmq::sockopt::linger, 1000);
    socket.connect(client_endpoint);
    const std::string payload(64, 'x');  // about a small submission's size
    const auto samples = flags.integer("samples");
    for (long long i = -200; i < static_cast<long long>(samples); ++i) {  // 200 to warm up
      const auto start = std::chrono::steady_clock::now();
      socket.send(zmq::buffer(payload));
      zmq::message_t reply;
      if (!socket.recv(reply)) throw std::runtime_error("no reply within 10 s from the scheduler or worker");
      if (i >= 0) latencies.push_back(tessera::bench::seconds_since(start) * 1e6);
    }
    socket.send(zmq::str_buffer("stop"));
  }
  for (const pid_t pid : {scheduler_pid, worker_pid}) {
    int status = 0;
    waitpid(pid, &status, 0);
  }
  std::sort(latencies.begin(), latencies.end());
  std::cout << "{\"bench\":\"zmq_floor\",\"samples\":" << latencies.size()
            << ",\"p50_us\":" << latencies[latencies.size() / 2]
            << ",\"p99_us\":" << latencies[latencies.size() * 99 / 100] << "}" << std::endl;
  g_children[0] = g_children[1] = 0;

  const auto chunks = flags.integer("chunks");
  if (chunks > 0) {
    constexpr std::size_t kChunkBytes = std::size_t{8} << 20;
    const std::vector<char> chunk(kChunkBytes, 1);  // touched: a chunk a task made
    std::string socket_dir = "/tmp/tessera-zmq-floor-XXXXXX";
    if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp)
      socket_dir = std::string(tmp) + "/tessera-zmq-floor-XXXXXX";
    if (!mkdtemp(socket_dir.data())) throw std::runtime_error("cannot make a directory for the socket file");
    for (const std::string transport : {"tcp", "ipc"}) {
      const std::string endpoint =
          transport == "tcp" ? "tcp://127.0.0.1:*" : "ipc://" + socket_dir + "/socket";
      std::vector<double> rates;
      for (long long r = 0; r < flags.integer("repeat"); ++r)
        rates.push_back(static_cast<double>(chunks) * kChunkBytes /
                        chunk_run(endpoint, chunks, kChunkBytes, chunk) / (1 << 30));
      std::cout << "{\"bench\":\"zmq_floor_chunks\",\"transport\":\"" << transport
                << "\",\"chunk_bytes\":" << kChunkBytes << ",\"chunks\":" << chunks
                << ",\"gib_per_s\":" << tessera::bench::median(rates) << "}" << std::endl;
    }
    rmdir(socket_dir.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  for (const pid_t child : g_children)
    if (child > 0) kill(child, SIGKILL);
  std::cerr << "tessera-bench-zmq-floor: " << e.what() << "\n";
  return 2;
}
