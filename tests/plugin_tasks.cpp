// Task functions shared by a test and the tessera-node it starts: the test links this library, the node
// loads it as a plugin (plugins.paths), so both sides know the functions by name.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <tessera/tessera.hpp>
#include <thread>

#include "plugin_tasks.hpp"

namespace plugin_tasks {

std::int64_t square(std::int64_t x) {
  return x * x;
}
TESSERA_TASK(square);

std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);

// A predicate, for bags' filter.
bool is_even(std::int64_t x) {
  return x % 2 == 0;
}
TESSERA_TASK(is_even);

double total(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return s;
}
TESSERA_TASK(total);

std::vector<double> ramp(std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(i);
  return out;
}
TESSERA_TASK(ramp);

std::int64_t fails_on_seven(std::int64_t x) {
  if (x == 7) throw std::runtime_error("seven is not allowed");
  return x;
}
TESSERA_TASK(fails_on_seven);

}  // namespace plugin_tasks

namespace plugin_tasks {

// Slow enough that a worker can be killed while tasks are still running.
std::int64_t slow_square(std::int64_t x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return x * x;
}
TESSERA_TASK(slow_square);

// Slow enough that a scheduler can be killed while a layer of them runs.
std::int64_t slower_square(std::int64_t x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return x * x;
}
TESSERA_TASK(slower_square);

// 4 MB that take a while: a worker can be killed while its checkpoints travel to the scheduler.
std::vector<double> slow_block(std::int64_t seed) {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::vector<double> out(512 * 1024);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(seed) + static_cast<double>(i);
  return out;
}
TESSERA_TASK(slow_block);

// Runs until the file `gate` exists (60 s at most): a test says when a layer of tasks may end, and knows
// nothing is delivered before.
std::int64_t gated_square(std::int64_t x, const std::string& gate) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(gate)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the gate " + gate + " never opened");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return x * x;
}
TESSERA_TASK(gated_square);

// The sum of a chunk: reading it needs the chunk itself, wherever it was made.
double chunk_sum(const std::vector<double>& chunk, std::int64_t offset) {
  double s = 0;
  for (double x : chunk) s += x;
  return s + static_cast<double>(offset);
}
TESSERA_TASK(chunk_sum);

}  // namespace plugin_tasks

namespace plugin_tasks {

// A simulation for stream tests: squares its parameter after a short pause; 13 is refused.
struct PauseSquare {
  explicit PauseSquare(const tessera::Config& config) : pause_us(config.get<std::int64_t>("pause_us", 500)) {}
  double run(double x) {
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    if (x == 13) throw std::runtime_error("13 is refused");
    return x * x;
  }
  std::int64_t pause_us;
};
TESSERA_SIMULATION(PauseSquare, "pause_square");

}  // namespace plugin_tasks

namespace plugin_tasks {

// Set by a test before its cluster goes, so that a set hung under thread isolation returns.
std::atomic<bool> release_hung_sets{false};

// A simulation that misbehaves on purpose, by the last digit of its first parameter: 3 reads a page it
// may not (a real SIGSEGV), 4 aborts (SIGABRT), 5 hangs (until release_hung_sets, at most 60 s), 7
// throws; any other gives the sum of its parameters.
struct Unruly {
  explicit Unruly(const tessera::Config&) {}
  double run(const std::vector<double>& p) {
    const auto digit = static_cast<std::int64_t>(p.at(0)) % 10;
    if (digit == 3) {
      void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      return *static_cast<volatile double*>(page);
    }
    if (digit == 4) std::abort();
    if (digit == 5) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!release_hung_sets && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return -1;
    }
    if (digit == 7) throw std::runtime_error("7 is refused");
    double sum = 0;
    for (double x : p) sum += x;
    return sum;
  }
};
TESSERA_SIMULATION(Unruly, "unruly");

// The process it runs in: the same for every set of one simulation actor under process isolation.
struct WhereAmI {
  explicit WhereAmI(const tessera::Config&) {}
  double run(double x) {
    if (x < 0) std::abort();
    return static_cast<double>(getpid());
  }
};
TESSERA_SIMULATION(WhereAmI, "where_am_i");

// Two numbers a set: x and 2x (a simulation with a vector result, for queries that must name an element).
struct Pair {
  explicit Pair(const tessera::Config&) {}
  std::vector<double> run(double x) { return {x, 2 * x}; }
};
TESSERA_SIMULATION(Pair, "pair");

// Throws on the first `fail_first` attempts at each parameter (counted in this process), then squares it.
std::mutex flaky_mutex;
std::map<double, int> flaky_attempts;
struct Flaky {
  explicit Flaky(const tessera::Config& config) : fail_first(config.get<std::int64_t>("fail_first", 2)) {}
  double run(double x) {
    int attempt = 0;
    {
      std::lock_guard lock(flaky_mutex);
      attempt = ++flaky_attempts[x];
    }
    if (attempt <= fail_first) throw std::runtime_error("attempt " + std::to_string(attempt) + " failed");
    return x * x;
  }
  std::int64_t fail_first;
};
TESSERA_SIMULATION(Flaky, "flaky");

// Its result is how many sets this process ran before, so that a test reads the order sets ran in from
// their results. A set whose parameter is negative creates the file named by config "started", then
// waits while the file named by "gate" exists (at most 60 s), so that a test can hold a simulation actor
// busy for as long as it needs.
std::atomic<std::int64_t> gated_runs{0};
struct Gated {
  explicit Gated(const tessera::Config& config)
      : gate(config.get<std::string>("gate", "")), started(config.get<std::string>("started", "")) {}
  double run(double x) {
    if (x < 0 && !started.empty()) std::ofstream(started) << "started\n";
    if (x < 0 && !gate.empty()) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (std::filesystem::exists(gate) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return static_cast<double>(gated_runs++);
  }
  std::string gate, started;
};
TESSERA_SIMULATION(Gated, "gated");

// Declares two compute threads per instance: its result is how many instances ran at once at most
// (counted in this process), and it fails unless the worker said it has its two threads.
std::atomic<int> threaded_running{0}, threaded_peak{0};
struct Threaded {
  static constexpr std::uint32_t threads = 2;
  explicit Threaded(const tessera::Config& config)
      : granted(config.get<std::int64_t>("tessera.threads", 0)) {}
  double run(double) {
    if (granted != threads) throw std::runtime_error("given " + std::to_string(granted) + " threads");
    const int now = ++threaded_running;
    for (int peak = threaded_peak.load(); now > peak && !threaded_peak.compare_exchange_weak(peak, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    --threaded_running;
    return threaded_peak.load();
  }
  std::int64_t granted;
};
TESSERA_SIMULATION(Threaded, "threaded");

// Owns one GPU device per instance: its result is the device it was handed, and it fails when another
// instance uses that device at the same time (nothing here touches the device: the test needs no GPU).
std::mutex on_gpu_mutex;
std::set<std::int64_t> on_gpu_busy;
struct OnGpu {
  static constexpr std::uint32_t gpus = 1;
  explicit OnGpu(const tessera::Config& config)
      : device(config.get<std::int64_t>("tessera.device", -1)),
        devices(config.get<std::vector<double>>("tessera.devices", {})) {}
  double run(double) {
    if (device < 0 || devices.size() != 1 || devices[0] != static_cast<double>(device))
      throw std::runtime_error("no device was handed over");
    {
      std::lock_guard lock(on_gpu_mutex);
      if (!on_gpu_busy.insert(device).second)
        throw std::runtime_error("device " + std::to_string(device) + " is in use by another instance");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard lock(on_gpu_mutex);
    on_gpu_busy.erase(device);
    return static_cast<double>(device);
  }
  std::int64_t device;
  std::vector<double> devices;
};
TESSERA_SIMULATION(OnGpu, "on_gpu");

// Standard test functions of optimisation, as simulations: each takes `sleep_ms` (default 0) to run.
void pause_for(std::int64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}
// Minimum -1.0316284534898774 at (0.0898, -0.7126) and (-0.0898, 0.7126).
struct SixHumpCamel {
  explicit SixHumpCamel(const tessera::Config& config) : sleep_ms(config.get<std::int64_t>("sleep_ms", 0)) {}
  double run(const std::vector<double>& p) {
    pause_for(sleep_ms);
    const double x = p.at(0), y = p.at(1);
    return (4 - 2.1 * x * x + x * x * x * x / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y;
  }
  static constexpr std::size_t arity = 2;
  std::int64_t sleep_ms;
};
TESSERA_SIMULATION(SixHumpCamel, "six_hump_camel");

// Proposes `count` sets of one number (0, 1, 2, ...) and throws when told the result of set `fail_at`.
struct Faulty {
  explicit Faulty(const tessera::Config& config)
      : count(config.get<std::int64_t>("count", 10)), fail_at(config.get<std::int64_t>("fail_at", -1)) {}
  std::vector<std::vector<double>> ask(std::size_t n) {
    std::vector<std::vector<double>> out;
    while (out.size() < n && asked < count) out.push_back({double(asked++)});
    return out;
  }
  void tell(std::uint64_t id, const std::vector<double>&, const std::optional<double>&, const std::string&) {
    if (static_cast<std::int64_t>(id) == fail_at)
      throw std::runtime_error("set " + std::to_string(id) + " upset it");
    ++told;
  }
  bool done() const { return told >= count; }
  std::int64_t count, fail_at, asked = 0, told = 0;
};
TESSERA_GENERATOR(Faulty, "faulty");

}  // namespace plugin_tasks
