// Python code from C++: ClusterOptions::python_modules imports a module's @tessera.task functions and
// @tessera.simulation classes; C++ calls them by name and streams to them, and they run in the worker's
// interpreter processes (python/tests/worker_code.py, which the pytest suite shares).
#include <gtest/gtest.h>

#include <string>
#include <tessera/tessera.hpp>

#include "actors/python_modules.hpp"

namespace {

using tessera::Value;

bool skip_without_python() {
  return !tessera::python_supported();
}

constexpr const char* kModule = TESSERA_SOURCE_DIR "/python/tests/worker_code.py";

TEST(PythonCode, AModulesTasksAndSimulationsRunByNameFromCpp) {
  if (skip_without_python())
    GTEST_SKIP() << "SKIPPED: this build runs no Python code (TESSERA_PYTHON=OFF): nothing to test";
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2, .python_modules = {kModule}}};
  tessera::Client client{cluster};

  auto squares = client.map_by_name("square", {{Value(std::int64_t{2}), Value(3.5)}});
  EXPECT_EQ(squares[0].result().as_int(), 4);
  EXPECT_DOUBLE_EQ(squares[1].result().as_double(), 12.25);
  try {
    client.submit_by_name("raises_on_seven", {Value(std::int64_t{7})}).result();
    ADD_FAILURE() << "a Python exception did not fail its task";
  } catch (const tessera::TaskFailed& e) {
    EXPECT_NE(std::string(e.what()).find("ValueError: seven is not allowed (got 7)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("worker_code.py"), std::string::npos) << e.what();
  }

  const auto simulations = client.simulations();
  const auto damped = std::find_if(simulations.begin(), simulations.end(),
                                   [](const tessera::SimulationInfo& s) { return s.name == "damped"; });
  ASSERT_NE(damped, simulations.end());
  EXPECT_EQ(damped->parameters, (std::vector<std::string>{"omega", "zeta"}));
  EXPECT_EQ(damped->outputs, (std::vector<std::string>{"amplitude", "phase"}));
  EXPECT_EQ(damped->identity.rfind("python worker_code.Damped source ", 0), 0u) << damped->identity;

  tessera::StreamOptions options;
  options.config.set("scale", Value(10.0));
  auto stream = client.stream("damped", std::move(options));
  for (int i = 0; i < 100; ++i) stream.push(std::vector<double>{double(i), 0.25});
  stream.push(std::vector<double>{-1.0, 0.0});
  stream.close();
  int done = 0;
  for (const auto& r : stream.results()) {
    if (r.id == 100) {
      EXPECT_TRUE(r.failed);
      EXPECT_EQ(r.error.rfind("ArithmeticError: omega -1.0 is negative", 0), 0u) << r.error;
      continue;
    }
    ASSERT_FALSE(r.failed) << r.error;
    const auto values = tessera::result_as<std::vector<double>>(r);
    EXPECT_DOUBLE_EQ(values[0], 10.0 * double(r.id));
    EXPECT_DOUBLE_EQ(values[1], 0.5);
    ++done;
  }
  EXPECT_EQ(done, 100);
  EXPECT_EQ(client.results(stream.id()).where("amplitude > 500").count(), 49u);
}

TEST(PythonCode, AModuleThatFailsToImportIsRefusedNamingItAndTheException) {
  if (skip_without_python())
    GTEST_SKIP() << "SKIPPED: this build runs no Python code (TESSERA_PYTHON=OFF): nothing to test";
  try {
    tessera::LocalCluster cluster{{.python_modules = {TESSERA_SOURCE_DIR "/python/tests/broken_module.py"}}};
    ADD_FAILURE() << "a module that raises at import was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ClusterOptions::python_modules"), std::string::npos) << what;
    EXPECT_NE(what.find("ZeroDivisionError"), std::string::npos) << what;
    EXPECT_NE(what.find("broken_module.py"), std::string::npos) << what;
  }
}

}  // namespace
