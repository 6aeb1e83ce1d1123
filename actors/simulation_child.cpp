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
                           const std::function<std::unique_ptr<Simulation>()>& make) {
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
        add_record(frame, nullptr,
                   "simulation '" + std::string(simulation_name) + "' could not be built: " + build_error,
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

}  // namespace tessera
