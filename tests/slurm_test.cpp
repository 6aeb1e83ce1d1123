// `tessera slurm` on a real Slurm: munged, slurmctld and slurmd from Debian's slurm-wlm, started here with
// a generated slurm.conf (free ports, state in a temporary folder), run examples/slurm/sweep.sbatch to
// completion and check every result; a job cancelled with scancel stops every node it started. Skips,
// naming what is missing, only where the daemons cannot start (not root, slurm-wlm not installed).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netns_lab.hpp"
#include "support/files.hpp"
#include "support/node_process.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tessera::testing::LabUnavailable;
using tessera::testing::NetnsLab;
using tessera::testing::read_file;

// These conditions run programs or read /proc: look every 100 ms.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  return tessera::testing::eventually(condition, timeout, std::chrono::milliseconds(100));
}

std::string program(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"})
    if (access((std::string(dir) + name).c_str(), X_OK) == 0) return std::string(dir) + name;
  return {};
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Processes whose command line mentions `text` (the job's folder): what a stopped job must not leave.
std::vector<std::string> processes_mentioning(const std::string& text) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(text) != std::string::npos && cmdline.find("tessera") != std::string::npos)
      found.push_back(name + ": " + cmdline);
  }
  return found;
}

// For a failure's message: the processes found, one per line (none, if they ended meanwhile).
std::string listed(const std::vector<std::string>& processes) {
  std::string out;
  for (const auto& process : processes) out += process + "\n";
  return out.empty() ? "(none left by now)" : out;
}

// A Slurm cluster with everything in `dir_`: munged, slurmctld and slurmd. Either this host alone (one
// node named after it), or the hosts of a NetnsLab: a slurmd per host, each in its host's network
// namespace and in a UTS namespace of its own whose hostname is the node's name (that is how slurmd
// finds its node; Debian's slurmd has no --enable-multiple-slurmd), slurmctld on the first.
class SlurmCluster {
 public:
  explicit SlurmCluster(const NetnsLab* lab = nullptr, std::vector<std::string> nodes = {})
      : lab_(lab), nodes_(std::move(nodes)) {
    dir_ = fs::temp_directory_path() / ("tessera-slurm-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    for (const char* sub : {"etc", "state", "spool", "log", "run", "jobs"})
      fs::create_directories(dir_ / sub);
    // slurmd runs jobs as root here: the job folder must be reachable, as on a shared file system.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  ~SlurmCluster() { stop(); }

  // Empty when the cluster is up, else why it cannot be (the skip's reason).
  std::string start() {
    if (geteuid() != 0) return "slurmd must run as root to start jobs, and this test does not run as root";
    for (const char* name :
         {"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "sinfo", "srun"})
      if (program(name).empty())
        return std::string(name) +
               " is not installed (Debian's slurm-wlm and munge; scripts/setup.sh installs them)";
    std::mt19937_64 random{std::random_device{}()};
    {
      std::ofstream key(dir_ / "etc" / "munge.key", std::ios::binary);
      for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(random()));
    }
    fs::permissions(dir_ / "etc" / "munge.key", fs::perms::owner_read | fs::perms::owner_write);
    const auto path = [this](const std::string& relative) { return (dir_ / relative).string(); };
    int code = 0;
    auto out = tessera::testing::run_command(
        program("munged") + " --force --key-file=" + path("etc/munge.key") +
            " --socket=" + path("run/munge.sock") + " --pid-file=" + path("run/munged.pid") +
            " --log-file=" + path("log/munged.log") + " --seed-file=" + path("state/munge.seed"),
        code);
    if (code != 0) return "munged cannot start: " + out;
    munged_started_ = true;
    if (lab_ == nullptr) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      nodes_ = {std::string(host).substr(0, std::string(host).find('.'))};
    }
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    std::string node_lines, node_list;
    for (const auto& node : nodes_) {
      node_lines += "NodeName=" + node + (lab_ ? " NodeAddr=" + lab_->address(node) : "") +
                    " CPUs=" + std::to_string(cpus) + " RealMemory=1000 State=UNKNOWN\n";
      node_list += (node_list.empty() ? "" : ",") + node;
    }
    std::ofstream(dir_ / "etc" / "slurm.conf")
        << "ClusterName=tessera-test\n"
        << "SlurmctldHost=" << nodes_[0] << (lab_ ? "(" + lab_->address(nodes_[0]) + ")" : "") << "\n"
        << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
        << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << path("run/munge.sock") << "\n"
        << "SlurmUser=root\nSlurmdUser=root\n"
        << "StateSaveLocation=" << path("state") << "\nSlurmdSpoolDir=" << path("spool") << "/slurmd-%n\n"
        << "SlurmctldPidFile=" << path("run/slurmctld.pid") << "\nSlurmdPidFile=" << path("run/slurmd-%h.pid")
        << "\n"
        << "SlurmctldLogFile=" << path("log/slurmctld.log") << "\nSlurmdLogFile=" << path("log/slurmd-%h.log")
        << "\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nMpiDefault=none\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/backfill\n"
        << "ReturnToService=2\nSlurmdTimeout=30\nMinJobAge=600\nKillWait=5\n"
        << node_lines << "PartitionName=test Nodes=" << node_list
        << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n";
    env_ = "SLURM_CONF=" + path("etc/slurm.conf") + " ";
    if (lab_ && (program("unshare").empty() || program("nsenter").empty()))
      return "unshare and nsenter (util-linux) are not installed";
    for (const auto& node : nodes_) fs::create_directories(dir_ / "spool" / ("slurmd-" + node));
    out = tessera::testing::run_command(on(nodes_[0], env_ + program("slurmctld") + " -i"), code);
    if (code != 0) return "slurmctld cannot start: " + out + read_file(dir_ / "log" / "slurmctld.log");
    slurmctld_started_ = true;
    for (const auto& node : nodes_) {
      out = tessera::testing::run_command(on(node, env_ + program("slurmd")), code);
      if (code != 0) return "slurmd cannot start on " + node + ": " + out + slurmd_log(node);
      slurmd_started_ = true;
    }
    std::string states;
    const bool idle = eventually(
        [&] {
          int c = 0;
          states = run("sinfo -h -N -o %t", c, dir_);
          std::stringstream lines(states);
          std::size_t idle_nodes = 0;
          for (std::string state; lines >> state;) idle_nodes += state == "idle";
          return idle_nodes == nodes_.size();
        },
        30s);
    if (!idle) {
      std::string logs;
      for (const auto& node : nodes_) logs += slurmd_log(node).substr(0, 2000);
      return "the Slurm nodes never all became idle: " + states + logs;
    }
    return {};
  }

  void stop() {
    int code = 0;
    if (slurmctld_started_ || slurmd_started_) {
      // From the first node: the lab's daemons are not reachable from this namespace.
      run("scontrol shutdown", code, dir_);
      wait_pid_file(dir_ / "run" / "slurmctld.pid");
      for (const auto& node : nodes_) wait_pid_file(dir_ / "run" / ("slurmd-" + node + ".pid"));
    }
    if (munged_started_) {
      const auto pid = read_file(dir_ / "run" / "munged.pid");
      if (!pid.empty()) kill(std::stoi(pid), SIGTERM);
      wait_pid_file(dir_ / "run" / "munged.pid");
    }
    slurmctld_started_ = slurmd_started_ = munged_started_ = false;
    std::error_code error;
    fs::remove_all(dir_, error);
  }

  // Runs a command with this cluster's SLURM_CONF in `cwd` (on the first node).
  std::string run(const std::string& command, int& code, const fs::path& cwd) const {
    return tessera::testing::run_command(on(nodes_[0], "cd " + cwd.string() + " && " + env_ + command), code);
  }
  const fs::path& dir() const { return dir_; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  std::string logs() const {
    std::string out = "slurmctld.log:\n" + read_file(dir_ / "log" / "slurmctld.log");
    for (const auto& node : nodes_) out += "\nslurmd.log of " + node + ":\n" + slurmd_log(node);
    return out;
  }

 private:
  // A daemon removes its pid file when it has stopped; wait for that (10 s), then SIGKILL it.
  static void wait_pid_file(const fs::path& file) {
    const auto text = read_file(file);
    if (text.empty()) return;
    const int pid = std::stoi(text);
    if (!eventually([&] { return kill(pid, 0) != 0; }, 10s)) kill(pid, SIGKILL);
  }

  // A shell command as it runs on `node`: here, or in the node's namespaces with its hostname.
  std::string on(const std::string& node, const std::string& command) const {
    if (lab_ == nullptr) return command;
    std::string script = "hostname " + node + " && " + command, quoted = "'";
    for (const char c : script) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    // nsenter, not `ip netns exec`: that remounts /sys for the namespace, and slurmd needs the cgroup
    // file system mounted under it.
    return program("nsenter") + " --net=/var/run/netns/" + lab_->ns(node) + " " + program("unshare") +
           " --uts sh -c " + quoted;
  }
  std::string slurmd_log(const std::string& node) const {
    return read_file(dir_ / "log" / ("slurmd-" + node + ".log"));
  }

  const NetnsLab* lab_;
  std::vector<std::string> nodes_;
  fs::path dir_;
  std::string env_;
  bool munged_started_ = false, slurmctld_started_ = false, slurmd_started_ = false;
};

std::vector<std::string> split(const std::string& line, char by) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, by);) cells.push_back(cell);
  return cells;
}

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  // The cluster up (on `lab`'s hosts, or this one) and the example's template beside its jobs.
  void start(const NetnsLab* lab = nullptr, const std::vector<std::string>& nodes = {}) {
    cluster_ = std::make_unique<SlurmCluster>(lab, nodes);
    const auto missing = cluster_->start();
    if (!missing.empty()) GTEST_SKIP() << "SKIPPED: no Slurm cluster on this host: " << missing;
    const fs::path plugin = TESSERA_EXAMPLES_PLUGIN;
    // The example's template, with the plugin of this build (its own path assumes build/ in the tree).
    auto text = read_file(fs::path(TESSERA_SOURCE_DIR) / "examples" / "slurm" / "cluster.toml");
    const std::string relative = "\"../../build/lib/libtessera_examples.so\"";
    const auto at = text.find(relative);
    ASSERT_NE(at, std::string::npos) << "examples/slurm/cluster.toml no longer names " << relative;
    std::string quoted = "\"";  // built in steps: GCC 12 warns falsely (-Wrestrict) on "\"" + string
    quoted += plugin.string();
    quoted += '"';
    text.replace(at, relative.size(), quoted);
    std::ofstream(jobs() / "cluster.toml") << text;
  }
  fs::path jobs() const { return cluster_->dir() / "jobs"; }
  std::string bin() const { return fs::path(TESSERA_CLI_BINARY).parent_path().string(); }

  // sbatch --wait of examples/slurm/sweep.sbatch with `settings` (environment assignments and sbatch
  // flags) and 1,000 sets; then its results checked: each set once with the sum of its parameters, the
  // count query, the job's key modes, no process of it left. Returns the job's output folder.
  fs::path run_example_sweep(const std::string& settings, std::string& job_out) {
    int code = 0;
    const auto submitted =
        cluster_->run("TESSERA_BIN=" + bin() + " TESSERA_TEMPLATE=" + (jobs() / "cluster.toml").string() +
                          " TESSERA_SETS=1000 " + settings + " --output=" + (jobs() / "job-%j.out").string() +
                          " " + TESSERA_SOURCE_DIR + "/examples/slurm/sweep.sbatch",
                      code, jobs());
    const std::string job = submitted.substr(0, submitted.find_first_not_of("0123456789"));
    job_out = read_file(jobs() / ("job-" + job + ".out"));
    EXPECT_EQ(code, 0) << submitted << "\njob output:\n" << job_out << "\n" << cluster_->logs();
    const fs::path out = jobs() / ("tessera-sweep-" + job);
    EXPECT_NE(job_out.find("tessera slurm: job " + job + ": scheduler tcp://"), std::string::npos) << job_out;

    std::ifstream csv(out / "results.csv");
    std::string line;
    EXPECT_TRUE(std::getline(csv, line)) << "no results.csv in " << out;
    const auto header = split(line, ',');
    std::map<std::string, std::size_t> column;
    for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
    EXPECT_TRUE(column.count("id") && column.count("result")) << line;
    std::set<long> ids;
    std::size_t above_two = 0;
    while (column.count("id") && column.count("result") && std::getline(csv, line)) {
      const auto cells = split(line, ',');
      if (cells.size() != header.size()) {
        ADD_FAILURE() << "a row of " << cells.size() << " cells: " << line;
        continue;
      }
      double sum = 0;
      // The parameters are the columns between id and result.
      for (std::size_t i = column["id"] + 1; i < column["result"]; ++i) sum += std::stod(cells[i]);
      const double result = std::stod(cells[column["result"]]);
      EXPECT_NEAR(result, sum, 1e-9 * std::max(1.0, std::fabs(sum))) << line;
      above_two += result > 2;
      EXPECT_TRUE(ids.insert(std::stol(cells[column["id"]])).second) << "id twice: " << line;
    }
    EXPECT_EQ(ids.size(), 1000u);
    const auto count = read_file(out / "count.txt");
    EXPECT_EQ(count.empty() ? -1L : std::stol(count), static_cast<long>(above_two)) << count;

    // The job's secrets stay private; the client config names the scheduler the job printed.
    const fs::path job_dir = out / "cluster";
    EXPECT_EQ(fs::status(job_dir).permissions() & fs::perms::all, fs::perms::owner_all);
    for (const char* secret : {"scheduler.key", "worker.key", "client.key"})
      EXPECT_EQ(fs::status(job_dir / secret).permissions() & fs::perms::all,
                fs::perms::owner_read | fs::perms::owner_write)
          << secret;
    const auto address = read_file(out / "scheduler.address");
    EXPECT_EQ(address.rfind("tcp://", 0), 0u) << address;
    EXPECT_NE(read_file(job_dir / "client.toml").find(address.substr(0, address.find('\n'))),
              std::string::npos);
    EXPECT_TRUE(eventually([&] { return processes_mentioning(job_dir.string()).empty(); }, 30s))
        << listed(processes_mentioning(job_dir.string()));
    return out;
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmTest, TheExampleBatchScriptRunsASweepOnTheJobsClusterAndLeavesNothingRunning) {
  std::string job_out;
  // --nodes=1 overrides the script's 2: this cluster is one host. --wait returns the job's exit code.
  const auto out = run_example_sweep("timeout 600 sbatch --wait --parsable --nodes=1", job_out);
  EXPECT_NE(job_out.find("1 workers on 1 node"), std::string::npos) << job_out;
  EXPECT_NE(read_file(out / "workers.txt").find(cluster_->nodes()[0]), std::string::npos)
      << read_file(out / "workers.txt");
}

// Two Slurm nodes, each a host of a NetnsLab with two networks: Slurm talks on eth0 (10.231.0.0/24),
// Tessera is told `--interface eth1` (10.232.0.0/24), as a cluster's fast fabric beside its Ethernet.
class TwoNodeSlurmTest : public SlurmTest {
 protected:
  void SetUp() override {
    try {
      lab_ = std::make_unique<NetnsLab>(std::vector<std::string>{"node1", "node2"}, 2);
    } catch (const LabUnavailable& e) {
      GTEST_SKIP() << "SKIPPED: no network namespaces for two Slurm hosts: " << e.what();
    }
    start(lab_.get(), {"node1", "node2"});
  }
  void TearDown() override {
    cluster_.reset();  // the daemons stop before their namespaces go
    lab_.reset();
  }
  std::unique_ptr<NetnsLab> lab_;
};

TEST_F(TwoNodeSlurmTest, TheExampleBatchScriptRunsOnTwoNodesOverTheInterfaceItIsGiven) {
  std::string job_out;
  // The script's own --nodes=2; TESSERA_SLURM_OPTIONS reaches `tessera slurm`.
  const auto out = run_example_sweep(
      "TESSERA_SLURM_OPTIONS='--interface eth1' timeout 600 sbatch --wait --parsable", job_out);
  EXPECT_NE(job_out.find("2 workers on 2 nodes"), std::string::npos) << job_out;
  // The scheduler on the first node, reached (and the workers reaching each other) on eth1's network.
  EXPECT_EQ(read_file(out / "scheduler.address").rfind("tcp://" + lab_->address("node1", 1) + ":", 0), 0u)
      << read_file(out / "scheduler.address");
  const auto workers = read_file(out / "workers.txt");
  for (const char* node : {"node1", "node2"}) {
    EXPECT_NE(workers.find(node), std::string::npos) << workers;
    EXPECT_NE(workers.find("tcp://" + lab_->address(node, 1) + ":"), std::string::npos) << workers;
  }
}

TEST_F(SlurmTest, ACancelledJobStopsItsSchedulerAndWorkers) {
  const fs::path job_dir = jobs() / "cancelled";
  std::ofstream(jobs() / "hold.sbatch")
      << "#!/bin/bash\nexec " << bin() << "/tessera slurm --config " << (jobs() / "cluster.toml").string()
      << " --job-dir " << job_dir.string() << " -- sleep 600\n";
  int code = 0;
  const auto submitted = cluster_->run("sbatch --parsable --output=" + (jobs() / "hold.out").string() + " " +
                                           (jobs() / "hold.sbatch").string(),
                                       code, jobs());
  ASSERT_EQ(code, 0) << submitted;
  const std::string job = submitted.substr(0, submitted.find_first_not_of("0123456789"));
  // Up once the launcher has printed the cluster it made (after every worker joined).
  ASSERT_TRUE(eventually(
      [&] { return read_file(jobs() / "hold.out").find("workers on") != std::string::npos; }, 120s))
      << read_file(jobs() / "hold.out") << "\n"
      << cluster_->logs();
  ASSERT_FALSE(processes_mentioning(job_dir.string()).empty());
  cluster_->run("scancel " + job, code, jobs());
  ASSERT_EQ(code, 0);
  EXPECT_TRUE(eventually([&] { return processes_mentioning(job_dir.string()).empty(); }, 60s))
      << listed(processes_mentioning(job_dir.string())) << "\n"
      << read_file(jobs() / "hold.out");
  // COMPLETING until slurmctld has heard from slurmd that the job's processes are gone.
  std::string state;
  EXPECT_TRUE(eventually(
      [&] {
        state = cluster_->run("scontrol show job " + job, code, jobs());
        return state.find("JobState=CANCELLED") != std::string::npos;
      },
      30s))
      << state;
}

// A program declared with launcher = "srun" starts its ranks as a step of the job, inside its allocation:
// rank 0 of each set reports how many tasks its step has, its job and its step.
TEST_F(SlurmTest, AProgramWithTheSrunLauncherRunsItsRanksAsAStepOfTheJob) {
  const fs::path out = jobs() / "srun";
  fs::create_directories(out);
  std::ofstream(jobs() / "srun.toml") << read_file(jobs() / "cluster.toml") << R"TOML(
[simulations.ranks]
command = ["sh", "-c", '[ "$SLURM_PROCID" = 0 ] && echo tasks $SLURM_NTASKS job $SLURM_JOB_ID step $SLURM_STEP_ID set {x} || true']
parameters = ["x"]
ranks = 2
launcher = "srun"
result = { regex = 'tasks (\d+) job (\d+) step (\d+) set (\S+)', outputs = ["tasks", "job", "step", "echoed"] }
timeout = 60
)TOML";
  std::ofstream(out / "params.csv") << "x\n1\n2\n3\n4\n";
  std::ofstream(jobs() / "srun.sbatch")
      << "#!/bin/bash\nset -euo pipefail\nexec " << bin() << "/tessera slurm --config "
      << (jobs() / "srun.toml").string() << " --job-dir " << (out / "cluster").string() << " -- " << bin()
      << "/tessera stream push --simulation ranks --input " << (out / "params.csv").string() << " --output "
      << (out / "results.csv").string() << " --quiet\n";
  int code = 0;
  // Two CPUs for the job: each set's step takes both (ranks = 2, threads = 1).
  const auto submitted = cluster_->run(
      "timeout 300 sbatch --wait --parsable --nodes=1 --ntasks=2 --output=" + (jobs() / "srun.out").string() +
          " " + (jobs() / "srun.sbatch").string(),
      code, jobs());
  const std::string job = submitted.substr(0, submitted.find_first_not_of("0123456789"));
  ASSERT_EQ(code, 0) << submitted << "\njob output:\n"
                     << read_file(jobs() / "srun.out") << "\n"
                     << cluster_->logs();
  std::ifstream csv(out / "results.csv");
  std::string line;
  ASSERT_TRUE(std::getline(csv, line)) << read_file(jobs() / "srun.out");
  const auto header = split(line, ',');
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  ASSERT_TRUE(column.count("tasks") && column.count("job") && column.count("step") && column.count("echoed"))
      << line;
  std::set<std::string> steps, echoed;
  while (std::getline(csv, line)) {
    const auto cells = split(line, ',');
    ASSERT_EQ(cells.size(), header.size()) << line;
    EXPECT_EQ(cells[column["status"]], "ok") << line;
    EXPECT_EQ(cells[column["tasks"]], "2") << line;
    EXPECT_EQ(cells[column["job"]], job) << line;
    steps.insert(cells[column["step"]]);
    echoed.insert(cells[column["echoed"]]);
  }
  EXPECT_EQ(echoed, (std::set<std::string>{"1", "2", "3", "4"}));
  EXPECT_EQ(steps.size(), 4u) << "each set is a step of its own";
  EXPECT_TRUE(eventually([&] { return processes_mentioning((out / "cluster").string()).empty(); }, 30s))
      << listed(processes_mentioning((out / "cluster").string()));
}

}  // namespace
