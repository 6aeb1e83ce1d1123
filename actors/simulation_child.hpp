// The child's side of a simulation process (actors/simulation_process.hpp), and the frames both sides
// speak over their socket pair: a job is a count and that many value records; an answer is a "last" flag,
// a count and that many records (a value or an error text, with when its run began and ended). A page of
// shared memory (a memfd, so that an exec'd child maps it too) says which set the child is on.
//
// A forked child calls serve_simulation_jobs directly; an exec'd one (a Python interpreter, which cannot
// be forked from a threaded worker) is given its socket as descriptor 3 and the page as descriptor 4,
// reads the stream's config from the first frame, and then calls it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "graph/simulation.hpp"

namespace tessera {

struct SimulationProgress {
  // The set of the current job the child is on; kIdle until it took the job.
  std::atomic<std::uint32_t> index;
  std::atomic<std::int64_t> started_ns;  // when it began that set (steady clock, shared by all processes)
  std::atomic<std::uint32_t> building;   // 1 while the instance is being constructed
  static constexpr std::uint32_t kIdle = 0xffffffffu;
};

// Where an exec'd child finds its socket and its progress page.
inline constexpr int kChildSocketFd = 3;
inline constexpr int kChildProgressFd = 4;

namespace child_frames {

// A frame larger than this is a broken peer, not a job.
inline constexpr std::uint64_t kMaxFrame = std::uint64_t{1} << 34;

std::int64_t now_ns();

// A frame's fields: fixed-size values as their bytes, byte strings after their length.
template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
bool get(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}
inline bool get_bytes(std::string_view& in, std::string_view& bytes) {
  std::uint64_t n = 0;
  if (!get(in, n) || n > in.size()) return false;
  bytes = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

bool read_frame(int fd, std::string& payload);
// `frame` begins with the 8 bytes new_frame() reserved for its length.
bool send_frame(int fd, std::string& frame);
std::string new_frame();

// The stream's config as a frame's payload, and back (nullopt when it does not decode).
std::string encode_config(const Config& config);
std::optional<Config> decode_config(std::string_view payload);

// An exec'd child's first frame: the largest result it may send, and the stream's config.
struct ChildStart {
  std::uint64_t max_result_bytes = 0;
  Config config;
};
std::string encode_start(std::uint64_t max_result_bytes, const Config& config);
std::optional<ChildStart> decode_start(std::string_view payload);

}  // namespace child_frames

// In a forked child: default dispositions and an empty mask, set through the kernel directly so that a
// sanitizer's handler in the worker cannot keep a crash from ending the child with its signal.
void reset_child_signals();

// Maps the progress page an exec'd child was given; nullptr when it cannot.
SimulationProgress* map_child_progress(int fd);

// Runs jobs from `socket` until the parent closes it, then ends the process (_exit). The instance is
// made by `make` when the first job arrives (its error fails every set with `simulation_name` named);
// what a run throws fails its set with what() as the error, and so does a result larger than
// `max_result_bytes` (named with its size: it is never sent).
[[noreturn]] void serve_simulation_jobs(int socket, SimulationProgress* progress,
                                        std::string_view simulation_name,
                                        const std::function<std::unique_ptr<Simulation>()>& make,
                                        std::uint64_t max_result_bytes);

}  // namespace tessera
