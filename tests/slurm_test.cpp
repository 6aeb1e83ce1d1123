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
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "node_process.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// These conditions run programs or read /proc: look every 100 ms.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  return tessera::testing::eventually(condition, timeout, std::chrono::milliseconds(100));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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

// One Slurm cluster of this host alone: munged, slurmctld and slurmd with everything in `dir_`.
class SlurmCluster {
 public:
  SlurmCluster() {
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
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    hostname_ = std::string(host).substr(0, std::string(host).find('.'));
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    std::ofstream(dir_ / "etc" / "slurm.conf")
        << "ClusterName=tessera-test\n"
        << "SlurmctldHost=" << hostname_ << "\n"
        << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
        << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << path("run/munge.sock") << "\n"
        << "SlurmUser=root\nSlurmdUser=root\n"
        << "StateSaveLocation=" << path("state") << "\nSlurmdSpoolDir=" << path("spool") << "/slurmd-%n\n"
        << "SlurmctldPidFile=" << path("run/slurmctld.pid") << "\nSlurmdPidFile=" << path("run/slurmd.pid")
        << "\n"
        << "SlurmctldLogFile=" << path("log/slurmctld.log") << "\nSlurmdLogFile=" << path("log/slurmd.log")
        << "\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nMpiDefault=none\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/backfill\n"
        << "ReturnToService=2\nSlurmdTimeout=30\nMinJobAge=600\nKillWait=5\n"
        << "NodeName=" << hostname_ << " CPUs=" << cpus << " RealMemory=1000 State=UNKNOWN\n"
        << "PartitionName=test Nodes=" << hostname_
        << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n";
    env_ = "SLURM_CONF=" + path("etc/slurm.conf") + " ";
    out = tessera::testing::run_command(env_ + program("slurmctld") + " -i", code);
    if (code != 0) return "slurmctld cannot start: " + out + read_file(dir_ / "log" / "slurmctld.log");
    slurmctld_started_ = true;
    out = tessera::testing::run_command(env_ + program("slurmd"), code);
    if (code != 0) return "slurmd cannot start: " + out + read_file(dir_ / "log" / "slurmd.log");
    slurmd_started_ = true;
    const bool idle = eventually(
        [&] {
          int c = 0;
          return tessera::testing::run_command(env_ + "sinfo -h -o %t", c).find("idle") != std::string::npos;
        },
        30s);
    if (!idle)
      return "the Slurm node never became idle: " +
             tessera::testing::run_command(env_ + "sinfo -h -N -l", code) +
             read_file(dir_ / "log" / "slurmd.log").substr(0, 2000);
    return {};
  }

  void stop() {
    int code = 0;
    if (slurmctld_started_ || slurmd_started_) {
      tessera::testing::run_command(env_ + "scontrol shutdown", code);
      for (const char* pid_file : {"run/slurmctld.pid", "run/slurmd.pid"}) wait_pid_file(dir_ / pid_file);
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

  // Runs a command with this cluster's SLURM_CONF in `cwd`.
  std::string run(const std::string& command, int& code, const fs::path& cwd) const {
    return tessera::testing::run_command("cd " + cwd.string() + " && " + env_ + command, code);
  }
  const fs::path& dir() const { return dir_; }
  const std::string& hostname() const { return hostname_; }
  std::string logs() const {
    return "slurmctld.log:\n" + read_file(dir_ / "log" / "slurmctld.log") + "\nslurmd.log:\n" +
           read_file(dir_ / "log" / "slurmd.log");
  }

 private:
  // A daemon removes its pid file when it has stopped; wait for that (10 s), then SIGKILL it.
  static void wait_pid_file(const fs::path& file) {
    const auto text = read_file(file);
    if (text.empty()) return;
    const int pid = std::stoi(text);
    if (!eventually([&] { return kill(pid, 0) != 0; }, 10s)) kill(pid, SIGKILL);
  }

  fs::path dir_;
  std::string env_, hostname_;
  bool munged_started_ = false, slurmctld_started_ = false, slurmd_started_ = false;
};

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto missing = cluster_.start();
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
  fs::path jobs() const { return cluster_.dir() / "jobs"; }
  std::string bin() const { return fs::path(TESSERA_CLI_BINARY).parent_path().string(); }

  SlurmCluster cluster_;
};

std::vector<std::string> split(const std::string& line, char by) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, by);) cells.push_back(cell);
  return cells;
}

TEST_F(SlurmTest, TheExampleBatchScriptRunsASweepOnTheJobsClusterAndLeavesNothingRunning) {
  int code = 0;
  // --nodes=1 overrides the script's 2: this cluster is one host. --wait returns the job's exit code.
  const auto submitted = cluster_.run(
      "TESSERA_BIN=" + bin() + " TESSERA_TEMPLATE=" + (jobs() / "cluster.toml").string() +
          " TESSERA_SETS=1000 timeout 600 sbatch --wait --parsable --nodes=1 --output=" +
          (jobs() / "job-%j.out").string() + " " + TESSERA_SOURCE_DIR + "/examples/slurm/sweep.sbatch",
      code, jobs());
  const std::string job = submitted.substr(0, submitted.find_first_not_of("0123456789"));
  const std::string job_out = read_file(jobs() / ("job-" + job + ".out"));
  ASSERT_EQ(code, 0) << submitted << "\njob output:\n" << job_out << "\n" << cluster_.logs();
  const fs::path out = jobs() / ("tessera-sweep-" + job);
  EXPECT_NE(job_out.find("tessera slurm: job " + job + ": scheduler tcp://"), std::string::npos) << job_out;
  EXPECT_NE(job_out.find("1 workers on 1 node"), std::string::npos) << job_out;

  // Every parameter set came back once, with its simulation's result (the sum of its parameters).
  std::ifstream csv(out / "results.csv");
  std::string line;
  ASSERT_TRUE(std::getline(csv, line)) << "no results.csv in " << out;
  const auto header = split(line, ',');
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  ASSERT_TRUE(column.count("id") && column.count("result")) << line;
  std::set<long> ids;
  std::size_t above_two = 0;
  while (std::getline(csv, line)) {
    const auto cells = split(line, ',');
    ASSERT_EQ(cells.size(), header.size()) << line;
    double sum = 0;
    // The parameters are the columns between id and result.
    for (std::size_t i = column["id"] + 1; i < column["result"]; ++i) sum += std::stod(cells[i]);
    const double result = std::stod(cells[column["result"]]);
    EXPECT_NEAR(result, sum, 1e-9 * std::max(1.0, std::fabs(sum))) << line;
    above_two += result > 2;
    EXPECT_TRUE(ids.insert(std::stol(cells[column["id"]])).second) << "id twice: " << line;
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(std::stoul(read_file(out / "count.txt")), above_two);
  EXPECT_NE(read_file(out / "workers.txt").find(cluster_.hostname()), std::string::npos)
      << read_file(out / "workers.txt");

  // The job's secrets stay private; the client config names the scheduler the job printed.
  const fs::path job_dir = out / "cluster";
  EXPECT_EQ(fs::status(job_dir).permissions() & fs::perms::all, fs::perms::owner_all);
  for (const char* secret : {"scheduler.key", "worker.key", "client.key"})
    EXPECT_EQ(fs::status(job_dir / secret).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << secret;
  const auto address = read_file(out / "scheduler.address");
  EXPECT_EQ(address.rfind("tcp://", 0), 0u) << address;
  EXPECT_NE(read_file(job_dir / "client.toml").find(address.substr(0, address.size() - 1)),
            std::string::npos);
  EXPECT_TRUE(eventually([&] { return processes_mentioning(job_dir.string()).empty(); }, 30s))
      << listed(processes_mentioning(job_dir.string()));
}

TEST_F(SlurmTest, ACancelledJobStopsItsSchedulerAndWorkers) {
  const fs::path job_dir = jobs() / "cancelled";
  std::ofstream(jobs() / "hold.sbatch")
      << "#!/bin/bash\nexec " << bin() << "/tessera slurm --config " << (jobs() / "cluster.toml").string()
      << " --job-dir " << job_dir.string() << " -- sleep 600\n";
  int code = 0;
  const auto submitted = cluster_.run("sbatch --parsable --output=" + (jobs() / "hold.out").string() + " " +
                                          (jobs() / "hold.sbatch").string(),
                                      code, jobs());
  ASSERT_EQ(code, 0) << submitted;
  const std::string job = submitted.substr(0, submitted.find_first_not_of("0123456789"));
  // Up once the launcher has printed the cluster it made (after every worker joined).
  ASSERT_TRUE(eventually(
      [&] { return read_file(jobs() / "hold.out").find("workers on") != std::string::npos; }, 120s))
      << read_file(jobs() / "hold.out") << "\n"
      << cluster_.logs();
  ASSERT_FALSE(processes_mentioning(job_dir.string()).empty());
  cluster_.run("scancel " + job, code, jobs());
  ASSERT_EQ(code, 0);
  EXPECT_TRUE(eventually([&] { return processes_mentioning(job_dir.string()).empty(); }, 60s))
      << listed(processes_mentioning(job_dir.string())) << "\n"
      << read_file(jobs() / "hold.out");
  // COMPLETING until slurmctld has heard from slurmd that the job's processes are gone.
  std::string state;
  EXPECT_TRUE(eventually(
      [&] {
        state = cluster_.run("scontrol show job " + job, code, jobs());
        return state.find("JobState=CANCELLED") != std::string::npos;
      },
      30s))
      << state;
}

}  // namespace
