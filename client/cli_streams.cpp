#include "cli_streams.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <atomic>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <tessera/tessera.hpp>
#include <thread>

#include "cli_interrupt.hpp"
#include "cli_options.hpp"
#include "graph/file_digest.hpp"
#include "storage/result_query.hpp"

namespace tessera::cli {
namespace {

// The index of --priority-column's column in the header.
std::size_t priority_index(const CsvReader& reader, const std::string& column) {
  if (!reader.header_line())
    throw CsvError("--priority-column " + excerpt(column) + ": " + reader.name() +
                   " has no header row naming its columns");
  const auto& header = reader.header();
  for (std::size_t c = 0; c < header.size(); ++c)
    if (header[c] == column) {
      if (header.size() == 1)
        throw CsvError("--priority-column " + excerpt(column) + ": it is the only column of " +
                       reader.name() + ", which leaves no parameters");
      return c;
    }
  std::string names;
  for (const auto& h : header) names += (names.empty() ? "" : ", ") + excerpt(h, 64);
  throw CsvError("--priority-column " + excerpt(column) + ": no such column in the header of " +
                 reader.name() + " (its columns: " + names + ")");
}

// The query's text answer. A summary of a stream the node does not know names no simulation ("?"):
// that is an error too, as the other formats' answer already is.
std::string query_text(const ResultQuery& query, std::uint64_t stream, std::string_view format,
                       std::string_view field = "result", std::size_t bins = 10) {
  std::ostringstream text;
  query.to_text(text, format, field, bins);
  if (format == "summary") {
    const auto summary = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (summary.is_object() && summary.value("simulation", std::string()) == "?" &&
        summary.value("count", std::uint64_t{1}) == 0)
      throw std::runtime_error("no stream " + std::to_string(stream) + " in this node's store");
  }
  return text.str();
}

// Writes the answer to `path`, or to standard output without one. The answer is complete before the
// file is opened, so a query the node refuses leaves no file behind.
void write_text(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

tessera::Client connect(const Target& target) {
  return tessera::Client(target.scheduler, target.connect);
}

std::vector<IdRange> parse_id_ranges(std::string_view text) {
  std::vector<IdRange> ranges;
  const auto id = [&](std::string_view part, std::string_view whole) {
    part = trim(part);
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() ||
        value == std::numeric_limits<std::uint64_t>::max())
      throw std::invalid_argument("--ids: '" + excerpt(whole) +
                                  "' is not an id or a range FIRST-LAST of ids");
    return value;
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto part = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const auto dash = part.find('-');
    const std::uint64_t first = id(part.substr(0, dash), part);
    const std::uint64_t last = dash == std::string_view::npos ? first : id(part.substr(dash + 1), part);
    if (last < first) throw std::invalid_argument("--ids: '" + excerpt(part) + "' ends before it begins");
    ranges.push_back(IdRange{first, last + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ranges;
}

int stream_cancel(const Target& target, const CancelOptions& options) {
  if (options.whole) {
    auto client = connect(target);
    CancelledSets cancelled;
    try {
      cancelled = client.cancel_stream(options.stream);
    } catch (const std::invalid_argument& e) {
      std::cerr << "tessera: " << bounded_message(e.what()) << "\n";
      return 1;
    }
    std::cout << "stream " << options.stream << ": cancelled, with " << cancelled.queued << " queued and "
              << cancelled.running << " running parameter sets; a client still pushing it is stopped"
              << std::endl;
    return 0;
  }
  if (options.ids.empty() && options.where.empty()) {
    std::cerr << "tessera: stream cancel needs --ids or --where with something in it (which sets to cancel), "
                 "or neither to cancel the whole stream\n";
    return 2;
  }
  std::vector<IdRange> ranges;
  if (!options.ids.empty()) {
    try {
      ranges = parse_id_ranges(options.ids);
    } catch (const std::invalid_argument& e) {
      std::cerr << "tessera: " << e.what() << "\n";
      return 2;
    }
  }
  try {  // checked here first, so a malformed filter is a usage error (2), not the node's refusal (1)
    if (options.ids.empty() && !ResultFilter::check_syntax(options.where).has_clauses()) {
      std::cerr << "tessera: --where '" << excerpt(options.where)
                << "' has no clause on id or parameters, so it would cancel every set; give one (e.g. "
                   "--where 'id >= 0' to cancel them all)\n";
      return 2;
    }
  } catch (const QueryError& e) {
    std::cerr << "tessera: --where: " << bounded_message(e.what()) << "\n";
    return 2;
  }
  auto client = connect(target);
  CancelledSets cancelled;
  try {
    cancelled = options.ids.empty() ? client.cancel_sets_where(options.stream, options.where)
                                    : client.cancel_sets(options.stream, std::move(ranges));
  } catch (const std::invalid_argument& e) {
    std::cerr << "tessera: " << bounded_message(e.what()) << "\n";
    return 1;
  }
  std::cout << "stream " << options.stream << ": cancelled " << cancelled.queued << " queued and "
            << cancelled.running << " running parameter sets" << std::endl;
  return 0;
}

namespace {

// Writes the stream's stored results to `output` as CSV (nothing when it is empty); false, having said
// why, when it could not (the caller still says what the run itself ran into).
bool write_results(Client& client, std::uint64_t stream, const std::string& output) {
  if (output.empty()) return true;
  try {
    write_text(query_text(client.results(stream), stream, "csv"), output);
    std::cout << "results written to " << output << std::endl;
    return true;
  } catch (const std::exception& e) {
    std::cerr << "tessera: the results of stream " << stream << " were not written to " << output << ": "
              << bounded_message(e.what()) << "\n";
    return false;
  }
}

}  // namespace

namespace {

// The file's digest as a stream's input records it: a resume must be given the same bytes.
std::string file_digest_text(const std::string& path) {
  const auto digest = file_digest(path);
  if (!digest) throw CsvError(path + ": cannot be read");
  return "fnv1a64:" + digest->hex() + ":" + std::to_string(digest->bytes);
}

// A word the shell reads as itself: quoted when it holds anything but letters, digits and -_./:=@,+%.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./:=@,+%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command that pushes the rest of an interrupted stream: the same file, read the same way.
std::string resume_command(const Target& target, const PushOptions& options, std::uint64_t stream) {
  std::string command = "tessera --scheduler " + shell_word(target.scheduler) + " stream push --resume " +
                        std::to_string(stream) + " --input " + shell_word(options.input);
  if (options.header != HeaderRule::automatic)
    command += std::string(" --header ") + (options.header == HeaderRule::yes ? "yes" : "no");
  if (!options.priority_column.empty())
    command += " --priority-column " + shell_word(options.priority_column);
  return command;
}

}  // namespace

int stream_push(const Target& target, const PushOptions& options) {
  const std::string& input = options.input;
  Config simulation_config;
  try {
    simulation_config = parse_config_entries(options.simulation_config, "--simulation-config");
  } catch (const std::invalid_argument& e) {
    std::cerr << "tessera: " << bounded_message(e.what()) << "; nothing was pushed\n";
    return 2;
  }
  if (options.resume && options.no_check) {
    std::cerr << "tessera: --resume checks that " << input
              << " is the stream's input, which --no-check skips: give one of them\n";
    return 2;
  }
  // The file is checked (whole, unless --no-check), and its first parameter set read, before anything is
  // opened on the node: a bad file leaves no partial stream.
  std::optional<CsvReader> reader;
  std::optional<std::vector<double>> row;
  std::optional<std::size_t> priority_column;
  std::vector<std::string> names;  // the header's, without the priority column
  StreamInput checked;
  try {
    const auto open_input = [&] {
      reader.emplace(input, options.header);
      row = reader->next();
    };
    open_input();
    if (!row && reader->header_line())
      throw CsvError(reader->name() + ": only a header (line " + std::to_string(reader->header_line()) +
                     "), no parameter sets");
    if (!row) throw CsvError(reader->name() + ": no parameter sets (the file is empty)");
    if (!options.priority_column.empty()) priority_column = priority_index(*reader, options.priority_column);
    names = reader->header();
    if (priority_column) names.erase(names.begin() + static_cast<std::ptrdiff_t>(*priority_column));
    for (std::size_t c = 0; c < names.size(); ++c)
      if (names[c].size() > StreamOptions::kMaxParameterNameBytes)
        throw CsvError(reader->name() + ":" + std::to_string(reader->header_line()) + ": cell " +
                       std::to_string(c + 1) + " of the header is " + std::to_string(names[c].size()) +
                       " bytes, over the limit of " + std::to_string(StreamOptions::kMaxParameterNameBytes) +
                       " for a parameter's name");
    if (names.size() > StreamOptions::kMaxParameterNames)
      throw CsvError(reader->name() + ": " + std::to_string(names.size()) + " columns, over the limit of " +
                     std::to_string(StreamOptions::kMaxParameterNames));
    if (!options.no_check) {
      checked.sets = 1;
      while (reader->next()) checked.sets += 1;
      checked.name = input;
      checked.digest = file_digest_text(input);
      open_input();  // from the top again, for the push
    }
  } catch (const CsvError& e) {
    std::cerr << "tessera: " << e.what() << "; nothing was pushed\n";
    return 2;
  }
  auto client = connect(target);
  tessera::StreamOptions stream_options;
  stream_options.max_in_flight = options.max_in_flight;
  stream_options.input = checked;
  std::optional<Stream> opened;
  if (options.resume) {
    if (!options.simulation.empty()) {
      for (const auto& listed : client.streams())
        if (listed.id == options.resume && listed.simulation != options.simulation) {
          std::cerr << "tessera: stream " << options.resume << " runs simulation '"
                    << printable(listed.simulation, 200) << "', not '" << printable(options.simulation, 200)
                    << "'; nothing was pushed\n";
          return 2;
        }
    }
    try {
      opened.emplace(client.resume_stream(options.resume, std::move(stream_options)));
    } catch (const SubmissionError& e) {
      std::cerr << "tessera: " << bounded_message(e.what()) << "; nothing was pushed\n";
      return 1;
    }
  } else {
    stream_options.pool_size = options.pool_size.value_or(0);
    stream_options.isolation = options.isolation;
    stream_options.timeout = std::chrono::duration<double>(options.timeout_seconds);
    stream_options.retries = options.retries;
    stream_options.parameter_names = std::move(names);
    stream_options.config = std::move(simulation_config);
    opened.emplace(client.stream(options.simulation, std::move(stream_options)));
  }
  Stream& stream = *opened;
  // A resumed stream's first sets were accepted before: the rows they came from are skipped.
  const std::uint64_t first = stream.pushed();
  try {
    for (std::uint64_t skipped = 0; skipped < first && row; ++skipped) row = reader->next();
  } catch (const CsvError& e) {
    std::cerr << "tessera: " << e.what() << "; nothing was pushed\n";
    return 2;
  }
  if (options.resume)
    std::cerr << "tessera: stream " << stream.id() << ": " << grouped(first) << " of the "
              << grouped(checked.sets) << " rows of " << input << " were accepted before; pushing the other "
              << grouped(checked.sets - std::min(first, checked.sets)) << "\n";
  // This push's sets (a resumed stream's earlier ones are answered here too, and not counted).
  std::atomic<std::uint64_t> stored{0}, failed{0};
  stream.on_result([&](const StreamRecord& r) {
    if (r.id < first) return;
    stored += 1;
    if (r.failed) failed += 1;
  });
  watch_interrupts();
  const bool quiet = options.quiet;
  std::atomic<bool> pushing{true};
  // Watches for Ctrl-C (so that a push waiting for room stops too) and draws the progress: the rows of
  // this push stored, of the file's (or, unchecked, of those pushed so far).
  std::thread watcher([&] {
    const std::uint64_t rows = checked.sets > first ? checked.sets - first : 0;
    detail::ProgressBar progress(
        rows, ProgressOptions{.label = "stream " + std::to_string(stream.id()), .out = stderr});
    bool told = false;
    try {
      while (pushing || stored < stream.pushed() - first) {
        if (interrupt_signal() != 0) {
          if (!told) stream.interrupt();
          told = true;
          if (!pushing) break;
        }
        if (!quiet) {
          if (!rows) progress.set_total(stream.pushed() - first);
          const std::uint64_t bad = failed.load();
          progress.update(stored.load() - std::min(bad, stored.load()), bad, 0);
        }
        if (!pushing && stream.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(20))) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the watcher's period
      }
    } catch (const ConnectionLost&) {
      // The main thread says so.
    }
    // Its last line only for a push that ran its course: an interrupted one says what it leaves instead.
    if (!quiet && interrupt_signal() == 0) {
      const std::uint64_t bad = failed.load(), done = stored.load();
      if (!rows) progress.set_total(stream.pushed() - first);
      progress.update(done - std::min(bad, done), bad, 0);
      progress.finish();
    }
  });
  std::string problem, lost;
  bool interrupted = false;
  while (row) {
    if (interrupt_signal() != 0) {
      interrupted = true;
      break;
    }
    try {
      tessera::SetOptions set;
      if (priority_column) {
        set.priority = (*row)[*priority_column];
        row->erase(row->begin() + static_cast<std::ptrdiff_t>(*priority_column));
      }
      stream.push(*row, set);
    } catch (const StreamInterrupted&) {
      interrupted = true;
      break;
    } catch (const SubmissionError& e) {
      problem = reader->name() + ":" + std::to_string(reader->line()) + ": " + bounded_message(e.what());
      break;
    } catch (const ConnectionLost& e) {
      lost = e.what();
      break;
    }
    try {
      row = reader->next();
    } catch (const CsvError& e) {
      problem = e.what();
      break;
    }
  }
  try {
    stream.close();  // with what is buffered: every set pushed is sent
  } catch (const ConnectionLost& e) {
    if (lost.empty()) lost = e.what();
  }
  pushing = false;
  const std::uint64_t pushed = stream.pushed() - first;
  if (interrupted) {
    watcher.join();
    const int signal = interrupt_signal();
    if (!quiet && ::isatty(STDERR_FILENO) == 1) std::cerr << "\n";  // below the progress line
    std::cerr << "tessera: " << (signal == SIGTERM ? "terminated" : "interrupted") << ": stream "
              << stream.id() << ": pushed " << grouped(stream.pushed());
    if (checked.sets) std::cerr << " of the " << grouped(checked.sets) << " rows of " << input;
    std::cerr << " (" << grouped(stored.load())
              << " of this push's stored so far); what it accepted runs on and is stored on the node"
              << (checked.sets ? ", and the stream is shown as incomplete" : "") << "\n";
    // The same connection options (CURVE keys, a client config) as this command.
    const std::string same_keys =
        target.connect.public_key.empty() ? "" : " (with this command's key options)";
    if (checked.sets)
      std::cerr << "tessera: push the other "
                << grouped(checked.sets - std::min(checked.sets, stream.pushed())) << ": "
                << resume_command(target, options, stream.id()) << same_keys << "\n";
    std::cerr << "tessera: or stop what runs: tessera --scheduler " << shell_word(target.scheduler)
              << " stream cancel --stream " << stream.id() << same_keys << "\n";
    return 128 + (signal != 0 ? signal : SIGINT);
  }
  if (lost.empty()) {
    try {
      // Ctrl-C here leaves a stream that has all its input: it runs on, and its results are stored.
      while (!stream.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)))
        if (interrupt_signal() != 0) break;
    } catch (const ConnectionLost& e) {
      lost = e.what();
    }
  }
  pushing = false;
  watcher.join();
  // Every result the client was given is durable in the node's store: it is stored first, then sent.
  const std::uint64_t answered = stored.load();
  if (!lost.empty()) {
    std::cerr << "tessera: stream " << stream.id() << ": " << bounded_message(lost) << "\n"
              << "tessera: stream " << stream.id() << ": " << stream.accepted() << " of the "
              << stream.pushed()
              << " parameter sets pushed were accepted (they run, and are stored, on the node), " << answered
              << " results received\n";
    if (checked.sets && stream.pushed() < checked.sets)
      std::cerr << "tessera: push the rest once the node is back: "
                << resume_command(target, options, stream.id()) << "\n";
    return 1;
  }
  if (interrupt_signal() != 0) {
    std::cerr << "tessera: interrupted while waiting: stream " << stream.id() << " has all "
              << grouped(stream.pushed()) << " parameter sets, which run on and are stored; read them "
              << "with tessera --scheduler " << shell_word(target.scheduler) << " results --stream "
              << stream.id() << "\n";
    return 128 + interrupt_signal();
  }
  std::cout << "stream " << stream.id() << ": " << pushed << " parameter sets"
            << (first ? " (after the " + std::to_string(first) + " accepted before)" : std::string()) << ", "
            << answered << " results stored (" << failed.load() << " failed)" << std::endl;
  if (!stream.error().empty()) {
    std::cerr << "tessera: stream " << stream.id() << " failed: " << bounded_message(stream.error()) << "\n";
    if (checked.sets > stream.accepted())
      std::cerr << "tessera: stream " << stream.id() << ": pushing stopped: it accepted "
                << grouped(stream.accepted()) << " of the " << grouped(checked.sets) << " rows of " << input
                << "\n";
  }
  const bool missing = answered < pushed;
  if (missing && stream.error().empty())
    std::cerr << "tessera: stream " << stream.id() << ": " << pushed - answered << " of the " << pushed
              << " parameter sets pushed have no stored result\n";
  const bool written = write_results(client, stream.id(), options.output);
  if (!problem.empty() && stream.error().empty()) {
    std::cerr << "tessera: " << problem << "; the " << pushed
              << " parameter sets before it were pushed and their results kept\n";
    return 2;
  }
  return stream.error().empty() && !missing && written ? 0 : 1;
}

namespace {

// A whole number, a finite number, or nothing.
std::optional<double> number_in(std::string_view text, std::string_view flag, std::string_view entry) {
  if (text.empty()) return std::nullopt;
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  if (!std::isfinite(value) || errno == ERANGE)
    throw std::invalid_argument(std::string(flag) + " " + excerpt(std::string(entry)) +
                                ": the value is not a finite number");
  return value;
}

}  // namespace

Config parse_config_entries(const std::vector<std::string>& entries, std::string_view flag) {
  Config config;
  for (const auto& entry : entries) {
    const auto equals = entry.find('=');
    if (equals == std::string::npos || equals == 0)
      throw std::invalid_argument(std::string(flag) + " " + excerpt(entry) + ": expected KEY=VALUE");
    const std::string key = entry.substr(0, equals);
    const std::string_view value = std::string_view(entry).substr(equals + 1);
    if (config.has(key))
      throw std::invalid_argument(std::string(flag) + " " + excerpt(entry) + ": key " + excerpt(key) +
                                  " is given twice");
    if (value == "true" || value == "false") {
      config.set(key, to_value(value == "true"));
      continue;
    }
    if (value.find(',') != std::string_view::npos) {
      std::vector<double> numbers;
      bool all = true;
      for (std::size_t from = 0; all && from <= value.size();) {
        const auto comma = std::min(value.find(',', from), value.size());
        auto n = number_in(value.substr(from, comma - from), flag, entry);
        if (n) numbers.push_back(*n);
        all = n.has_value();
        from = comma + 1;
      }
      if (all) {
        config.set(key, to_value(numbers));
        continue;
      }
    }
    if (auto n = number_in(value, flag, entry)) {
      const bool whole = std::floor(*n) == *n && std::fabs(*n) < 9e15 &&
                         value.find_first_of(".eE") == std::string_view::npos;
      config.set(key, whole ? to_value(static_cast<std::int64_t>(*n)) : to_value(*n));
      continue;
    }
    config.set(key, to_value(std::string(value)));
  }
  return config;
}

int stream_run(const Target& target, const RunOptions& options) {
  EnsembleOptions ensemble;
  try {
    ensemble.config = parse_config_entries(options.config, "--config");
    ensemble.stream.config = parse_config_entries(options.simulation_config, "--simulation-config");
  } catch (const std::invalid_argument& e) {
    std::cerr << "tessera: " << bounded_message(e.what()) << "; nothing was run\n";
    return 2;
  }
  ensemble.budget = options.budget;
  ensemble.stream.pool_size = options.pool_size.value_or(0);
  ensemble.stream.isolation = options.isolation;
  ensemble.stream.timeout = std::chrono::duration<double>(options.timeout_seconds);
  ensemble.stream.retries = options.retries;
  auto client = connect(target);
  auto stream = client.ensemble(options.generator, options.simulation, std::move(ensemble));
  std::mutex best_mutex;
  std::optional<std::pair<double, std::uint64_t>> best;  // the least numeric result, and its set
  std::atomic<std::uint64_t> failed{0};
  stream.on_result([&](const StreamRecord& r) {
    if (r.failed) {
      failed += 1;
      return;
    }
    if (r.value.kind() != ValueKind::real && r.value.kind() != ValueKind::integer) return;
    const double value = r.value.kind() == ValueKind::real
                             ? from_value<double>(r.value)
                             : static_cast<double>(from_value<std::int64_t>(r.value));
    std::lock_guard lock(best_mutex);
    if (!best || value < best->first) best = std::make_pair(value, r.id);
  });
  for (auto next = std::chrono::steady_clock::now();
       !stream.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));) {
    if (!options.quiet && std::chrono::steady_clock::now() >= next) {
      std::cerr << "\rstream " << stream.id() << ": " << stream.accepted() << " proposed, "
                << stream.completed() << " stored" << std::flush;
      next += std::chrono::milliseconds(500);
    }
  }
  if (!options.quiet) std::cerr << "\n";
  const std::uint64_t proposed = stream.accepted(), answered = stream.completed();
  std::cout << "stream " << stream.id() << ": generator '" << options.generator << "' proposed " << proposed
            << " parameter sets, " << answered << " results stored (" << failed.load() << " failed)"
            << std::endl;
  if (best) {
    std::cout << std::setprecision(12) << "least result " << best->first << " at set " << best->second;
    if (auto stored = client.results(stream.id()).get(best->second))
      if (stored->parameters.kind() == ValueKind::doubles) {
        std::cout << ", parameters";
        const char* separator = " ";
        for (double x : stored->parameters.as_doubles()) {
          std::cout << separator << x;
          separator = ", ";
        }
      }
    std::cout << std::endl;
  }
  if (!stream.error().empty())
    std::cerr << "tessera: stream " << stream.id() << " failed: " << bounded_message(stream.error()) << "\n";
  const bool missing = answered < proposed;
  if (missing)
    std::cerr << "tessera: stream " << stream.id() << ": " << proposed - answered << " of the " << proposed
              << " parameter sets proposed have no stored result\n";
  const bool written = write_results(client, stream.id(), options.output);
  return stream.error().empty() && !missing && written ? 0 : 1;
}

int results(const Target& target, const ResultsOptions& options) {
  auto client = connect(target);
  auto query = client.results(options.stream);
  if (!options.where.empty()) query = query.where(options.where);
  write_text(query_text(query, options.stream, options.format, options.field, options.bins), options.output);
  return 0;
}

}  // namespace tessera::cli
