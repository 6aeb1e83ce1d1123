// `tessera stream push` as a user runs it against a real node: a push cut by Ctrl-C, SIGTERM or a killed
// client leaves a stream shown as incomplete (never "finished"), and `--resume` pushes the rows it had
// not accepted, each row stored exactly once; `tessera stream cancel` stops a push in progress; a CSV is
// read whole before its first row is pushed; the progress line on a terminal and as plain lines.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/commands.hpp"
#include "support/node_process.hpp"
#include "support/scratch_dir.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::testing::cli;
using tessera::testing::eventually;
using tessera::testing::NodeProcess;
using tessera::testing::NodeRun;
using tessera::testing::run_command;
using tessera::testing::ScratchDir;

// One worker thread, and a client found gone after three seconds of silence (it sends a heartbeat every
// half second).
const char* kNodeConfig =
    "[node]\nname = \"pushes\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
    "client_grace = 3.0\n[worker]\nworkers = 1\nthreads_per_worker = 1\n[plugins]\npaths = "
    "[\"" TESSERA_TEST_PLUGIN "\"]\n";

// The gated simulation's files: a negative set waits while `gate` exists.
struct Fixture {
  NodeProcess node{kNodeConfig};
  ScratchDir dir{"tessera-push"};
  fs::path gate = dir / "gate";
  fs::path input = dir / "params.csv";

  // A CSV of `rows` sets, x = 0, 1, ...; the first one -1, which holds the only simulation actor at the
  // gate until it opens.
  void write_input(int rows) {
    std::ofstream out(input);
    out << "x\n-1\n";
    for (int i = 1; i < rows; ++i) out << i << "\n";
    std::ofstream(gate) << "closed\n";
  }
  std::string push_args(const std::string& extra = "") const {
    return "stream push --simulation gated --input " + input.string() + " --max-in-flight 8" +
           " --simulation-config gate=" + gate.string() + " " + extra;
  }
  // `tessera ARGS` started in the background.
  std::unique_ptr<NodeRun> start(const std::string& args, const std::string& name) {
    std::vector<std::string> argv{"--scheduler", node.endpoint()};
    std::istringstream words(args);
    for (std::string w; words >> w;) argv.push_back(w);
    fs::create_directories(dir / name);
    return std::make_unique<NodeRun>(dir / name, argv, TESSERA_CLI_BINARY);
  }
  // `tessera ARGS` run to its end: its standard output and error apart.
  tessera::testing::Outcome run_cli(const std::string& args) const {
    return tessera::testing::run(std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint() + " " +
                                 args);
  }
  // The push of the input, started in the background, once it holds its eight sets in flight (the first
  // at the gate) and waits for room; null if it never did.
  std::unique_ptr<NodeRun> start_held_push(const std::string& extra = "") {
    auto push = start(push_args(extra), "first");
    if (!eventually([&] { return listing(1).value("pushed", 0) == 8; }, std::chrono::seconds(30)))
      return nullptr;
    return push;
  }
  json listing(std::uint64_t stream) {
    for (const auto& s : json::parse(cli(node.endpoint(), "stream list --json")))
      if (s["id"] == stream) return s;
    return json::object();
  }
  // Every stored result's parameter, by id.
  std::map<std::uint64_t, double> stored(std::uint64_t stream) {
    std::map<std::uint64_t, double> out;
    std::istringstream lines(
        cli(node.endpoint(), "results --stream " + std::to_string(stream) + " --format json"));
    for (std::string line; std::getline(lines, line);) {
      const auto record = json::parse(line);
      EXPECT_TRUE(
          out.emplace(record["id"].get<std::uint64_t>(), record["parameters"][0].get<double>()).second)
          << "id " << record["id"] << " stored twice";
    }
    return out;
  }
};

// Each row of the input stored once, under the id of its place in the file.
void expect_every_row_once(const std::map<std::uint64_t, double>& stored, int rows) {
  ASSERT_EQ(stored.size(), static_cast<std::size_t>(rows));
  for (const auto& [id, x] : stored) EXPECT_EQ(x, id == 0 ? -1.0 : double(id)) << "id " << id;
}

TEST(StreamPush, AnInterruptedPushIsIncompleteAndItsResumePushesEveryRowOnce) {
  Fixture f;
  f.write_input(200);
  // Eight sets are in flight behind the held one: the push waits for room until Ctrl-C.
  auto push = f.start_held_push();
  ASSERT_NE(push, nullptr) << "the push never filled its eight sets in flight";
  push->signal(SIGINT);
  ASSERT_TRUE(push->wait_exit(std::chrono::seconds(20)));
  EXPECT_EQ(push->exit_code(), 130) << push->err();
  const std::string said = push->err();
  EXPECT_NE(said.find("interrupted: stream 1: pushed 8 of the 200 rows of " + f.input.string()),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("stream push --resume 1 --input " + f.input.string()), std::string::npos) << said;
  EXPECT_NE(said.find("stream cancel --stream 1"), std::string::npos) << said;

  auto listed = f.listing(1);
  EXPECT_EQ(listed["state"], "incomplete") << listed;
  EXPECT_EQ(listed["ended_early"], "closed by the client before its input ended") << listed;
  EXPECT_EQ(listed["input_sets"], 200) << listed;
  const auto summary = json::parse(cli(f.node.endpoint(), "results --stream 1"));
  EXPECT_EQ(summary["state"], "incomplete") << summary;
  EXPECT_EQ(summary["accepted"], 8) << summary;
  EXPECT_EQ(summary["input_sets"], 200) << summary;
  const auto table = cli(f.node.endpoint(), "stream list");
  EXPECT_NE(table.find("incomplete"), std::string::npos) << table;
  EXPECT_NE(table.find("stream 1: closed by the client before its input ended; push the rest with"),
            std::string::npos)
      << table;

  // Resumed while its first sets still wait at the gate: the running stream takes the new client.
  auto resume = f.start("stream push --quiet --resume 1 --input " + f.input.string(), "resume");
  ASSERT_TRUE(
      eventually([&] { return f.listing(1).value("state", "") == "open"; }, std::chrono::seconds(30)));
  fs::remove(f.gate);
  ASSERT_TRUE(resume->wait_exit(std::chrono::seconds(60)));
  EXPECT_EQ(resume->exit_code(), 0) << resume->err();
  EXPECT_EQ(resume->out(),
            "stream 1: 192 parameter sets (after the 8 accepted before), 192 results stored (0 failed)\n");
  EXPECT_NE(resume->err().find("8 of the 200 rows of " + f.input.string() + " were accepted before"),
            std::string::npos)
      << resume->err();
  expect_every_row_once(f.stored(1), 200);
  ASSERT_TRUE(eventually([&] { return f.listing(1).value("state", "") == "finished"; }));
  EXPECT_EQ(f.listing(1)["ended_early"], "");
}

TEST(StreamPush, ATerminatedPushResumesFromTheStoreOnceWhatItAcceptedHasFinished) {
  Fixture f;
  f.write_input(50);
  auto push = f.start_held_push();
  ASSERT_NE(push, nullptr) << "the push never filled its eight sets in flight";
  push->signal(SIGTERM);
  ASSERT_TRUE(push->wait_exit(std::chrono::seconds(20)));
  EXPECT_EQ(push->exit_code(), 128 + SIGTERM) << push->err();
  EXPECT_NE(push->err().find("terminated: stream 1: pushed 8 of the 50 rows"), std::string::npos)
      << push->err();
  // Its accepted sets finish; it stays incomplete.
  fs::remove(f.gate);
  ASSERT_TRUE(eventually([&] { return f.listing(1).value("stored", 0) == 8; }, std::chrono::seconds(30)));
  EXPECT_EQ(f.listing(1)["state"], "incomplete");

  // Another file, or a changed one, is not its input.
  const auto other = f.dir / "other.csv";
  std::ofstream(other) << "x\n1\n2\n";
  int code = 0;
  auto out = run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + f.node.endpoint() +
                             " stream push --quiet --resume 1 --input " + other.string(),
                         code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(other.string() + " (2 parameter sets) is not the input stream 1 was pushed from (" +
                     f.input.string() + ", 50 parameter sets)"),
            std::string::npos)
      << out;
  out =
      run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + f.node.endpoint() +
                      " stream push --quiet --resume 1 --simulation pause_square --input " + f.input.string(),
                  code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("stream 1 runs simulation 'gated', not 'pause_square'"), std::string::npos) << out;

  const auto resumed =
      f.run_cli("stream push --quiet --resume 1 --simulation gated --input " + f.input.string());
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.out,
            "stream 1: 42 parameter sets (after the 8 accepted before), 42 results stored (0 failed)\n");
  expect_every_row_once(f.stored(1), 50);
  EXPECT_EQ(f.listing(1)["state"], "finished");
  // Finished with its whole input: nothing is left to resume.
  out = run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + f.node.endpoint() +
                        " stream push --quiet --resume 1 --input " + f.input.string(),
                    code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("stream 1 has accepted all 50 parameter sets of its input: nothing is left to push"),
            std::string::npos)
      << out;
}

TEST(StreamPush, AKilledPushersStreamIsIncompleteOnceTheNodeFindsItsClientGone) {
  Fixture f;
  f.write_input(40);
  auto push = f.start_held_push();
  ASSERT_NE(push, nullptr) << "the push never filled its eight sets in flight";
  push->signal(SIGKILL);
  ASSERT_TRUE(push->wait_exit(std::chrono::seconds(20)));
  // client_grace is three seconds here.
  ASSERT_TRUE(
      eventually([&] { return f.listing(1).value("state", "") == "incomplete"; }, std::chrono::seconds(30)));
  EXPECT_EQ(f.listing(1)["ended_early"], "its client was lost before its input ended");
  fs::remove(f.gate);
  const auto resumed = f.run_cli("stream push --quiet --resume 1 --input " + f.input.string());
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.out,
            "stream 1: 32 parameter sets (after the 8 accepted before), 32 results stored (0 failed)\n");
  expect_every_row_once(f.stored(1), 40);
}

TEST(StreamPush, AResumeWhileAClientStillPushesTakesTheStreamAndStopsThatClient) {
  Fixture f;
  f.write_input(60);
  auto first = f.start_held_push();
  ASSERT_NE(first, nullptr) << "the push never filled its eight sets in flight";
  auto second = f.start("stream push --quiet --resume 1 --input " + f.input.string(), "second");
  ASSERT_TRUE(first->wait_exit(std::chrono::seconds(20)));
  EXPECT_EQ(first->exit_code(), 1) << first->err();
  EXPECT_NE(first->err().find("stream 1 was resumed by another client"), std::string::npos) << first->err();
  fs::remove(f.gate);
  ASSERT_TRUE(second->wait_exit(std::chrono::seconds(60)));
  EXPECT_EQ(second->exit_code(), 0) << second->err();
  expect_every_row_once(f.stored(1), 60);
}

TEST(StreamPush, CtrlCStopsAnUncheckedPushWaitingForRoom) {
  Fixture f;
  f.write_input(100);
  auto push = f.start_held_push("--no-check");
  ASSERT_NE(push, nullptr) << "the push never filled its eight sets in flight";
  push->signal(SIGINT);
  ASSERT_TRUE(push->wait_exit(std::chrono::seconds(20))) << "a push waiting for room heard Ctrl-C";
  EXPECT_EQ(push->exit_code(), 130) << push->err();
  // Its input's length was never read: closed, not shown as incomplete, and no resume is offered.
  EXPECT_EQ(push->err().find("--resume"), std::string::npos) << push->err();
  fs::remove(f.gate);
}

TEST(StreamPush, CancellingAStreamWhileItIsPushedStopsThePusher) {
  Fixture f;
  f.write_input(100);
  auto push = f.start_held_push();
  ASSERT_NE(push, nullptr) << "the push never filled its eight sets in flight";
  // The held set runs (with as many as the worker took with it); the rest wait: all eight are cancelled.
  const auto said = cli(f.node.endpoint(), "stream cancel --stream 1");
  unsigned queued = 0, running = 0;
  ASSERT_EQ(
      std::sscanf(said.c_str(), "stream 1: cancelled, with %u queued and %u running", &queued, &running), 2)
      << said;
  EXPECT_EQ(queued + running, 8u) << said;
  EXPECT_GE(running, 1u) << said;
  EXPECT_NE(said.find("parameter sets; a client still pushing it is stopped\n"), std::string::npos) << said;
  ASSERT_TRUE(push->wait_exit(std::chrono::seconds(20)));
  EXPECT_EQ(push->exit_code(), 1) << push->err();
  EXPECT_NE(push->err().find("stream 1 was cancelled by a client (tessera stream cancel)"), std::string::npos)
      << push->err();
  EXPECT_NE(push->err().find("pushing stopped: it accepted 8 of the 100 rows"), std::string::npos)
      << push->err();
  const auto listed = f.listing(1);
  EXPECT_EQ(listed["state"], "incomplete") << listed;
  EXPECT_EQ(listed["ended_early"], "cancelled by a client before its input ended") << listed;
  EXPECT_EQ(cli(f.node.endpoint(), "results --stream 1 --where failed --format count"), "8\n");
  fs::remove(f.gate);
  // Cancelled is incomplete too: a resume pushes the rest, and what was cancelled stays so.
  const auto resumed = f.run_cli("stream push --quiet --resume 1 --input " + f.input.string());
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.out,
            "stream 1: 92 parameter sets (after the 8 accepted before), 92 results stored (0 failed)\n");
  expect_every_row_once(f.stored(1), 100);
  EXPECT_EQ(cli(f.node.endpoint(), "results --stream 1 --where failed --format count"), "8\n");
  EXPECT_EQ(f.listing(1)["state"], "finished");
}

TEST(StreamPush, AFileWithABadRowIsRefusedBeforeAnyRowIsPushed) {
  Fixture f;
  {
    std::ofstream out(f.input);
    out << "x\n";
    for (int i = 1; i <= 500; ++i) out << i << "\n";
    out << "oops\n";
  }
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + f.node.endpoint();
  int code = 0;
  auto out =
      run_command(base + " stream push --quiet --simulation pause_square --input " + f.input.string(), code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find(":502"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was pushed"), std::string::npos) << out;
  EXPECT_EQ(cli(f.node.endpoint(), "stream list"), "no streams\n");
  // --no-check pushes as it reads: the rows before the bad one were pushed, and it says so.
  out = run_command(
      base + " stream push --quiet --no-check --simulation pause_square --input " + f.input.string(), code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("the 500 parameter sets before it were pushed"), std::string::npos) << out;
  out = run_command(base + " stream push --quiet --no-check --resume 1 --input " + f.input.string(), code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--resume checks that"), std::string::npos) << out;
}

// Runs `tessera ARGS` on a pseudo-terminal; what it wrote there.
std::string on_a_terminal(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(TESSERA_CLI_BINARY)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int terminal = -1;
  const pid_t pid = forkpty(&terminal, nullptr, nullptr, nullptr);
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::string seen;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(terminal, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child has closed the terminal
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  close(terminal);
  waitpid(pid, nullptr, 0);
  return seen;
}

TEST(StreamPush, TheProgressLineOnATerminalAndAsPlainLines) {
  Fixture f;
  {
    std::ofstream out(f.input);
    out << "x\n";
    for (int i = 0; i < 3000; ++i) out << 100 + i << "\n";  // past 13, which pause_square refuses
  }
  const auto seen =
      on_a_terminal({"--scheduler", f.node.endpoint(), "stream", "push", "--simulation", "pause_square",
                     "--input", f.input.string(), "--simulation-config", "pause_us=1000"});
  // Redrawn in place: a percentage, the count of the total, the rate and the time left.
  EXPECT_NE(seen.find("\rstream 1 ["), std::string::npos) << seen;
  EXPECT_NE(seen.find("/3,000  "), std::string::npos) << seen;
  EXPECT_NE(seen.find("%  "), std::string::npos) << seen;
  EXPECT_NE(seen.find("/s  "), std::string::npos) << seen;
  EXPECT_NE(seen.find(" left"), std::string::npos) << seen;
  EXPECT_NE(seen.find("] 100%  3,000/3,000"), std::string::npos) << seen;
  EXPECT_NE(seen.find("stream 1: 3000 parameter sets, 3000 results stored (0 failed)"), std::string::npos)
      << seen;

  // Not a terminal: whole lines, no carriage return.
  const auto plain =
      tessera::testing::run(std::string(TESSERA_CLI_BINARY) + " --scheduler " + f.node.endpoint() +
                            " stream push --simulation pause_square --input " + f.input.string() +
                            " --simulation-config pause_us=1000");
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.err.find('\r'), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.rfind("stream 2: ", 0), 0u) << plain.err;
  EXPECT_NE(plain.err.find("stream 2: 3,000/3,000 done (100%)"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("3,000/3,000", plain.err.find("3,000/3,000") + 1), std::string::npos)
      << "the totals once:\n"
      << plain.err;
  EXPECT_EQ(plain.err.back(), '\n') << plain.err;
}

}  // namespace
