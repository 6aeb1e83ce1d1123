// A TCP port on 127.0.0.1 that nothing listens on as this returns (the kernel's pick, released again):
// for a program a test starts next, or an address where a test wants nobody.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace tessera::testing {

inline int free_port() {
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(probe);
    throw std::runtime_error("no free TCP port on 127.0.0.1");
  }
  close(probe);
  return ntohs(address.sin_port);
}

}  // namespace tessera::testing
