#include "dashboard/dashboard_server.hpp"

#include <httplib.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "dashboard/assets.hpp"
#include "dashboard/metrics_text.hpp"
#include "dashboard/panel_json.hpp"
#include "dashboard/snapshot_sampler.hpp"
#include "graph/stream_record.hpp"

namespace tessera::dashboard {
namespace {

struct Page {
  std::string_view path, title;
};
constexpr std::array<Page, 5> kPages = {{{"status", "Status"},
                                         {"tasks", "Task stream"},
                                         {"progress", "Progress"},
                                         {"streams", "Streams"},
                                         {"glm", "GLM fits"}}};

// Compares in time independent of where the two differ, so the token cannot be guessed byte by byte.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void answer_json(httplib::Response& res, const Json& json, int status = 200) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(json.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void answer_error(httplib::Response& res, int status, const std::string& message) {
  answer_json(res, Json{{"error", message}}, status);
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

struct DashboardServer::Impl {
  DashboardOptions options;
  SnapshotSampler sampler;
  httplib::Server server;
  int port = 0;
  std::thread thread;

  Impl(DashboardSource source, DashboardOptions opts)
      : options(std::move(opts)), sampler(std::move(source)) {}

  bool authorized(const httplib::Request& req) const {
    if (options.token.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.compare(0, kBearer.size(), kBearer) == 0 &&
        same_secret(std::string_view(header).substr(kBearer.size()), options.token))
      return true;
    return req.has_param("token") && same_secret(req.get_param_value("token"), options.token);
  }

  // Runs `answer` for an authorized request; 401 otherwise.
  template <class F>
  httplib::Server::Handler data(F answer) {
    return [this, answer](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"tessera\"");
        answer_error(res, 401,
                     "this dashboard asks for its token: Authorization: Bearer TOKEN, or ?token=TOKEN");
        return;
      }
      try {
        answer(req, res);
      } catch (const std::exception& e) {
        answer_error(res, 500, std::string("dashboard: ") + e.what());
      }
    };
  }

  void routes() {
    const auto& monitor = *sampler.source().monitor;
    server.Get("/", [](const httplib::Request& req, httplib::Response& res) {
      std::string to = "/status";
      if (req.has_param("token"))
        to += "?token=" + httplib::detail::encode_query_param(req.get_param_value("token"));
      res.set_redirect(to);
    });
    for (const auto& page : kPages) {
      std::string path(1, '/');  // not "/" + path: GCC 12 warns falsely (-Wrestrict) on that
      path += page.path;
      server.Get(path, [this, page](const httplib::Request&, httplib::Response& res) {
        std::string html(asset("page.html").content);
        html = replace_all(std::move(html), "{{page}}", page.path);
        html = replace_all(std::move(html), "{{title}}", page.title);
        html = replace_all(std::move(html), "{{node}}", html_escape(sampler.source().name));
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_content(html, "text/html; charset=utf-8");
      });
    }
    server.Get(R"(/static/([a-z.]+))", [](const httplib::Request& req, httplib::Response& res) {
      const auto found = asset(req.matches[1].str());
      if (found.content.empty() || req.matches[1].str() == "page.html") {
        answer_error(res, 404, "no such file: " + req.matches[1].str());
        return;
      }
      res.set_header("Cache-Control", "max-age=3600");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(std::string(found.content), std::string(found.content_type).c_str());
    });
    server.Get("/api/status.json", data([this, &monitor](const httplib::Request&, httplib::Response& res) {
                 const auto snapshot = sampler.latest();  // first: it may wait for a fresh one
                 answer_json(res, status_json(*snapshot, monitor, timeline_now()));
               }));
    server.Get("/api/workers.json", data([this](const httplib::Request&, httplib::Response& res) {
                 const auto snapshot = sampler.latest();
                 answer_json(res, workers_json(*snapshot, timeline_now()));
               }));
    server.Get("/api/progress.json", data([this, &monitor](const httplib::Request&, httplib::Response& res) {
                 const auto snapshot = sampler.latest();
                 answer_json(res, progress_json(*snapshot, monitor, timeline_now()));
               }));
    server.Get(
        "/api/task-stream.json", data([&monitor](const httplib::Request& req, httplib::Response& res) {
          double window = 10;
          if (req.has_param("window")) {
            const std::string text = req.get_param_value("window");
            char* end = nullptr;
            window = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(window) || window <= 0 || window > 600) {
              answer_error(res, 400,
                           "window: a number of seconds in (0, 600], got \"" + text.substr(0, 40) + "\"");
              return;
            }
          }
          answer_json(res, task_stream_json(monitor, window, timeline_now()));
        }));
    server.Get("/api/streams.json", data([&monitor](const httplib::Request&, httplib::Response& res) {
                 answer_json(res, streams_json(monitor, timeline_now()));
               }));
    server.Get("/api/glm.json", data([&monitor](const httplib::Request&, httplib::Response& res) {
                 answer_json(res, glm_json(monitor, timeline_now()));
               }));
    server.Get("/metrics", data([this, &monitor](const httplib::Request&, httplib::Response& res) {
                 res.set_header("Cache-Control", "no-store");
                 const auto snapshot = sampler.latest();
                 res.set_content(metrics_text(*snapshot, monitor, timeline_now()),
                                 "text/plain; version=0.0.4; charset=utf-8");
               }));
    // Read-only: nothing here changes the cluster.
    const auto refuse = [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", "GET, HEAD");
      answer_error(res, 405, "the dashboard is read-only: " + req.method + " is not accepted");
    };
    for (const char* pattern : {".*"}) {
      server.Post(pattern, refuse);
      server.Put(pattern, refuse);
      server.Patch(pattern, refuse);
      server.Delete(pattern, refuse);
    }
    server.Options(".*", refuse);
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.status == 404) answer_error(res, 404, "no such page: " + req.path.substr(0, 200));
    });
  }
};

DashboardServer::DashboardServer(DashboardSource source, DashboardOptions options)
    : impl_((source.monitor ? void() : throw std::invalid_argument("dashboard: a source without a monitor"),
             std::make_unique<Impl>(std::move(source), std::move(options)))) {
  auto& s = impl_->server;
  // A few threads: the answers come from memory, and a dashboard is watched by few.
  s.new_task_queue = [] { return new httplib::ThreadPool(4); };
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.set_keep_alive_timeout(5);
  s.set_payload_max_length(64 * 1024);
  // Headers and body go out as two writes: with Nagle's algorithm the second waits for the client's
  // delayed ACK, 40 ms an answer on a kept-alive connection.
  s.set_tcp_nodelay(true);
  // httplib's default adds SO_REUSEPORT, with which a second dashboard binds the same port and the two
  // share its requests: a port in use must be refused instead.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->routes();
  const auto& listen = impl_->options.listen;
  errno = 0;
  if (listen.port == 0) {
    impl_->port = s.bind_to_any_port(listen.host);
    if (impl_->port < 0) impl_->port = 0;
  } else if (s.bind_to_port(listen.host, listen.port)) {
    impl_->port = listen.port;
  }
  if (impl_->port == 0) {
    const int error = errno;
    throw DashboardBindError("cannot listen on " + listen.host + ":" + std::to_string(listen.port) + ": " +
                             (error ? std::strerror(error) : "the address cannot be bound"));
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() before the loop runs would leave it running for ever: the constructor returns once it runs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!s.is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

DashboardServer::~DashboardServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t DashboardServer::port() const {
  return static_cast<std::uint16_t>(impl_->port);
}

std::string DashboardServer::link() const {
  const auto& host = impl_->options.listen.host;
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port()) + "/status";
}

}  // namespace tessera::dashboard
