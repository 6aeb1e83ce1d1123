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
#include <stdexcept>
#include <tessera/tessera.hpp>
#include <thread>

namespace plugin_tasks {

std::int64_t square(std::int64_t x) {
  return x * x;
}
TESSERA_TASK(square);

std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);

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
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
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

}  // namespace plugin_tasks
