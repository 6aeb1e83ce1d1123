#include "nodes/program_config.hpp"

#include <cmath>
#include <fstream>
#include <map>

#include "graph/printable.hpp"
#include "nodes/node_config.hpp"
#include "nodes/toml_type.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct Reader {
  std::string_view source;
  fs::path base_dir;
  std::string prefix;  // "simulations.heat."

  [[noreturn]] void fail(const toml::source_region& where, const std::string& key,
                         const std::string& message) const {
    const std::string line = where.begin.line ? ":" + std::to_string(where.begin.line) : "";
    throw ConfigError(std::string(source) + line + ": key '" + prefix + key + "' " + message);
  }

  std::string type_of(const toml::node& node) const { return toml_type_of(node); }

  std::string string(const toml::node& node, const std::string& key) const {
    if (!node.is_string()) fail(node.source(), key, "must be a string, got " + type_of(node));
    return std::string(*node.value<std::string_view>());
  }

  std::vector<std::string> strings(const toml::node& node, const std::string& key) const {
    const toml::array* array = node.as_array();
    if (!array) fail(node.source(), key, "must be an array of strings, got " + type_of(node));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto& item = (*array)[i];
      if (!item.is_string())
        fail(item.source(), key + "[" + std::to_string(i) + "]", "must be a string, got " + type_of(item));
      out.emplace_back(*item.value<std::string_view>());
    }
    return out;
  }

  std::uint32_t integer(const toml::node& node, const std::string& key, std::int64_t low,
                        std::int64_t high) const {
    if (!node.is_integer())
      fail(node.source(), key,
           "must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
               type_of(node));
    const std::int64_t v = *node.value<std::int64_t>();
    if (v < low || v > high)
      fail(
          node.source(), key,
          "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + std::to_string(v));
    return static_cast<std::uint32_t>(v);
  }

  double seconds(const toml::node& node, const std::string& key, double low, double high,
                 bool open_low) const {
    if (!node.is_number()) fail(node.source(), key, "must be a number of seconds, got " + type_of(node));
    const double v = *node.value<double>();
    if (!std::isfinite(v) || v < low || (open_low && v == low) || v > high)
      fail(node.source(), key,
           std::string("must be a number of seconds in ") + (open_low ? "(" : "[") + render_number(low) +
               ", " + render_number(high) + "], got " + render_number(v));
    return v;
  }

  std::map<std::string, std::string> string_table(const toml::node& node, const std::string& key) const {
    const toml::table* table = node.as_table();
    if (!table) fail(node.source(), key, "must be a table of strings, got " + type_of(node));
    std::map<std::string, std::string> out;
    for (auto&& [name, value] : *table) {
      const std::string item_key = key + "." + std::string(name.str());
      out[std::string(name.str())] = string(value, item_key);
    }
    return out;
  }

  std::string read_template(const toml::node& node, const std::string& key, const std::string& path) const {
    constexpr std::size_t kMaxTemplateBytes = 1 << 20;
    fs::path file = path;
    if (file.is_relative()) file = base_dir / file;
    std::error_code error;
    if (!fs::is_regular_file(file, error))
      fail(node.source(), key, "names a template that is missing: " + file.string());
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(node.source(), key, "names a template that cannot be read: " + file.string());
    std::string text(kMaxTemplateBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTemplateBytes)
      fail(node.source(), key, "names a template larger than 1 MiB: " + file.string());
    return text;
  }
};

ProgramSpec read_program(const toml::table& table, const Reader& r,
                         std::map<std::string, toml::source_region>& regions) {
  ProgramSpec spec;
  bool has_command = false;
  for (auto&& [key_name, node] : table) {
    const std::string key(key_name.str());
    regions[key] = node.source();
    if (key == "command") {
      spec.command = r.strings(node, key);
      has_command = true;
    } else if (key == "parameters") {
      spec.parameters = r.strings(node, key);
    } else if (key == "files") {
      const toml::table* files = node.as_table();
      if (!files) r.fail(node.source(), key, "must be a table of template paths, got " + r.type_of(node));
      for (auto&& [name, path] : *files) {
        const std::string file_key = key + "." + std::string(name.str());
        regions[file_key] = path.source();
        spec.files[std::string(name.str())] = r.read_template(path, file_key, r.string(path, file_key));
      }
    } else if (key == "result") {
      const toml::table* result = node.as_table();
      if (!result)
        r.fail(node.source(), key, "must be a table (file, regex, format, outputs), got " + r.type_of(node));
      bool format_given = false;
      for (auto&& [part_name, part] : *result) {
        const std::string part_key = "result." + std::string(part_name.str());
        regions[part_key] = part.source();
        if (part_name.str() == "file") {
          spec.result.file = r.string(part, part_key);
        } else if (part_name.str() == "regex") {
          spec.result.regex = r.string(part, part_key);
        } else if (part_name.str() == "outputs") {
          spec.result.outputs = r.strings(part, part_key);
        } else if (part_name.str() == "format") {
          const std::string format = r.string(part, part_key);
          format_given = true;
          if (format == "last_number")
            spec.result.format = ProgramResultFormat::last_number;
          else if (format == "regex")
            spec.result.format = ProgramResultFormat::regex;
          else if (format == "json")
            spec.result.format = ProgramResultFormat::json;
          else if (format == "numbers")
            spec.result.format = ProgramResultFormat::numbers;
          else
            r.fail(part.source(), part_key,
                   "must be one of \"last_number\", \"regex\", \"json\", \"numbers\", got \"" +
                       printable(format, 40) + "\"");
        } else {
          r.fail(part.source(), part_key, "is unknown (known in result: file, regex, format, outputs)");
        }
      }
      // A regex alone says its format.
      if (!format_given && !spec.result.regex.empty()) spec.result.format = ProgramResultFormat::regex;
    } else if (key == "ranks") {
      spec.ranks = r.integer(node, key, 1, ProgramSpec::kMaxRanks);
    } else if (key == "threads") {
      spec.threads = r.integer(node, key, 1, ProgramSpec::kMaxThreads);
    } else if (key == "gpus") {
      spec.gpus = r.integer(node, key, 0, ProgramSpec::kMaxGpus);
    } else if (key == "launcher") {
      if (node.is_array())
        spec.launcher_argv = r.strings(node, key);
      else
        spec.launcher = r.string(node, key);
      if (node.is_array() && spec.launcher_argv.empty())
        r.fail(node.source(), key, "must not be an empty array");
    } else if (key == "env") {
      spec.env = r.string_table(node, key);
      for (const auto& [name, value] : spec.env) regions["env." + name] = node.source();
    } else if (key == "keep") {
      const std::string keep = r.string(node, key);
      if (keep == "always")
        spec.keep = KeepDirectories::always;
      else if (keep == "failed")
        spec.keep = KeepDirectories::failed;
      else if (keep == "never")
        spec.keep = KeepDirectories::never;
      else
        r.fail(node.source(), key,
               "must be one of \"always\", \"failed\", \"never\", got \"" + printable(keep, 40) + "\"");
    } else if (key == "timeout") {
      spec.timeout_seconds = r.seconds(node, key, 0, 365.0 * 24 * 3600, false);
    } else if (key == "grace") {
      spec.grace_seconds = r.seconds(node, key, 0, 3600, true);
    } else if (key == "workdir_root") {
      fs::path root = r.string(node, key);
      if (root.empty()) r.fail(node.source(), key, "must not be empty");
      if (root.is_relative()) root = fs::absolute(r.base_dir / root);
      spec.workdir_root = root.lexically_normal().string();
    } else {
      r.fail(
          node.source(), key,
          "is unknown (known: command, parameters, files, result, ranks, threads, gpus, launcher, env, keep, "
          "timeout, grace, workdir_root)");
    }
  }
  if (!has_command) r.fail(table.source(), "command", "is missing (the program's argv, an array of strings)");
  return spec;
}

}  // namespace

std::vector<DeclaredProgram> parse_program_declarations(const toml::node& simulations,
                                                        std::string_view source, const fs::path& base_dir) {
  const toml::table* table = simulations.as_table();
  if (!table) {
    const std::string line =
        simulations.source().begin.line ? ":" + std::to_string(simulations.source().begin.line) : "";
    throw ConfigError(std::string(source) + line +
                      ": 'simulations' must be a table of programs ([simulations.NAME])");
  }
  std::vector<DeclaredProgram> out;
  for (auto&& [name_key, node] : *table) {
    const std::string name(name_key.str());
    Reader r{source, base_dir, "simulations." + name + "."};
    const toml::table* program = node.as_table();
    if (!program) {
      const std::string line = node.source().begin.line ? ":" + std::to_string(node.source().begin.line) : "";
      throw ConfigError(std::string(source) + line + ": 'simulations." + printable(name, 60) +
                        "' must be a table ([simulations." + printable(name, 60) + "])");
    }
    if (name.empty() || name.size() > 128 || name.find_first_of(" \t\r\n/\"'") != std::string::npos)
      r.fail(node.source(), "", "is not a usable simulation name");
    std::map<std::string, toml::source_region> regions;
    ProgramSpec spec = read_program(*program, r, regions);
    const auto problems = check_program_spec(spec);
    if (!problems.empty()) {
      // "ranks: ..." -> the line of key ranks; "command[3]: ..." -> command's; otherwise the table's.
      const std::string& problem = problems.front();
      const std::string key = problem.substr(0, problem.find(':'));
      std::string lookup = key.substr(0, key.find('['));
      auto region = regions.find(lookup);
      while (region == regions.end() && lookup.find('.') != std::string::npos) {
        lookup = lookup.substr(0, lookup.rfind('.'));
        region = regions.find(lookup);
      }
      const toml::source_region where = region != regions.end() ? region->second : node.source();
      const std::string line = where.begin.line ? ":" + std::to_string(where.begin.line) : "";
      throw ConfigError(std::string(source) + line + ": key '" + r.prefix + key + "'" +
                        problem.substr(key.size()));
    }
    out.push_back(DeclaredProgram{name, std::move(spec), node.source().begin.line});
  }
  return out;
}

std::string program_declaration_help() {
  return "\n[simulations.NAME]   a program run per parameter set, named by clients like a compiled "
         "simulation\n"
         "  command = [\"prog\", \"--alpha\", \"{alpha}\"]   required; executed directly, never through a "
         "shell\n"
         "  parameters = [\"alpha\", ...]   a parameter set's names (and so its arity)\n"
         "  files = { \"case.in\" = \"templates/case.in\" }   templates rendered into the set's directory\n"
         "  result = { file = \"out.log\", regex = '...', format = "
         "\"last_number\"|\"regex\"|\"json\"|\"numbers\",\n"
         "             outputs = [\"energy\", ...] }   default: the last number on stdout\n"
         "  ranks = 1   MPI processes per set, in [1, 4096]\n"
         "  launcher = \"mpirun\" | \"srun\" | \"none\" | [\"argv\", \"template\"]   default: mpirun when "
         "ranks > 1\n"
         "  threads = 1   per rank (OMP_NUM_THREADS); a set occupies ranks x threads cores\n"
         "  gpus = 0   devices per set (CUDA_VISIBLE_DEVICES)\n"
         "  env = { NAME = \"value\" }   added to the program's environment\n"
         "  keep = \"failed\"   working directories kept: \"always\" | \"failed\" | \"never\"\n"
         "  timeout = 0   seconds per set (0: none; a stream's own timeout wins)\n"
         "  grace = 5   seconds between SIGTERM and SIGKILL when a set is ended early\n"
         "  workdir_root = \"DIR\"   where sets' directories go (default: the worker's data_dir/runs)\n"
         "  Placeholders: {NAME} of a parameter, {id}, {stream}, {dir}, {ranks}, {threads}, {config.KEY};\n"
         "  {{ and }} are literal braces.\n";
}

}  // namespace tessera
