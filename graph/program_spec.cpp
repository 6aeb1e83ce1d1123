#include "graph/program_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

#include "graph/printable.hpp"
#include "graph/simulation.hpp"

namespace tessera {
namespace {

constexpr std::string_view kBuiltins[] = {"id", "stream", "dir", "ranks", "threads"};

bool is_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string quoted(std::string_view text) {
  return "'" + printable(text, 80) + "'";
}

// One piece of a template: literal text, or a placeholder's name.
struct Piece {
  bool placeholder = false;
  std::string text;
};

// Splits a template; throws std::invalid_argument for an unterminated or empty placeholder or a lone '}'.
std::vector<Piece> parse(std::string_view text) {
  std::vector<Piece> pieces;
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      literal += '}';
      ++i;
    } else if (c == '{') {
      const auto end = text.find_first_of("{}", i + 1);
      if (end == std::string_view::npos || text[end] != '}')
        throw std::invalid_argument("unterminated placeholder at character " + std::to_string(i + 1) +
                                    " (a literal brace is written {{)");
      if (end == i + 1)
        throw std::invalid_argument("empty placeholder {} at character " + std::to_string(i + 1));
      if (!literal.empty()) pieces.push_back({false, std::move(literal)});
      literal.clear();
      pieces.push_back({true, std::string(text.substr(i + 1, end - i - 1))});
      i = end;
    } else if (c == '}') {
      throw std::invalid_argument("unbalanced '}' at character " + std::to_string(i + 1) +
                                  " (a literal brace is written }})");
    } else {
      literal += c;
    }
  }
  if (!literal.empty()) pieces.push_back({false, std::move(literal)});
  return pieces;
}

// Problems of one template's placeholders, each prefixed with `where`.
void check_template(std::string_view text, const std::string& where, const ProgramSpec& spec,
                    std::vector<std::string>& problems) {
  std::vector<Piece> pieces;
  try {
    pieces = parse(text);
  } catch (const std::invalid_argument& e) {
    problems.push_back(where + ": " + e.what() + " in " + quoted(text));
    return;
  }
  for (const auto& piece : pieces) {
    if (!piece.placeholder) continue;
    const std::string& name = piece.text;
    if (name.starts_with("config.")) {
      if (name.size() == 7) problems.push_back(where + ": placeholder {config.} names no config key");
      continue;
    }
    bool known = std::find(spec.parameters.begin(), spec.parameters.end(), name) != spec.parameters.end();
    for (auto builtin : kBuiltins) known = known || name == builtin;
    if (known) continue;
    std::string names;
    for (const auto& p : spec.parameters) names += p + ", ";
    problems.push_back(where + ": unknown placeholder {" + printable(name, 60) + "} (known: " + names +
                       "id, stream, dir, ranks, threads, config.KEY)");
  }
}

std::string config_text(const Value& value) {
  switch (value.kind()) {
    case ValueKind::string: {
      // One line of text: a newline would start another command in an input file; a NUL would cut an
      // argument short.
      const std::string& text = value.as_string();
      for (std::size_t i = 0; i < text.size(); ++i)
        if (static_cast<unsigned char>(text[i]) < 0x20 && text[i] != '\t')
          throw std::invalid_argument("is a string with a control character (byte " +
                                      std::to_string(static_cast<unsigned char>(text[i])) + " at position " +
                                      std::to_string(i) + "): a program takes one line of text");
      return text;
    }
    case ValueKind::real:
      return render_number(value.as_double());
    case ValueKind::integer:
      return std::to_string(value.as_int());
    case ValueKind::boolean:
      return value.as_bool() ? "true" : "false";
    default:
      throw std::invalid_argument("is a " + std::string(kind_name(value.kind())) +
                                  ", not a number, string or boolean");
  }
}

}  // namespace

const char* program_result_format_name(ProgramResultFormat format) {
  switch (format) {
    case ProgramResultFormat::last_number:
      return "last_number";
    case ProgramResultFormat::regex:
      return "regex";
    case ProgramResultFormat::json:
      return "json";
    case ProgramResultFormat::numbers:
      return "numbers";
  }
  return "?";
}

const char* keep_directories_name(KeepDirectories keep) {
  switch (keep) {
    case KeepDirectories::always:
      return "always";
    case KeepDirectories::failed:
      return "failed";
    case KeepDirectories::never:
      return "never";
  }
  return "?";
}

std::vector<std::string> ProgramSpec::launcher_prefix() const {
  if (!launcher_argv.empty()) return launcher_argv;
  // Both arms views: a `const char*` against `launcher` would make a temporary string the view outlives.
  const std::string_view chosen =
      launcher.empty() ? std::string_view(ranks > 1 ? "mpirun" : "none") : std::string_view(launcher);
  // Ranks are not bound to cores: several sets share a worker, and Open MPI would bind each set's ranks
  // to the same first cores.
  if (chosen == "mpirun") return {"mpirun", "-n", "{ranks}", "--bind-to", "none"};
  // Inside a Slurm allocation: a step of the set's share, which starts as soon as those CPUs are free.
  if (chosen == "srun")
    return {"srun", "--ntasks={ranks}", "--cpus-per-task={threads}", "--exact", "--quiet"};
  return {};
}

std::vector<std::string> ProgramSpec::config_keys() const {
  std::set<std::string> keys;
  const auto collect = [&](std::string_view text) {
    try {
      for (const auto& piece : parse(text))
        if (piece.placeholder && piece.text.starts_with("config.") && piece.text.size() > 7)
          keys.insert(piece.text.substr(7));
    } catch (const std::invalid_argument&) {
      // check_program_spec names it.
    }
  };
  for (const auto& a : command) collect(a);
  for (const auto& a : launcher_argv) collect(a);
  for (const auto& [name, text] : files) collect(text);
  for (const auto& [key, value] : env) collect(value);
  return {keys.begin(), keys.end()};
}

std::vector<std::string> check_program_spec(const ProgramSpec& spec) {
  std::vector<std::string> problems;
  if (spec.command.empty()) problems.push_back("command: must name a program (an array of strings)");
  if (!spec.command.empty() && spec.command[0].empty()) problems.push_back("command[0]: must not be empty");
  if (spec.parameters.size() > ProgramSpec::kMaxParameters)
    problems.push_back("parameters: " + std::to_string(spec.parameters.size()) +
                       " names exceed the limit of " + std::to_string(ProgramSpec::kMaxParameters));
  std::set<std::string> seen;
  for (std::size_t i = 0; i < spec.parameters.size(); ++i) {
    const auto& name = spec.parameters[i];
    const std::string where = "parameters[" + std::to_string(i) + "]";
    if (!is_name(name))
      problems.push_back(where + ": " + quoted(name) +
                         " is not a name (a letter or _, then letters, digits, _ or -)");
    else if (name == "config" ||
             std::find(std::begin(kBuiltins), std::end(kBuiltins), name) != std::end(kBuiltins))
      problems.push_back(where + ": " + quoted(name) + " is a built-in placeholder's name");
    else if (!seen.insert(name).second)
      problems.push_back(where + ": parameter " + quoted(name) + " is named twice");
  }
  for (std::size_t i = 0; i < spec.command.size(); ++i)
    check_template(spec.command[i], "command[" + std::to_string(i) + "]", spec, problems);
  for (std::size_t i = 0; i < spec.launcher_argv.size(); ++i)
    check_template(spec.launcher_argv[i], "launcher[" + std::to_string(i) + "]", spec, problems);
  // What runs is the declaration's to say: a placeholder there would let a stream's config choose it.
  for (const auto& [first, where] :
       {std::pair{spec.command.empty() ? nullptr : &spec.command[0], "command[0]"},
        std::pair{spec.launcher_argv.empty() ? nullptr : &spec.launcher_argv[0], "launcher[0]"}})
    if (first && std::ranges::any_of(parse(*first), [](const auto& piece) { return piece.placeholder; }))
      problems.push_back(std::string(where) +
                         ": the program to run is named in the declaration, not by a "
                         "placeholder (" +
                         printable(*first, 60) + ")");
  if (spec.launcher_argv.empty() && !spec.launcher.empty() && spec.launcher != "mpirun" &&
      spec.launcher != "srun" && spec.launcher != "none")
    problems.push_back("launcher: " + quoted(spec.launcher) +
                       " is not one of \"mpirun\", \"srun\", \"none\" or an array (an argv template)");
  for (const auto& [name, text] : spec.files) {
    const std::string where = "files." + printable(name, 60);
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos)
      problems.push_back(where + ": a file name in the set's directory (no '/', not '.' or '..')");
    check_template(text, where, spec, problems);
  }
  for (const auto& [key, value] : spec.env) {
    const std::string where = "env." + printable(key, 60);
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos)
      problems.push_back(where + ": an environment variable's name must be non-empty, without '=' or NUL");
    if (value.find('\0') != std::string::npos) problems.push_back(where + ": the value holds a NUL");
    check_template(value, where, spec, problems);
  }
  const auto& result = spec.result;
  if (result.format == ProgramResultFormat::regex) {
    if (result.regex.empty()) problems.push_back("result.regex: must be set with format \"regex\"");
    try {
      std::regex compiled(result.regex, std::regex::ECMAScript);
      if (!result.outputs.empty() && compiled.mark_count() != result.outputs.size())
        problems.push_back("result.regex: has " + std::to_string(compiled.mark_count()) +
                           " capture groups, but result.outputs names " +
                           std::to_string(result.outputs.size()));
      if (compiled.mark_count() == 0)
        problems.push_back("result.regex: has no capture group (each group's number is a result field)");
    } catch (const std::regex_error& e) {
      problems.push_back("result.regex: " + quoted(result.regex) + " does not compile: " + e.what());
    }
  } else if (!result.regex.empty()) {
    problems.push_back(std::string("result.regex: is set, but result.format is \"") +
                       program_result_format_name(result.format) + "\"");
  }
  if (result.format == ProgramResultFormat::json && result.file.empty())
    problems.push_back("result.file: format \"json\" reads a file; name it");
  if (!result.file.empty() && (result.file.starts_with("/") || result.file.find("..") != std::string::npos ||
                               result.file.find('\0') != std::string::npos))
    problems.push_back("result.file: " + quoted(result.file) + " must be a path inside the set's directory");
  seen.clear();
  for (std::size_t i = 0; i < result.outputs.size(); ++i) {
    const auto& name = result.outputs[i];
    if (!is_name(name))
      problems.push_back("result.outputs[" + std::to_string(i) + "]: " + quoted(name) + " is not a name");
    else if (!seen.insert(name).second)
      problems.push_back("result.outputs[" + std::to_string(i) + "]: " + quoted(name) + " is named twice");
  }
  if (spec.ranks < 1 || spec.ranks > ProgramSpec::kMaxRanks)
    problems.push_back("ranks: must be in [1, " + std::to_string(ProgramSpec::kMaxRanks) + "], got " +
                       std::to_string(spec.ranks));
  if (spec.threads < 1 || spec.threads > ProgramSpec::kMaxThreads)
    problems.push_back("threads: must be in [1, " + std::to_string(ProgramSpec::kMaxThreads) + "], got " +
                       std::to_string(spec.threads));
  if (spec.cores() > SimulationType::kMaxThreads)
    problems.push_back("ranks x threads: " + std::to_string(spec.cores()) + " cores per set exceed " +
                       std::to_string(SimulationType::kMaxThreads));
  if (spec.gpus > ProgramSpec::kMaxGpus)
    problems.push_back("gpus: must be in [0, " + std::to_string(ProgramSpec::kMaxGpus) + "], got " +
                       std::to_string(spec.gpus));
  constexpr double kYear = 365.0 * 24 * 3600;
  if (!std::isfinite(spec.timeout_seconds) || spec.timeout_seconds < 0 || spec.timeout_seconds > kYear)
    problems.push_back("timeout: must be a number of seconds in [0, 31536000] (0: none), got " +
                       render_number(spec.timeout_seconds));
  if (!std::isfinite(spec.grace_seconds) || spec.grace_seconds <= 0 || spec.grace_seconds > 3600)
    problems.push_back("grace: must be a number of seconds in (0, 3600], got " +
                       render_number(spec.grace_seconds));
  if (!spec.workdir_root.empty() && !spec.workdir_root.starts_with("/"))
    problems.push_back("workdir_root: " + quoted(spec.workdir_root) + " must be an absolute path");
  return problems;
}

std::string check_program_config(std::string_view simulation, const ProgramSpec& spec, const Config& config) {
  for (const auto& key : spec.config_keys()) {
    if (!config.has(key))
      return "simulation '" + std::string(simulation) + "' uses {config." + key +
             "}, but the stream's config has no key '" + key + "'";
    try {
      config_text(config.entries().at(key));
    } catch (const std::invalid_argument& e) {
      return "simulation '" + std::string(simulation) + "': config key '" + key + "' " + e.what();
    }
  }
  return {};
}

std::vector<double> program_parameters(const Value& parameters) {
  switch (parameters.kind()) {
    case ValueKind::real:
    case ValueKind::integer:
      return {parameters.as_double()};
    case ValueKind::doubles:
      return parameters.as_doubles();
    case ValueKind::vector: {
      const auto& v = parameters.as_vector();
      return std::vector<double>(v.data(), v.data() + v.size());
    }
    case ValueKind::list: {
      std::vector<double> out;
      for (const auto& item : parameters.as_list()) {
        if (item.kind() != ValueKind::real && item.kind() != ValueKind::integer)
          throw std::invalid_argument("a parameter set's elements must be numbers, got a " +
                                      std::string(kind_name(item.kind())));
        out.push_back(item.as_double());
      }
      return out;
    }
    default:
      throw std::invalid_argument("a parameter set must be numbers, got a " +
                                  std::string(kind_name(parameters.kind())));
  }
}

std::string program_spec_digest(const ProgramSpec& spec) {
  std::string text;
  const auto add = [&](std::string_view field) {
    text += std::to_string(field.size());
    text += ':';
    text += field;
  };
  for (const auto& a : spec.command) add(a);
  add("|");
  for (const auto& a : spec.parameters) add(a);
  add("|");
  for (const auto& [name, body] : spec.files) add(name), add(body);
  add("|");
  add(program_result_format_name(spec.result.format));
  add(spec.result.file);
  add(spec.result.regex);
  for (const auto& a : spec.result.outputs) add(a);
  add("|");
  add(std::to_string(spec.ranks) + "/" + std::to_string(spec.threads) + "/" + std::to_string(spec.gpus));
  add(spec.launcher);
  for (const auto& a : spec.launcher_argv) add(a);
  add("|");
  for (const auto& [key, value] : spec.env) add(key), add(value);
  add(keep_directories_name(spec.keep));
  add(render_number(spec.timeout_seconds) + "/" + render_number(spec.grace_seconds));
  add(spec.workdir_root);
  return std::to_string(text.size()) + "-" + std::to_string(std::hash<std::string>{}(text));
}

std::string render_number(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc{}) return std::to_string(value);
  return std::string(buffer, end);
}

std::string render_template(std::string_view text, const PlaceholderValues& values) {
  std::string out;
  out.reserve(text.size() + 16);
  for (const auto& piece : parse(text)) {
    if (!piece.placeholder) {
      out += piece.text;
      continue;
    }
    const std::string& name = piece.text;
    if (name == "id") {
      out += std::to_string(values.id);
    } else if (name == "stream") {
      out += std::to_string(values.stream);
    } else if (name == "dir") {
      out += values.dir;
    } else if (name == "ranks") {
      out += std::to_string(values.spec->ranks);
    } else if (name == "threads") {
      out += std::to_string(values.spec->threads);
    } else if (name.starts_with("config.")) {
      const std::string key = name.substr(7);
      if (!values.config || !values.config->has(key))
        throw std::invalid_argument("placeholder {" + name + "}: the stream's config has no key '" + key +
                                    "'");
      try {
        out += config_text(values.config->entries().at(key));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("placeholder {" + name + "}: config key '" + key + "' " + e.what());
      }
    } else {
      const auto& names = values.spec->parameters;
      const auto it = std::find(names.begin(), names.end(), name);
      const auto index = static_cast<std::size_t>(it - names.begin());
      if (it == names.end() || !values.parameters || index >= values.parameters->size())
        throw std::invalid_argument("placeholder {" + name + "} has no value");
      out += render_number((*values.parameters)[index]);
    }
  }
  return out;
}

}  // namespace tessera
