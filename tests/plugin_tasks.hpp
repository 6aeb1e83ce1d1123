// The functions and objects of tests/plugin_tasks.cpp (the test plugin, tessera_test_plugin) that tests
// call or read by name: a test that links the plugin includes this instead of declaring them itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace plugin_tasks {

// Task functions.
std::int64_t square(std::int64_t x);
std::int64_t add(std::int64_t a, std::int64_t b);
bool is_even(std::int64_t x);
double total(const std::vector<double>& xs);
std::vector<double> ramp(std::int64_t n);
std::int64_t fails_on_seven(std::int64_t x);
std::int64_t slow_square(std::int64_t x);
std::int64_t slower_square(std::int64_t x);
std::vector<double> slow_block(std::int64_t seed);
std::int64_t gated_square(std::int64_t x, const std::string& gate);
double chunk_sum(const std::vector<double>& chunk, std::int64_t offset);

// State of the simulations (unruly, gated, threaded). A test that reads gated_runs links the plugin's
// simulations into its binary.
extern std::atomic<bool> release_hung_sets;
extern std::atomic<std::int64_t> gated_runs;
extern std::atomic<int> threaded_peak;

}  // namespace plugin_tasks
