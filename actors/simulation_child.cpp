#include "actors/simulation_child.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "graph/stream_record.hpp"
#include "storage/value_record.hpp"

namespace tessera {

namespace {

// The child sends what it has at least this often, so a crash late in a long job loses little.
constexpr std::chrono::milliseconds kFlushEvery{20};

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

using child_frames::get;
using child_frames::get_bytes;
using child_frames::put;

// One answer: its kind (0 a value record, 1 an error), its bytes, and when its run began and ended.
void add_record(std::string& frame, std::uint8_t kind, std::string_view bytes, double started,
                double finished) {
  put<std::uint8_t>(frame, kind);
  put<std::uint64_t>(frame, bytes.size());
  frame += bytes;
  put<double>(frame, started);
  put<double>(frame, finished);
}

void add_error(std::string& frame, std::string_view error, double started, double finished) {
  add_record(frame, 1, error, started, finished);
}

// A result's record, or the error that fails its set when it is larger than the worker allows (looked
// at before encoding when the payload alone is over).
void add_result(std::string& frame, const Value& result, std::uint64_t max_bytes, double started,
                double finished) {
  std::uint64_t size = result.payload_bytes();
  if (size <= max_bytes) {
    const std::string record = ValueRecord(result).flat();
    if (record.size() <= max_bytes) {
      add_record(frame, 0, record, started, finished);
      return;
    }
    size = record.size();
  }
  add_error(frame,
            "its result is " + std::to_string(size) + " bytes, over the worker's limit of " +
                std::to_string(max_bytes) + " bytes for one result (a node's limits.max_message_size)",
            started, finished);
}

}  // namespace

namespace child_frames {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool read_frame(int fd, std::string& payload) {
  std::uint64_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n) || n > kMaxFrame) return false;
  payload.resize(n);
  return read_all(fd, payload.data(), n);
}

bool send_frame(int fd, std::string& frame) {
  const std::uint64_t n = frame.size() - sizeof(std::uint64_t);
  std::memcpy(frame.data(), &n, sizeof n);
  return send_all(fd, frame.data(), frame.size());
}

std::string new_frame() {
  return std::string(sizeof(std::uint64_t), '\0');
}

std::string encode_config(const Config& config) {
  Value::List entries;
  entries.reserve(config.entries().size());
  for (const auto& [key, value] : config.entries()) entries.push_back(Value(Value::List{Value(key), value}));
  return ValueRecord(Value(std::move(entries))).flat();
}

std::optional<Config> decode_config(std::string_view payload) {
  try {
    const Value entries = ValueRecord::decode(payload);
    Config config;
    for (const auto& entry : entries.as_list()) {
      const auto& pair = entry.as_list();
      if (pair.size() != 2) return std::nullopt;
      config.set(pair[0].as_string(), pair[1]);
    }
    return config;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string encode_start(std::uint64_t max_result_bytes, const Config& config) {
  std::string payload;
  put<std::uint64_t>(payload, max_result_bytes);
  return payload + encode_config(config);
}

std::optional<ChildStart> decode_start(std::string_view payload) {
  ChildStart start;
  if (!get(payload, start.max_result_bytes)) return std::nullopt;
  auto config = decode_config(payload);
  if (!config) return std::nullopt;
  start.config = std::move(*config);
  return start;
}

}  // namespace child_frames

void reset_child_signals() {
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    unsigned long kernel_action[8] = {};  // SIG_DFL, no flags, no mask, in any architecture's layout
    ::syscall(SYS_rt_sigaction, s, kernel_action, nullptr, sizeof(unsigned long));
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

SimulationProgress* map_child_progress(int fd) {
  void* page = ::mmap(nullptr, sizeof(SimulationProgress), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return page == MAP_FAILED ? nullptr : static_cast<SimulationProgress*>(page);
}

void serve_simulation_jobs(int socket, SimulationProgress* progress, std::string_view simulation_name,
                           const std::function<std::unique_ptr<Simulation>()>& make,
                           std::uint64_t max_result_bytes) {
  using namespace child_frames;
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
        simulation = make();
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
        add_error(frame,
                  "simulation '" + std::string(simulation_name) + "' could not be built: " + build_error,
                  started, timeline_now());
      } else {
        try {
          const Value result = simulation->run(parameters[i]);
          add_result(frame, result, max_result_bytes, started, timeline_now());
        } catch (const std::exception& e) {
          add_error(frame, e.what(), started, timeline_now());
        } catch (...) {
          add_error(frame, "unknown exception", started, timeline_now());
        }
      }
      ++in_frame;
      const auto now = std::chrono::steady_clock::now();
      // Sent at least every kFlushEvery, and before the answer grows past one result's limit.
      if (i + 1 < count && (now - last_flush >= kFlushEvery || frame.size() > max_result_bytes)) {
        flush(false);
        last_flush = now;
      }
    }
    flush(true);
  }
  ::_exit(0);
}

}  // namespace tessera
