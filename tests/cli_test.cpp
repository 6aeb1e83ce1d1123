// The command lines of the real programs, run as processes: `tessera` against a real tessera-node on
// 127.0.0.1 (flags out of range, CSV inputs, unknown streams, a CURVE node reached with keys and refused
// without them), and --help and bad flags for every example and bench program.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/commands.hpp"
#include "support/files.hpp"
#include "support/free_port.hpp"
#include "support/node_process.hpp"
#include "support/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::testing::NodeProcess;
using tessera::testing::Outcome;
using tessera::testing::read_file;
using tessera::testing::run;
using tessera::testing::ScratchDir;

// One shell word: Z85 keys hold characters such as '<', '&' and '!'.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string tessera_cli(const std::string& args) {
  return std::string(TESSERA_CLI_BINARY) + " " + args;
}

std::string plugins() {
  return "[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\", \"" TESSERA_EXAMPLES_PLUGIN "\"]\n";
}

std::string node_config(const std::string& security = "") {
  return "[node]\nname = \"cli\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
         "workers = 1\nthreads_per_worker = 2\n" +
         plugins() + security;
}

::testing::AssertionResult mentions(const Outcome& outcome, const std::string& text) {
  if ((outcome.out + outcome.err).find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' not in the output (exit " << outcome.code
                                       << "):\nstdout: " << outcome.out << "\nstderr: " << outcome.err;
}

// ---- every program answers --help, and refuses what its flags do not accept -----------------------

std::vector<std::string> every_program() {
  std::vector<std::string> programs{TESSERA_CLI_BINARY, TESSERA_EXAMPLE_BINARY, TESSERA_GLM_EXAMPLE,
                                    TESSERA_SVD_EXAMPLE};
  std::istringstream benches(TESSERA_BENCH_BINARIES);
  for (std::string bench; std::getline(benches, bench, '|');)
    if (!bench.empty()) programs.push_back(bench);
  return programs;
}

TEST(CliHelp, EveryProgramAnswersHelpWithExitZero) {
  ScratchDir scratch{"tessera-cli-test"};
  const auto programs = every_program();
  ASSERT_GE(programs.size(), 4u);
  for (const auto& program : programs) {
    const auto outcome = run(program + " --help", scratch.path());
    EXPECT_EQ(outcome.code, 0) << program << ": " << outcome.err;
    EXPECT_NE(outcome.out.find("Usage:"), std::string::npos) << program << ": " << outcome.out;
    const auto unknown = run(program + " --no-such-flag 1", scratch.path());
    EXPECT_EQ(unknown.code, 2) << program << ": " << unknown.out << unknown.err;
    EXPECT_NE(unknown.err.find("--no-such-flag"), std::string::npos) << program << ": " << unknown.err;
  }
  // Every command's help ends with an example of that command.
  for (const std::string command :
       {"stream push", "stream run", "stream cancel", "stream list", "stream drop", "stream", "results",
        "status", "workers", "simulations", "keygen", "checkpoints", "checkpoints list", "checkpoints drop",
        "functions", "map", "slurm"}) {
    const auto outcome = run(tessera_cli(command + " --help"));
    EXPECT_EQ(outcome.code, 0) << command;
    EXPECT_NE(outcome.out.find("Usage: tessera " + command), std::string::npos) << outcome.out;
    const auto example = outcome.out.find("Example:\n  tessera ");
    ASSERT_NE(example, std::string::npos) << command << ":\n" << outcome.out;
    EXPECT_NE(outcome.out.find(" " + command, example), std::string::npos) << command << ":\n" << outcome.out;
  }
  // glm_example's output file is a positional argument: --help is not taken for one.
  EXPECT_TRUE(fs::is_empty(scratch.path()));
}

TEST(CliFlags, NumbersOutOfRangeOrNotNumbersAreRefusedNamingTheFlag) {
  const std::string push = "--scheduler tcp://127.0.0.1:1 stream push --simulation s --input in.csv ";
  const std::string results = "--scheduler tcp://127.0.0.1:1 results ";
  struct Case {
    std::string args, flag, says;
  };
  const std::vector<Case> cases{
      {push + "--pool-size -1", "--pool-size", "expects a non-negative integer from 1 to 1024, not '-1'"},
      {push + "--pool-size 0", "--pool-size", "expects an integer from 1 to 1024, not 0"},
      {push + "--pool-size 1025", "--pool-size", "expects an integer from 1 to 1024"},
      {push + "--pool-size 4294967297", "--pool-size", "from 1 to 1024"},
      {push + "--pool-size abc", "--pool-size", "expects a non-negative integer"},
      {push + "--max-in-flight -1", "--max-in-flight", "expects a non-negative integer"},
      {push + "--max-in-flight 0", "--max-in-flight", "from 1 to 1000000"},
      {push + "--max-in-flight 1000001", "--max-in-flight", "from 1 to 1000000"},
      {push + "--header maybe", "--header", "maybe"},
      {results + "--stream abc", "--stream", "expects a non-negative integer, not 'abc'"},
      {results + "--stream -1", "--stream", "expects a non-negative integer, not '-1'"},
      {results + "--stream 0", "--stream", "at least 1"},
      {results + "--stream 99999999999999999999", "--stream", "99999999999999999999"},
      {results + "--stream 1 --bins -1", "--bins", "expects a non-negative integer from 0 to 1000000"},
      {results + "--stream 1 --bins abc", "--bins", "expects a non-negative integer"},
      {results + "--stream 1 --bins 1000001", "--bins", "from 0 to 1000000"},
      {results + "--stream 1 --format xml", "--format", "xml"},
      {"--timeout -3 status", "--timeout", "expects a number from 0.1 to 3600"},
  };
  for (const auto& c : cases) {
    const auto outcome = run(tessera_cli(c.args));
    EXPECT_EQ(outcome.code, 2) << c.args << "\n" << outcome.err;
    EXPECT_NE(outcome.err.find(c.flag), std::string::npos) << c.args << "\n" << outcome.err;
    EXPECT_NE(outcome.err.find(c.says), std::string::npos) << c.args << "\n" << outcome.err;
    EXPECT_EQ(outcome.err.find("stoul"), std::string::npos) << outcome.err;
  }
  // A huge value is echoed as a bounded excerpt.
  const auto huge = run(tessera_cli(results + "--stream " + std::string(20000, '7') + "x"));
  EXPECT_EQ(huge.code, 2);
  EXPECT_LT(huge.err.size(), 400u) << huge.err.size();
  EXPECT_NE(huge.err.find("..."), std::string::npos) << huge.err;

  const std::vector<std::pair<std::string, std::string>> program_cases{
      {std::string(TESSERA_EXAMPLE_BINARY) + " --sets -1", "--sets"},
      {std::string(TESSERA_EXAMPLE_BINARY) + " --workers 0", "--workers"},
      {std::string(TESSERA_EXAMPLE_BINARY) + " --threads 5000", "--threads"},
      {std::string(TESSERA_EXAMPLE_BINARY) + " --max-sleep nan", "--max-sleep"},
      {std::string(TESSERA_SVD_EXAMPLE) + " --rows abc", "--rows"},
      {std::string(TESSERA_GLM_EXAMPLE) + " one.png two.png", "two.png"},
  };
  for (const auto& [command, flag] : program_cases) {
    const auto outcome = run(command);
    EXPECT_EQ(outcome.code, 2) << command << "\n" << outcome.out << outcome.err;
    EXPECT_NE(outcome.err.find(flag), std::string::npos) << command << "\n" << outcome.err;
  }
  std::istringstream benches(TESSERA_BENCH_BINARIES);
  for (std::string bench; std::getline(benches, bench, '|');) {
    const auto outcome = run(bench + " --repeat -1");
    EXPECT_EQ(outcome.code, 2) << bench << "\n" << outcome.err;
    EXPECT_NE(outcome.err.find("--repeat: expects a non-negative integer"), std::string::npos)
        << bench << "\n"
        << outcome.err;
  }
}

// ---- CSV inputs and queries against a real node --------------------------------------------------

class CliStreams : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { node = std::make_unique<NodeProcess>(node_config()); }
  static void TearDownTestSuite() { node.reset(); }

  Outcome push(const fs::path& input, const std::string& extra = "") const {
    return run(tessera_cli("--scheduler " + node->endpoint() +
                           " stream push --simulation pause_square --quiet --input '" + input.string() +
                           "' " + extra));
  }
  Outcome results(const std::string& args) const {
    return run(tessera_cli("--scheduler " + node->endpoint() + " results " + args));
  }
  static std::string stream_of(const Outcome& pushed) {
    const auto at = pushed.out.find("stream ");
    return at == std::string::npos ? "" : pushed.out.substr(at + 7, pushed.out.find(':', at) - at - 7);
  }

  static std::unique_ptr<NodeProcess> node;
  ScratchDir scratch{"tessera-cli-test"};
};
std::unique_ptr<NodeProcess> CliStreams::node;

TEST_F(CliStreams, AByteOrderMarkIsDroppedAndEveryNumericRowPushed) {
  auto outcome = push(scratch.write("bom.csv",
                                    "\xEF\xBB\xBF"
                                    "1\n2\n3\n"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, ": 3 parameter sets, 3 results stored (0 failed)"));
  EXPECT_EQ(results("--stream " + stream_of(outcome) + " --format count").out, "3\n");

  outcome = push(scratch.write("bom-header.csv", "\xEF\xBB\xBFx\r\n4\r\n5\r\n"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, ": 2 parameter sets, 2 results stored"));
  // Quoted numbers are numbers: the row is pushed, not taken for a header.
  outcome = push(scratch.write("quoted.csv", "\"6\"\n\"+7\"\n"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, ": 2 parameter sets, 2 results stored"));
}

TEST_F(CliStreams, TheHeaderRuleIsExplicit) {
  const auto numbers = scratch.write("numbers.csv", "5\n1\n2\n");
  auto outcome = push(numbers);  // auto: a first row of numbers is data
  EXPECT_TRUE(mentions(outcome, ": 3 parameter sets"));
  outcome = push(numbers, "--header yes");
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, ": 2 parameter sets"));
  outcome = push(scratch.write("named.csv", "x\n1\n"), "--header no");
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(mentions(outcome, "named.csv:1: cell 1 'x' is not a number; nothing was pushed"));
}

TEST_F(CliStreams, AFirstRowOfNumbersWithOneBadCellIsAnErrorNamingLineAndCell) {
  const auto outcome = push(scratch.write("mixed.csv",
                                          "\xEF\xBB\xBF"
                                          "1,2,oops,4\n5,6,7,8\n"));
  EXPECT_EQ(outcome.code, 2) << outcome.out;
  EXPECT_TRUE(
      mentions(outcome, "mixed.csv:1: cell 3 'oops' is not a number, but cell 1 of this first row is"));
  EXPECT_TRUE(mentions(outcome, "--header"));
  EXPECT_TRUE(mentions(outcome, "nothing was pushed"));
  EXPECT_EQ(outcome.out, "");  // no stream was opened
}

TEST_F(CliStreams, EmptyHeaderOnlyAndDirectoryInputsAreRefused) {
  struct Case {
    fs::path input;
    std::string says;
  };
  fs::create_directories(scratch.path() / "folder.csv");
  const std::vector<Case> cases{
      {scratch.write("empty.csv", ""), "empty.csv: no parameter sets (the file is empty)"},
      {scratch.write("blank.csv", "\xEF\xBB\xBF\n  \n\r\n"), "blank.csv: no parameter sets"},
      {scratch.write("header.csv", "a,b\n\n"), "header.csv: only a header (line 1), no parameter sets"},
      {scratch.path() / "folder.csv", "folder.csv is a directory, not a CSV file"},
      {scratch.path() / "missing.csv", "cannot read " + (scratch.path() / "missing.csv").string()},
      {scratch.write("utf16.csv",
                     "\xFF\xFE"
                     "1\0\n\0"),
       "utf16.csv is UTF-16"},
  };
  for (const auto& c : cases) {
    const auto outcome = push(c.input);
    EXPECT_EQ(outcome.code, 2) << c.input;
    EXPECT_TRUE(mentions(outcome, c.says));
    EXPECT_EQ(outcome.out, "") << c.input;
  }
}

TEST_F(CliStreams, EchoedCellsAreCutToABoundedExcerpt) {
  const auto outcome = push(scratch.write("long.csv", "1\n" + std::string(1 << 20, 'z') + "\n"));
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(mentions(
      outcome, "long.csv:2: cell 1 '" + std::string(80, 'z') + "... (1048576 bytes)' is not a number"));
  EXPECT_TRUE(mentions(outcome, "nothing was pushed"));  // the file is read whole first
  EXPECT_LT(outcome.err.size(), 600u);
}

TEST_F(CliStreams, AnUnknownStreamIsAnErrorInEveryFormat) {
  for (const std::string format : {"summary", "count", "csv", "json"}) {
    const auto outcome = results("--stream 999999 --format " + format);
    EXPECT_NE(outcome.code, 0) << format << ": " << outcome.out;
    EXPECT_TRUE(mentions(outcome, "no stream 999999")) << format;
  }
}

TEST_F(CliStreams, LongFiltersAreRefusedOrEchoedBounded) {
  const auto pushed = push(scratch.write("few.csv", "1\n2\n"));
  ASSERT_EQ(pushed.code, 0) << pushed.err;
  const std::string stream = stream_of(pushed);
  auto outcome = results("--stream " + stream + " --where '" + std::string(70000, 'r') + "'");
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(mentions(outcome, "--where: expects at most 65536 characters, not 70000"));
  EXPECT_LT(outcome.err.size(), 400u);
  outcome = results("--stream " + stream + " --where 'result > 1 and " + std::string(60000, '(') + "'");
  EXPECT_NE(outcome.code, 0);
  EXPECT_TRUE(mentions(outcome, "position"));
  EXPECT_LT(outcome.err.size(), 800u);
}

// ---- a CURVE node --------------------------------------------------------------------------------

// ---- what the cluster runs, called by name: the CLI loads no plugin ------------------------------

TEST(CliFunctions, TheCliListsTheNodesFunctionsAndMapsOneOverTheRowsOfACsv) {
  NodeProcess node(
      "[node]\nname = \"cli\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_NODE_ONLY_PLUGIN
      "\"]\n");
  ScratchDir scratch{"tessera-cli-test"};
  const std::string base = "--scheduler " + node.endpoint() + " ";
  auto outcome = run(tessera_cli(base + "functions --json"));
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto listed = nlohmann::json::parse(outcome.out);
  bool found = false;
  for (const auto& f : listed)
    if (f["name"] == "node_only_weighted") {
      found = true;
      EXPECT_EQ(f["argument_types"], nlohmann::json({"vector<double>", "double"}));
      EXPECT_EQ(f["result_type"], "double");
    }
  EXPECT_TRUE(found) << outcome.out;
  EXPECT_TRUE(mentions(run(tessera_cli(base + "functions")), "node_only_cube"));
  // The status, and a check of the node's config, name what may be called and streamed.
  outcome = run(tessera_cli(base + "status"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, "  functions       "));
  EXPECT_TRUE(mentions(outcome, "node_only_cube"));
  EXPECT_TRUE(mentions(outcome, "  simulations     "));
  EXPECT_TRUE(mentions(outcome, "node_only_sum"));
  const auto status = nlohmann::json::parse(run(tessera_cli(base + "status --json")).out);
  EXPECT_NE(std::find(status["simulations"].begin(), status["simulations"].end(), "node_only_sum"),
            status["simulations"].end())
      << status;
  const auto checked =
      scratch.write("checked.toml",
                    "[node]\nname = \"cli\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
                    "[plugins]\npaths = [\"" TESSERA_NODE_ONLY_PLUGIN "\"]\n");
  outcome = run(std::string(TESSERA_NODE_BINARY) + " --check-config --config " + checked.string());
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, "functions registered:"));
  EXPECT_TRUE(mentions(outcome, "node_only_cube"));
  EXPECT_TRUE(mentions(outcome, "simulations registered: "));
  EXPECT_TRUE(mentions(outcome, "node_only_sum"));

  const auto output = scratch.path() / "cubes.csv";
  outcome = run(tessera_cli(base + "map node_only_cube --input '" +
                            scratch.write("xs.csv", "x\n1\n2\n-3\n").string() + "' --output '" +
                            output.string() + "'"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file(output), "id,x,result,error\n0,1,1,\n1,2,8,\n2,-3,-27,\n");
  EXPECT_TRUE(mentions(outcome, "map node_only_cube: 3 tasks, 0 failed"));
  // A cell the argument's type cannot hold is refused before anything runs, naming the line and cell.
  outcome = run(tessera_cli(base + "map node_only_cube --input '" +
                            scratch.write("bad.csv", "1\n2.5\n").string() + "'"));
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(mentions(outcome, "bad.csv:2: cell 1 (2.5) cannot be argument 0 of node_only_cube, a int"));
  outcome = run(
      tessera_cli(base + "map node_only_cube --input '" + scratch.write("two.csv", "1,2\n").string() + "'"));
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(mentions(outcome, "2 values, but node_only_cube takes 1 argument (int)"));
  outcome = run(
      tessera_cli(base + "map no_such_function --input '" + scratch.write("one.csv", "1\n").string() + "'"));
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(mentions(outcome, "the cluster has no task function 'no_such_function'"));
}

struct KeyPair {
  fs::path secret, pub;
  std::string public_key;
};

KeyPair keygen(const ScratchDir& scratch, const std::string& name) {
  const auto outcome = run(tessera_cli("keygen --out " + (scratch.path() / name).string()));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  std::string key;
  std::ifstream(scratch.path() / (name + ".pub")) >> key;
  return {scratch.path() / (name + ".key"), scratch.path() / (name + ".pub"), key};
}

TEST(CliCurve, KeysFromFlagsOrAClientConfigReachACurveNodeAndNoKeysAreRefused) {
  ScratchDir scratch{"tessera-cli-test"};
  const auto node_keys = keygen(scratch, "node"), client = keygen(scratch, "client"),
             stranger = keygen(scratch, "stranger");
  NodeProcess node(node_config("[security]\ncurve = true\npublic_key_file = \"" + node_keys.pub.string() +
                               "\"\nsecret_key_file = \"" + node_keys.secret.string() +
                               "\"\nauthorized_keys = [\"" + client.public_key + "\"]\n"));
  const std::string base = "--scheduler " + node.endpoint() + " ";
  const std::string keys = "--public-key " + client.pub.string() + " --secret-key " + client.secret.string();

  auto outcome =
      run(tessera_cli(base + keys + " --scheduler-key " + quoted(node_keys.public_key) + " status --json"));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, "\"name\":\"cli\""));
  // The scheduler's key from a file, and the options after the command.
  outcome = run(tessera_cli(base + "workers " + keys + " --scheduler-key " + node_keys.pub.string()));
  EXPECT_EQ(outcome.code, 0) << outcome.err;

  // A client config: paths relative to its own folder, run from another folder.
  fs::create_directories(scratch.path() / "conf");
  const auto config = scratch.write("conf/client.toml",
                                    "[security]\npublic_key_file = \"../client.pub\"\nsecret_key_file = "
                                    "\"../client.key\"\nscheduler_public_key = \"" +
                                        node_keys.public_key + "\"\n");
  const auto input = scratch.write("params.csv", "x\n1\n2\n3\n");
  outcome = run(tessera_cli(base + "--client-config " + config.string() +
                            " stream push --simulation pause_square --quiet --input " + input.string()));
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(mentions(outcome, ": 3 parameter sets, 3 results stored"));
  outcome =
      run(tessera_cli(base + "--client-config " + config.string() + " results --stream 1 --format count"));
  EXPECT_EQ(outcome.out, "3\n") << outcome.err;
  outcome =
      run(std::string(TESSERA_EXAMPLE_BINARY) + " --sets 6 --max-sleep 0 --scheduler " + node.endpoint() +
              " --client-config " + config.string() + " --output " + (scratch.path() / "out.csv").string(),
          scratch.path());
  EXPECT_EQ(outcome.code, 0) << outcome.out << outcome.err;

  // Without keys: refused within the timeout, with a hint.
  outcome = run(tessera_cli(base + "--timeout 1 status"));
  EXPECT_EQ(outcome.code, 1) << outcome.out;
  EXPECT_TRUE(mentions(outcome, "--public-key, --secret-key and --scheduler-key"));
  EXPECT_LT(outcome.seconds, 4.0);
  // A key the node was not given: refused the same way.
  outcome = run(tessera_cli(base + "--timeout 1 --public-key " + stranger.pub.string() + " --secret-key " +
                            stranger.secret.string() + " --scheduler-key " + quoted(node_keys.public_key) +
                            " status"));
  EXPECT_EQ(outcome.code, 1) << outcome.out;
  EXPECT_LT(outcome.seconds, 4.0);
  // Nothing listening: said so, and no word of CURVE, which is not why.
  outcome = run(tessera_cli("--scheduler tcp://127.0.0.1:" + std::to_string(tessera::testing::free_port()) +
                            " --timeout 1 status"));
  EXPECT_EQ(outcome.code, 1) << outcome.out;
  EXPECT_TRUE(
      mentions(outcome, "nothing accepted a connection there (is a node listening at that address?)"));
  EXPECT_EQ(outcome.err.find("CURVE"), std::string::npos) << outcome.err;

  // Bad key options are usage errors naming the flag, found before anything connects.
  const auto garbage = scratch.write("garbage.pub", std::string(5000, '\x01'));
  const std::vector<std::pair<std::string, std::string>> bad{
      {"--public-key " + garbage.string() + " --secret-key " + client.secret.string() + " --scheduler-key " +
           quoted(node_keys.public_key),
       "--public-key: " + garbage.string() + " does not hold a CURVE key"},
      {"--public-key " + (scratch.path() / "none.pub").string() + " --secret-key " + client.secret.string() +
           " --scheduler-key " + quoted(node_keys.public_key),
       "--public-key: cannot read"},
      {keys, "--scheduler-key is missing"},
      {keys + " --scheduler-key not-a-key", "--scheduler-key: cannot read not-a-key"},
      {"--public-key " + stranger.pub.string() + " --secret-key " + client.secret.string() +
           " --scheduler-key " + quoted(node_keys.public_key),
       "--public-key does not hold the public key of the --secret-key pair"},
      {"--client-config " + scratch.write("bad.toml", "[security]\npublic_key = 3\n").string(),
       "bad.toml:2: security.public_key is not a client key"},
      {"--client-config " + (scratch.path() / "conf").string(), "is a directory"},
  };
  for (const auto& [args, says] : bad) {
    outcome = run(tessera_cli(base + args + " status"));
    EXPECT_EQ(outcome.code, 2) << args;
    EXPECT_TRUE(mentions(outcome, says));
    EXPECT_LT(outcome.err.size(), 600u);
    EXPECT_LT(outcome.seconds, 2.0);
  }
}

}  // namespace
