#include "dashboard/listen_address.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <stdexcept>

namespace tessera::dashboard {

ListenAddress parse_listen_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    throw std::invalid_argument("expected \"host:port\", such as \"127.0.0.1:8790\"");
  std::string host(text.substr(0, colon));
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) != 1)
      throw std::invalid_argument("\"" + host + "\" is not an IPv6 address");
  } else if (host != "localhost") {
    in_addr v4{};
    if (host.empty() || inet_pton(AF_INET, host.c_str(), &v4) != 1)
      throw std::invalid_argument(
          "the host must be an IPv4 address, \"localhost\" or an IPv6 address in "
          "brackets");
  }
  unsigned long port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc{} || end != port_text.data() + port_text.size() || port > 65535)
    throw std::invalid_argument("the port must be a whole number in [0, 65535] (0: any free port)");
  return ListenAddress{host == "localhost" ? "127.0.0.1" : host, static_cast<std::uint16_t>(port)};
}

}  // namespace tessera::dashboard
