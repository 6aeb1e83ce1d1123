#include "nodes/host_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace tessera {
namespace {

std::string ipv4_text(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
  return text;
}

bool is_loopback(const sockaddr_in& address) {
  return (ntohl(address.sin_addr.s_addr) >> 24) == 127;
}

using InterfaceList = std::unique_ptr<ifaddrs, decltype(&freeifaddrs)>;

InterfaceList interfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    throw HostAddressError(std::string("cannot list this host's interfaces: ") + std::strerror(errno));
  return InterfaceList(list, &freeifaddrs);
}

std::optional<sockaddr_in> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return std::nullopt;
  sockaddr_in address = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  return address;
}

}  // namespace

std::string interface_address(const std::string& interface) {
  auto list = interfaces();
  std::vector<std::string> names;
  bool named = false;
  for (const ifaddrs* entry = list.get(); entry; entry = entry->ifa_next) {
    if (entry->ifa_name && std::find(names.begin(), names.end(), entry->ifa_name) == names.end())
      names.push_back(entry->ifa_name);  // an entry per address family: each name once
    if (!entry->ifa_name || interface != entry->ifa_name) continue;
    named = true;
    if (entry->ifa_addr && entry->ifa_addr->sa_family == AF_INET)
      return ipv4_text(*reinterpret_cast<const sockaddr_in*>(entry->ifa_addr));
  }
  std::string known;
  for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
  throw HostAddressError(named ? "interface '" + interface + "' has no IPv4 address"
                               : "this host has no interface '" + interface + "' (it has " + known + ")");
}

std::string address_towards(const std::string& peer_host) {
  auto peer = resolve_ipv4(peer_host);
  if (!peer) throw HostAddressError("cannot resolve '" + peer_host + "' to an IPv4 address");
  peer->sin_port = htons(9);  // any port: a datagram socket's connect only picks the route, sends nothing
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw HostAddressError(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in local{};
  socklen_t length = sizeof local;
  const bool routed = connect(fd, reinterpret_cast<const sockaddr*>(&*peer), sizeof *peer) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int error = errno;
  close(fd);
  if (!routed)
    throw HostAddressError("no route from this host to '" + peer_host + "' (" + ipv4_text(*peer) +
                           "): " + std::strerror(error));
  return ipv4_text(local);
}

std::string default_host_address() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0)
    if (auto own = resolve_ipv4(name); own && !is_loopback(*own)) return ipv4_text(*own);
  auto list = interfaces();
  for (const ifaddrs* entry = list.get(); entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
    if (!(entry->ifa_flags & IFF_UP) || (entry->ifa_flags & IFF_LOOPBACK)) continue;
    const auto& address = *reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (!is_loopback(address)) return ipv4_text(address);
  }
  return "127.0.0.1";
}

std::optional<std::string> endpoint_host(const std::string& endpoint) {
  constexpr std::string_view scheme = "tcp://";
  if (endpoint.rfind(scheme, 0) != 0) return std::nullopt;
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < scheme.size()) return std::nullopt;
  std::string host = endpoint.substr(scheme.size(), colon - scheme.size());
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return std::nullopt;
  return host;
}

std::string advertised_endpoint(const std::string& bound, const std::string& towards) {
  const auto host = endpoint_host(bound);
  if (!host || (*host != "0.0.0.0" && *host != "*" && *host != "::")) return bound;
  const std::string port = bound.substr(bound.rfind(':') + 1);
  std::string address;
  try {
    const auto peer = endpoint_host(towards);
    address = peer ? address_towards(*peer) : default_host_address();
  } catch (const HostAddressError&) {
    address = default_host_address();
  }
  return "tcp://" + address + ":" + port;
}

}  // namespace tessera
