#include "cli_registry.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <tessera/tessera.hpp>

#include "cli_options.hpp"
#include "graph/program_spec.hpp"
#include "storage/csv_cell.hpp"

namespace tessera::cli {

void print_json(const nlohmann::ordered_json& json) {
  std::cout << json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

namespace {

using Json = nlohmann::ordered_json;

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& part : parts) (out += out.empty() ? "" : separator) += part;
  return out;
}

// A result in a CSV cell: numbers in their shortest round-trip form, a vector as [a; b; c].
std::string result_text(const Value& value) {
  switch (value.kind()) {
    case ValueKind::none:
      return "";
    case ValueKind::integer:
      return std::to_string(value.as_int());
    case ValueKind::real:
      return render_number(value.as_double());
    case ValueKind::boolean:
      return value.as_bool() ? "true" : "false";
    case ValueKind::string:
      return value.as_string();
    case ValueKind::doubles: {
      std::string out = "[";
      for (double x : value.as_doubles()) (out += out.size() > 1 ? "; " : "") += render_number(x);
      return out + "]";
    }
    default:
      return "(a " + std::string(kind_name(value.kind())) + ")";
  }
}

// A cell as the argument the cluster declares; nullopt when that type cannot hold it.
std::optional<Value> argument(double cell, const std::string& type) {
  if (type == "double" || type == "Value") return Value(cell);
  // A Python function's argument: a whole number as an int (as pandas reads a CSV), else a float.
  if (type == "any") {
    if (cell == std::trunc(cell) && std::fabs(cell) <= 9007199254740992.0)
      return Value(static_cast<std::int64_t>(cell));
    return Value(cell);
  }
  if (type == "int") {
    if (cell != std::trunc(cell) || std::fabs(cell) > 9007199254740992.0) return std::nullopt;
    return Value(static_cast<std::int64_t>(cell));
  }
  if (type == "bool") {
    if (cell != 0 && cell != 1) return std::nullopt;
    return Value(cell == 1);
  }
  return std::nullopt;
}

}  // namespace

int list_functions(const Target& target, bool json) {
  auto client = connect(target);
  const auto functions = client.functions();
  if (json) {
    auto out = Json::array();
    for (const auto& f : functions)
      out.push_back(Json{{"name", f.name},
                         {"argument_types", f.argument_types},
                         {"result_type", f.result_type},
                         {"identity", f.identity}});
    print_json(out);
    return 0;
  }
  std::printf("%-32s %s\n", "name", "signature");
  for (const auto& f : functions)
    std::printf("%-32s (%s) -> %s\n", excerpt(f.name, 256).c_str(),
                excerpt(joined(f.argument_types, ", "), 512).c_str(), excerpt(f.result_type, 256).c_str());
  return 0;
}

// A program's, a Python class's (its identity says so: actors/python_modules.cpp) or a compiled one.
namespace {
const char* simulation_kind(const SimulationInfo& s) {
  if (s.program) return "program";
  return s.identity.starts_with("python ") ? "python" : "compiled";
}
}  // namespace

int list_simulations(const Target& target, bool json) {
  auto client = connect(target);
  const auto simulations = client.simulations();
  if (json) {
    auto out = Json::array();
    for (const auto& s : simulations) {
      Json entry{{"name", s.name},
                 {"kind", simulation_kind(s)},
                 {"arity", s.arity ? Json(*s.arity) : Json(nullptr)},
                 {"cores", s.threads},
                 {"gpus", s.gpus}};
      if (s.program || !s.parameters.empty() || !s.outputs.empty()) {
        entry["parameters"] = s.parameters;
        entry["outputs"] = s.outputs;
      }
      if (s.program) {
        entry["command"] = s.command;
      } else {
        entry["parameter_type"] = s.parameter_type;
        entry["result_type"] = s.result_type;
      }
      entry["identity"] = s.identity;
      out.push_back(std::move(entry));
    }
    print_json(out);
    return 0;
  }
  std::printf("%-24s %-9s %-32s %-24s %s\n", "name", "kind", "parameters", "outputs", "cores");
  for (const auto& s : simulations) {
    // Declared names where there are some (a program's, a Python class's), else the types.
    const std::string parameters =
        s.program || !s.parameters.empty()
            ? joined(s.parameters, ", ")
            : s.parameter_type + (s.arity ? " (" + std::to_string(*s.arity) + ")" : std::string());
    const std::string outputs = s.program || !s.outputs.empty() ? joined(s.outputs, ", ") : s.result_type;
    std::printf("%-24s %-9s %-32s %-24s %u%s\n", excerpt(s.name, 256).c_str(), simulation_kind(s),
                excerpt(parameters, 256).c_str(), excerpt(outputs, 256).c_str(), s.threads,
                s.gpus ? (" + " + std::to_string(s.gpus) + " gpus").c_str() : "");
    if (s.program) std::printf("    %s\n", excerpt(joined(s.command, " "), 1024).c_str());
  }
  return 0;
}

int map_function(const Target& target, const MapOptions& options) {
  auto client = connect(target);
  // The signature the cluster declares decides how each cell is read.
  std::optional<FunctionInfo> function;
  for (auto& f : client.functions())
    if (f.name == options.function) function = std::move(f);
  if (!function) {
    std::cerr << "tessera: map: the cluster has no task function '" << excerpt(options.function)
              << "' (tessera functions lists what it has)\n";
    return 1;
  }
  const auto& types = function->argument_types;
  const bool whole_row = types.size() == 1 && types[0] == "vector<double>";
  std::vector<std::vector<double>> rows;
  std::vector<std::vector<Arg>> inputs(types.size());
  std::vector<std::string> header;
  try {
    CsvReader reader(options.input, options.header);
    while (auto row = reader.next()) {
      const std::string where = reader.name() + ":" + std::to_string(reader.line());
      if (whole_row) {
        inputs[0].emplace_back(std::in_place_index<0>, *row);
      } else {
        if (row->size() != types.size())
          throw CsvError(where + ": " + std::to_string(row->size()) + " values, but " + function->name +
                         " takes " + std::to_string(types.size()) +
                         (types.size() == 1 ? " argument (" : " arguments (") + joined(types, ", ") + ")");
        for (std::size_t k = 0; k < types.size(); ++k) {
          auto value = argument((*row)[k], types[k]);
          if (!value)
            throw CsvError(
                where + ": cell " + std::to_string(k + 1) + " (" + render_number((*row)[k]) +
                ") cannot be argument " + std::to_string(k) + " of " + function->name + ", a " + types[k] +
                " (the CLI passes numbers as int, double, bool or a Python function's any, or a whole row as "
                "vector<double>)");
          inputs[k].emplace_back(std::in_place_index<0>, std::move(*value));
        }
      }
      rows.push_back(std::move(*row));
    }
    header = reader.header();
    if (rows.empty()) throw CsvError(reader.name() + ": no rows to map over");
  } catch (const CsvError& e) {
    std::cerr << "tessera: map: " << bounded_message(e.what()) << "\n";
    return 2;
  }
  auto futures = client.map_by_name(options.function, std::move(inputs));
  std::ofstream file;
  if (!options.output.empty()) {
    file.open(options.output);
    if (!file) {
      std::cerr << "tessera: map: cannot write " << excerpt(options.output, 300) << "\n";
      return 1;
    }
  }
  std::ostream& out = options.output.empty() ? std::cout : file;
  out << "id";
  for (std::size_t c = 0; c < rows.front().size(); ++c)
    out << "," << csv_cell(c < header.size() ? header[c] : "arg" + std::to_string(c));
  out << ",result,error\n";
  std::size_t failed = 0;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    out << i;
    for (double cell : rows[i]) out << "," << render_number(cell);
    try {
      out << "," << csv_cell(result_text(futures[i].result())) << ",\n";
    } catch (const std::exception& e) {
      ++failed;
      out << ",," << csv_cell(excerpt(e.what(), 400)) << "\n";
    }
  }
  out.flush();
  std::cerr << "map " << excerpt(function->name) << ": " << futures.size() << " tasks, " << failed
            << " failed\n";
  return failed == 0 && out ? 0 : 1;
}

}  // namespace tessera::cli
