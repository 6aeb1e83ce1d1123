// Command-line helpers shared by `tessera`, the example programs and the bench programs (all parse with
// CLI11): numbers checked against a range with a message naming the flag, exit codes (0 after --help, 2
// for bad usage), bounded excerpts of echoed text, a table of checked flags read back by name, and the
// CURVE key options (--public-key, --secret-key, --scheduler-key, --client-config) that become the
// ConnectOptions of a Client. Only CLI11, toml++ and the public client headers: the examples may use it.
#pragma once

#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tessera/client.hpp>

#include "graph/printable.hpp"

namespace tessera::cli {

// Echoed text (a cell, a flag's value) as a bounded, escaped excerpt, so a value cannot forge lines in a
// terminal or a log (graph/printable.hpp: the same rule as the node's log lines).
inline std::string excerpt(std::string_view text, std::size_t limit = 80) {
  return printable(text, limit);
}

// A whole error message kept readable when it quotes something huge: its start and its end (where a
// parser says what it expected and at which position) with the middle cut out.
inline std::string bounded_message(std::string_view message, std::size_t limit = 400) {
  if (message.size() <= limit) return std::string(message);
  const std::size_t half = limit / 2;
  return std::string(message.substr(0, half)) + " [... " + std::to_string(message.size() - 2 * half) +
         " characters cut ...] " + std::string(message.substr(message.size() - half));
}

inline std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

inline std::optional<double> parse_real(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// A non-negative integer in [min, max]; CLI11 prefixes the flag's name to the message. Checked on the
// text before any conversion, so "-1" never wraps and "abc" never reaches stoull.
inline CLI::Validator unsigned_in(std::uint64_t min, std::uint64_t max) {
  const bool unbounded = max == std::numeric_limits<std::uint64_t>::max();
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  const std::string kind = "a non-negative integer" + (unbounded ? std::string() : " " + range);
  const std::string bounds =
      unbounded && min > 0 ? "an integer of at least " + std::to_string(min) : "an integer " + range;
  return CLI::Validator(
      [min, max, kind, bounds, range](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "expects " + kind + ", not '" + excerpt(text) + "'";
        const auto value = parse_unsigned(text);
        if (!value) return "expects an integer " + range + ", not " + excerpt(text);
        if (*value < min || *value > max) return "expects " + bounds + ", not " + excerpt(text);
        return {};
      },
      "in [" + std::to_string(min) + ", " + (unbounded ? std::string("...") : std::to_string(max)) + "]");
}

// A finite number in [min, max].
inline CLI::Validator real_in(double min, double max) {
  const std::string range = "a number from " + number_text(min) + " to " + number_text(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const auto value = parse_real(text);
        if (!value) return "expects " + range + ", not '" + excerpt(text) + "'";
        if (*value < min || *value > max) return "expects " + range + ", not " + excerpt(text);
        return {};
      },
      "in [" + number_text(min) + ", " + number_text(max) + "]");
}

// Text of at most `max` characters (a filter, a name), so nothing unbounded travels or is echoed back.
inline CLI::Validator text_at_most(std::size_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        if (text.size() <= max) return {};
        return "expects at most " + std::to_string(max) + " characters, not " + std::to_string(text.size()) +
               " ('" + excerpt(text, 40) + "')";
      },
      "");
}

// What a program returns after a failed parse: 0 once --help printed the usage, 2 for anything else,
// with one bounded line naming the flag and a pointer to --help.
inline int parse_failure(const CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::CallForHelp*>(&error) || dynamic_cast<const CLI::CallForAllHelp*>(&error)) {
    app.exit(error);  // prints the (sub)command's help to standard output
    return 0;
  }
  std::cerr << app.get_name() << ": " << bounded_message(error.what()) << "\n"
            << "run '" << app.get_name() << " --help' for usage\n";
  return 2;
}

// Flags declared with a type and a range, read back by name (the bench programs' table of flags).
class FlagTable {
 public:
  FlagTable(std::string program, std::string description)
      : app_(std::move(description), std::move(program)) {}
  FlagTable& integer(const std::string& name, std::uint64_t fallback, std::uint64_t min, std::uint64_t max,
                     const std::string& help) {
    add(name, std::to_string(fallback), help)->type_name("UINT")->check(unsigned_in(min, max));
    return *this;
  }
  FlagTable& real(const std::string& name, double fallback, double min, double max, const std::string& help) {
    add(name, number_text(fallback), help)->type_name("FLOAT")->check(real_in(min, max));
    return *this;
  }
  FlagTable& text(const std::string& name, const std::string& fallback, const std::string& help) {
    add(name, fallback, help)->check(text_at_most(4096));
    return *this;
  }
  FlagTable& choice(const std::string& name, const std::string& fallback,
                    const std::vector<std::string>& allowed, const std::string& help) {
    add(name, fallback, help)->check(CLI::IsMember(allowed));
    return *this;
  }
  // nullopt: go on; otherwise the exit code (0 after --help, 2 after a bad flag).
  std::optional<int> parse(int argc, char** argv) {
    try {
      app_.parse(argc, argv);
      return std::nullopt;
    } catch (const CLI::ParseError& e) {
      return parse_failure(app_, e);
    }
  }
  CLI::App& app() { return app_; }
  const std::string& str(const std::string& name) const { return values_.at(name); }
  long long integer(const std::string& name) const {
    return static_cast<long long>(parse_unsigned(values_.at(name)).value_or(0));
  }
  double real(const std::string& name) const { return parse_real(values_.at(name)).value_or(0); }

 private:
  CLI::Option* add(const std::string& name, const std::string& fallback, const std::string& help) {
    auto& value = values_[name] = fallback;
    return app_.add_option("--" + name, value, help)->default_str(fallback)->take_last();
  }

  CLI::App app_;
  std::map<std::string, std::string> values_;  // std::map: the references CLI11 holds stay valid
};

// The CURVE keys a client connects with: from files named on the command line, or from a client config
// file ([security] public_key_file, secret_key_file, scheduler_public_key; paths relative to that file).
struct KeyOptions {
  std::string public_key_file, secret_key_file, scheduler_key, client_config;

  void add_to(CLI::App& app) {
    app.add_option("--public-key", public_key_file, "CURVE: this client's public key file (tessera keygen)");
    app.add_option("--secret-key", secret_key_file, "CURVE: this client's secret key file (tessera keygen)");
    app.add_option("--scheduler-key", scheduler_key,
                   "CURVE: the node's public key, 40 Z85 characters or a file holding them");
    app.add_option("--client-config", client_config,
                   "a TOML file with [security] public_key_file, secret_key_file, scheduler_public_key "
                   "(paths relative to it) and optionally [client] scheduler (as tessera slurm writes); "
                   "the flags above override it")
        ->envname("TESSERA_CLIENT_CONFIG");
  }

  // [client] scheduler of --client-config, or "" when there is no config or it names none.
  std::string scheduler_from_config() const {
    if (client_config.empty()) return {};
    const auto config = parse_config();
    const auto node = config["client"]["scheduler"];
    if (!node) return {};
    const auto* text = node.as_string();
    if (!text || text->get().empty())
      throw std::invalid_argument("--client-config: " + client_config + ":" +
                                  std::to_string(node.node()->source().begin.line) +
                                  ": client.scheduler must be a non-empty string (tcp://HOST:PORT)");
    return text->get();
  }
  bool given() const {
    return !public_key_file.empty() || !secret_key_file.empty() || !scheduler_key.empty() ||
           !client_config.empty();
  }

  // The connection's options; a missing, unreadable or malformed key is a std::invalid_argument naming the
  // flag (or the config file, line and key) it came from.
  ConnectOptions connect_options(const std::string& name) const {
    ConnectOptions out{.name = name};
    Source public_key{"--public-key", public_key_file, {}}, secret_key{"--secret-key", secret_key_file, {}},
        scheduler{"--scheduler-key", scheduler_key, {}};
    if (!client_config.empty()) read_config(public_key, secret_key, scheduler);
    if (public_key.value.empty() && secret_key.value.empty() && scheduler.value.empty()) return out;
    for (const Source* missing : {&public_key, &secret_key, &scheduler})
      if (missing->value.empty())
        throw std::invalid_argument(missing->flag +
                                    " is missing: a CURVE connection needs --public-key, "
                                    "--secret-key and --scheduler-key (or --client-config)");
    out.public_key = key_from_file(public_key);
    out.secret_key = key_from_file(secret_key);
    // A key, unless a file of that name exists: then the file holds it.
    out.scheduler_public_key = is_z85_key(scheduler.value) && !std::filesystem::exists(resolved(scheduler))
                                   ? scheduler.value
                                   : key_from_file(scheduler);
    return out;
  }

  static bool is_z85_key(std::string_view text) {
    static constexpr std::string_view alphabet =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    return text.size() == 40 && text.find_first_not_of(alphabet) == std::string_view::npos;
  }

 private:
  struct Source {
    std::string flag;   // where the value came from, for messages: a flag or "FILE:LINE: security.KEY"
    std::string value;  // a path, or (the scheduler's) a key
    std::filesystem::path base;  // relative paths resolve against it (the config file's folder)
  };

  toml::table parse_config() const {
    namespace fs = std::filesystem;
    std::error_code error;
    if (fs::is_directory(client_config, error))
      throw std::invalid_argument("--client-config: " + client_config + " is a directory, not a TOML file");
    if (std::ifstream probe(client_config); !probe)
      throw std::invalid_argument("--client-config: cannot read " + client_config + ": " +
                                  std::strerror(errno));
    toml::table config;
    try {
      config = toml::parse_file(client_config);
    } catch (const toml::parse_error& e) {
      throw std::invalid_argument("--client-config: " + client_config + ":" +
                                  std::to_string(e.source().begin.line) + ": " +
                                  bounded_message(e.description(), 200));
    }
    return config;
  }

  void read_config(Source& public_key, Source& secret_key, Source& scheduler) const {
    namespace fs = std::filesystem;
    const toml::table config = parse_config();
    const auto* security = config["security"].as_table();
    if (!security)
      throw std::invalid_argument("--client-config: " + client_config + " has no [security] table");
    for (const auto& [key, node] : *security) {
      Source* target = key == "public_key_file"        ? &public_key
                       : key == "secret_key_file"      ? &secret_key
                       : key == "scheduler_public_key" ? &scheduler
                                                       : nullptr;
      const std::string where = client_config + ":" + std::to_string(node.source().begin.line) +
                                ": security." + std::string(key.str());
      if (!target)
        throw std::invalid_argument("--client-config: " + where +
                                    " is not a client key (public_key_file, secret_key_file, "
                                    "scheduler_public_key)");
      const auto* text = node.as_string();
      if (!text || text->get().empty())
        throw std::invalid_argument("--client-config: " + where + " must be a non-empty string");
      if (!target->value.empty()) continue;  // the flag overrides the file
      *target = Source{"--client-config: " + where, text->get(), fs::path(client_config).parent_path()};
    }
  }

  static std::filesystem::path resolved(const Source& source) {
    std::filesystem::path path = source.value;
    return path.is_relative() && !source.base.empty() ? source.base / path : path;
  }

  static std::string key_from_file(const Source& source) {
    namespace fs = std::filesystem;
    const fs::path path = resolved(source);
    std::error_code error;
    if (fs::is_directory(path, error))
      throw std::invalid_argument(source.flag + ": " + path.string() + " is a directory, not a key file");
    std::ifstream in(path);
    if (!in)
      throw std::invalid_argument(source.flag + ": cannot read " + path.string() + ": " +
                                  std::strerror(errno));
    std::string text(256, '\0');  // a key file is 41 bytes: read no more than a little past that
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    if (!is_z85_key(text))
      throw std::invalid_argument(
          source.flag + ": " + path.string() +
          " does not hold a CURVE key (40 Z85 characters, as tessera keygen writes); it "
          "starts '" +
          excerpt(text, 40) + "'");
    return text;
  }
};

}  // namespace tessera::cli
