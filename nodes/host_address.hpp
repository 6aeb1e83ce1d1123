// The address other machines reach this host at: a node must tell its peers a concrete address to dial
// (0.0.0.0 cannot be), whether a launcher (tessera slurm) picks it or the node binds a wildcard.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace tessera {

class HostAddressError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The IPv4 address of the interface named `interface` (e.g. "ib0", "eth0"); a HostAddressError naming the
// interface and the ones this host has when it has none of that name or it has no IPv4 address.
std::string interface_address(const std::string& interface);

// The local address this host sends from to reach `peer_host` (an IPv4 address or a host name): the
// kernel's route, so it is the interface the peer can answer on. A HostAddressError names the peer when
// it cannot be resolved or no route reaches it.
std::string address_towards(const std::string& peer_host);

// This host's address for others when nothing names one: the address its host name resolves to unless
// that is a loopback one (Debian maps the host name to 127.0.1.1), else the first IPv4 address of an
// interface that is up and not loopback, else 127.0.0.1 (a host alone).
std::string default_host_address();

// The host part of a ZeroMQ tcp endpoint "tcp://HOST:PORT"; nullopt for another form.
std::optional<std::string> endpoint_host(const std::string& endpoint);

// A bound endpoint as peers must dial it: a wildcard host (0.0.0.0 or ::, what "tcp://*:PORT" binds)
// becomes this host's address on the route to the endpoint `towards` (the scheduler's), or its default
// address when that route cannot be found; any other endpoint is returned as it is.
std::string advertised_endpoint(const std::string& bound, const std::string& towards);

}  // namespace tessera
