#include "cli_streams.hpp"

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <tessera/tessera.hpp>
#include <thread>

namespace tessera::cli {
namespace {

std::string option(const Options& options, const std::string& name, const std::string& fallback = "") {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

std::optional<double> number(const std::string& cell) {
  double value = 0;
  auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (error != std::errc() || end != cell.data() + cell.size() || cell.empty()) return std::nullopt;
  return value;
}

// The CLI's connection: a client of the scheduler like any other, named so in the scheduler's log.
tessera::Client connect(const std::string& scheduler) {
  return tessera::Client(scheduler, tessera::ConnectOptions{.name = "tessera-cli"});
}

// Writes the query's text answer to `path`, or to standard output without one. The answer is complete
// before the file is opened, so a query the node refuses leaves no file behind.
void write_text(const ResultQuery& query, const std::string& path, std::string_view format,
                std::string_view field = "result", std::size_t bins = 10) {
  std::ostringstream text;
  query.to_text(text, format, field, bins);
  if (path.empty()) {
    std::cout << text.str();
    return;
  }
  std::ofstream out(path);
  out << text.str();
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int stream_push(const std::string& scheduler, const Options& options) {
  const std::string simulation = option(options, "simulation"), input = option(options, "input");
  if (simulation.empty() || input.empty()) {
    std::cerr << "tessera: stream push needs --simulation NAME and --input FILE.csv\n";
    return 2;
  }
  std::ifstream in(input);
  if (!in) {
    std::cerr << "tessera: cannot read " << input << "\n";
    return 2;
  }
  auto client = connect(scheduler);
  tessera::StreamOptions stream_options;
  stream_options.max_in_flight = std::stoull(option(options, "max-in-flight", "4096"));
  stream_options.pool_size = static_cast<std::uint32_t>(std::stoul(option(options, "pool-size", "0")));
  auto stream = client.stream(simulation, std::move(stream_options));
  std::atomic<std::uint64_t> stored{0}, failed{0};
  stream.on_result([&](const StreamRecord& r) {
    stored += 1;
    if (r.failed) failed += 1;
  });
  const bool quiet = options.count("quiet") > 0;
  std::atomic<bool> pushing{true};
  std::thread progress([&] {
    auto next = std::chrono::steady_clock::now();
    while (pushing || stored < stream.pushed()) {
      if (!quiet && std::chrono::steady_clock::now() >= next) {
        std::cerr << "\rstream " << stream.id() << ": pushed " << stream.pushed() << ", stored "
                  << stored.load() << std::flush;
        next += std::chrono::milliseconds(500);
      }
      if (!pushing && stream.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(20))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the progress line's refresh period
    }
  });
  std::string line, problem;
  std::size_t line_number = 0, columns = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (trim(line).empty()) continue;
    const auto cells = cells_of(line);
    std::vector<double> parameters;
    for (std::size_t c = 0; c < cells.size() && problem.empty(); ++c) {
      auto value = number(cells[c]);
      if (!value) {
        if (stream.pushed() == 0 && columns == 0) break;  // a header row
        problem = input + ":" + std::to_string(line_number) + ": cell " + std::to_string(c + 1) + " '" +
                  cells[c] + "' is not a number";
      } else {
        parameters.push_back(*value);
      }
    }
    if (!problem.empty()) break;
    if (parameters.size() != cells.size()) {
      columns = cells.size();  // the header says how many
      continue;
    }
    if (columns == 0) columns = parameters.size();
    if (parameters.size() != columns) {
      problem = input + ":" + std::to_string(line_number) + ": " + std::to_string(parameters.size()) +
                " values, the rows before have " + std::to_string(columns);
      break;
    }
    try {
      stream.push(parameters);
    } catch (const SubmissionError& e) {
      problem = input + ":" + std::to_string(line_number) + ": " + e.what();
      break;
    }
  }
  stream.close();
  pushing = false;
  progress.join();
  stream.wait();
  if (!quiet) std::cerr << "\n";
  std::cout << "stream " << stream.id() << ": " << stream.pushed() << " parameter sets, " << stored.load()
            << " results stored (" << failed.load() << " failed)" << std::endl;
  if (!stream.error().empty())
    std::cerr << "tessera: stream " << stream.id() << " failed: " << stream.error() << "\n";
  bool written = true;
  if (auto output = option(options, "output"); !output.empty()) {
    try {
      write_text(client.results(stream.id()), output, "csv");
      std::cout << "results written to " << output << std::endl;
    } catch (const std::exception& e) {  // still say below what the push itself ran into
      std::cerr << "tessera: the results of stream " << stream.id() << " were not written to " << output
                << ": " << e.what() << "\n";
      written = false;
    }
  }
  if (!problem.empty()) {
    std::cerr << "tessera: " << problem << "; the " << stream.pushed()
              << " parameter sets before it were pushed and their results kept\n";
    return 2;
  }
  return stream.error().empty() && written ? 0 : 1;
}

int results(const std::string& scheduler, const Options& options) {
  const std::string stream = option(options, "stream");
  if (stream.empty()) {
    std::cerr << "tessera: results needs --stream ID\n";
    return 2;
  }
  auto client = connect(scheduler);
  auto query = client.results(std::stoull(stream));
  if (auto filter = option(options, "where"); !filter.empty()) query = query.where(filter);
  write_text(query, option(options, "output"), option(options, "format", "summary"),
             option(options, "field", "result"), std::stoul(option(options, "bins", "10")));
  return 0;
}

}  // namespace tessera::cli
