// `tessera slurm`: a Tessera cluster inside a Slurm allocation (sbatch or salloc). The launcher makes the
// job's CURVE keys, starts the scheduler on the allocation's first node and a worker process on every node
// with srun (each a `tessera slurm-step`, which derives the node's config from one template TOML and
// becomes tessera-node), writes the scheduler's address and a client config for the user's client, runs
// the user's command if one is given, and stops every node when that command ends, when the job is
// cancelled or reaches its time limit (SIGTERM), or on Ctrl-C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cli {

struct SlurmOptions {
  std::string config{};   // the template TOML every node's config derives from
  std::string job_dir{};  // keys, node configs, logs, the scheduler's store; "": SUBMIT_DIR/tessera-JOBID
  std::string address_file{};  // where the scheduler's address is written; "": JOB_DIR/scheduler.address
  std::uint32_t port = 0;      // the scheduler's port; 0: any free one (the template's listen is not used)
  std::string
      network_interface{};  // the network interface nodes listen on (e.g. ib0); "": each host's default
  double startup_timeout_seconds = 120;  // for the scheduler and every worker to be up
  double stop_timeout_seconds = 30;      // for each step to stop after SIGTERM, before SIGKILL
  std::vector<std::string> command{};    // run once the cluster is up; its exit ends the job's cluster
};

// Exit: the command's status; without one 0 after SIGTERM or SIGINT; 1 when a node failed to start or the
// scheduler died; 2 for bad usage (not in an allocation, a template tessera-node refuses).
int slurm_launch(const SlurmOptions& options);

struct SlurmStepOptions {
  std::string role{};  // "scheduler" or "worker"
  std::string config{}, job_dir{}, network_interface{};
  std::uint32_t port = 0;
  double startup_timeout_seconds = 120;
};

// What srun runs on each node: writes that node's config and execs tessera-node (returns only on error).
int slurm_step(const SlurmStepOptions& options);

}  // namespace tessera::cli
