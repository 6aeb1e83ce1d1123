// Task functions shared by a test and the tessera-node it starts: the test links this library, the node
// loads it as a plugin (plugins.paths), so both sides know the functions by name.
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
