#include "programs/program_result.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "graph/printable.hpp"

namespace tessera::programs {
namespace {

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

// The whole of `token` as a number (leading '+' allowed; "inf", "nan" too).
bool parse_number(std::string_view token, double& out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token.empty()) return false;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), out);
  return error == std::errc{} && end == token.data() + token.size();
}

std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.remove_suffix(1);
  const auto newline = text.rfind('\n');
  if (newline != std::string_view::npos) text.remove_prefix(newline + 1);
  return "'" + printable(text, 120) + "'";
}

// The end of `file` in the set's directory, at most `limit` bytes.
std::string read_tail(const std::string& directory, const std::string& file, std::size_t limit,
                      std::uint64_t& whole) {
  const std::filesystem::path path = std::filesystem::path(directory) / file;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    std::error_code error;
    const bool exists = std::filesystem::exists(path, error);
    throw ResultError("result: " + file + (exists ? " cannot be read" : " was not written") + " (" +
                      path.string() + ")");
  }
  const std::streamoff size = in.tellg();
  whole = static_cast<std::uint64_t>(size);
  const std::streamoff start =
      size > static_cast<std::streamoff>(limit) ? size - static_cast<std::streamoff>(limit) : 0;
  in.seekg(start);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

Value as_result(std::vector<double> numbers) {
  if (numbers.size() == 1) return Value(numbers.front());
  return Value(std::move(numbers));
}

void check_count(const ProgramResultSpec& spec, const std::vector<double>& numbers,
                 const std::string& where) {
  if (!spec.outputs.empty() && numbers.size() != spec.outputs.size())
    throw ResultError("result: " + std::to_string(numbers.size()) + " number" +
                      (numbers.size() == 1 ? "" : "s") + " in " + where + ", but outputs names " +
                      std::to_string(spec.outputs.size()));
}

double json_number(const nlohmann::json& value, const std::string& what, const std::string& where) {
  if (!value.is_number())
    throw ResultError("result: " + what + " in " + where + " is " + printable(value.dump(), 60) +
                      ", not a number");
  return value.get<double>();
}

}  // namespace

bool last_number(std::string_view text, double& out) {
  bool found = false;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!number_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && number_char(text[end])) ++end;
    double value;
    // A token such as "x=1.5," has its number whole; "1.5e" or "--" are not numbers.
    if (parse_number(text.substr(i, end - i), value)) {
      out = value;
      found = true;
    } else {
      // "step-3": look for a number inside, after its first character.
      for (std::size_t k = i + 1; k < end; ++k)
        if (parse_number(text.substr(k, end - k), value)) {
          out = value;
          found = true;
          break;
        }
    }
    i = end;
  }
  // Words that are numbers to from_chars: "inf", "nan" as the last token.
  return found;
}

Value read_program_result(const ProgramResultSpec& spec, std::string_view stdout_tail,
                          const std::string& directory, std::uint64_t stdout_bytes) {
  const std::string where = spec.file.empty() ? "stdout" : spec.file;
  std::string file_text;
  std::string_view text = stdout_tail;
  std::uint64_t whole = std::max<std::uint64_t>(stdout_bytes, stdout_tail.size());
  if (!spec.file.empty()) {
    file_text = read_tail(directory, spec.file, kMaxResultFileBytes, whole);
    text = file_text;
  }
  // These read the text whole: from a tail that lost its beginning they would read a cut first word, or
  // fewer numbers, and say nothing.
  if ((spec.format == ProgramResultFormat::json || spec.format == ProgramResultFormat::numbers) &&
      whole > text.size())
    throw ResultError("result: " + where + " holds " + std::to_string(whole) +
                      " bytes, of which only the last " + std::to_string(text.size()) +
                      " are kept; format = \"" +
                      (spec.format == ProgramResultFormat::json ? "json" : "numbers") + "\" reads all of it" +
                      (spec.file.empty() ? ": write the result to a file (result.file)" : ""));
  switch (spec.format) {
    case ProgramResultFormat::last_number: {
      double value;
      if (!last_number(text, value))
        throw ResultError("result: no number in " + where + " (last line: " + last_line(text) + ")");
      return Value(value);
    }
    case ProgramResultFormat::regex: {
      const std::regex pattern(spec.regex, std::regex::ECMAScript);
      const std::string_view searched =
          text.size() > kMaxRegexBytes ? text.substr(text.size() - kMaxRegexBytes) : text;
      // Line by line, each line's first kMaxRegexLineBytes: libstdc++'s matcher recurses once per
      // character a repetition takes, and a long line would overflow the compute thread's stack.
      std::cmatch match;
      bool found = false;
      for (std::size_t at = 0; at < searched.size() && !found;) {
        const std::size_t newline = searched.find('\n', at);
        const std::size_t end = newline == std::string_view::npos ? searched.size() : newline;
        const std::string_view line = searched.substr(at, std::min(end - at, kMaxRegexLineBytes));
        found = std::regex_search(line.data(), line.data() + line.size(), match, pattern);
        at = end + 1;
      }
      if (!found)
        throw ResultError("result: no match for regex in " + where + " (last line: " + last_line(text) + ")");
      std::vector<double> numbers;
      for (std::size_t g = 1; g < match.size(); ++g) {
        double value;
        const std::string group = match[g].str();
        const std::string name = g - 1 < spec.outputs.size() ? " ('" + spec.outputs[g - 1] + "')" : "";
        if (!parse_number(group, value))
          throw ResultError("result: group " + std::to_string(g) + name + " of the regex matched '" +
                            printable(group, 60) + "' in " + where + ", not a number");
        numbers.push_back(value);
      }
      check_count(spec, numbers, where);
      return as_result(std::move(numbers));
    }
    case ProgramResultFormat::json: {
      nlohmann::json document;
      try {
        document = nlohmann::json::parse(text);
      } catch (const nlohmann::json::exception& e) {
        throw ResultError("result: " + where + " is not JSON: " + printable(e.what(), 160));
      }
      std::vector<double> numbers;
      if (document.is_number()) {
        numbers.push_back(document.get<double>());
      } else if (document.is_array()) {
        for (std::size_t i = 0; i < document.size(); ++i)
          numbers.push_back(json_number(document[i], "element " + std::to_string(i), where));
      } else if (document.is_object()) {
        if (spec.outputs.empty()) {
          for (const auto& [key, value] : document.items())
            numbers.push_back(json_number(value, "'" + key + "'", where));
        } else {
          for (const auto& name : spec.outputs) {
            const auto it = document.find(name);
            if (it == document.end()) throw ResultError("result: " + where + " has no field '" + name + "'");
            numbers.push_back(json_number(*it, "field '" + name + "'", where));
          }
        }
      } else {
        throw ResultError("result: " + where + " holds " + printable(document.dump(), 60) +
                          ", not a number, an array or an object of numbers");
      }
      if (numbers.empty()) throw ResultError("result: no numbers in " + where);
      check_count(spec, numbers, where);
      return as_result(std::move(numbers));
    }
    case ProgramResultFormat::numbers: {
      std::vector<double> numbers;
      std::size_t i = 0;
      while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        std::size_t end = i;
        while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
        if (end == i) break;
        double value;
        if (!parse_number(text.substr(i, end - i), value))
          throw ResultError("result: '" + printable(text.substr(i, end - i), 40) + "' in " + where +
                            " is not a number (word " + std::to_string(numbers.size() + 1) + ")");
        numbers.push_back(value);
        i = end;
      }
      if (numbers.empty()) throw ResultError("result: no numbers in " + where);
      check_count(spec, numbers, where);
      return as_result(std::move(numbers));
    }
  }
  throw ResultError("result: unknown format");
}

}  // namespace tessera::programs
