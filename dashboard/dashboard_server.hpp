// The dashboard over HTTP: pages (status, tasks, progress, streams, glm) that poll a JSON endpoint
// behind each panel, those endpoints under /api/, and /metrics for Prometheus. Read-only: every method
// but GET and HEAD is refused (405), and nothing served changes the cluster. With a token, /api/ and
// /metrics ask for `Authorization: Bearer TOKEN` (or `?token=TOKEN`, which the pages pass on); the
// pages, script and Chart.js carry no figures and are served to anyone.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "dashboard/dashboard_source.hpp"
#include "dashboard/listen_address.hpp"

namespace tessera::dashboard {

struct DashboardOptions {
  ListenAddress listen{"127.0.0.1", 8787};
  std::string token{};  // empty: none asked
};

// The listen address could not be bound (in use, or not this host's); the text says why.
class DashboardBindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DashboardServer {
 public:
  // Listening when it returns; throws DashboardBindError.
  DashboardServer(DashboardSource source, DashboardOptions options);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  std::uint16_t port() const;
  // "http://127.0.0.1:8787/status": the page a user opens.
  std::string link() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::dashboard
