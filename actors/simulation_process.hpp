// One simulation instance in a supervised child process of the worker (process isolation). The child is
// forked on the first job, builds the instance from the stream's config (already in its memory), and
// then runs job after job fed over a socket pair: parameter sets in, records out, as value records
// (storage/value_record.hpp). A page of shared memory says which set the child is on and since when, so
// the parent can tell which set a crash or a timeout belongs to without a message per set.
//
// A compiled simulation's child is a fork without exec, as Python's multiprocessing "fork" start method:
// it runs only the simulation and the value codec, closes every inherited descriptor but its socket and
// stdio, dies with the thread that forked it (PR_SET_PDEATHSIG), and leaves by _exit. A simulation that
// needs a lock held by another of the worker's threads at the fork would wait for ever there: its timeout
// then ends it. A Python simulation's child (and the worker's Python task processes) execs a fresh
// interpreter instead (`python3 -m tessera._worker`, actors/simulation_child.hpp): nothing of the worker's
// threads or locks comes with it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/simulation.hpp"
#include "graph/stream_record.hpp"
#include "graph/value.hpp"

namespace tessera {

struct SimulationProgress;

class SimulationProcess {
 public:
  // `node` names the worker in failure records.
  SimulationProcess(const SimulationType& type, std::shared_ptr<const Config> config, std::string node);
  ~SimulationProcess();  // kills the child, if one runs
  SimulationProcess(const SimulationProcess&) = delete;
  SimulationProcess& operator=(const SimulationProcess&) = delete;

  struct JobResult {
    std::vector<StreamRecord> records;
    std::vector<std::uint64_t> unrun;  // not run: the process died or was killed before them
  };
  // Runs the sets in the child, starting one first when none runs; blocks until they are answered or
  // the child dies. A set past its timeout (`timeouts`, seconds, aligned with ids; 0: none) gets its
  // process killed and a timeout record;
  // a set the child dies on gets a crash record naming the signal (or the exit status). A job whose
  // `stop` is set before its child was there to kill gives every set back unrun. One caller at a time.
  JobResult run(const std::vector<std::uint64_t>& ids, const std::vector<Value>& parameters,
                const std::vector<double>& timeouts, const std::atomic<bool>* stop = nullptr);
  // Kills the child now (from any thread): a run in progress returns with what it answered, and gives
  // the rest of its job back unrun, charging none of it (the set it was on was cancelled, or the worker
  // stops).
  void kill();
  // Reaps the child if it ended on its own (its forking thread ended, it was killed from outside), so
  // that the next run starts a fresh one instead of charging a set to the dead one. Between runs only.
  void reap_if_ended();
  // The index in the running job of the set the child is on; nullopt before it took the job.
  std::optional<std::size_t> running_index() const;
  // Children started so far (1 + the replacements).
  std::uint64_t started() const { return started_.load(); }
  pid_t pid() const { return pid_.load(); }

 private:
  void start();
  // Waits for the child that died or was killed; describes how it ended.
  std::string reap();

  const SimulationType& type_;
  std::shared_ptr<const Config> config_;
  std::string node_;
  std::atomic<pid_t> pid_{0};
  int socket_ = -1;
  int progress_fd_ = -1;
  SimulationProgress* progress_ = nullptr;  // actors/simulation_child.hpp
  std::atomic<std::uint64_t> started_{0};
  std::atomic<bool> killed_by_request_{false};
  // Held while a child is signalled or reaped, so that kill() never signals a pid already reaped (and
  // perhaps reused by another process).
  std::mutex reap_mutex_;
};

}  // namespace tessera
