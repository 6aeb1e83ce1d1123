// Tessera as a package: `cmake --install` into a temporary prefix, the prefix moved elsewhere (it must be
// relocatable), examples/out_of_tree built against the moved copy with find_package(Tessera) and
// tessera_add_plugin, the installed tessera-node loading that plugin, and 1,000 sets streamed through its
// simulation by the installed `tessera` program, each result checked; its task function called by name.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tessera/tessera.hpp>

#include "support/node_process.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

// Under a sanitizer, a program built without it (Debian's python3, the out-of-tree programs) must preload
// its runtime to load the sanitized libraries.
std::string sanitizer_environment() {
  const std::string preload = TESSERA_SANITIZER_PRELOAD;
  return preload.empty() ? std::string() : "LD_PRELOAD=" + preload + " ASAN_OPTIONS=detect_leaks=0 ";
}

// Runs a command that must succeed; its output.
std::string must_run(const std::string& command) {
  int code = 0;
  auto out = run_command(command, code);
  EXPECT_EQ(code, 0) << command << "\n" << out;
  return out;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, separator)) cells.push_back(cell);
  if (!line.empty() && line.back() == separator) cells.emplace_back();
  return cells;
}

double closed_form(double initial, double ambient, double k, double t) {
  return ambient + (initial - ambient) * std::exp(-k * t);
}

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = fs::temp_directory_path() / ("tessera-install-test-" + std::to_string(getpid()));
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  void TearDown() override { fs::remove_all(work_); }
  fs::path work_;
};

TEST_F(InstallTest, AnOutOfTreePluginBuiltAgainstAMovedInstallRunsOnTheInstalledNode) {
  const std::string cmake = TESSERA_CMAKE_COMMAND;
  const fs::path installed = work_ / "installed", moved = work_ / "moved";
  must_run(cmake + " --install " + quoted(TESSERA_BUILD_DIR) + " --prefix " + quoted(installed));
  // Relocatable: nothing in the package may name the prefix it was installed to.
  fs::rename(installed, moved);
  for (const char* file :
       {"bin/tessera-node", "bin/tessera", "include/tessera-0.1/tessera/tessera.hpp",
        "include/tessera-0.1/graph/value.hpp", "lib/cmake/Tessera/TesseraConfig.cmake",
        "lib/cmake/Tessera/TesseraConfigVersion.cmake", "lib/cmake/Tessera/TesseraTargets.cmake",
        "lib/cmake/Tessera/TesseraPlugin.cmake", "lib/pkgconfig/tessera-plugin.pc",
        "lib/pkgconfig/tessera.pc", "lib/libtessera.so", "lib/libtessera.so.0.1", "lib/libtessera_graph.so",
        "lib/libtessera_actors.so.0.1"})
    EXPECT_TRUE(fs::exists(moved / file)) << file << " is not installed";
#ifdef TESSERA_PYTHON_EXECUTABLE  // a build without the Python client (TESSERA_PYTHON=OFF) installs none
  EXPECT_TRUE(fs::exists(moved / "lib/python3/dist-packages/tessera/__init__.py"))
      << "the Python client is not installed";
#endif
  // The public headers compile from the installed copy alone: no header of the runtime is needed.
  EXPECT_FALSE(fs::exists(moved / "include/tessera-0.1/actors")) << "the runtime's headers are installed";

  const fs::path project_build = work_ / "cooling-build";
  must_run(cmake + " -S " + quoted(fs::path(TESSERA_SOURCE_DIR) / "examples/out_of_tree") + " -B " +
           quoted(project_build) + " -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=" +
           TESSERA_CXX_COMPILER + " -DCMAKE_PREFIX_PATH=" + quoted(moved));
  must_run(cmake + " --build " + quoted(project_build));
  const fs::path plugin = project_build / "libcooling.so";
  ASSERT_TRUE(fs::exists(plugin)) << "the out-of-tree build made no " << plugin;

  // A program of one's own on the installed client library (Tessera::tessera), run from the moved prefix.
  const auto swept = must_run(sanitizer_environment() + quoted(project_build / "cooling_sweep") + " " +
                              quoted(plugin) + " 200");
  EXPECT_EQ(swept.rfind("cooling_sweep: 200 results", 0), 0u) << swept;
  // The same program built without CMake, by pkg-config's flags for the client library (from the moved
  // prefix), and run.
  const fs::path by_pkg_config = work_ / "cooling_sweep_pkg_config";
  must_run(std::string(TESSERA_CXX_COMPILER) + " -O1 " +
           quoted(fs::path(TESSERA_SOURCE_DIR) / "examples/out_of_tree/cooling_sweep.cpp") + " -o " +
           quoted(by_pkg_config) + " $(PKG_CONFIG_PATH=" + quoted(moved / "lib/pkgconfig") +
           " pkg-config --cflags --libs tessera)");
  const auto swept_again =
      must_run(sanitizer_environment() + quoted(by_pkg_config) + " " + quoted(plugin) + " 50");
  EXPECT_EQ(swept_again.rfind("cooling_sweep: 50 results", 0), 0u) << swept_again;
#ifdef TESSERA_PYTHON_EXECUTABLE
  // The installed Python package, from the moved prefix: the cooling plugin streamed through a LocalCluster.
  const auto python =
      must_run(sanitizer_environment() + "PYTHONPATH=" + quoted(moved / "lib/python3/dist-packages") + " " +
               TESSERA_PYTHON_EXECUTABLE +
               " -c \"import tessera, numpy as np\n"
               "c = tessera.LocalCluster(workers=1, threads_per_worker=2, plugins=['" +
               plugin.string() +
               "'])\n"
               "client = tessera.Client(c)\n"
               "s = client.stream('cooling', config={'dt': 1e-3})\n"
               "s.push_many(np.array([[80.0, 20.0, 0.1, 5.0]] * 50)); s.close()\n"
               "v = [r.value for r in s]\n"
               "print(len(v), max(abs(x - (20 + 60 * np.exp(-0.5))) for x in v) < 5e-3, tessera.__file__)\"");
  EXPECT_EQ(python.rfind("50 True " + (moved / "lib/python3/dist-packages/tessera").string(), 0), 0u)
      << python;
#endif

  NodeProcess node(
      "[node]\nname = \"cooling\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" +
          plugin.string() + "\"]\n",
      true, (moved / "bin/tessera-node").string());

  constexpr int kSets = 1000;
  const fs::path params = work_ / "params.csv", results = work_ / "results.csv";
  std::map<int, std::vector<double>> pushed;
  {
    std::ofstream out(params);
    out << "initial,ambient,k,t\n";
    for (int i = 0; i < kSets; ++i) {
      const std::vector<double> p{60.0 + i % 50, 20.0, 0.05 + 0.001 * (i % 100), 0.5 * (i % 20)};
      pushed[i] = p;
      out << p[0] << "," << p[1] << "," << p[2] << "," << p[3] << "\n";
    }
  }
  const std::string cli = quoted(moved / "bin/tessera") + " --scheduler " + node.endpoint();
  const auto said = must_run(cli + " stream push --simulation cooling --quiet --input " + quoted(params) +
                             " --output " + quoted(results));
  EXPECT_EQ(said.rfind("stream 1: 1000 parameter sets, 1000 results stored (0 failed)", 0), 0u) << said;

  std::ifstream in(results);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto header = split(line, ',');
  std::map<std::string, std::size_t> column;
  for (std::size_t c = 0; c < header.size(); ++c) column[header[c]] = c;
  for (const char* name : {"id", "initial", "ambient", "k", "t", "result", "status"})
    ASSERT_TRUE(column.count(name)) << "no column " << name << " in " << line;
  std::vector<int> seen(kSets, 0);
  while (std::getline(in, line)) {
    const auto cells = split(line, ',');
    const int id = std::stoi(cells[column["id"]]);
    ASSERT_TRUE(id >= 0 && id < kSets) << line;
    ++seen[static_cast<std::size_t>(id)];
    EXPECT_EQ(cells[column["status"]], "ok") << line;
    const auto& p = pushed[id];
    EXPECT_DOUBLE_EQ(std::stod(cells[column["k"]]), p[2]) << line;
    // Euler steps of 1 ms: off by about dt/2 k^2 t (T0 - ambient) e^(-kt), under 2.5e-3 here.
    EXPECT_NEAR(std::stod(cells[column["result"]]), closed_form(p[0], p[1], p[2], p[3]), 5e-3) << line;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kSets) << "every id exactly once";

  // The plugin's task function, by the name it registered, from a client of the installed node. A client
  // sends a function it knows: this one loads the plugin as well (its symbols resolve from this program).
  ASSERT_NE(dlopen(plugin.c_str(), RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  tessera::Client client{node.endpoint()};
  auto exact = client.submit_by_name("cooling_exact", {tessera::to_value(90.0), tessera::to_value(20.0),
                                                       tessera::to_value(0.1), tessera::to_value(10.0)});
  EXPECT_NEAR(tessera::from_value<double>(exact.result()), closed_form(90, 20, 0.1, 10), 1e-12);
  EXPECT_THROW(client.submit_by_name("no_such_function", {}), tessera::SubmissionError);
}

// The version file: the same minor version matches, another does not, and the error names the version.
TEST_F(InstallTest, TheVersionFileAcceptsTheSameMinorVersionOnly) {
  const std::string cmake = TESSERA_CMAKE_COMMAND;
  const fs::path prefix = work_ / "prefix";
  must_run(cmake + " --install " + quoted(TESSERA_BUILD_DIR) + " --prefix " + quoted(prefix));
  const auto probe = [&](const std::string& version, int& code) {
    const fs::path dir = work_ / ("probe-" + version);
    fs::create_directories(dir);
    std::ofstream(dir / "CMakeLists.txt") << "cmake_minimum_required(VERSION 3.25)\nproject(probe NONE)\n"
                                             "find_package(Tessera "
                                          << version << " REQUIRED)\n";
    return run_command(cmake + " -S " + quoted(dir) + " -B " + quoted(dir / "build") +
                           " -DCMAKE_PREFIX_PATH=" + quoted(prefix),
                       code);
  };
  int code = 0;
  auto out = probe("0.1", code);
  EXPECT_EQ(code, 0) << out;
  out = probe("0.2", code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("0.1.0"), std::string::npos) << "the refusal names the version found:\n" << out;
}

// The Debian package: cpack -G DEB, its control fields and contents read back with dpkg-deb, and the
// programs run from an extracted copy (a node, and `tessera status` against it).
TEST_F(InstallTest, TheDebianPackageDeclaresItsDependenciesAndItsProgramsRun) {
  const fs::path packages = work_ / "packages";
  must_run(std::string(TESSERA_CPACK_COMMAND) + " -G DEB --config " +
           quoted(fs::path(TESSERA_BUILD_DIR) / "CPackConfig.cmake") + " -B " + quoted(packages));
  fs::path deb;
  for (const auto& entry : fs::directory_iterator(packages))
    if (entry.path().extension() == ".deb") deb = entry.path();
  ASSERT_FALSE(deb.empty()) << "cpack made no .deb in " << packages;
  EXPECT_EQ(deb.filename().string().rfind("tessera_0.1.0_", 0), 0u) << deb;

  const auto info = must_run("dpkg-deb --info " + quoted(deb));
  EXPECT_NE(info.find("Package: tessera\n"), std::string::npos) << info;
  EXPECT_NE(info.find("Version: 0.1.0\n"), std::string::npos) << info;
  const auto depends_at = info.find(" Depends: ");
  ASSERT_NE(depends_at, std::string::npos) << info;
  const auto depends = info.substr(depends_at, info.find('\n', depends_at) - depends_at);
  // From dpkg-shlibdeps on the programs, and Eigen for plugins.
  for (const char* dependency :
       {"libcaf-core", "libzmq5", "libcapnp", "librocksdb", "libopenblas", "libeigen3-dev"})
    EXPECT_NE(depends.find(dependency), std::string::npos) << dependency << " missing from" << depends;

  const auto contents = must_run("dpkg-deb --contents " + quoted(deb));
  for (const char* file :
       {"./usr/bin/tessera-node", "./usr/bin/tessera", "./usr/include/tessera-0.1/tessera/tessera.hpp",
        "./usr/lib/cmake/Tessera/TesseraConfig.cmake", "./usr/lib/pkgconfig/tessera-plugin.pc",
        "./usr/lib/pkgconfig/tessera.pc", "./usr/lib/libtessera.so.0.1.0",
        "./usr/lib/libtessera_graph.so.0.1.0"})
    EXPECT_NE(contents.find(std::string(file) + "\n"), std::string::npos) << file << " is not in the package";

#ifdef TESSERA_PYTHON_EXECUTABLE
  EXPECT_NE(depends.find("python3-numpy"), std::string::npos) << depends;
  EXPECT_NE(contents.find("./usr/lib/python3/dist-packages/tessera/__init__.py\n"), std::string::npos)
      << contents;
#endif

  const fs::path root = work_ / "root";
  must_run("dpkg-deb -x " + quoted(deb) + " " + quoted(root));
  NodeProcess node(
      "[node]\nname = \"packaged\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 2\nthreads_per_worker = 1\n",
      true, (root / "usr/bin/tessera-node").string());
  const auto status =
      must_run(quoted(root / "usr/bin/tessera") + " --scheduler " + node.endpoint() + " status --json");
  EXPECT_NE(status.find("\"workers\":2"), std::string::npos) << status;
}

}  // namespace
