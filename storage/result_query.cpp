#include "storage/result_query.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/printable.hpp"
#include "graph/program_spec.hpp"  // render_number: the shortest text that reads back the same
#include "storage/csv_cell.hpp"

namespace tessera {
namespace {

// What export shows for a value it does not spell out (bytes, matrices, custom types).
std::string opaque(const Value& v) {
  std::string out = "(";
  out.append(kind_name(v.kind()));
  out += ')';
  return out;
}

std::optional<double> number_of(const Value& v) {
  switch (v.kind()) {
    case ValueKind::integer:
    case ValueKind::real:
      return v.as_double();
    case ValueKind::boolean:
      return v.as_bool() ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

std::optional<double> element(const Value& v, std::size_t i) {
  switch (v.kind()) {
    case ValueKind::doubles:
      return i < v.as_doubles().size() ? std::optional(v.as_doubles()[i]) : std::nullopt;
    case ValueKind::vector:
      return i < static_cast<std::size_t>(v.as_vector().size())
                 ? std::optional(v.as_vector()[static_cast<Eigen::Index>(i)])
                 : std::nullopt;
    case ValueKind::list:
      return i < v.as_list().size() ? number_of(v.as_list()[i]) : std::nullopt;
    default:
      return i == 0 ? number_of(v) : std::nullopt;  // a one-output result kept as a scalar
  }
}

// A field named without an index reads one number. A value of several numbers has none to give: silently
// reading nothing would answer a filter or summary with 0, so the query fails naming what to ask instead.
std::optional<double> whole(const Value& v, const char* field, const std::string& hint, std::uint64_t id) {
  std::size_t n = 0;
  switch (v.kind()) {
    case ValueKind::doubles:
      n = v.as_doubles().size();
      break;
    case ValueKind::vector:
      n = static_cast<std::size_t>(v.as_vector().size());
      break;
    case ValueKind::list:
      n = v.as_list().size();
      break;
    default:
      return number_of(v);
  }
  if (n == 0) return std::nullopt;
  if (n == 1) return element(v, 0);
  throw QueryError("'" + std::string(field) + "' of set " + std::to_string(id) + " holds " +
                   std::to_string(n) + " numbers, not one: name one of them, as " + field + "[0]" + hint);
}

// The cells of a value, flattened for CSV: numbers as numbers, text as text.
void flatten(const Value& v, std::vector<std::string>& cells) {
  switch (v.kind()) {
    case ValueKind::none:
      cells.emplace_back();
      return;
    case ValueKind::integer:
      cells.push_back(std::to_string(v.as_int()));
      return;
    case ValueKind::real:
      cells.push_back(render_number(v.as_double()));
      return;
    case ValueKind::boolean:
      cells.push_back(v.as_bool() ? "true" : "false");
      return;
    case ValueKind::string:
      cells.push_back(csv_cell(v.as_string(), true));
      return;
    case ValueKind::doubles:
      for (double x : v.as_doubles()) cells.push_back(render_number(x));
      return;
    case ValueKind::vector:
      for (Eigen::Index i = 0; i < v.as_vector().size(); ++i)
        cells.push_back(render_number(v.as_vector()[i]));
      return;
    case ValueKind::list:
      for (const auto& item : v.as_list()) flatten(item, cells);
      return;
    default:
      cells.push_back(opaque(v));
  }
}

using Json = nlohmann::ordered_json;  // keys in the order written: "id" or "stream" first

// A value as JSON: numbers, text, arrays; non-finite numbers are null, what JSON cannot spell "(kind)".
Json json_of(const Value& v) {
  const auto number = [](double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); };
  switch (v.kind()) {
    case ValueKind::none:
      return nullptr;
    case ValueKind::integer:
      return v.as_int();
    case ValueKind::real:
      return number(v.as_double());
    case ValueKind::boolean:
      return v.as_bool();
    case ValueKind::string:
      return v.as_string();
    case ValueKind::doubles: {
      Json out = Json::array();
      for (double x : v.as_doubles()) out.push_back(number(x));
      return out;
    }
    case ValueKind::vector: {
      Json out = Json::array();
      for (Eigen::Index i = 0; i < v.as_vector().size(); ++i) out.push_back(number(v.as_vector()[i]));
      return out;
    }
    case ValueKind::list: {
      Json out = Json::array();
      for (const auto& item : v.as_list()) out.push_back(json_of(item));
      return out;
    }
    default:
      return opaque(v);
  }
}

// A result's elements as an object of the stream's names for them, when it has as many names as elements
// (a program's outputs); as it is otherwise.
Json named(Json result, const std::vector<std::string>& names) {
  const Json cells = result.is_array() ? result : Json::array({result});
  if (names.empty() || cells.size() != names.size()) return result;
  Json object = Json::object();
  for (std::size_t i = 0; i < names.size(); ++i) object[names[i]] = cells[i];
  return object;
}

// One JSON line; bytes that are not UTF-8 (from a simulation's text) become U+FFFD, never raw.
std::string json_line(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// Scans the stream from `page.first`, writing each matching result's line, until the page's byte budget
// would be passed (at least one line is always written, so that paging advances).
template <class Line>
ExportProgress export_lines(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                            const ExportPage& page, std::ostream& out, Line line) {
  ExportProgress progress;
  std::size_t written = 0;
  store.scan(stream, page.first, ~std::uint64_t{0}, [&](const StreamResult& r) {
    if (!filter.matches(r)) return true;
    const std::string text = line(r);
    if (written > 0 && written + text.size() > page.max_bytes) {
      progress.more = true;
      progress.next_id = r.id;
      return false;
    }
    out << text;
    written += text.size();
    return true;
  });
  return progress;
}

// A time in seconds since the Unix epoch, to the microsecond.
std::string seconds_cell(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(6) << seconds;
  return out.str();
}

bool one_cell(const Value& v) {
  switch (v.kind()) {
    case ValueKind::doubles:
    case ValueKind::vector:
    case ValueKind::list:
      return false;
    default:
      return true;
  }
}

// The columns of a stream's CSV export: id; its parameters, named as its client named them (a pushed
// CSV's header) or "parameter" / "parameter_0", "parameter_1", ...; its result, "result" or "result_0",
// ...; then status (ok, or why it failed), error, node and the five times of its timeline. The widths come
// from the first stored sets (the first with a result, among the first kProbe): a later row of another width
// still has all its cells, under the names of the first. Each page of a paged export probes again, so pages
// of a stream that stores its first result between them can differ in width.
struct CsvColumns {
  std::size_t parameters = 0, results = 0;
  bool program = false;  // a program simulation's stream: an exit_status column last
  std::string header;
};

CsvColumns csv_columns(const ResultStore& store, std::uint64_t stream) {
  constexpr std::size_t kProbe = 4096;
  std::optional<Value> parameters, result;
  std::size_t seen = 0;
  store.scan(stream, 0, ~std::uint64_t{0}, [&](const StreamResult& r) {
    if (!parameters) parameters = r.parameters;
    if (!r.failed) result = r.value;
    return !result && ++seen < kProbe;
  });
  CsvColumns columns;
  std::vector<std::string> cells;
  std::vector<std::string> names{"id"};
  const auto info = store.stream(stream);
  if (parameters) {
    flatten(*parameters, cells);
    columns.parameters = cells.size();
    if (info && info->settings.parameter_names.size() == columns.parameters) {
      for (const auto& name : info->settings.parameter_names) names.push_back(csv_cell(name));
    } else if (columns.parameters == 1 && one_cell(*parameters)) {
      names.emplace_back("parameter");
    } else {
      for (std::size_t i = 0; i < columns.parameters; ++i) names.push_back("parameter_" + std::to_string(i));
    }
  }
  if (result) {
    cells.clear();
    flatten(*result, cells);
    columns.results = cells.size();
    if (info && info->result_names.size() == columns.results)
      for (const auto& name : info->result_names) names.push_back(csv_cell(name));
    else if (columns.results == 1 && one_cell(*result))
      names.emplace_back("result");
    else
      for (std::size_t i = 0; i < columns.results; ++i) names.push_back("result_" + std::to_string(i));
  }
  for (const char* tail :
       {"status", "error", "node", "pushed_at", "dispatched_at", "started_at", "finished_at", "stored_at"})
    names.emplace_back(tail);
  if (info && info->program) {
    columns.program = true;
    names.emplace_back("exit_status");
  }
  for (std::size_t i = 0; i < names.size(); ++i) (columns.header += i ? "," : "") += names[i];
  return columns;
}

class Parser {
 public:
  // With `names` null, any name is taken (a syntax check); otherwise a name must be one of them.
  Parser(std::string_view text, const FieldNames* names) : text_(text), names_(names) {}
  const FieldNames* names() const { return names_; }

  bool done() {
    skip();
    return at_ == text_.size();
  }
  bool word(std::string_view w) {
    skip();
    if (text_.substr(at_, w.size()) != w) return false;
    const std::size_t end = at_ + w.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      return false;
    at_ = end;
    return true;
  }
  bool symbol(std::string_view s) {
    skip();
    if (text_.substr(at_, s.size()) != s) return false;
    at_ += s.size();
    return true;
  }
  // A name: a letter or '_', then letters, digits, '_' and '.'; empty when none is here.
  std::string name() {
    skip();
    std::size_t end = at_;
    if (end < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_' || text_[end] == '.'))
        ++end;
    std::string found(text_.substr(at_, end - at_));
    at_ = end;
    return found;
  }
  double number() {
    skip();
    double value = 0;
    const char* begin = text_.data() + at_;
    auto [end, error] = std::from_chars(begin, text_.data() + text_.size(), value);
    if (error != std::errc()) fail("a number");
    at_ += static_cast<std::size_t>(end - begin);
    return value;
  }
  [[noreturn]] void fail(const std::string& expected) const { fail_at(at_, expected); }
  [[noreturn]] void fail_at(std::size_t at, const std::string& expected) const {
    throw QueryError("filter " + in_quotes(text_) + ": expected " + expected + " at position " +
                     std::to_string(at + 1));
  }
  std::size_t position() {
    skip();
    return at_;
  }

 private:
  void skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  std::string_view text_;
  const FieldNames* names_;
  std::size_t at_ = 0;
};

// The timeline fields' names, as filters and summaries spell them.
constexpr std::pair<const char*, ResultField::Time> kTimeFields[] = {
    {"queue_seconds", ResultField::Time::queue_seconds}, {"run_seconds", ResultField::Time::run_seconds},
    {"store_seconds", ResultField::Time::store_seconds}, {"pushed_at", ResultField::Time::pushed_at},
    {"dispatched_at", ResultField::Time::dispatched_at}, {"started_at", ResultField::Time::started_at},
    {"finished_at", ResultField::Time::finished_at},     {"stored_at", ResultField::Time::stored_at},
};

// " or one of its outputs ('a', 'b')", or nothing for a stream that names none.
std::string names_hint(const char* what, const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::string out = std::string(" or one of its ") + what + " (";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + ")";
}

ResultField parse_field(Parser& p) {
  ResultField field;
  if (const FieldNames* names = p.names()) {
    field.result_names_hint = names_hint("outputs", names->results);
    field.parameter_names_hint = names_hint("parameters", names->parameters);
  }
  if (p.word("id")) {
    field.id = true;
    return field;
  }
  for (const auto& [name, time] : kTimeFields)
    if (p.word(name)) {
      field.time = time;
      return field;
    }
  if (p.word("exit_status")) {
    field.process = ResultField::Process::exit_status;
    return field;
  }
  if (p.word("signal")) {
    field.process = ResultField::Process::signal;
    return field;
  }
  if (p.word("parameters")) {
    field.parameter = true;
  } else if (!p.word("result")) {
    std::string expected =
        "'result', 'parameters', 'id', a timeline field (queue_seconds, run_seconds, store_seconds, "
        "pushed_at, ...), 'exit_status', 'signal', ";
    const FieldNames* names = p.names();
    std::string known;
    if (names)
      for (const auto* list : {&names->results, &names->parameters})
        for (const auto& name : *list) (known += known.empty() ? "" : ", ") += "'" + name + "'";
    if (!known.empty()) expected += "one of this stream's names (" + known + "), ";
    const std::size_t at = p.position();
    const std::string name = p.name();
    if (name.empty()) p.fail(expected + "'failed' or 'ok'");
    if (!names) {
      field.index = 0;  // a syntax check: the store resolves the name
      return field;
    }
    // The stream's outputs first, then its parameters.
    for (std::size_t i = 0; i < names->results.size(); ++i)
      if (names->results[i] == name) {
        field.index = i;
        return field;
      }
    for (std::size_t i = 0; i < names->parameters.size(); ++i)
      if (names->parameters[i] == name) {
        field.parameter = true;
        field.index = i;
        return field;
      }
    p.fail_at(at, expected + "'failed' or 'ok', not " + in_quotes(name) + ",");
  }
  if (p.symbol("[")) {
    const double index = p.number();
    if (!(index >= 0 && index < 1e9) || index != std::floor(index)) p.fail("a whole index below 1e9");
    field.index = static_cast<std::size_t>(index);
    if (!p.symbol("]")) p.fail("']'");
  }
  return field;
}

}  // namespace

namespace {

// A time of the timeline, or a span between two (nullopt when either is unknown).
std::optional<double> read_time(const SetTimeline& t, ResultField::Time time) {
  using Time = ResultField::Time;
  const auto known = [](double x) { return x > 0 ? std::optional(x) : std::nullopt; };
  const auto span = [](double from, double to) {
    return from > 0 && to > 0 ? std::optional(to - from) : std::nullopt;
  };
  switch (time) {
    case Time::queue_seconds:
      return span(t.pushed, t.started);
    case Time::run_seconds:
      return span(t.started, t.finished);
    case Time::store_seconds:
      return span(t.finished, t.stored);
    case Time::pushed_at:
      return known(t.pushed);
    case Time::dispatched_at:
      return known(t.dispatched);
    case Time::started_at:
      return known(t.started);
    case Time::finished_at:
      return known(t.finished);
    case Time::stored_at:
      return known(t.stored);
    case Time::none:
      break;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> ResultField::read(const StreamResult& r) const {
  if (time != Time::none) return read_time(r.timeline, time);
  if (process != Process::none) {
    if (!r.program) return std::nullopt;
    if (process == Process::signal) return static_cast<double>(r.program->signal);
    return r.program->signal == 0 ? std::optional(static_cast<double>(r.program->exit_status)) : std::nullopt;
  }
  if (id || parameter) return read_set(r.id, r.parameters);
  if (r.failed) return std::nullopt;
  return index ? element(r.value, *index) : whole(r.value, "result", result_names_hint, r.id);
}

std::optional<double> ResultField::read_set(std::uint64_t set_id, const Value& parameters) const {
  if (id) return static_cast<double>(set_id);
  if (!parameter) return std::nullopt;
  return index ? element(parameters, *index) : whole(parameters, "parameters", parameter_names_hint, set_id);
}

FieldNames field_names(const ResultStore& store, std::uint64_t stream) {
  FieldNames names;
  if (auto info = store.stream(stream)) {
    names.parameters = std::move(info->settings.parameter_names);
    names.results = std::move(info->result_names);
  }
  return names;
}

ResultField ResultField::parse(std::string_view text, const FieldNames& names) {
  Parser p(text, &names);
  auto field = parse_field(p);
  if (!p.done()) p.fail("the end of the field");
  return field;
}

void ResultField::check_syntax(std::string_view text) {
  Parser p(text, nullptr);
  (void)parse_field(p);
  if (!p.done()) p.fail("the end of the field");
}

ResultFilter ResultFilter::check_syntax(std::string_view text) {
  return parse_with(text, nullptr);
}

ResultFilter ResultFilter::parse(std::string_view text, const FieldNames& names) {
  return parse_with(text, &names);
}

ResultFilter ResultFilter::parse_with(std::string_view text, const FieldNames* names) {
  ResultFilter filter;
  Parser p(text, names);
  if (p.done()) return filter;
  do {
    if (p.word("failed")) {
      filter.failed_ = true;
      continue;
    }
    if (p.word("ok")) {
      filter.failed_ = false;
      continue;
    }
    Clause clause;
    clause.field = parse_field(p);
    if (p.symbol("<=")) {
      clause.op = Op::less_equal;
    } else if (p.symbol(">=")) {
      clause.op = Op::greater_equal;
    } else if (p.symbol("==")) {
      clause.op = Op::equal;
    } else if (p.symbol("!=")) {
      clause.op = Op::not_equal;
    } else if (p.symbol("<")) {
      clause.op = Op::less;
    } else if (p.symbol(">")) {
      clause.op = Op::greater;
    } else {
      p.fail("one of < <= > >= == !=");
    }
    clause.number = p.number();
    filter.clauses_.push_back(clause);
  } while (p.word("and"));
  if (!p.done()) p.fail("'and' or the end of the filter");
  return filter;
}

bool ResultFilter::matches(const StreamResult& r) const {
  if (failed_ && *failed_ != r.failed) return false;
  return holds([&r](const ResultField& field) { return field.read(r); });
}

bool ResultFilter::matches_set(std::uint64_t id, const Value& parameters) const {
  if (failed_ && *failed_) return false;
  return holds([&](const ResultField& field) { return field.read_set(id, parameters); });
}

template <class Read>
bool ResultFilter::holds(Read read) const {
  for (const auto& c : clauses_) {
    const auto x = read(c.field);
    if (!x) return false;
    switch (c.op) {
      case Op::less:
        if (!(*x < c.number)) return false;
        break;
      case Op::less_equal:
        if (!(*x <= c.number)) return false;
        break;
      case Op::greater:
        if (!(*x > c.number)) return false;
        break;
      case Op::greater_equal:
        if (!(*x >= c.number)) return false;
        break;
      case Op::equal:
        if (!(*x == c.number)) return false;
        break;
      case Op::not_equal:
        if (!(*x != c.number)) return false;
        break;
    }
  }
  return true;
}

ResultSummary summarize(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                        const ResultField& field, std::size_t bins) {
  ResultSummary s;
  std::vector<double> numbers;
  double sum = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  store.scan(stream, 0, ~std::uint64_t{0}, [&](const StreamResult& r) {
    if (!filter.matches(r)) return true;
    ++s.count;
    if (r.failed) ++s.failed;
    if (auto x = field.read(r)) {
      numbers.push_back(*x);
      sum += *x;
      s.min = std::min(s.min, *x);
      s.max = std::max(s.max, *x);
    }
    return true;
  });
  s.numeric = numbers.size();
  if (numbers.empty()) {
    s.min = s.max = 0;
    return s;
  }
  s.mean = sum / static_cast<double>(numbers.size());
  if (bins > 0) {
    s.histogram.assign(bins, 0);
    const double width = (s.max - s.min) / static_cast<double>(bins);
    for (double x : numbers) {
      auto bin = width > 0 ? static_cast<std::size_t>((x - s.min) / width) : 0;
      s.histogram[std::min(bin, bins - 1)] += 1;
    }
  }
  return s;
}

std::uint64_t count_matching(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter) {
  ResultField id;
  id.id = true;
  return summarize(store, stream, filter, id, 0).count;
}

ExportProgress export_csv(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                          std::ostream& out, const ExportPage& page) {
  const CsvColumns columns = csv_columns(store, stream);
  if (page.first == 0) out << columns.header << "\n";
  return export_lines(store, stream, filter, page, out, [&columns](const StreamResult& r) {
    std::vector<std::string> cells{std::to_string(r.id)};
    flatten(r.parameters, cells);
    cells.resize(std::max(cells.size(), 1 + columns.parameters));
    const std::size_t results_from = cells.size();
    if (!r.failed) flatten(r.value, cells);
    cells.resize(std::max(cells.size(), results_from + columns.results));
    cells.emplace_back(failure_name(r.failure));
    cells.push_back(r.failed ? csv_cell(r.error) : std::string());
    cells.push_back(csv_cell(r.node));  // who ran it, whatever came of it
    const auto& t = r.timeline;
    for (double stamp : {t.pushed, t.dispatched, t.started, t.finished, t.stored})
      cells.push_back(stamp > 0 ? seconds_cell(stamp) : std::string());
    if (columns.program)
      cells.push_back(r.program && r.program->signal == 0 ? std::to_string(r.program->exit_status)
                                                          : std::string());
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) (line += i ? "," : "") += cells[i];
    return line + "\n";
  });
}

ExportProgress export_json(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                           std::ostream& out, const ExportPage& page) {
  const FieldNames names = field_names(store, stream);
  return export_lines(store, stream, filter, page, out, [&names](const StreamResult& r) {
    Json line{{"id", r.id}, {"parameters", json_of(r.parameters)}};
    if (r.failed) {
      line["error"] = r.error;
      line["node"] = r.node;
      line["failure"] = failure_name(r.failure);
    } else {
      line["result"] = named(json_of(r.value), names.results);
      if (!r.node.empty()) line["node"] = r.node;  // who ran it: every set says
    }
    if (r.program) {
      if (r.program->signal == 0)
        line["exit_status"] = r.program->exit_status;
      else
        line["signal"] = r.program->signal;
      line["stdout"] = r.program->stdout_tail;
      line["stderr"] = r.program->stderr_tail;
    }
    if (!r.attempts.empty()) line["attempts"] = r.attempts;
    if (r.timeline != SetTimeline{}) {
      const auto& t = r.timeline;
      Json times;
      const auto add = [&](const char* name, double stamp) {
        if (stamp > 0) times[name] = stamp;
      };
      add("pushed", t.pushed);
      add("dispatched", t.dispatched);
      add("started", t.started);
      add("finished", t.finished);
      add("stored", t.stored);
      line["timeline"] = times;
    }
    return json_line(line);
  });
}

void export_names_json(const ResultStore& store, std::uint64_t stream, std::ostream& out) {
  const auto names = field_names(store, stream);
  out << json_line(
      Json{{"stream", stream}, {"parameter_names", names.parameters}, {"result_names", names.results}});
}

void export_summary_json(const ResultStore& store, std::uint64_t stream, std::string_view field,
                         const ResultSummary& s, std::ostream& out) {
  auto info = store.stream(stream).value_or(StreamInfo{.id = stream});
  if (info.settings.simulation.empty()) info.settings.simulation = "?";
  const auto number = [](double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); };
  out << json_line(Json{{"stream", stream},
                        {"simulation", info.settings.simulation},
                        {"closed", info.closed},
                        {"state", stream_state(info.closed, info.close_requested, !info.ended_early.empty())},
                        {"accepted", info.pushed},
                        {"input_sets", info.settings.input.sets},
                        {"ended_early", info.ended_early},
                        {"count", s.count},
                        {"failed", s.failed},
                        {"field", std::string(field)},
                        {"numeric", s.numeric},
                        {"mean", number(s.mean)},
                        {"min", number(s.min)},
                        {"max", number(s.max)},
                        {"histogram", s.histogram},
                        {"bin_edges", s.bin_edges()},
                        {"parameter_names", info.settings.parameter_names},
                        {"result_names", info.result_names}});
}

void export_timeline_json(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                          std::ostream& out) {
  constexpr ResultField::Time kSpans[] = {ResultField::Time::queue_seconds, ResultField::Time::run_seconds,
                                          ResultField::Time::store_seconds};
  std::vector<double> spans[3];
  std::uint64_t count = 0;
  double first_pushed = 0, last_stored = 0;
  store.scan(stream, 0, ~std::uint64_t{0}, [&](const StreamResult& r) {
    if (!filter.matches(r)) return true;
    ++count;
    for (std::size_t k = 0; k < 3; ++k)
      if (auto x = read_time(r.timeline, kSpans[k])) spans[k].push_back(*x);
    if (r.timeline.pushed > 0 && (first_pushed == 0 || r.timeline.pushed < first_pushed))
      first_pushed = r.timeline.pushed;
    last_stored = std::max(last_stored, r.timeline.stored);
    return true;
  });
  // Percentiles by rank (nearest rank), of each span that has any.
  const auto described = [](std::vector<double>& xs) {
    Json d{{"count", xs.size()}};
    if (xs.empty()) return d;
    std::sort(xs.begin(), xs.end());
    const auto at = [&](double q) {
      return xs[std::min(xs.size() - 1, static_cast<std::size_t>(std::ceil(q * double(xs.size()))) - 1)];
    };
    double sum = 0;
    for (double x : xs) sum += x;
    d["mean"] = sum / double(xs.size());
    d["p50"] = at(0.5);
    d["p90"] = at(0.9);
    d["p99"] = at(0.99);
    d["max"] = xs.back();
    d["total"] = sum;
    return d;
  };
  Json line{{"stream", stream}, {"count", count}};
  if (first_pushed > 0 && last_stored > first_pushed) line["span_seconds"] = last_stored - first_pushed;
  line["queue_seconds"] = described(spans[0]);
  line["run_seconds"] = described(spans[1]);
  line["store_seconds"] = described(spans[2]);
  out << json_line(line);
}

}  // namespace tessera

#include "storage/result_source.hpp"

namespace tessera {

std::vector<StreamListing> list_streams(const ResultStore& store) {
  std::vector<StreamListing> out;
  for (const auto& info : store.streams())
    out.push_back(StreamListing{info.id, info.settings.simulation, info.closed, info.close_requested,
                                info.pushed, store.count(info.id), info.settings.input.sets,
                                info.ended_early});
  return out;
}

void drop_finished_stream(ResultStore& store, std::uint64_t stream) {
  const auto info = store.stream(stream);
  if (!info) throw QueryError("no stream " + std::to_string(stream) + " in this node's store");
  if (!info->closed)
    throw QueryError("stream " + std::to_string(stream) + " has not finished (" +
                     std::to_string(store.count(stream)) + " of " + std::to_string(info->pushed) +
                     " results stored" + (info->close_requested ? "" : ", still open for pushes") +
                     "): cancel its sets (tessera stream cancel) or let it finish, then drop it");
  if (!store.drop_stream(stream))
    throw QueryError("no stream " + std::to_string(stream) + " in this node's store");
}

std::string LocalResultSource::text(std::uint64_t stream, const std::string& filter,
                                    const std::string& format, const std::string& field, std::size_t bins) {
  std::ostringstream out;
  const bool needs_names = !filter.empty() || format == "summary";
  const auto names = needs_names ? field_names(*store_, stream) : FieldNames{};
  const auto parsed = ResultFilter::parse(filter, names);
  if (format == "csv") {
    export_csv(*store_, stream, parsed, out);
  } else if (format == "json") {
    export_json(*store_, stream, parsed, out);
  } else if (format == "count") {
    out << count_matching(*store_, stream, parsed) << "\n";
  } else if (format == "summary") {
    export_summary_json(*store_, stream, field,
                        summarize(*store_, stream, parsed, ResultField::parse(field, names), bins), out);
  } else if (format == "timeline") {
    export_timeline_json(*store_, stream, parsed, out);
  } else if (format == "names") {
    export_names_json(*store_, stream, out);
  } else {
    throw QueryError("unknown format " + in_quotes(format) +
                     " (summary, count, csv, json, timeline or names)");
  }
  return out.str();
}

}  // namespace tessera
