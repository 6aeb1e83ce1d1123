#include "csv_reader.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "cli_options.hpp"

namespace tessera::cli {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<double> number(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  double value = 0;
  auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (cell.empty() || error != std::errc() || end != cell.data() + cell.size()) return std::nullopt;
  return value;
}

CsvReader::CsvReader(const std::string& path, HeaderRule rule) : name_(excerpt(path, 300)), rule_(rule) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw CsvError(name_ + " is a directory, not a CSV file");
  in_.open(path, std::ios::binary);
  if (!in_) throw CsvError("cannot read " + name_ + ": " + std::strerror(errno));
}

std::optional<std::vector<double>> CsvReader::next() {
  std::string line;
  while (read_line(line)) {
    const auto cells = split(line);
    if (first_row_) {
      first_row_ = false;
      if (is_header(cells)) {
        header_line_ = line_;
        columns_ = cells.size();
        header_ = cells;
        continue;
      }
    }
    return numbers(cells);
  }
  if (in_.bad()) throw CsvError(name_ + ": a read error after line " + std::to_string(line_));
  return std::nullopt;
}

// The next line with anything on it, without its byte-order mark.
bool CsvReader::read_line(std::string& line) {
  while (std::getline(in_, line)) {
    ++line_;
    if (line_ == 1) {
      if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
      if (line.rfind("\xFF\xFE", 0) == 0 || line.rfind("\xFE\xFF", 0) == 0)
        throw CsvError(name_ + " is UTF-16 (it starts with a UTF-16 byte-order mark): save it as UTF-8");
    }
    if (!trim(line).empty()) return true;
  }
  return false;
}

std::string CsvReader::where(std::size_t cell) const {
  return name_ + ":" + std::to_string(line_) + ": cell " + std::to_string(cell + 1);
}

std::vector<std::string> CsvReader::split(const std::string& line) const {
  std::vector<std::string> cells;
  std::string cell;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      cell.clear();
      for (++i;; ++i) {
        if (i >= line.size())
          throw CsvError(where(cells.size()) + ": a quote opened here is not closed on this line");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            ++i;
            continue;
          }
          break;
        }
        cell += line[i];
      }
      ++i;  // past the closing quote; only blanks may follow it before the comma
      const auto comma = line.find(',', i);
      const auto rest =
          trim(std::string_view(line).substr(i, comma == std::string::npos ? comma : comma - i));
      if (!rest.empty())
        throw CsvError(where(cells.size()) + ": '" + excerpt(rest) + "' follows the closing quote");
      cells.push_back(cell);
      if (comma == std::string::npos) break;
      i = comma + 1;
    } else {
      const auto comma = line.find(',', start);
      cells.emplace_back(
          trim(std::string_view(line).substr(start, comma == std::string::npos ? comma : comma - start)));
      if (comma == std::string::npos) break;
      i = comma + 1;
    }
  }
  return cells;
}

bool CsvReader::is_header(const std::vector<std::string>& cells) const {
  if (rule_ == HeaderRule::yes) return true;
  if (rule_ == HeaderRule::no) return false;
  std::optional<std::size_t> a_number, not_a_number;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    auto& first = number(cells[c]) ? a_number : not_a_number;
    if (!first) first = c;
  }
  if (!a_number) return true;
  if (!not_a_number) return false;
  // Neither a header nor a row of data: say so rather than guess and drop a row of numbers.
  throw CsvError(where(*not_a_number) + " '" + excerpt(cells[*not_a_number]) +
                 "' is not a number, but cell " + std::to_string(*a_number + 1) +
                 " of this first row is: with --header auto the first row is a header only when none of "
                 "its cells is a number (say --header yes if it is a header)");
}

std::vector<double> CsvReader::numbers(const std::vector<std::string>& cells) {
  std::vector<double> values;
  values.reserve(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (cells[c].empty()) throw CsvError(where(c) + " is empty");
    const auto value = number(cells[c]);
    if (!value) throw CsvError(where(c) + " '" + excerpt(cells[c]) + "' is not a number");
    if (!std::isfinite(*value))
      throw CsvError(where(c) + " '" + excerpt(cells[c]) + "' is not a finite number");
    values.push_back(*value);
  }
  if (columns_ == 0) {
    columns_ = values.size();
  } else if (values.size() != columns_) {
    throw CsvError(name_ + ":" + std::to_string(line_) + ": " + std::to_string(values.size()) + " values, " +
                   (header_line_ ? "the header has " : "the rows before have ") + std::to_string(columns_));
  }
  return values;
}

}  // namespace tessera::cli
