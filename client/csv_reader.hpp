// The CSV files the CLI reads parameter sets and arguments from: rows are lines, cells are separated by
// commas and may be quoted ("1.5", "a ""name"""); blank lines are skipped; a UTF-8 byte-order mark is
// dropped. Read one row at a time (a file may be far larger than memory).
#pragma once

#include <cstddef>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cli {

// How --header decides whether the first row of the CSV names the columns.
enum class HeaderRule {
  automatic,  // a header only when none of its cells is a number; a row of numbers with one other cell
              // is an error, never a header silently dropped
  yes,        // the first row is a header, whatever it holds
  no,         // every row is data
};

// An input refused, with a message naming the file (and the line and cell where there is one).
class CsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Without leading and trailing blanks (and a trailing carriage return).
std::string_view trim(std::string_view s);
// A number as the CSV writes it: what from_chars reads (a leading '+' too), the whole cell. Infinities
// and NaN count as numbers here, so the header rule never takes them for names; a row refuses them.
std::optional<double> number(std::string_view cell);

// Rows of finite numbers, all of one length (the header's, when there is one).
class CsvReader {
 public:
  // A directory or an unreadable file is a CsvError naming it.
  CsvReader(const std::string& path, HeaderRule rule);

  // The next row; nullopt at the end of the file. A malformed row is a CsvError naming its line and cell.
  std::optional<std::vector<double>> next();
  std::size_t line() const { return line_; }
  // The line of the header row; 0 when the file has none.
  std::size_t header_line() const { return header_line_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::string& name() const { return name_; }

 private:
  bool read_line(std::string& line);
  std::string where(std::size_t cell) const;
  std::vector<std::string> split(const std::string& line) const;
  bool is_header(const std::vector<std::string>& cells) const;
  std::vector<double> numbers(const std::vector<std::string>& cells);

  std::ifstream in_;
  std::string name_;
  HeaderRule rule_;
  bool first_row_ = true;
  std::size_t line_ = 0, header_line_ = 0, columns_ = 0;
  std::vector<std::string> header_;
};

}  // namespace tessera::cli
