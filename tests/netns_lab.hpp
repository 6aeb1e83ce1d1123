// Hosts as network namespaces: a "switch" namespace holding a bridge, and one namespace per host joined
// to it by a veth pair (eth0 on the host's side, 10.231.0.N/24; eth1 on 10.232.0.N/24 where a second
// network is asked for). Programs start inside a host's namespace;
// a host's link can be cut (its switch port down: packets vanish, connections are not reset, as in a
// real partition) and healed, and given delay and loss. Everything lives in namespaces named after this
// process, removed at the end, so labs of concurrent tests never meet.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/node_process.hpp"

namespace tessera::testing {

class LabUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class NetnsLab {
 public:
  // `networks` separate networks (a bridge each): a host's eth<K> is on network K, 10.(231+K).0.N/24 —
  // as a cluster's management Ethernet beside its fast fabric.
  explicit NetnsLab(const std::vector<std::string>& hosts, int networks = 1) {
    if (geteuid() != 0) throw LabUnavailable("network namespaces need root (CAP_NET_ADMIN)");
    if (access("/usr/sbin/ip", X_OK) != 0 && access("/sbin/ip", X_OK) != 0 &&
        access("/usr/bin/ip", X_OK) != 0)
      throw LabUnavailable("the ip command (Debian's iproute2) is not installed");
    prefix_ = "tessera-" + std::to_string(getpid()) + "-";
    try {
      ip("netns add " + switch_ns());
      created_.push_back(switch_ns());
      for (int network = 0; network < networks; ++network) {
        const std::string bridge = "br" + std::to_string(network);
        ip("-n " + switch_ns() + " link add " + bridge + " type bridge");
        ip("-n " + switch_ns() + " link set " + bridge + " up");
      }
      int index = 0;
      for (const auto& host : hosts) {
        ++index;
        Host& made = hosts_[host];
        made.ns = prefix_ + host;
        ip("netns add " + made.ns);
        created_.push_back(made.ns);
        for (int network = 0; network < networks; ++network) {
          // Built in steps: GCC 12 warns falsely (-Wrestrict) on "literal" + std::to_string(...).
          std::string port = "p", device = "eth";
          port += std::to_string(network) + "-" + std::to_string(index);
          device += std::to_string(network);
          ip("-n " + switch_ns() + " link add " + port + " type veth peer name " + device + " netns " +
             made.ns);
          ip("-n " + switch_ns() + " link set " + port + " master br" + std::to_string(network));
          ip("-n " + switch_ns() + " link set " + port + " up");
          std::string address = "10.";
          address += std::to_string(231 + network) + ".0." + std::to_string(index);
          ip("-n " + made.ns + " addr add " + address + "/24 dev " + device);
          ip("-n " + made.ns + " link set " + device + " up");
          made.ports.push_back(port);
          made.addresses.push_back(address);
        }
        ip("-n " + made.ns + " link set lo up");
      }
    } catch (...) {
      remove();
      throw;
    }
  }
  ~NetnsLab() { remove(); }
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  const std::string& address(const std::string& host, int network = 0) const {
    return hosts_.at(host).addresses.at(network);
  }
  const std::string& ns(const std::string& host) const { return hosts_.at(host).ns; }

  // The host's switch ports down: its packets vanish both ways; up again on heal.
  void cut(const std::string& host) {
    for (const auto& port : hosts_.at(host).ports) ip("-n " + switch_ns() + " link set " + port + " down");
  }
  void heal(const std::string& host) {
    for (const auto& port : hosts_.at(host).ports) ip("-n " + switch_ns() + " link set " + port + " up");
  }

  // netem's "delay D loss P%" on the host's eth0: each packet held `delay_ms` and dropped with the chance
  // `loss_percent` (a round trip between two slowed hosts gains 2 D). By tc netem on what the host sends
  // where the kernel has it, else by `link_shaper` (an NFQUEUE in userspace, tests/tools/link_shaper.cpp)
  // on what it receives (see there why not on what it sends). False, and why in `reason`,
  // where neither can; `how` says which did.
  bool slow_down(const std::string& host, double delay_ms, double loss_percent,
                 const std::string& link_shaper, const std::filesystem::path& log, std::string& how,
                 std::string& reason) {
    const std::string netem =
        "delay " + std::to_string(delay_ms) + "ms loss " + std::to_string(loss_percent) + "%";
    const auto refused =
        run("ip netns exec " + ns(host) + " tc qdisc replace dev eth0 root netem " + netem, code_);
    if (code_ == 0) {
      how = "tc netem";
      return true;
    }
    if (!shape_input(host,
                     {link_shaper, "--delay-ms", std::to_string(delay_ms), "--loss-percent",
                      std::to_string(loss_percent), "--seed", std::to_string(shapers_.size() + 1)},
                     log, reason)) {
      reason = "no sch_netem in this kernel (" + refused.substr(0, refused.find('\n')) + ") and " + reason;
      return false;
    }
    how = "link_shaper (NFQUEUE; this kernel has no sch_netem)";
    return true;
  }

  // What the host receives on eth0 passes at `rate_kbit` at most (and is queued, not dropped, beyond it),
  // by `link_shaper`; false, and why in `reason`, where it cannot run.
  bool limit_receiving_rate(const std::string& host, double rate_kbit, const std::string& link_shaper,
                            const std::filesystem::path& log, std::string& reason) {
    return shape_input(host, {link_shaper, "--rate-kbit", std::to_string(rate_kbit)}, log, reason);
  }

  // How long a TCP connect from `host` to address:port takes: one round trip (SYN, SYN-ACK) on the wire.
  std::chrono::microseconds connect_time(const std::string& host, const std::string& address,
                                         int port) const {
    std::chrono::microseconds took{-1};
    // setns(CLONE_NEWNET) moves only the calling thread, and sockets belong to the namespace they are made
    // in.
    std::thread([&] {
      const int fd = open(("/var/run/netns/" + ns(host)).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return;
      close(fd);
      const int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(static_cast<std::uint16_t>(port));
      inet_pton(AF_INET, address.c_str(), &to.sin_addr);
      const auto start = std::chrono::steady_clock::now();
      if (connect(sock, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0)
        took =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
      close(sock);
    }).join();
    return took;
  }

  // Starts argv inside the host's namespace, stdout and stderr to `log`.
  pid_t spawn(const std::string& host, const std::vector<std::string>& argv, const std::filesystem::path& log,
              const std::filesystem::path& cwd = std::filesystem::temp_directory_path()) const {
    const std::string path = "/var/run/netns/" + ns(host);
    const pid_t child = fork();
    if (child == 0) {
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(126);
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) {
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
      }
      if (chdir(cwd.c_str()) != 0) _exit(126);
      std::vector<char*> args;
      for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    return child;
  }

  // Runs argv in the host's namespace to its end; its output and exit code.
  std::string run_in(const std::string& host, const std::vector<std::string>& argv, int& code,
                     const std::filesystem::path& log) const {
    const pid_t child = spawn(host, argv, log);
    int status = 0;
    waitpid(child, &status, 0);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  struct Host {
    std::string ns;
    std::vector<std::string> ports, addresses;  // one per network
  };
  std::string switch_ns() const { return prefix_ + "switch"; }

  static std::string run(const std::string& command, int& code) { return run_command(command, code); }
  // Starts link_shaper (argv) in the host and sends what the host receives on eth0 through it.
  bool shape_input(const std::string& host, const std::vector<std::string>& argv,
                   const std::filesystem::path& log, std::string& reason) {
    const pid_t shaper = spawn(host, argv, log);
    shapers_.push_back(shaper);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      std::ifstream in(log);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      if (text.find("ready") != std::string::npos) break;
      int status = 0;
      if (waitpid(shaper, &status, WNOHANG) == shaper || std::chrono::steady_clock::now() > deadline) {
        shapers_.pop_back();
        kill(shaper, SIGKILL);
        waitpid(shaper, &status, WNOHANG);
        reason = "link_shaper did not start: " + text;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // --queue-bypass: were the shaper gone, packets would pass unshaped rather than vanish.
    const auto out = run(
        "ip netns exec " + ns(host) + " iptables -A INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass",
        code_);
    if (code_ != 0) {
      reason = "iptables refused the NFQUEUE rule: " + out.substr(0, out.find('\n'));
      return false;
    }
    return true;
  }
  void ip(const std::string& arguments) {
    const auto out = run("ip " + arguments, code_);
    if (code_ != 0) throw LabUnavailable("ip " + arguments + " failed: " + out);
  }
  void remove() {
    for (const pid_t shaper : shapers_) {
      kill(shaper, SIGTERM);
      waitpid(shaper, nullptr, 0);
    }
    shapers_.clear();
    int code = 0;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) run("ip netns del " + *it, code);
    created_.clear();
  }

  std::string prefix_;
  std::map<std::string, Host> hosts_;
  std::vector<std::string> created_;
  std::vector<pid_t> shapers_;
  int code_ = 0;
};

}  // namespace tessera::testing
