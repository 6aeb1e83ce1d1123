#include "nodes/node_config.hpp"

#include <arpa/inet.h>
#include <unistd.h>
#include <zmq.h>

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "actors/allocator_policy.hpp"
#include "dashboard/listen_address.hpp"
#include "dashboard/token_file.hpp"
#include "graph/printable.hpp"
#include "nodes/program_config.hpp"
#include "nodes/toml_type.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct Context {
  std::string_view source;
  fs::path base_dir;
};

[[noreturn]] void fail(const Context& cx, const toml::source_region& where, const std::string& message) {
  // A key that is missing has no line: the message names the file alone.
  const std::string line = where.begin.line ? ":" + std::to_string(where.begin.line) : "";
  throw ConfigError(std::string(cx.source) + line + ": " + message);
}

std::string quote_excerpt(std::string_view text) {
  // Appended, not "\"" + ...: GCC 12 warns falsely (-Wrestrict) on operator+(const char*, string&&).
  std::string out(1, '"');
  out += config_excerpt(text);
  out += '"';
  return out;
}

std::string key_name(std::string_view key) {
  return "key '" + std::string(key) + "'";
}

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// 1073741824 -> "1GiB"; sizes that are no whole binary unit stay in bytes.
std::string format_size(std::uint64_t bytes) {
  static const std::pair<const char*, int> units[]{
      {"PiB", 50}, {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const auto& [unit, shift] : units)
    if (bytes != 0 && bytes % (std::uint64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes) + (bytes == 0 ? "" : "B");
}

std::string type_of(const toml::node& node) {
  return toml_type_of(node);
}

std::string read_string(const toml::node& node, const Context& cx, std::string_view key) {
  if (!node.is_string()) fail(cx, node.source(), key_name(key) + " must be a string, got " + type_of(node));
  return *node.value<std::string>();
}

std::int64_t read_integer(const toml::node& node, const Context& cx, std::string_view key, std::int64_t min,
                          std::int64_t max) {
  if (!node.is_integer())
    fail(cx, node.source(), key_name(key) + " must be an integer, got " + type_of(node));
  const std::int64_t v = *node.value<std::int64_t>();
  if (v < min || v > max)
    fail(cx, node.source(),
         key_name(key) + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
             ", got " + std::to_string(v));
  return v;
}

bool read_bool(const toml::node& node, const Context& cx, std::string_view key) {
  if (!node.is_boolean())
    fail(cx, node.source(), key_name(key) + " must be true or false, got " + type_of(node));
  return *node.value<bool>();
}

// Each item checked as a string; a wrong one is named by its index.
std::vector<std::string> read_strings(const toml::node& node, const Context& cx, std::string_view key) {
  const toml::array* array = node.as_array();
  if (!array) fail(cx, node.source(), key_name(key) + " must be an array of strings, got " + type_of(node));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < array->size(); ++i)
    out.push_back(read_string((*array)[i], cx, std::string(key) + "[" + std::to_string(i) + "]"));
  return out;
}

// Seconds are converted to milliseconds (and compared, added) by the runtime: each key has a finite
// range, far from any overflow, that refuses inf, nan and values that would make the node useless.
auto seconds_in(double min, double max, bool zero_means_off) {
  return [=](const toml::node& node, const Context& cx, std::string_view key) {
    if (!node.is_number())
      fail(cx, node.source(), key_name(key) + " must be a number of seconds, got " + type_of(node));
    const double v = node.is_integer() ? static_cast<double>(*node.value<std::int64_t>())
                                       : node.as_floating_point()->get();
    if (zero_means_off && v == 0) return 0.0;
    if (!std::isfinite(v) || v < min || v > max)
      fail(cx, node.source(),
           key_name(key) + " must be between " + format_number(min) + " and " + format_number(max) +
               " seconds" + (zero_means_off ? " (or 0: off)" : "") + ", got " + format_number(v));
    return v;
  };
}

// A fraction of the memory limit, in (0, 1]: inf, nan, 0 and anything past the limit are refused.
auto fraction_in_unit() {
  return [](const toml::node& node, const Context& cx, std::string_view key) {
    if (!node.is_number())
      fail(cx, node.source(), key_name(key) + " must be a number in (0, 1], got " + type_of(node));
    const double v = node.is_integer() ? static_cast<double>(*node.value<std::int64_t>())
                                       : node.as_floating_point()->get();
    if (!std::isfinite(v) || v <= 0 || v > 1)
      fail(cx, node.source(),
           key_name(key) + " must be a fraction of worker.memory_limit in (0, 1], got " + format_number(v));
    return v;
  };
}

// "4GiB", "512 MiB", "100MB", "1.5GB" or a plain number of bytes, within [min, max].
auto size_in(std::uint64_t min, std::uint64_t max) {
  return [=](const toml::node& node, const Context& cx, std::string_view key) -> std::uint64_t {
    const std::string range = "between " + format_size(min) + " and " + format_size(max);
    if (node.is_integer()) {
      const std::int64_t v = *node.value<std::int64_t>();
      if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max)
        fail(cx, node.source(), key_name(key) + " must be " + range + ", got " + std::to_string(v));
      return static_cast<std::uint64_t>(v);
    }
    const std::string text = read_string(node, cx, key);
    std::string_view rest = text;
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
    double number = 0;
    // A digit first: std::from_chars would also take "nan", "inf" and a sign.
    const bool digit_first = !rest.empty() && rest.front() >= '0' && rest.front() <= '9';
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
    std::string_view unit = digit_first && error == std::errc{} ? rest.substr(end - rest.data()) : rest;
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    static const std::map<std::string, double, std::less<>> units{{"", 1},
                                                                  {"B", 1},
                                                                  {"KB", 1e3},
                                                                  {"MB", 1e6},
                                                                  {"GB", 1e9},
                                                                  {"TB", 1e12},
                                                                  {"PB", 1e15},
                                                                  {"KiB", 1024.0},
                                                                  {"MiB", 1048576.0},
                                                                  {"GiB", 1073741824.0},
                                                                  {"TiB", 1099511627776.0},
                                                                  {"PiB", 1125899906842624.0}};
    const auto factor = units.find(unit);
    // from_chars reports out-of-range (1e999) as an error: not a size either.
    if (!digit_first || error != std::errc{} || factor == units.end())
      fail(cx, node.source(),
           key_name(key) + " must be a size such as \"4GiB\" or \"512MB\", got " + quote_excerpt(text));
    const double bytes = std::floor(number * factor->second);
    // Compared as doubles before any conversion: "1e30GiB" must not wrap into a small size.
    if (!(bytes >= static_cast<double>(min) && bytes <= static_cast<double>(max)))
      fail(cx, node.source(), key_name(key) + " must be " + range + ", got " + quote_excerpt(text));
    return static_cast<std::uint64_t>(bytes);
  };
}

template <class E>
E read_choice(const toml::node& node, const Context& cx, std::string_view key,
              const std::vector<std::pair<std::string, E>>& choices) {
  const std::string text = read_string(node, cx, key);
  std::string names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names += (names.empty() ? "" : ", ") + name;
  }
  fail(cx, node.source(), key_name(key) + " must be one of " + names + ", got " + quote_excerpt(text));
}

constexpr std::size_t kMaxNameLength = 128;
constexpr std::size_t kMaxAuthorizedKeys = 100000;  // lines of security.authorized_keys_file

// Names go into log lines and `tessera workers`: printable, non-empty, bounded.
std::string read_name(const toml::node& node, const Context& cx, std::string_view key) {
  std::string name = read_string(node, cx, key);
  if (name.find_first_not_of(' ') == std::string::npos)
    fail(cx, node.source(), key_name(key) + " must not be empty or blank");
  for (const char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      fail(cx, node.source(),
           key_name(key) + " must not contain control characters, got " + quote_excerpt(name));
  if (name.size() > kMaxNameLength)
    fail(cx, node.source(),
         key_name(key) + " must be at most " + std::to_string(kMaxNameLength) + " bytes, got " +
             std::to_string(name.size()));
  return name;
}

enum class EndpointUse { bind, connect };

// tcp://HOST:PORT or ipc://PATH, checked here so that a typo is named with its line rather than found
// by ZeroMQ at bind time.
std::string read_endpoint(const toml::node& node, const Context& cx, std::string_view key, EndpointUse use) {
  const std::string text = read_string(node, cx, key);
  const std::string expected = key_name(key) +
                               " must be a ZeroMQ endpoint such as \"tcp://127.0.0.1:7070\" (" +
                               (use == EndpointUse::bind ? "port 0 or *: any free port; " : "") +
                               "tcp:// or ipc://), got " + quote_excerpt(text);
  const std::string_view view = text;
  if (view.starts_with("ipc://")) {
    if (view.size() == 6) fail(cx, node.source(), expected);
    return text;
  }
  if (!view.starts_with("tcp://")) fail(cx, node.source(), expected);
  const std::string_view address = view.substr(6);
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) fail(cx, node.source(), expected);
  const std::string_view host = address.substr(0, colon), port = address.substr(colon + 1);
  for (const char c : host)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) fail(cx, node.source(), expected);
  if (use == EndpointUse::bind && port == "*") return text;
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || error != std::errc{} || end != port.data() + port.size() || value > 65535 ||
      (use == EndpointUse::connect && value == 0))
    fail(cx, node.source(),
         key_name(key) + " has an invalid port " + quote_excerpt(port) + " (" +
             (use == EndpointUse::bind ? "0..65535 or *" : "1..65535") + ") in " + quote_excerpt(text));
  return text;
}

// Loopback: 127.x.x.x, ::1, localhost, and ipc:// (a local socket file). "*", 0.0.0.0, any other address
// and any interface name (even "lo") are not: they are taken as reachable from other machines.
bool is_loopback_endpoint(std::string_view endpoint) {
  if (endpoint.starts_with("ipc://")) return true;
  std::string host(endpoint.substr(6, endpoint.rfind(':') - 6));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

bool is_z85_key(const std::string& key) {
  std::uint8_t decoded[32];
  return key.size() == 40 && zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

std::string read_z85_key(const toml::node& node, const Context& cx, std::string_view key) {
  std::string text = read_string(node, cx, key);
  if (!text.empty() && !is_z85_key(text))
    fail(cx, node.source(),
         key_name(key) + " must be a 40-character Z85 CURVE public key (see `tessera keygen`), got " +
             quote_excerpt(text));
  return text;
}

fs::path relative_to_config(const Context& cx, const std::string& path) {
  fs::path p = path;
  return p.is_relative() ? (cx.base_dir / p).lexically_normal() : p;
}

// The first word of a key file made by `tessera keygen`; read bounded, whatever the file is.
std::string read_key_file(const std::string& file, const Context& cx, const toml::source_region& where,
                          std::string_view key) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(cx, where, key_name(key) + ": cannot read " + quote_excerpt(file));
  char buffer[256];
  in.read(buffer, sizeof buffer);
  std::string text(buffer, static_cast<std::size_t>(in.gcount()));
  const auto begin = text.find_first_not_of(" \t\r\n");
  text = begin == std::string::npos ? "" : text.substr(begin, text.find_first_of(" \t\r\n", begin) - begin);
  if (!is_z85_key(text))
    fail(cx, where,
         key_name(key) + ": " + quote_excerpt(file) +
             " does not hold a 40-character Z85 CURVE key (see `tessera keygen`)");
  return text;
}

using Apply = std::function<void(const toml::node&, NodeConfig&, const Context&, std::string_view key)>;

struct KeySpec {
  std::string path;
  std::string type;
  std::string default_text;
  std::string doc;
  Apply apply;
};

// An apply function that stores what `read` makes of the node in one field of the config.
template <class T, class Read>
Apply store(T NodeConfig::*field, Read read) {
  return [field, read](const toml::node& n, NodeConfig& c, const Context& cx, std::string_view key) {
    c.*field = static_cast<T>(read(n, cx, key));
  };
}

template <class T, class Read>
Apply store_limit(T NodeLimits::*field, Read read) {
  return [field, read](const toml::node& n, NodeConfig& c, const Context& cx, std::string_view key) {
    c.limits.*field = static_cast<T>(read(n, cx, key));
  };
}

// A reader of integers in [min, max].
auto bounded(std::int64_t min, std::int64_t max) {
  return [min, max](const toml::node& n, const Context& cx, std::string_view key) {
    return read_integer(n, cx, key, min, max);
  };
}

auto endpoint(EndpointUse use) {
  return [use](const toml::node& n, const Context& cx, std::string_view key) {
    return read_endpoint(n, cx, key, use);
  };
}

auto path_in_config_dir() {
  return [](const toml::node& n, const Context& cx, std::string_view key) {
    const std::string path = read_string(n, cx, key);
    return path.empty() ? path : relative_to_config(cx, path).string();
  };
}

std::string integer_type(std::int64_t min, std::int64_t max) {
  return "integer " + std::to_string(min) + ".." + std::to_string(max);
}

std::string seconds_type(double min, double max, bool zero_means_off) {
  return "seconds " + format_number(min) + ".." + format_number(max) + (zero_means_off ? ", or 0 (off)" : "");
}

std::string size_type(std::uint64_t min, std::uint64_t max) {
  return "size (\"4GiB\", \"512MB\", bytes) " + format_size(min) + ".." + format_size(max);
}

KeySpec seconds_key(std::string path, double NodeConfig::*field, double min, double max, bool zero_means_off,
                    std::string default_text, std::string doc) {
  return {std::move(path), seconds_type(min, max, zero_means_off), std::move(default_text), std::move(doc),
          store(field, seconds_in(min, max, zero_means_off))};
}

template <class T>
KeySpec limit_integer_key(std::string path, T NodeLimits::*field, std::int64_t min, std::int64_t max,
                          std::string doc) {
  return {std::move(path), integer_type(min, max), std::to_string(NodeLimits{}.*field), std::move(doc),
          store_limit(field, bounded(min, max))};
}

KeySpec limit_size_key(std::string path, std::uint64_t NodeLimits::*field, std::uint64_t min,
                       std::uint64_t max, std::string doc) {
  return {std::move(path), size_type(min, max), "\"" + format_size(NodeLimits{}.*field) + "\"",
          std::move(doc), store_limit(field, size_in(min, max))};
}

constexpr std::uint64_t KiB = 1024, MiB = KiB << 10, GiB = MiB << 10, PiB = GiB << 20;
constexpr std::int64_t kMaxWorkers = 1024, kMaxThreadsPerWorker = 1024;

const std::vector<KeySpec>& key_specs() {
  static const std::vector<KeySpec> specs{
      {"node.name", "string, printable, 1.." + std::to_string(kMaxNameLength) + " bytes", "(required)",
       "this node's name, shown by `tessera workers` and in its log lines",
       store(&NodeConfig::name, read_name)},
      {"node.role", "\"scheduler\" | \"worker\" | \"both\"", "(required)",
       "scheduler only, workers only, or both in one process (the embedded default)",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.role = read_choice<NodeRole>(
             n, cx, "node.role",
             {{"scheduler", NodeRole::scheduler}, {"worker", NodeRole::worker}, {"both", NodeRole::both}});
       }},
      {"node.log_level", "\"error\" | \"warning\" | \"info\" | \"debug\"", "\"info\"",
       "what the node logs to stderr",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.log_level = read_choice<LogLevel>(n, cx, "node.log_level",
                                             {{"error", LogLevel::error},
                                              {"warning", LogLevel::warning},
                                              {"info", LogLevel::info},
                                              {"debug", LogLevel::debug}});
       }},
      {"node.data_dir", "string (path)", "\"\" (a temporary directory, removed at exit)",
       "where this node keeps its RocksDB store: a scheduler's streams (parameter sets written ahead and "
       "results), a worker's spilled chunks. A scheduler restarted with the same data_dir resumes every "
       "stream that had not finished. Relative to the config file; created at start, refused when it "
       "cannot be written. The same as worker.data_dir (set one, or both alike)",
       store(&NodeConfig::node_data_dir, path_in_config_dir())},
      seconds_key(
          "node.shutdown_timeout", &NodeConfig::shutdown_timeout_seconds, 0.1, 3600, false, "10",
          "after SIGINT or SIGTERM, the orderly shutdown may take this long; then the node exits with "
          "code 3 whatever its actors are doing"),
      {"scheduler.listen", "string (ZeroMQ endpoint tcp://HOST:PORT or ipc://PATH)",
       "\"tcp://127.0.0.1:7070\"",
       "where the scheduler accepts clients and workers. Beyond loopback (127.x.x.x, ::1, localhost) the "
       "node "
       "refuses to start unless security.curve = true (or security.allow_insecure = true)",
       store(&NodeConfig::listen, endpoint(EndpointUse::bind))},
      seconds_key(
          "scheduler.heartbeat_interval", &NodeConfig::heartbeat_interval_seconds, 0.01, 3600, false, "0.5",
          "how often workers report they are alive (a worker node: keep it well under its scheduler's "
          "heartbeat_timeout)"),
      seconds_key(
          "scheduler.heartbeat_timeout", &NodeConfig::heartbeat_timeout_seconds, 0.05, 86400, false, "3.0",
          "a worker silent this long is declared dead; its tasks are recomputed elsewhere. Must exceed "
          "heartbeat_interval"),
      seconds_key("scheduler.client_grace", &NodeConfig::client_grace_seconds, 0.1, 604800, false, "30.0",
                  "how long a disconnected client's futures are kept"),
      seconds_key("scheduler.progress_timeout", &NodeConfig::progress_timeout_seconds, 0.1, 604800, true,
                  "300", "a worker holding work without progress this long has it re-run elsewhere"),
      {"scheduler.idle_threads", "\"wait\" | \"poll\"", "\"wait\"",
       "how this node's actor threads idle (read by every role: each process has its own). wait: after a "
       "brief spin a thread blocks and the next message wakes it, so a message from the network or a "
       "compute thread is handled within ~20 us and an idle node uses no CPU. poll: CAF's stock policy, "
       "sleeping 50 us between polls for ~25 ms before blocking: idle threads steal queued work sooner, but "
       "each message from outside waits out a sleep (a submit + result through one node: ~450 us p50 "
       "against ~270 us with wait, bench/RESULTS.md)",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.idle_threads = read_choice<IdleThreads>(
             n, cx, "scheduler.idle_threads", {{"wait", IdleThreads::wait}, {"poll", IdleThreads::poll}});
       }},
      {"streams.isolation", "\"thread\" | \"process\"", "\"thread\"",
       "where the simulation instances of a stream that does not say (StreamOptions::isolation, tessera "
       "stream push --isolation) run: on the workers' compute threads (the fastest; a crash takes the "
       "worker down), or each in a supervised child process of its worker, replaced after a crash or a "
       "timeout",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.stream_isolation = read_choice<Isolation>(
             n, cx, "streams.isolation", {{"thread", Isolation::thread}, {"process", Isolation::process}});
       }},
      {"dashboard.listen", "string \"HOST:PORT\" (an IPv4 address, localhost or [IPv6]; port 0: any free)",
       "\"127.0.0.1:8790\"",
       "with a [dashboard] section, a scheduler (or both) node serves its dashboard over HTTP here: pages "
       "/status, /tasks, /progress, /streams, /glm, their JSON under /api/ and Prometheus metrics at "
       "/metrics. Read-only. No [dashboard] section: no dashboard. A port in use is refused at start",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         const std::string text = read_string(n, cx, key);
         try {
           dashboard::parse_listen_address(text);
         } catch (const std::invalid_argument& e) {
           fail(cx, n.source(), key_name(key) + " (" + quote_excerpt(text) + "): " + e.what());
         }
         c.dashboard_listen = text;
       }},
      {"dashboard.token_file", "string (path)", "\"\" (no token)",
       "a file whose first word (16 to 256 printable characters) the dashboard's data asks for: "
       "`Authorization: Bearer TOKEN`, or ?token=TOKEN in a page's address. Relative to the config file",
       store(&NodeConfig::dashboard_token_file, path_in_config_dir())},
      {"worker.scheduler", "string (ZeroMQ endpoint)", "(required for role = \"worker\")",
       "the scheduler to join", store(&NodeConfig::scheduler_address, endpoint(EndpointUse::connect))},
      {"worker.listen", "string (ZeroMQ endpoint)", "\"tcp://127.0.0.1:0\"",
       "where other workers fetch this node's results (port 0: any free port); beyond loopback, as for "
       "scheduler.listen, security.curve = true is required. \"ipc://*\": a socket file in a directory of "
       "its own under $TMPDIR (or /tmp), for clusters on one host: 8 MiB chunks cross between worker "
       "processes ~15% faster than over TCP loopback (bench/RESULTS.md), but no other host can reach it",
       store(&NodeConfig::worker_listen, endpoint(EndpointUse::bind))},
      {"worker.same_host_ipc", "boolean", "true",
       "besides worker.listen, a socket file in a directory of its own under $TMPDIR (or /tmp), which "
       "workers on the same host (same boot id, user, network and mount namespaces, announced at hello) "
       "send chunks to instead of worker.listen; where it cannot be reached they fall back to worker.listen. "
       "No effect when worker.listen is ipc:// already",
       store(&NodeConfig::same_host_ipc, read_bool)},
      {"worker.workers", integer_type(1, kMaxWorkers), "1",
       "worker actors in this process, each with its own compute threads; workers x threads_per_worker is at "
       "most " +
           std::to_string(kMaxComputeThreadsPerNode),
       store(&NodeConfig::workers, bounded(1, kMaxWorkers))},
      {"worker.threads_per_worker", integer_type(0, kMaxThreadsPerWorker), "0 (the cores)",
       "compute threads per worker",
       store(&NodeConfig::threads_per_worker, bounded(0, kMaxThreadsPerWorker))},
      {"worker.gpus", "array of integers (CUDA ordinals, each in [0, 1023], none twice)",
       "[] (the devices found)",
       "the GPU devices this node's workers hand to simulations that declare gpus: worker i takes every "
       "workers-th from the i-th (not checked against the driver, as CUDA_VISIBLE_DEVICES is not)",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         const toml::array* array = n.as_array();
         if (!array) fail(cx, n.source(), key_name(key) + " must be an array of integers, got " + type_of(n));
         c.gpus.clear();
         for (std::size_t i = 0; i < array->size(); ++i) {
           const std::string element = std::string(key) + "[" + std::to_string(i) + "]";
           const int device = static_cast<int>(read_integer((*array)[i], cx, element, 0, 1023));
           if (std::find(c.gpus.begin(), c.gpus.end(), device) != c.gpus.end())
             fail(cx, (*array)[i].source(),
                  key_name(element) + ": device " + std::to_string(device) + " is listed twice");
           c.gpus.push_back(device);
         }
       }},
      {"worker.memory_limit", size_type(0, PiB), "0 (no limit)",
       "results each worker may hold in memory; past memory_target_fraction of it the least recently used "
       "spill to data_dir and come back when needed, past memory_pause_fraction (of resident memory) the "
       "worker starts no new task until back under. No worker is killed for memory",
       store(&NodeConfig::memory_limit_bytes, size_in(0, PiB))},
      {"worker.keep_freed_memory", size_type(0, kMaxKeptFreedMemory), "\"1GiB\"",
       "without a memory_limit: freed memory up to this size stays with the process's allocator for the next "
       "graph instead of going back to the kernel (a million-task graph frees hundreds of MiB per "
       "submission, and faulting them in again took half of a million-step chain's time). Up to this much "
       "freed memory stays resident. 0: glibc's defaults. With a memory_limit, large blocks always go back",
       store(&NodeConfig::keep_freed_memory, size_in(0, kMaxKeptFreedMemory))},
      {"worker.memory_target_fraction", "number in (0, 1]", "0.6",
       "managed memory above this fraction of memory_limit spills, least recently used first",
       store(&NodeConfig::memory_target_fraction, fraction_in_unit())},
      {"worker.memory_pause_fraction", "number in (0, 1]", "0.8",
       "resident memory above this fraction of memory_limit (x workers) pauses the worker's new tasks",
       store(&NodeConfig::memory_pause_fraction, fraction_in_unit())},
      {"worker.data_dir", "string (path)", "\"\" (a temporary directory, removed at exit)",
       "where this node keeps its RocksDB store: stream results and spilled chunks (a column family each);"
       " relative to the config file. Created at start; a directory that cannot be written is refused",
       store(&NodeConfig::data_dir, path_in_config_dir())},
      {"plugins.paths", "array of strings (paths)", "[]",
       "shared libraries of task functions and simulations, loaded at start (relative to the config file)",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         c.plugins.clear();
         for (auto& path : read_strings(n, cx, key)) {
           const fs::path p = relative_to_config(cx, path);
           std::ifstream probe(p, std::ios::binary);
           if (!probe)
             fail(cx, n.source(),
                  "plugin '" + config_excerpt(path) +
                      "' (key 'plugins.paths') cannot be read: " + quote_excerpt(p.string()));
           c.plugins.push_back(p.string());
         }
       }},
      {"plugins.python", "array of strings (files or module names)", "[]",
       "Python modules whose @tessera.task functions, @tessera.simulation classes and @tessera.generator "
       "classes this node runs by name: a file (ending .py or with a /, relative to the config file) or an "
       "importable module name (on PYTHONPATH). Imported once at start to learn their names (one that fails "
       "to import stops the start, naming it); their code runs in the workers' interpreter processes",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         c.python_modules.clear();
         for (auto& module : read_strings(n, cx, key)) {
           const bool is_file = module.ends_with(".py") || module.find('/') != std::string::npos;
           if (!is_file) {
             static const std::regex dotted("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*");
             if (!std::regex_match(module, dotted))
               fail(cx, n.source(),
                    "'" + config_excerpt(module) +
                        "' (key 'plugins.python') is neither a file (ending .py) nor a module name (a.b.c)");
             c.python_modules.push_back(module);
             continue;
           }
           const fs::path p = relative_to_config(cx, module);
           std::ifstream probe(p, std::ios::binary);
           if (!probe)
             fail(cx, n.source(),
                  "Python module '" + config_excerpt(module) +
                      "' (key 'plugins.python') cannot be read: " + quote_excerpt(p.string()));
           c.python_modules.push_back(p.string());
         }
       }},
      {"security.curve", "boolean", "false",
       "CURVE authentication and encryption on every connection; needs secret_key_file, public_key_file and "
       "authorized_keys (or authorize_any), and for a worker scheduler_public_key",
       store(&NodeConfig::curve, read_bool)},
      {"security.secret_key_file", "string (path)", "\"\"",
       "this node's CURVE secret key (made by `tessera keygen`), relative to the config file",
       store(&NodeConfig::secret_key_file, path_in_config_dir())},
      {"security.public_key_file", "string (path)", "\"\"",
       "this node's CURVE public key (must match the secret key), relative to the config file",
       store(&NodeConfig::public_key_file, path_in_config_dir())},
      {"security.scheduler_public_key", "string (Z85, 40 characters)", "\"\"",
       "the scheduler's public key (required for a worker with curve on)",
       store(&NodeConfig::scheduler_public_key, read_z85_key)},
      {"security.authorized_keys", "array of strings (Z85, 40 characters each)", "[]",
       "the only public keys accepted: a scheduler's clients and workers; a worker's peer server accepts "
       "inputs only from these (list the other workers' keys). Empty with curve on refuses to start unless "
       "authorize_any = true",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         c.authorized_keys = read_strings(n, cx, key);
         const toml::array& items = *n.as_array();
         for (std::size_t i = 0; i < c.authorized_keys.size(); ++i)
           if (!is_z85_key(c.authorized_keys[i]))
             fail(cx, items[i].source(),
                  key_name(std::string(key) + "[" + std::to_string(i) + "]") +
                      " is not a 40-character Z85 CURVE public key: " + quote_excerpt(c.authorized_keys[i]));
       }},
      {"security.authorized_keys_file", "string (path)", "\"\"",
       "a file of more public keys accepted as authorized_keys are, one per line (words after a key and "
       "lines starting with '#' that are not keys are comments), "
       "relative to the config file: keys kept beside the secret ones (a Kubernetes Secret) rather than "
       "in the config",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         const std::string file = relative_to_config(cx, read_string(n, cx, key)).string();
         if (file.empty()) return;
         std::ifstream in(file, std::ios::binary);
         if (!in) fail(cx, n.source(), key_name(key) + ": cannot read " + quote_excerpt(file));
         std::string line;
         for (std::size_t number = 1; std::getline(in, line); ++number) {
           if (number > kMaxAuthorizedKeys)
             fail(cx, n.source(),
                  key_name(key) + ": " + quote_excerpt(file) + " has more than " +
                      std::to_string(kMaxAuthorizedKeys) + " lines");
           const auto begin = line.find_first_not_of(" \t\r");
           if (begin == std::string::npos) continue;
           // The first word is the key; what follows it is a comment. Z85 has '#' in its alphabet, so a
           // line is a comment only when it starts with '#' and is not a key.
           const std::string word = line.substr(begin, line.find_first_of(" \t\r", begin) - begin);
           if (!is_z85_key(word) && word.front() == '#') continue;
           if (!is_z85_key(word))
             fail(cx, n.source(),
                  key_name(key) + ": " + quote_excerpt(file) + ":" + std::to_string(number) +
                      " is not a 40-character Z85 CURVE public key: " + quote_excerpt(word));
           c.file_authorized_keys.push_back(word);
         }
       }},
      {"security.scheduler_public_key_file", "string (path)", "\"\"",
       "instead of scheduler_public_key: the file holding it (scheduler.pub of `tessera keygen`), relative "
       "to the config file",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         const std::string file = relative_to_config(cx, read_string(n, cx, key)).string();
         if (!file.empty()) c.scheduler_public_key_from_file = read_key_file(file, cx, n.source(), key);
       }},
      {"security.allow_insecure", "boolean", "false",
       "true: listen beyond loopback without CURVE (anyone who reaches the port may join as a worker or "
       "client); logged as a warning at every start",
       store(&NodeConfig::allow_insecure, read_bool)},
      {"security.allow_client_code", "boolean",
       "true when scheduler.listen is loopback (a worker node: when worker.scheduler is), else false",
       "whether the scheduler runs Python functions, lambdas and classes that clients send (pickled with "
       "cloudpickle: client.submit(fn), client.map(lambda x: ...)). Code sent by a client runs as this "
       "node's user on every worker. Beyond loopback it can be turned on only with security.curve (so only "
       "authenticated clients send code); a refused submission names this key",
       [](auto& n, auto& c, auto& cx, std::string_view key) { c.allow_client_code = read_bool(n, cx, key); }},
      {"security.authorize_any", "boolean", "false",
       "true: with curve on and authorized_keys empty, accept any CURVE key (encrypted, not authenticated); "
       "logged as a warning at every start",
       store(&NodeConfig::authorize_any, read_bool)},
      limit_integer_key("limits.max_slots_per_submission", &NodeLimits::max_slots_per_submission, 1,
                        std::int64_t{1} << 26, "tasks one submission may ask for; a larger one is refused"),
      limit_integer_key("limits.max_slots_per_client", &NodeLimits::max_slots_per_client, 1,
                        std::int64_t{1} << 28,
                        "tasks one client may hold at once, over all its submissions (at least "
                        "max_slots_per_submission)"),
      limit_integer_key("limits.max_slots_per_node", &NodeLimits::max_slots_per_node, 1,
                        std::int64_t{1} << 32,
                        "tasks all clients together may hold at once (at least max_slots_per_client); "
                        "memory the node holds for them grows with it"),
      limit_integer_key("limits.max_histogram_bins", &NodeLimits::max_histogram_bins, 1, 1000000,
                        "bins a results summary may ask for"),
      limit_size_key("limits.max_answer_bytes", &NodeLimits::max_answer_bytes, KiB, GiB,
                     "an answer larger than this is paged or refused"),
      limit_size_key("limits.max_message_size", &NodeLimits::max_message_size, 16 * MiB, 4 * GiB,
                     "the largest frame (ZMQ_MAXMSGSIZE) every socket of this node accepts: ZeroMQ reserves "
                     "what a frame announces before it arrives, for each connection. Chunks and other "
                     "large values travel in pieces of 16MiB, so it bounds headers and results of "
                     "Python simulations, not what a message carries"),
      limit_integer_key("limits.max_worker_threads", &NodeLimits::max_worker_threads, 1, 65536,
                        "a worker claiming more compute threads in its hello is refused"),
      limit_size_key("limits.max_worker_memory", &NodeLimits::max_worker_memory, MiB, PiB,
                     "a worker claiming more memory in its hello is refused"),
      limit_integer_key("limits.max_streams_per_client", &NodeLimits::max_streams_per_client, 1, 65536,
                        "streams one client may have open at once; another open is refused"),
      limit_integer_key("limits.max_clients", &NodeLimits::max_clients, 1, 1000000,
                        "clients connected at once; another is refused at hello"),
  };
  return specs;
}

// The dashboard's rules: only where a scheduler runs; a token file that holds a usable token; a warning
// when it is reachable beyond loopback without one.
void check_dashboard(NodeConfig& c, const Context& cx,
                     const std::function<toml::source_region(std::string_view)>& at) {
  if (!c.dashboard) return;
  const auto where = at("dashboard.listen").begin.line ? at("dashboard.listen") : at("dashboard");
  if (c.role == NodeRole::worker)
    fail(cx, where,
         "section [dashboard] on a node with node.role = \"worker\": the dashboard shows a scheduler; set it "
         "on the scheduler's node");
  if (!c.dashboard_token_file.empty()) {
    try {
      c.dashboard_token = dashboard::read_token_file(c.dashboard_token_file);
    } catch (const std::invalid_argument& e) {
      fail(cx, at("dashboard.token_file"), "key 'dashboard.token_file': " + config_excerpt(e.what(), 300));
    }
  }
  const auto host = dashboard::parse_listen_address(c.dashboard_listen).host;
  const bool loopback = host.rfind("127.", 0) == 0 || host == "::1";
  if (!loopback && c.dashboard_token.empty())
    c.warnings.push_back(
        std::string(cx.source) + ":" + std::to_string(where.begin.line) + ": key 'dashboard.listen' (" +
        quote_excerpt(c.dashboard_listen) +
        ") is not a loopback address and dashboard.token_file is not set: anyone who reaches "
        "it can read the cluster's figures (it changes nothing)");
}

// Rules between keys, checked once every key is read. `at` gives a key's place (none: the file alone).
void check_together(NodeConfig& c, const Context& cx,
                    const std::function<toml::source_region(std::string_view)>& at) {
  const bool scheduler = c.role != NodeRole::worker, worker = c.role != NodeRole::scheduler;
  c.authorized_keys.insert(c.authorized_keys.end(), c.file_authorized_keys.begin(),
                           c.file_authorized_keys.end());
  if (!c.scheduler_public_key_from_file.empty()) {
    if (!c.scheduler_public_key.empty() && c.scheduler_public_key != c.scheduler_public_key_from_file)
      fail(cx, at("security.scheduler_public_key_file"),
           "key 'security.scheduler_public_key_file' holds another key than key "
           "'security.scheduler_public_key': "
           "set one of them");
    c.scheduler_public_key = c.scheduler_public_key_from_file;
  }
  if (scheduler && !(c.heartbeat_timeout_seconds > c.heartbeat_interval_seconds)) {
    const auto where = at("scheduler.heartbeat_timeout").begin.line ? at("scheduler.heartbeat_timeout")
                                                                    : at("scheduler.heartbeat_interval");
    fail(cx, where,
         "key 'scheduler.heartbeat_timeout' (" + format_number(c.heartbeat_timeout_seconds) +
             " s) must exceed key 'scheduler.heartbeat_interval' (" +
             format_number(c.heartbeat_interval_seconds) + " s)");
  }
  if (worker) {
    const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::uint64_t threads = c.threads_per_worker ? c.threads_per_worker : cores;
    if (std::uint64_t{c.workers} * threads > kMaxComputeThreadsPerNode) {
      const auto where = at("worker.threads_per_worker").begin.line > at("worker.workers").begin.line
                             ? at("worker.threads_per_worker")
                             : at("worker.workers");
      fail(cx, where,
           "keys 'worker.workers' (" + std::to_string(c.workers) + ") x 'worker.threads_per_worker' (" +
               (c.threads_per_worker ? std::to_string(threads) : "0: " + std::to_string(cores) + " cores") +
               ") make " + std::to_string(c.workers * threads) + " compute threads, more than the " +
               std::to_string(kMaxComputeThreadsPerNode) + " one node may start");
    }
  }
  if (!c.node_data_dir.empty()) {
    if (!c.data_dir.empty() && c.data_dir != c.node_data_dir)
      fail(cx, at("worker.data_dir"),
           "key 'worker.data_dir' (" + quote_excerpt(c.data_dir) + ") differs from key 'node.data_dir' (" +
               quote_excerpt(c.node_data_dir) + "): a node has one store; set one of them");
    c.data_dir = c.node_data_dir;
  }
  // Budgets nest: a submission within a client's, a client's within the node's. Named at the smaller
  // key when the file sets it, else at the larger.
  const auto within = [&](const char* smaller, std::uint64_t small, const char* larger, std::uint64_t large) {
    if (small <= large) return;
    fail(cx, at(smaller).begin.line ? at(smaller) : at(larger),
         "key '" + std::string(smaller) + "' (" + std::to_string(small) + ") must not exceed key '" + larger +
             "' (" + std::to_string(large) + ")");
  };
  within("limits.max_slots_per_submission", c.limits.max_slots_per_submission, "limits.max_slots_per_client",
         c.limits.max_slots_per_client);
  within("limits.max_slots_per_client", c.limits.max_slots_per_client, "limits.max_slots_per_node",
         c.limits.max_slots_per_node);

  // Security by default: nothing beyond loopback without CURVE, and CURVE that authenticates.
  std::vector<std::string_view> listens;
  if (scheduler) listens.push_back("scheduler.listen");
  if (worker) listens.push_back("worker.listen");
  for (const auto key : listens) {
    const std::string& address = key == "scheduler.listen" ? c.listen : c.worker_listen;
    if (c.curve || is_loopback_endpoint(address)) continue;
    if (!c.allow_insecure)
      fail(
          cx, at(key),
          key_name(key) + " (" + quote_excerpt(address) +
              ") is not a loopback address, and security.curve is off: anyone who reaches it could join as a "
              "worker or client. Set security.curve = true (with key files and authorized_keys), or "
              "security.allow_insecure = true to accept that");
    c.warnings.push_back(std::string(cx.source) + ":" + std::to_string(at(key).begin.line) + ": " +
                         key_name(key) + " (" + quote_excerpt(address) +
                         ") is not a loopback address and security.curve is off: connections are neither "
                         "authenticated nor encrypted (security.allow_insecure = true)");
  }
  if (scheduler && c.allow_client_code.value_or(false) && !c.curve && !is_loopback_endpoint(c.listen))
    fail(cx, at("security.allow_client_code"),
         "key 'security.allow_client_code' = true with scheduler.listen (" + quote_excerpt(c.listen) +
             ") beyond loopback and security.curve off: anyone who reaches the port could run code on every "
             "worker. Turn security.curve on, so that only authenticated clients can");
  check_dashboard(c, cx, at);
  if (c.authorize_any && !c.authorized_keys.empty())
    fail(cx, at("security.authorize_any"),
         "key 'security.authorize_any' = true contradicts a non-empty key 'security.authorized_keys' (only "
         "the "
         "listed keys would be accepted): set one or the other");
  if (!c.curve) return;
  if (c.authorized_keys.empty()) {
    if (!c.authorize_any)
      fail(cx, at("security.curve"),
           "key 'security.curve' = true with an empty key 'security.authorized_keys' would accept any CURVE "
           "key "
           "(encryption without authentication): list the public keys of the " +
               std::string(scheduler ? "clients and workers" : "other workers") +
               ", or set security.authorize_any = true to accept that");
    c.warnings.push_back(std::string(cx.source) + ":" +
                         std::to_string(at("security.authorize_any").begin.line) +
                         ": key 'security.authorize_any' = true: any CURVE key is accepted (connections are "
                         "encrypted but not authenticated)");
  }
  for (const std::string_view key : {"security.secret_key_file", "security.public_key_file"}) {
    const std::string& file = key == "security.secret_key_file" ? c.secret_key_file : c.public_key_file;
    if (file.empty())
      fail(cx, at(key).begin.line ? at(key) : at("security.curve"),
           key_name(key) + " is required when security.curve = true (make a key pair with `tessera keygen`)");
  }
  c.curve_secret_key =
      read_key_file(c.secret_key_file, cx, at("security.secret_key_file"), "security.secret_key_file");
  c.curve_public_key =
      read_key_file(c.public_key_file, cx, at("security.public_key_file"), "security.public_key_file");
  char derived[41];
  if (zmq_curve_public(derived, c.curve_secret_key.c_str()) != 0)
    fail(cx, at("security.curve"), "key 'security.curve' = true, but this libzmq has no CURVE support");
  if (c.curve_public_key != derived)
    fail(cx, at("security.public_key_file"),
         "key 'security.public_key_file': " + quote_excerpt(c.public_key_file) +
             " is not the public key of key 'security.secret_key_file' (" + quote_excerpt(c.secret_key_file) +
             ")");
  if (c.role == NodeRole::worker && c.scheduler_public_key.empty())
    fail(cx, at("security.curve"),
         "key 'security.scheduler_public_key' (or security.scheduler_public_key_file) is required for a "
         "worker when security.curve = true (the scheduler's public key)");
}

}  // namespace

bool client_code_allowed(const NodeConfig& config) {
  // A worker node follows where its scheduler is: client code reaches it only through that scheduler,
  // and a computed name (a task's result that names python:call/N) could get past a scheduler's refusal.
  const std::string& decides = config.role == NodeRole::worker ? config.scheduler_address : config.listen;
  return config.allow_client_code.value_or(is_loopback_endpoint(decides));
}

std::string config_excerpt(std::string_view text, std::size_t limit) {
  return printable(text, limit);  // the rule every log line and error of a node follows
}

NodeConfig parse_node_config(std::string_view text, std::string_view source, const fs::path& base_dir) {
  const Context cx{source, base_dir};
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ConfigError(std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                      config_excerpt(e.description(), 200));
  }
  std::map<std::string, const KeySpec*, std::less<>> by_path;
  std::map<std::string, std::string, std::less<>> sections;  // section -> its known keys, for messages
  for (const auto& spec : key_specs()) {
    by_path.emplace(spec.path, &spec);
    const auto dot = spec.path.find('.');
    auto& known = sections[spec.path.substr(0, dot)];
    known += (known.empty() ? "" : ", ") + spec.path.substr(dot + 1);
  }
  NodeConfig config;
  config.source = std::string(source);
  std::map<std::string, toml::source_region, std::less<>> regions;  // the keys given, for later rules
  for (auto&& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    if (section == "simulations") {
      config.programs = parse_program_declarations(section_node, source, base_dir);
      regions["simulations"] = section_node.source();
      continue;
    }
    auto known = sections.find(section);
    if (known == sections.end()) {
      std::string names;
      for (const auto& [name, keys] : sections) names += (names.empty() ? "" : ", ") + name;
      names += ", simulations";
      fail(cx, section_key.source(),
           "unknown section '" + config_excerpt(section) + "' (known: " + names + ")");
    }
    const toml::table* table = section_node.as_table();
    if (!table) fail(cx, section_node.source(), "'" + section + "' must be a table ([" + section + "])");
    if (section == "dashboard") {
      config.dashboard = true;
      regions["dashboard"] = section_node.source();
    }
    for (auto&& [key, node] : *table) {
      const std::string path = section + "." + std::string(key.str());
      auto spec = by_path.find(path);
      if (spec == by_path.end())
        fail(cx, key.source(),
             "unknown key '" + config_excerpt(path) + "' (known keys in [" + section + "]: " + known->second +
                 ")");
      spec->second->apply(node, config, cx, path);
      regions[path] = node.source();
      config.key_lines[path] = node.source().begin.line;
    }
  }
  const auto at = [&regions](std::string_view key) {
    const auto it = regions.find(key);
    return it == regions.end() ? toml::source_region{} : it->second;
  };
  if (!regions.contains("node.name")) fail(cx, {}, "missing key 'node.name'");
  if (!regions.contains("node.role")) fail(cx, {}, "missing key 'node.role'");
  if (config.role == NodeRole::worker && !regions.contains("worker.scheduler"))
    fail(cx, {}, "missing key 'worker.scheduler' (required when node.role = \"worker\")");
  check_together(config, cx, at);
  if (config.role == NodeRole::worker && !config.programs.empty())
    config.warnings.push_back(
        config.source + ":" + std::to_string(config.programs.front().line) +
        ": [simulations] on a worker node is not used: the scheduler's declarations are "
        "the ones that run");
  return config;
}

NodeConfig load_node_config(const fs::path& file) {
  constexpr std::size_t kMaxConfigBytes = 1 << 20;
  std::error_code error;
  if (fs::is_directory(file, error)) throw ConfigError(file.string() + ": is a directory, not a config file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be read");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    throw ConfigError(file.string() + ": larger than 1 MiB; not a node config");
  return parse_node_config(text, file.string(), file.parent_path().empty() ? "." : file.parent_path());
}

std::string config_key_location(const NodeConfig& config, std::string_view key) {
  const auto line = config.key_lines.find(key);
  return config.source + (line == config.key_lines.end() ? "" : ":" + std::to_string(line->second)) +
         ": key '" + std::string(key) + "'";
}

void check_data_dir(const NodeConfig& config) {
  if (config.data_dir.empty()) return;
  const auto refuse = [&](const std::string& why) {
    const std::string_view key = config.node_data_dir.empty() ? "worker.data_dir" : "node.data_dir";
    throw ConfigError(config_key_location(config, key) + " (" + quote_excerpt(config.data_dir) + "): " + why);
  };
  std::error_code error;
  fs::create_directories(config.data_dir, error);
  if (error) refuse("cannot be created: " + error.message());
  if (!fs::is_directory(config.data_dir, error)) refuse("is not a directory");
  const fs::path probe = fs::path(config.data_dir) / (".tessera-probe-" + std::to_string(getpid()));
  {
    std::ofstream out(probe, std::ios::binary);
    if (!(out << "probe" << std::flush)) refuse("cannot be written");
  }
  fs::remove(probe, error);
}

namespace {

// `text` in lines of at most about 100 columns, each starting with `indent`.
std::string wrapped(const std::string& text, const std::string& indent) {
  constexpr std::size_t kColumns = 100;
  std::string out, line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > kColumns) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return line.empty() ? out : out + indent + line + "\n";
}

}  // namespace

std::string node_config_help() {
  std::ostringstream out;
  out << "Configuration keys (TOML; unknown keys are an error, and so is any value out of its range):\n";
  std::string section;
  for (const auto& spec : key_specs()) {
    const auto dot = spec.path.find('.');
    if (spec.path.substr(0, dot) != section) {
      section = spec.path.substr(0, dot);
      out << "\n[" << section << "]\n";
    }
    out << "  " << spec.path.substr(dot + 1) << " = " << spec.type << "   default: " << spec.default_text
        << "\n"
        << wrapped(spec.doc, "      ");
  }
  out << program_declaration_help();
  out << "\nA node whose scheduler.listen (scheduler, both) or worker.listen (worker, both) is not a "
         "loopback\n"
         "address refuses to start without security.curve = true, unless security.allow_insecure = true.\n";
  return out.str();
}

}  // namespace tessera
