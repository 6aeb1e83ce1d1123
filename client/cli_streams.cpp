#include "cli_streams.hpp"

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <tessera/tessera.hpp>
#include <thread>

#include "cli_session.hpp"

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

// Asks the scheduler for a query's text answer.
std::string query(const std::string& scheduler, std::uint64_t stream, const std::string& filter,
                  const std::string& format, const std::string& field, std::uint32_t bins) {
  Session session(scheduler);
  transport::Outgoing request;
  auto q = request.envelope().initResultsQuery();
  q.setRequestId(1);
  q.setStreamId(stream);
  q.setFilter(filter);
  q.setFormat(format);
  q.setField(field);
  q.setBins(bins);
  auto answer = session.ask(request, "the results of a query", std::chrono::seconds(60));
  if (!answer.envelope().isResultsAnswer())
    throw std::runtime_error(scheduler + " did not answer the results query");
  auto a = answer.envelope().getResultsAnswer();
  if (a.getError().size()) throw std::runtime_error(std::string(a.getError()));
  return a.getText();
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
  tessera::Client client(scheduler);
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
  if (auto output = option(options, "output"); !output.empty()) {
    std::ofstream(output) << query(scheduler, stream.id(), "", "csv", "", 0);
    std::cout << "results written to " << output << std::endl;
  }
  if (!problem.empty()) {
    std::cerr << "tessera: " << problem << "; the " << stream.pushed()
              << " parameter sets before it were pushed and their results kept\n";
    return 2;
  }
  return stream.error().empty() ? 0 : 1;
}

int results(const std::string& scheduler, const Options& options) {
  const std::string stream = option(options, "stream");
  if (stream.empty()) {
    std::cerr << "tessera: results needs --stream ID\n";
    return 2;
  }
  const auto text = query(scheduler, std::stoull(stream), option(options, "where"),
                          option(options, "format", "summary"), option(options, "field", "result"),
                          static_cast<std::uint32_t>(std::stoul(option(options, "bins", "10"))));
  if (auto output = option(options, "output"); !output.empty()) {
    std::ofstream(output) << text;
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace tessera::cli
