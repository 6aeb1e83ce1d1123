// Delay, loss and a rate on a link where the kernel has no sch_netem: packets that iptables sends to an
// NFQUEUE (`-j NFQUEUE --queue-num N`) are held here for --delay-ms and then accepted, or dropped with the
// chance --loss-percent, as netem's "delay D loss P%" would do to them; with --rate-kbit, no packet is
// accepted before the ones ahead of it have passed at that rate (netem's "rate"). Only the packets' IPv4
// header reaches userspace (its length is what the rate needs) and GSO packets come whole. Used by
// tests/netns_lab.hpp and bench/netns/run.sh on each host's INPUT: on OUTPUT a held packet still belongs to
// its sending socket, and TCP small queues (TSQ) then throttle that socket to what leaves in ~1 ms of its
// pacing rate, which BBR reads as a slow link until it crawls (netem orphans what it holds; a queue cannot).
// Runs inside the namespace whose iptables rule feeds it; prints "ready" once bound, so the rule can be added
// after.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <random>

namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t stop_requested = 0;
void request_stop(int) {
  stop_requested = 1;
}

struct HeldPacket {
  std::uint32_t id;
  Clock::time_point due;
  bool dropped;
};

struct Shaper {
  Clock::duration delay{};
  double loss = 0;  // probability in [0, 1]
  std::mt19937_64 random;
  std::uniform_real_distribution<double> uniform{0.0, 1.0};
  double bytes_per_second = 0;    // 0: no rate limit
  Clock::time_point link_free{};  // with a rate: when the packets accepted so far have passed
  std::deque<HeldPacket> held;    // a fixed delay and a rate keep arrival order = release order
  std::uint64_t passed = 0, dropped = 0;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* packet, void* context) {
  auto& shaper = *static_cast<Shaper*>(context);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(packet);
  if (header == nullptr) return 0;
  const bool drop = shaper.loss > 0 && shaper.uniform(shaper.random) < shaper.loss;
  auto due = Clock::now() + shaper.delay;
  if (shaper.bytes_per_second > 0 && !drop) {
    // The IPv4 header's total length: a GSO packet's whole size.
    unsigned char* ip = nullptr;
    const int copied = nfq_get_payload(packet, &ip);
    const std::size_t bytes = copied >= 4 ? (std::size_t{ip[2]} << 8 | ip[3]) : 1500;
    due = std::max(due, shaper.link_free) +
          std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(static_cast<double>(bytes) / shaper.bytes_per_second));
    shaper.link_free = due;
  }
  shaper.held.push_back({ntohl(header->packet_id), due, drop});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Holds packets from an NFQUEUE for a delay and drops some: netem's delay and loss in userspace"};
  unsigned queue_number = 0;
  double delay_ms = 0, loss_percent = 0, rate_kbit = 0;
  std::uint64_t seed = 1;
  app.add_option("--queue", queue_number, "the NFQUEUE number iptables sends packets to")
      ->capture_default_str();
  app.add_option("--delay-ms", delay_ms, "how long each packet is held, in milliseconds")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  app.add_option("--loss-percent", loss_percent, "the chance that a packet is dropped, in percent")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--rate-kbit", rate_kbit, "the link's rate in kbit/s (1000 bit/s); 0: unlimited")
      ->check(CLI::Range(0.0, 1e8))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the drops' random sequence")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // CLI::Range lets nan through (every comparison with it is false).
  if (!std::isfinite(delay_ms) || !std::isfinite(loss_percent) || !std::isfinite(rate_kbit)) {
    std::cerr << "link_shaper: --delay-ms, --loss-percent and --rate-kbit must be finite numbers\n";
    return 2;
  }

  Shaper shaper;
  shaper.delay =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(delay_ms));
  shaper.loss = loss_percent / 100.0;
  shaper.bytes_per_second = rate_kbit * 1000.0 / 8.0;
  shaper.random.seed(seed);

  nfq_handle* handle = nfq_open();
  if (handle == nullptr) {
    std::cerr << "link_shaper: cannot open netfilter's queue interface: " << std::strerror(errno) << "\n";
    return 1;
  }
  nfq_q_handle* queue =
      nfq_create_queue(handle, static_cast<std::uint16_t>(queue_number), &on_packet, &shaper);
  if (queue == nullptr) {
    std::cerr << "link_shaper: cannot bind NFQUEUE " << queue_number
              << " (taken, or no CAP_NET_ADMIN): " << std::strerror(errno) << "\n";
    nfq_close(handle);
    return 1;
  }
  if (nfq_set_mode(queue, NFQNL_COPY_PACKET, 20) < 0 || nfq_set_queue_maxlen(queue, 1u << 16) < 0) {
    std::cerr << "link_shaper: cannot configure NFQUEUE " << queue_number << ": " << std::strerror(errno)
              << "\n";
    nfq_close(handle);
    return 1;
  }
  // Whole GSO packets (no segmentation for our sake); older kernels without the flag still work.
  nfq_set_queue_flags(queue, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  const int fd = nfq_fd(handle);
  nfnl_rcvbufsiz(nfq_nfnlh(handle), 64u << 20);
  const int on = 1;
  // An overrun loses notifications, not packets' verdicts that are already ours: do not fail on it.
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);

  struct sigaction action {};
  action.sa_handler = request_stop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::cout << "ready: queue " << queue_number << ", delay " << delay_ms << " ms, loss " << loss_percent
            << "%, rate " << (rate_kbit > 0 ? std::to_string(rate_kbit) + " kbit/s" : "unlimited")
            << std::endl;

  alignas(nlmsghdr) static char buffer[1 << 16];
  while (!stop_requested) {
    timespec wait{0, 200'000'000};  // looks at stop_requested at least this often
    if (!shaper.held.empty()) {
      const auto left = std::max(Clock::duration::zero(), shaper.held.front().due - Clock::now());
      const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      if (nanoseconds < 200'000'000) wait = {0, static_cast<long>(nanoseconds)};
    }
    pollfd readable{fd, POLLIN, 0};
    const int ready = ppoll(&readable, 1, &wait, nullptr);
    if (ready < 0 && errno != EINTR) {
      std::cerr << "link_shaper: poll: " << std::strerror(errno) << "\n";
      break;
    }
    if (ready > 0) {
      for (;;) {
        const ssize_t length = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (length < 0) break;  // EAGAIN: drained; ENOBUFS is off
        nfq_handle_packet(handle, buffer, static_cast<int>(length));
      }
    }
    const auto now = Clock::now();
    while (!shaper.held.empty() && shaper.held.front().due <= now) {
      const HeldPacket packet = shaper.held.front();
      shaper.held.pop_front();
      nfq_set_verdict(queue, packet.id, packet.dropped ? NF_DROP : NF_ACCEPT, 0, nullptr);
      ++(packet.dropped ? shaper.dropped : shaper.passed);
    }
  }
  // What is still held goes out now: stopping the shaper must not cut the link.
  for (const auto& packet : shaper.held) nfq_set_verdict(queue, packet.id, NF_ACCEPT, 0, nullptr);
  std::cout << "passed " << shaper.passed << " packets, dropped " << shaper.dropped << std::endl;
  nfq_destroy_queue(queue);
  nfq_close(handle);
  return 0;
}
