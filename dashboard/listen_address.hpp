// "host:port" for the dashboard's HTTP listener: an IPv4 address, "localhost", or an IPv6 address in
// brackets, and a port in [0, 65535] (0: any free port).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::dashboard {

struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};

// Throws std::invalid_argument saying what is wrong with `text` (without naming where it came from).
ListenAddress parse_listen_address(std::string_view text);

}  // namespace tessera::dashboard
