// Simulations that are programs: declarations and their checks, placeholders, results read from output
// and files, process trees that end whole, and programs streamed on a LocalCluster, across real worker
// processes (the declaration travels with the stream's setup) and as a real MPI job under mpirun.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tessera/tessera.hpp>
#include <thread>

#include "graph/program_spec.hpp"
#include "nodes/node_config.hpp"
#include "programs/program_process.hpp"
#include "programs/program_result.hpp"
#include "support/node_process.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::Failure;
using tessera::ProgramResultFormat;
using tessera::ProgramSpec;
using tessera::StreamRecord;
using tessera::programs::processes_with_token;
using tessera::testing::eventually;

// A directory of this test's, removed at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> made{0};
    path_ = fs::temp_directory_path() /
            ("tessera-program-test-" + std::to_string(getpid()) + "-" + std::to_string(made++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// A marker no other process has: what a test counts processes by (they inherit it in their environment).
std::string unique_marker() {
  static std::atomic<int> made{0};
  return "TESSERA_TEST_MARKER=" + std::to_string(getpid()) + "-" + std::to_string(made++);
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  return joined(problems).find(text) != std::string::npos;
}

std::map<std::uint64_t, StreamRecord> collect(tessera::Stream& stream) {
  std::map<std::uint64_t, StreamRecord> records;
  for (const auto& r : stream.results())
    EXPECT_TRUE(records.emplace(r.id, r).second) << "id " << r.id << " twice";
  return records;
}

// ---- declarations -------------------------------------------------------------------------------------

ProgramSpec valid_spec() {
  ProgramSpec spec;
  spec.command = {"prog", "--alpha", "{alpha}", "--dir", "{dir}", "--steps", "{config.steps}"};
  spec.parameters = {"alpha", "source"};
  return spec;
}

TEST(ProgramSpec, AValidDeclarationHasNoProblems) {
  EXPECT_TRUE(tessera::check_program_spec(valid_spec()).empty())
      << joined(tessera::check_program_spec(valid_spec()));
}

TEST(ProgramSpec, EveryBadFieldIsNamed) {
  auto spec = valid_spec();
  spec.command.push_back("{nope}");
  spec.command.push_back("{alpha");
  spec.parameters.push_back("alpha");
  spec.env["A=B"] = "1";
  spec.result.format = ProgramResultFormat::regex;
  spec.result.regex = "final (";
  spec.ranks = 0;
  spec.threads = 1000000000;
  spec.timeout_seconds = std::nan("");
  spec.launcher = "qsub";
  spec.files["../escape"] = "x";
  const auto problems = tessera::check_program_spec(spec);
  EXPECT_TRUE(mentions(problems, "command[7]: unknown placeholder {nope}")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "command[8]: unterminated placeholder")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "parameters[2]: parameter 'alpha' is named twice")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "env.A=B: an environment variable's name")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "result.regex: 'final (' does not compile")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "ranks: must be in [1, 4096], got 0")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "threads: must be in [1, 4096], got 1000000000")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "timeout: must be a number of seconds")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "launcher: 'qsub' is not one of")) << joined(problems);
  EXPECT_TRUE(mentions(problems, "files.../escape: a file name")) << joined(problems);
  // The program to run is the declaration's: no placeholder may choose it.
  auto chosen = valid_spec();
  chosen.command[0] = "{config.solver}";
  EXPECT_TRUE(mentions(tessera::check_program_spec(chosen),
                       "command[0]: the program to run is named in the declaration, not by a placeholder"))
      << joined(tessera::check_program_spec(chosen));
}

TEST(ProgramSpec, NumbersRenderShortestAndReadBackExactly) {
  for (double x : {0.1, 3.0, -2.5e-300, 1e300, 1.0 / 3.0, 123456789.123456789}) {
    const std::string text = tessera::render_number(x);
    EXPECT_EQ(std::stod(text), x) << text;
  }
  EXPECT_EQ(tessera::render_number(0.1), "0.1");
  EXPECT_EQ(tessera::render_number(3.0), "3");
  tessera::Config config;
  config.set("steps", tessera::Value(std::int64_t{40}));
  const auto spec = valid_spec();
  const std::vector<double> parameters{0.25, 7};
  tessera::PlaceholderValues values{&spec, &parameters, 12, 3, "/runs/3/12", &config};
  EXPECT_EQ(tessera::render_template(
                "a={alpha} s={source} id={id} st={stream} d={dir} n={config.steps} {{x}}", values),
            "a=0.25 s=7 id=12 st=3 d=/runs/3/12 n=40 {x}");
  // A config string is one line of text: a newline would start another command in an input file.
  tessera::Config injected;
  injected.set("steps", tessera::Value("40\nshell rm -rf ~"));
  values.config = &injected;
  try {
    tessera::render_template("n={config.steps}", values);
    ADD_FAILURE() << "a config string with a newline was rendered";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("control character (byte 10 at position 2)"), std::string::npos)
        << e.what();
  }
  tessera::Config empty;
  values.config = &empty;
  EXPECT_THROW(tessera::render_template("{config.steps}", values), std::invalid_argument);
  EXPECT_EQ(tessera::check_program_config("heat", spec, empty),
            "simulation 'heat' uses {config.steps}, but the stream's config has no key 'steps'");
}

TEST(ProgramSpec, TomlDeclarationsNameFileLineAndKey) {
  TempDir dir;
  std::ofstream(dir.path() / "case.in") << "alpha = {alpha}\n";
  const std::string head = "[node]\nname = \"n\"\nrole = \"both\"\n";
  const auto parse = [&](const std::string& body) {
    return tessera::parse_node_config(head + body, "node.toml", dir.path());
  };
  const auto config = parse(
      "[simulations.heat]\ncommand = [\"heat2d\", \"{dir}/case.in\"]\nparameters = [\"alpha\"]\n"
      "files = { \"case.in\" = \"case.in\" }\n"
      "result = { file = \"out.log\", regex = 'energy (\\S+)', outputs = [\"energy\"] }\nranks = 2\n"
      "env = { OMP_PROC_BIND = \"true\" }\nkeep = \"always\"\ntimeout = 600\n");
  ASSERT_EQ(config.programs.size(), 1u);
  const auto& heat = config.programs[0].spec;
  EXPECT_EQ(config.programs[0].name, "heat");
  EXPECT_EQ(heat.files.at("case.in"), "alpha = {alpha}\n");
  EXPECT_EQ(heat.result.format, ProgramResultFormat::regex);
  EXPECT_EQ(heat.ranks, 2u);
  EXPECT_EQ(heat.launcher_prefix().front(), "mpirun");
  EXPECT_EQ(heat.keep, tessera::KeepDirectories::always);

  const auto refused = [&](const std::string& body, const std::string& expected) {
    try {
      parse(body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const tessera::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused("[simulations.heat]\ncommand = [\"x\"]\nranks = 0\n",
          "node.toml:6: key 'simulations.heat.ranks' must be in [1, 4096], got 0");
  refused("[simulations.heat]\ncommand = [\"x\"]\nranks = 1000000000\n", "key 'simulations.heat.ranks'");
  refused("[simulations.heat]\ncommand = [\"x\", \"{alpha\"]\nparameters = [\"alpha\"]\n",
          "node.toml:5: key 'simulations.heat.command[1]': unterminated placeholder");
  refused("[simulations.heat]\ncommand = [\"x\", \"{beta}\"]\nparameters = [\"alpha\"]\n",
          "key 'simulations.heat.command[1]': unknown placeholder {beta}");
  refused("[simulations.heat]\ncommand = [\"x\"]\nparameters = [\"a\", \"a\"]\n",
          "key 'simulations.heat.parameters[1]': parameter 'a' is named twice");
  refused("[simulations.heat]\ncommand = [\"x\"]\nfiles = { \"in\" = \"missing.in\" }\n",
          "node.toml:6: key 'simulations.heat.files.in' names a template that is missing");
  refused("[simulations.heat]\ncommand = [\"x\"]\nresult = { regex = '(' }\n",
          "key 'simulations.heat.result.regex': '(' does not compile");
  refused("[simulations.heat]\ncommand = [\"x\"]\nenv = { \"A=B\" = \"1\" }\n",
          "key 'simulations.heat.env.A=B': an environment variable's name");
  refused("[simulations.heat]\ncommand = [\"x\"]\ntimeout = inf\n", "key 'simulations.heat.timeout' must be");
  refused("[simulations.heat]\ncommand = \"x y\"\n",
          "key 'simulations.heat.command' must be an array of strings");
  refused("[simulations.heat]\nparameters = []\n", "key 'simulations.heat.command' is missing");
  refused("[simulations.heat]\ncommand = [\"x\"]\nbogus = 1\n", "key 'simulations.heat.bogus' is unknown");
}

// ---- results ------------------------------------------------------------------------------------------

TEST(ProgramResult, EachFormatReadsItsNumbers) {
  using tessera::programs::read_program_result;
  TempDir dir;
  tessera::ProgramResultSpec last;
  EXPECT_EQ(read_program_result(last, "step 1\nstep 2\nanswer: 4.25e-3\n", dir.str()).as_double(), 4.25e-3);
  try {
    read_program_result(last, "nothing here\n", dir.str());
    ADD_FAILURE();
  } catch (const tessera::programs::ResultError& e) {
    EXPECT_STREQ(e.what(), "result: no number in stdout (last line: 'nothing here')");
  }
  tessera::ProgramResultSpec regex{
      ProgramResultFormat::regex, "out.log", R"(final energy (\S+) residual (\S+))", {"energy", "residual"}};
  std::ofstream(dir.path() / "out.log") << "iter 1\nfinal energy -1.5 residual 2e-9\n";
  EXPECT_EQ(read_program_result(regex, "", dir.str()).as_doubles(), (std::vector<double>{-1.5, 2e-9}));
  std::ofstream(dir.path() / "out.log") << "diverged\n";
  try {
    read_program_result(regex, "", dir.str());
    ADD_FAILURE();
  } catch (const tessera::programs::ResultError& e) {
    EXPECT_STREQ(e.what(), "result: no match for regex in out.log (last line: 'diverged')");
  }
  // A line of 500,000 characters that the repetition could take whole: matched in its first 4 KiB (the
  // whole line would overflow the matcher's stack), a clear error rather than a crash.
  std::ofstream(dir.path() / "out.log") << "final energy " << std::string(500000, 'x') << " residual 1\n";
  EXPECT_THROW(read_program_result(regex, "", dir.str()), tessera::programs::ResultError);
  std::ofstream(dir.path() / "out.log") << std::string(500000, 'y') << "\nfinal energy 2 residual 3\n";
  EXPECT_EQ(read_program_result(regex, "", dir.str()).as_doubles(), (std::vector<double>{2, 3}));
  tessera::ProgramResultSpec json{ProgramResultFormat::json, "r.json", "", {"b", "a"}};
  std::ofstream(dir.path() / "r.json") << R"({"a": 1, "b": 2.5, "c": "text"})";
  EXPECT_EQ(read_program_result(json, "", dir.str()).as_doubles(), (std::vector<double>{2.5, 1}));
  json.outputs.clear();
  std::ofstream(dir.path() / "r.json") << "[1, 2, 3]";
  EXPECT_EQ(read_program_result(json, "", dir.str()).as_doubles(), (std::vector<double>{1, 2, 3}));
  tessera::ProgramResultSpec numbers{ProgramResultFormat::numbers, "n.dat", "", {}};
  std::ofstream(dir.path() / "n.dat") << "1 2\n3e2\t-4\n";
  EXPECT_EQ(read_program_result(numbers, "", dir.str()).as_doubles(), (std::vector<double>{1, 2, 300, -4}));
  // Numbers from stdout whose tail lost its beginning: an error naming the limit, not fewer numbers.
  tessera::ProgramResultSpec from_stdout{ProgramResultFormat::numbers, "", "", {}};
  EXPECT_EQ(read_program_result(from_stdout, "1 2 3\n", dir.str(), 6).as_doubles(),
            (std::vector<double>{1, 2, 3}));
  try {
    read_program_result(from_stdout, "34 35\n", dir.str(), 200000);
    ADD_FAILURE();
  } catch (const tessera::programs::ResultError& e) {
    EXPECT_NE(std::string(e.what()).find("stdout holds 200000 bytes, of which only the last 6 are kept"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir.path() / "n.dat") << "1 two 3\n";
  EXPECT_THROW(read_program_result(numbers, "", dir.str()), tessera::programs::ResultError);
  numbers.file = "absent.dat";
  try {
    read_program_result(numbers, "", dir.str());
    ADD_FAILURE();
  } catch (const tessera::programs::ResultError& e) {
    EXPECT_NE(std::string(e.what()).find("result: absent.dat was not written"), std::string::npos)
        << e.what();
  }
}

// ---- one run ------------------------------------------------------------------------------------------

std::vector<std::string> environment_with(const std::string& marker) {
  std::vector<std::string> env{"PATH=/usr/local/bin:/usr/bin:/bin", marker, "TESSERA_RUN=" + marker};
  return env;
}

// A run of `argv` in `dir` whose processes carry `marker` (processes_with_token finds them).
tessera::programs::LaunchRequest marked_request(const TempDir& dir, const std::string& marker,
                                                std::vector<std::string> argv) {
  tessera::programs::LaunchRequest request;
  request.argv = std::move(argv);
  request.environment = environment_with(marker);
  request.directory = dir.str();
  return request;
}

TEST(ProgramProcess, AFloodOfStdoutCostsOnlyItsTail) {
  TempDir dir;
  tessera::programs::LaunchRequest request;
  // 64 MiB of output, then the number.
  request.argv = {"sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo 42"};
  request.environment = environment_with(unique_marker());
  request.directory = dir.str();
  request.stdout_capacity = 4096;
  tessera::programs::Interrupter interrupter;
  const auto exit = tessera::programs::run_program(request, interrupter);
  EXPECT_EQ(exit.code, 0);
  EXPECT_EQ(exit.out.total(), 67108864u + 4u);
  EXPECT_LE(exit.out.text().size(), 2 * 4096u);
  double value = 0;
  ASSERT_TRUE(tessera::programs::last_number(exit.out.text(), value));
  EXPECT_EQ(value, 42);
}

TEST(ProgramProcess, ExitStatusSignalAndMissingExecutableAreNamed) {
  TempDir dir;
  tessera::programs::Interrupter interrupter;
  tessera::programs::LaunchRequest request;
  request.environment = environment_with(unique_marker());
  request.directory = dir.str();
  request.argv = {"sh", "-c", "echo bad input >&2; exit 3"};
  auto exit = tessera::programs::run_program(request, interrupter);
  EXPECT_FALSE(exit.signaled);
  EXPECT_EQ(exit.code, 3);
  EXPECT_EQ(exit.err.text(), "bad input\n");
  request.argv = {"sh", "-c", "kill -SEGV $$"};
  exit = tessera::programs::run_program(request, interrupter);
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(tessera::programs::signal_name(exit.code), "SIGSEGV");
  request.argv = {"/nonexistent/heat2d"};
  try {
    tessera::programs::run_program(request, interrupter);
    ADD_FAILURE();
  } catch (const tessera::programs::StartError& e) {
    EXPECT_EQ(e.error(), ENOENT);
    EXPECT_NE(
        std::string(e.what()).find("cannot start /nonexistent/heat2d: No such file or directory (errno 2)"),
        std::string::npos)
        << e.what();
  }
}

TEST(ProgramProcess, AnInterruptEndsTheWholeTreeDaemonsIncluded) {
  TempDir dir;
  const std::string marker = unique_marker();
  // Two children in the group, one that made a session of its own, and the shell waiting: four processes.
  auto request = marked_request(dir, marker, {"sh", "-c", "sleep 300 & sleep 300 & setsid sleep 300 & wait"});
  request.grace_seconds = 1;
  tessera::programs::Interrupter interrupter;
  tessera::programs::Exit exit;
  std::thread runner([&] { exit = tessera::programs::run_program(request, interrupter); });
  EXPECT_TRUE(eventually([&] { return processes_with_token(marker).size() == 4; }, std::chrono::seconds(20),
                         std::chrono::milliseconds(20)))
      << processes_with_token(marker).size();
  interrupter.interrupt();
  runner.join();
  EXPECT_TRUE(exit.interrupted);
  EXPECT_TRUE(processes_with_token(marker).empty())
      << processes_with_token(marker).size() << " outlived the run";
}

TEST(ProgramProcess, WhatTheProgramLeftInItsGroupEndsWithIt) {
  TempDir dir;
  const std::string marker = unique_marker();
  auto request = marked_request(dir, marker, {"sh", "-c", "sleep 300 > /dev/null & echo 7"});
  tessera::programs::Interrupter interrupter;
  const auto exit = tessera::programs::run_program(request, interrupter);
  EXPECT_EQ(exit.code, 0);
  EXPECT_EQ(exit.out.text(), "7\n");
  EXPECT_TRUE(eventually([&] { return processes_with_token(marker).empty(); }, std::chrono::seconds(5),
                         std::chrono::milliseconds(10)));
}

// Runs `request` on a thread of its own; whether it returned within `deadline` (interrupted after it, so
// that a failing test ends), and its exit.
std::pair<bool, tessera::programs::Exit> run_within(const tessera::programs::LaunchRequest& request,
                                                    tessera::programs::Interrupter& interrupter,
                                                    std::chrono::seconds deadline) {
  std::atomic<bool> done{false};
  tessera::programs::Exit exit;
  std::thread runner([&] {
    exit = tessera::programs::run_program(request, interrupter);
    done = true;
  });
  const bool in_time = eventually([&] { return done.load(); }, deadline, std::chrono::milliseconds(10));
  if (!in_time) interrupter.interrupt();
  runner.join();
  return {in_time, exit};
}

// A daemon in a session of its own (setsid), still writing to the program's stdout: the set ends a moment
// after the program, and the daemon with it.
TEST(ProgramProcess, ADaemonOfItsOwnSessionNeitherHoldsTheSetNorOutlivesIt) {
  TempDir dir;
  const std::string marker = unique_marker();
  // It has left the group (and writes) before the program ends: killing the group cannot reach it.
  auto request = marked_request(
      dir, marker, {"sh", "-c", "setsid sh -c 'while :; do echo x; sleep 0.05; done' & sleep 0.5; echo 7"});
  tessera::programs::Interrupter interrupter;
  const auto [in_time, exit] = run_within(request, interrupter, std::chrono::seconds(20));
  EXPECT_TRUE(in_time) << "the set waited on its daemon's output";
  EXPECT_FALSE(exit.interrupted);
  EXPECT_EQ(exit.code, 0);
  EXPECT_NE(exit.out.text().find("x\n"), std::string::npos) << "the daemon never wrote: " << exit.out.text();
  EXPECT_TRUE(eventually([&] { return processes_with_token(marker).empty(); }, std::chrono::seconds(5),
                         std::chrono::milliseconds(10)))
      << "the daemon outlived its set";
}

// A program that writes to its stdout as fast as it can is still stopped by an interrupt (a timeout, a
// cancellation): reading its output never keeps the runner from hearing it.
TEST(ProgramProcess, AProgramFloodingItsOutputIsStillInterrupted) {
  TempDir dir;
  const std::string marker = unique_marker();
  auto request = marked_request(dir, marker, {"yes", "a line of output that the program writes for ever"});
  request.grace_seconds = 1;
  tessera::programs::Interrupter interrupter;
  std::thread interrupt_once_running([&] {
    eventually([&] { return processes_with_token(marker).size() == 1; }, std::chrono::seconds(20),
               std::chrono::milliseconds(10));
    interrupter.interrupt();
  });
  const auto [in_time, exit] = run_within(request, interrupter, std::chrono::seconds(30));
  interrupt_once_running.join();
  EXPECT_TRUE(in_time) << "the runner did not hear the interrupt while reading the flood";
  EXPECT_TRUE(exit.interrupted);
  EXPECT_TRUE(processes_with_token(marker).empty());
}

// ---- streamed on a cluster ----------------------------------------------------------------------------

// awk multiplies and adds the two parameters it reads from the rendered template, and writes out.log.
ProgramSpec affine_spec(const std::string& root) {
  ProgramSpec spec;
  spec.command = {
      "awk", "-F=",
      R"(/^a=/{{a=$2}} /^b=/{{b=$2}} END{{printf "final energy %.17g residual %.17g\n", a*b, a+b > "out.log"}})",
      "case.in"};
  spec.parameters = {"a", "b"};
  spec.files["case.in"] = "a={a}\nb={b}\nstream={stream} id={id}\n";
  spec.result = {
      ProgramResultFormat::regex, "out.log", R"(final energy (\S+) residual (\S+))", {"energy", "residual"}};
  spec.workdir_root = root;
  return spec;
}

TEST(Programs, AStreamRunsAProgramPerSetWithTemplatesAndParsedResults) {
  TempDir runs;
  tessera::register_program("test_affine", affine_spec(runs.str()));
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_affine");
  for (int i = 0; i < 40; ++i) stream.push(std::vector<double>{0.1 * i, 3.0 - i});
  // Bad input is refused at the push, naming what.
  try {
    stream.push(std::vector<double>{1.0});
    ADD_FAILURE();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 2 parameters, got 1"), std::string::npos) << e.what();
  }
  try {
    stream.push(std::vector<double>{1.0, std::nan("")});
    ADD_FAILURE();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'b' is nan; a program takes finite numbers"),
              std::string::npos)
        << e.what();
  }
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 40u);
  for (const auto& [id, r] : records) {
    ASSERT_FALSE(r.failed) << id << ": " << r.error;
    const double a = 0.1 * static_cast<double>(id), b = 3.0 - static_cast<double>(id);
    EXPECT_EQ(r.value.as_doubles(), (std::vector<double>{a * b, a + b})) << id;
    EXPECT_GT(r.timeline.finished, r.timeline.started);
  }
  // keep = "failed": no directory of a set that succeeded is left.
  EXPECT_TRUE(fs::is_empty(runs.path() / std::to_string(stream.id()))) << "directories left behind";

  // Each record keeps how its process ended; the outputs and parameters name the columns of exports and
  // the fields of filters and summaries.
  for (const auto& [id, r] : records) {
    ASSERT_TRUE(r.program) << id;
    EXPECT_EQ(r.program->exit_status, 0) << id;
    EXPECT_EQ(r.program->signal, 0) << id;
  }
  auto query = client.results(stream.id());
  std::ostringstream csv, json;
  query.to_csv(csv);
  query.to_json(json);
  const std::string header = csv.str().substr(0, csv.str().find('\n'));
  EXPECT_EQ(header.rfind("id,a,b,energy,residual,status,", 0), 0u) << header;
  EXPECT_EQ(header.substr(header.size() - 12), ",exit_status") << header;
  EXPECT_NE(json.str().find(R"("result":{"energy":0.2,"residual":2.1})"), std::string::npos)
      << json.str().substr(0, 400);  // set 1: a = 0.1, b = 2
  EXPECT_NE(json.str().find(R"("exit_status":0,"stdout":"","stderr":"")"), std::string::npos);
  EXPECT_EQ(query.where("energy > 0").count(), 2u);  // a * b > 0 for sets 1 and 2 only
  EXPECT_EQ(query.where("a > 0.95 and exit_status == 0").count(), 30u);
  EXPECT_EQ(query.summary("residual").max, 3.0);
  std::ostringstream names;
  query.to_text(names, "names");
  EXPECT_NE(names.str().find(R"("parameter_names":["a","b"],"result_names":["energy","residual"])"),
            std::string::npos)
      << names.str();
  try {
    (void)query.where("energi > 1").count();
    ADD_FAILURE() << "an unknown name was taken";
  } catch (const tessera::QueryError& e) {
    EXPECT_NE(std::string(e.what()).find("not 'energi', at position 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'energy', 'residual', 'a', 'b'"), std::string::npos) << e.what();
  }
}

// A declaration's env replaces what the worker has: OMP_NUM_THREADS (which the worker sets from threads)
// and a variable of the worker's own environment.
TEST(Programs, TheDeclarationsEnvReplacesTheWorkersOwn) {
  TempDir runs;
  ::setenv("TESSERA_TEST_INHERITED", "1", 1);
  ProgramSpec spec;
  spec.command = {"sh", "-c", "echo $((OMP_NUM_THREADS * 100 + TESSERA_TEST_INHERITED))"};
  spec.parameters = {"x"};
  spec.env["OMP_NUM_THREADS"] = "7";
  spec.env["TESSERA_TEST_INHERITED"] = "5";
  spec.workdir_root = runs.str();
  tessera::register_program("test_env_override", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_env_override");
  stream.push(std::vector<double>{1.0});
  stream.close();
  const auto records = collect(stream);
  ::unsetenv("TESSERA_TEST_INHERITED");
  ASSERT_EQ(records.size(), 1u);
  const auto& r = records.begin()->second;
  ASSERT_FALSE(r.failed) << r.error;
  EXPECT_EQ(r.value.as_double(), 705.0);
}

TEST(Programs, EachFailureIsNamedAndItsDirectoryKept) {
  TempDir runs;
  ProgramSpec spec;
  // k = 0: a result; 1: exit 3 with a message; 2: a segfault; 3: output without a number; 4: a missing file;
  // 5: a failure said on stdout (as MPI codes do).
  spec.command = {
      "sh", "-c",
      "case {k} in 0) echo result 5;; 1) echo bad input >&2; exit 3;; 2) kill -SEGV $$;; "
      "3) echo nothing;; 4) exec /nonexistent/prog;; 5) echo step 1; echo ERROR: Illegal lattice; "
      "exit 1;; esac"};
  spec.parameters = {"k"};
  spec.workdir_root = runs.str();
  tessera::register_program("test_failures", spec);
  ProgramSpec missing;
  missing.command = {"/nonexistent/heat2d", "{x}"};
  missing.parameters = {"x"};
  missing.workdir_root = runs.str();
  tessera::register_program("test_missing", missing);

  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_failures");
  for (int k = 0; k < 6; ++k) stream.push(double(k));
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_FALSE(records.at(0).failed) << records.at(0).error;
  EXPECT_EQ(records.at(0).value.as_double(), 5);
  // The record keeps how the process ended and the tails of what it printed.
  for (std::uint64_t id = 0; id < 6; ++id) ASSERT_TRUE(records.at(id).program) << id;
  EXPECT_EQ(records.at(0).program->stdout_tail, "result 5\n");
  EXPECT_EQ(records.at(1).program->exit_status, 3);
  EXPECT_EQ(records.at(1).program->stderr_tail, "bad input\n");
  EXPECT_EQ(records.at(2).program->signal, SIGSEGV);
  EXPECT_EQ(records.at(4).program->exit_status, 127);
  const std::string kept = " (directory kept: " + (runs.path() / std::to_string(stream.id())).string();
  EXPECT_EQ(records.at(1).error.substr(0, 16), "exit 3: bad inpu") << records.at(1).error;
  EXPECT_EQ(records.at(1).failure, Failure::error);
  EXPECT_EQ(records.at(2).error.substr(0, 17), "killed by SIGSEGV") << records.at(2).error;
  EXPECT_EQ(records.at(2).failure, Failure::crash);
  EXPECT_EQ(records.at(3).error.rfind("result: no number in stdout (last line: 'nothing')", 0), 0u)
      << records.at(3).error;
  EXPECT_EQ(records.at(4).error.rfind("exit 127: ", 0), 0u)
      << records.at(4).error;  // the shell's exec failed
  EXPECT_EQ(records.at(5).error.rfind("exit 1; stdout ends: 'ERROR: Illegal lattice'", 0), 0u)
      << records.at(5).error;
  for (std::uint64_t id = 1; id < 6; ++id) {
    EXPECT_NE(records.at(id).error.find(kept + "/" + std::to_string(id) + ")"), std::string::npos)
        << records.at(id).error;
    EXPECT_TRUE(fs::is_directory(runs.path() / std::to_string(stream.id()) / std::to_string(id)));
    EXPECT_EQ(records.at(id).node, "worker-0");
  }
  EXPECT_FALSE(fs::exists(runs.path() / std::to_string(stream.id()) / "0"));

  // A missing executable is the worker's failure, not the set's: with no worker that can run it, the
  // stream ends naming each worker, the command and the errno, and stores no failure for the set.
  auto absent = client.stream("test_missing");
  absent.push(1.0);
  absent.close();
  EXPECT_TRUE(collect(absent).empty());
  EXPECT_NE(
      absent.error().find("no worker can run simulation 'test_missing': worker-0: cannot start "
                          "'/nonexistent/heat2d' (command[0]): cannot start /nonexistent/heat2d: No such "
                          "file or directory (errno 2)"),
      std::string::npos)
      << absent.error();
  EXPECT_EQ(client.results(absent.id()).count(), 0u);
}

TEST(Programs, ATimeoutEndsTheSetsProcessTree) {
  TempDir runs;
  const std::string marker = unique_marker();
  ProgramSpec spec;
  spec.command = {"sh", "-c", "if [ {x} = 0 ]; then sleep 300 & sleep 300; wait; else echo {x}; fi"};
  spec.parameters = {"x"};
  spec.env["TESSERA_TEST_MARKER"] = marker.substr(marker.find('=') + 1);
  spec.timeout_seconds = 1;
  spec.grace_seconds = 1;
  spec.keep = tessera::KeepDirectories::never;
  spec.workdir_root = runs.str();
  tessera::register_program("test_timeout", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_timeout");
  stream.push(0.0);
  stream.push(2.0);
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records.at(0).failure, Failure::timeout);
  EXPECT_EQ(records.at(0).error, "timeout after 1 s (the program's process tree was ended)");
  EXPECT_EQ(records.at(1).value.as_double(), 2);  // the next set ran on the same thread
  EXPECT_TRUE(processes_with_token(marker).empty())
      << processes_with_token(marker).size() << " outlived the set";
}

TEST(Programs, CancellingARunningSetEndsItsProgram) {
  TempDir runs;
  const std::string marker = unique_marker();
  ProgramSpec spec;
  spec.command = {"sh", "-c", "if [ {x} = 0 ]; then sleep 300; else echo {x}; fi"};
  spec.parameters = {"x"};
  spec.env["TESSERA_TEST_MARKER"] = marker.substr(marker.find('=') + 1);
  spec.workdir_root = runs.str();
  tessera::register_program("test_cancel", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_cancel");
  stream.push(0.0);
  stream.flush();
  ASSERT_TRUE(eventually([&] { return !processes_with_token(marker).empty(); }, std::chrono::seconds(20),
                         std::chrono::milliseconds(20)));
  stream.push(1.0);
  const auto counts = stream.cancel({0});
  EXPECT_EQ(counts.running, 1u);
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records.at(0).failure, Failure::cancelled);
  EXPECT_EQ(records.at(1).value.as_double(), 1);
  EXPECT_TRUE(eventually([&] { return processes_with_token(marker).empty(); }, std::chrono::seconds(10),
                         std::chrono::milliseconds(20)));
}

TEST(Programs, ASetBiggerThanEveryWorkerFailsWithItsReason) {
  ProgramSpec spec;
  spec.command = {"echo", "{x}"};
  spec.parameters = {"x"};
  spec.ranks = 2;
  spec.threads = 3;
  spec.launcher = "none";
  tessera::register_program("test_too_big", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_too_big");
  stream.push(1.0);
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records.at(0).error,
            "simulation 'test_too_big' needs 6 cores per set (ranks 2 x threads 3); worker-0 has 2 compute "
            "threads");
}

TEST(Programs, AMissingConfigKeyIsRefusedWhenTheStreamOpens) {
  ProgramSpec spec;
  spec.command = {"echo", "{config.steps}"};
  tessera::register_program("test_config_key", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  try {
    client.stream("test_config_key");
    ADD_FAILURE();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_STREQ(
        e.what(),
        "simulation 'test_config_key' uses {config.steps}, but the stream's config has no key 'steps'");
  }
  tessera::StreamOptions options;
  options.config.set("steps", tessera::Value(std::int64_t{12}));
  auto stream = client.stream("test_config_key", options);
  stream.push(std::vector<double>{});
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records.at(0).value.as_double(), 12) << records.at(0).error;
}

TEST(Programs, AnMpiJobRunsItsRanksThroughMpirun) {
#ifndef TESSERA_MPI_PROGRAM
  GTEST_SKIP() << "SKIPPED: no MPI compiler was found at configure time (install openmpi-bin libopenmpi-dev)";
#else
  TempDir runs;
  ProgramSpec spec;
  spec.command = {TESSERA_MPI_PROGRAM, "{x}"};
  spec.parameters = {"x"};
  spec.ranks = 2;
  spec.launcher = "mpirun";
  spec.result = {ProgramResultFormat::regex, "", R"(ranks (\d+) sum (\S+))", {"ranks", "sum"}};
  // Open MPI refuses root unless told; CI runs as root.
  spec.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
              {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
              {"ASAN_OPTIONS", "detect_leaks=0"}};  // Open MPI keeps what it allocated
  spec.workdir_root = runs.str();
  tessera::register_program("test_mpi", spec);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("test_mpi");
  for (double x : {1.0, 2.5, -4.0}) stream.push(x);
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 3u);
  const double xs[] = {1.0, 2.5, -4.0};
  for (const auto& [id, r] : records) {
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_EQ(r.value.as_doubles(), (std::vector<double>{2, 3 * xs[id]})) << id;
  }
#endif
}

// ---- across processes ---------------------------------------------------------------------------------

TEST(Programs, AScheduler_sDeclarationRunsOnWorkerProcesses) {
  TempDir dir;
  std::ofstream(dir.path() / "case.in") << "a={a}\nb={b}\n";
  const std::string scheduler_config =
      "[node]\nname = \"scheduler\"\nrole = \"scheduler\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "heartbeat_interval = 0.1\nheartbeat_timeout = 2.0\n"
      R"([simulations.affine]
command = ["awk", "-F=", '/^a=/{{a=$2}} /^b=/{{b=$2}} END{{printf "energy %.17g\n", a*b}}', "case.in"]
)"
      "parameters = [\"a\", \"b\"]\nfiles = { \"case.in\" = \"" +
      (dir.path() / "case.in").string() + "\" }\nworkdir_root = \"" + (dir.path() / "runs").string() + "\"\n";
  tessera::testing::NodeProcess scheduler{scheduler_config};
  // The worker declares nothing: what it runs comes with the stream's setup.
  tessera::testing::NodeProcess worker{
      "[node]\nname = \"alpha\"\nrole = \"worker\"\n[scheduler]\nheartbeat_interval = "
      "0.1\n[worker]\nscheduler = \"" +
      scheduler.endpoint() + "\"\nthreads_per_worker = 2\n"};
  tessera::Client client(scheduler.endpoint());
  auto stream = client.stream("affine");
  for (int i = 0; i < 20; ++i) stream.push(std::vector<double>{0.5 * i, 3.0});
  // A remote client refuses what the program cannot take at the push, naming the parameter.
  for (const auto& [bad, said] : std::vector<std::pair<std::vector<double>, std::string>>{
           {{1.0, INFINITY}, "parameter 'b' is inf; a program takes finite numbers"},
           {{1.0}, "takes 2 parameters, got 1"}}) {
    try {
      stream.push(bad);
      ADD_FAILURE() << said;
    } catch (const tessera::SubmissionError& e) {
      EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what();
    }
  }
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 20u);
  for (const auto& [id, r] : records) {
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_EQ(r.value.as_double(), 0.5 * static_cast<double>(id) * 3.0);
  }
  // `tessera simulations` lists what a stream may name, the declared program with its parameters.
  int code = 0;
  const auto listed = tessera::testing::run_command(
      std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler.endpoint() + " simulations --json", code);
  EXPECT_EQ(code, 0) << listed;
  EXPECT_NE(
      listed.find(R"({"name":"affine","kind":"program","arity":2,"cores":1,"gpus":0,"parameters":["a","b"],)"
                  R"("outputs":[],"command":["awk","-F=",)"),
      std::string::npos)
      << listed;
  const auto table = tessera::testing::run_command(
      std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler.endpoint() + " simulations", code);
  EXPECT_EQ(code, 0) << table;
  EXPECT_NE(table.find("affine"), std::string::npos) << table;
  EXPECT_NE(table.find("program"), std::string::npos) << table;
  EXPECT_NE(table.find("a, b"), std::string::npos) << table;
  // Records cross the wire with how their process ended.
  for (const auto& [id, r] : records) EXPECT_TRUE(r.program && r.program->exit_status == 0) << id;
  ASSERT_TRUE(records.at(3).program);
  EXPECT_NE(records.at(3).program->stdout_tail.find("energy 4.5"), std::string::npos)
      << records.at(3).program->stdout_tail;
  // A name nobody declared is refused at the open, naming what the scheduler has.
  try {
    client.stream("rm_rf");
    ADD_FAILURE();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown simulation 'rm_rf'"), std::string::npos) << e.what();
  }
}

// A worker where the program cannot run (its runs directory cannot be made) is named once, and the stream's
// sets go to the worker that can; with only such workers the stream ends naming each.
TEST(Programs, AWorkerThatCannotRunAProgramLeavesItsSetsToTheOthers) {
  TempDir dir;
  const std::string scheduler_config =
      "[node]\nname = \"scheduler\"\nrole = \"scheduler\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "heartbeat_interval = 0.1\nheartbeat_timeout = 2.0\n"
      "[simulations.twice]\ncommand = [\"awk\", \"BEGIN{{print 2 * {x}}}\"]\nparameters = [\"x\"]\n";
  tessera::testing::NodeProcess scheduler{scheduler_config, true};
  const auto worker_config = [&](const std::string& name) {
    fs::create_directories(dir.path() / name);
    return "[node]\nname = \"" + name + "\"\nrole = \"worker\"\ndata_dir = \"" +
           (dir.path() / name).string() +
           "\"\n[scheduler]\nheartbeat_interval = 0.1\n[worker]\nscheduler = \"" + scheduler.endpoint() +
           "\"\nthreads_per_worker = 2\n";
  };
  // beta's runs directory is a file: no set's directory can be made there.
  auto beta_config = worker_config("beta");
  std::ofstream(dir.path() / "beta" / "runs") << "not a directory\n";
  tessera::testing::NodeProcess beta{beta_config};
  const auto joined = [&](const std::string& name) {
    return eventually(
        [&] { return scheduler.log().find("worker '" + name + "' joined") != std::string::npos; });
  };
  ASSERT_TRUE(joined("beta")) << scheduler.log();
  tessera::Client client(scheduler.endpoint());
  {
    auto lone = client.stream("twice");
    lone.push(1.0);
    lone.close();
    EXPECT_TRUE(collect(lone).empty());
    EXPECT_NE(
        lone.error().find("no worker can run simulation 'twice': beta: cannot make the working directory"),
        std::string::npos)
        << lone.error();
    EXPECT_NE(lone.error().find("(errno 20)"), std::string::npos) << lone.error();
  }
  tessera::testing::NodeProcess alpha{worker_config("alpha")};
  ASSERT_TRUE(joined("alpha")) << scheduler.log();
  auto stream = client.stream("twice");
  for (int i = 0; i < 40; ++i) stream.push(double(i));
  stream.close();
  const auto records = collect(stream);
  ASSERT_EQ(records.size(), 40u) << stream.error();
  for (const auto& [id, r] : records) {
    ASSERT_FALSE(r.failed) << id << ": " << r.error;
    EXPECT_EQ(r.value.as_double(), 2.0 * static_cast<double>(id));
  }
  EXPECT_TRUE(stream.error().empty()) << stream.error();
  EXPECT_NE(scheduler.log().find("simulation 'twice' cannot run on beta: cannot make the working directory"),
            std::string::npos)
      << scheduler.log();
}

}  // namespace
