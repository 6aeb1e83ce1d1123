// The named-function registry: lookup by name and by pointer, signatures, and clear errors.
#include <gtest/gtest.h>

#include <tessera/tessera.hpp>

namespace {

double weighted(const std::vector<double>& xs, double w) {
  return xs.empty() ? 0 : xs.front() * w;
}
TESSERA_TASK(weighted);

TEST(Registry, FindsByNameAndPointer) {
  const auto* by_name = tessera::Registry::global().find("weighted");
  ASSERT_NE(by_name, nullptr);
  EXPECT_EQ(by_name->signature(), "weighted(vector<double>, double) -> double");
  EXPECT_EQ(tessera::Registry::global().find_by_identity(reinterpret_cast<std::uintptr_t>(&weighted)),
            by_name);
  std::vector<tessera::Value> args{tessera::Value(std::vector<double>{2.0}), tessera::Value(3.0)};
  EXPECT_DOUBLE_EQ(by_name->invoke(args).as_double(), 6.0);
}

TEST(Registry, LambdasRegisterWithAHandle) {
  auto square = tessera::register_task("registry_test.square", [](std::int64_t x) { return x * x; });
  EXPECT_EQ(square.function->name, "registry_test.square");
  std::vector<tessera::Value> args{tessera::Value(std::int64_t{7})};
  EXPECT_EQ(square.function->invoke(args).as_int(), 49);
}

TEST(Registry, UnknownNameIsAClearError) {
  try {
    tessera::Registry::global().get("no_such_function");
    FAIL();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown task function 'no_such_function'"), std::string::npos);
  }
}

TEST(Registry, ANameCannotBeTakenTwice) {
  tessera::register_task("registry_test.once", [](std::int64_t x) { return x; });
  EXPECT_THROW(tessera::register_task("registry_test.once", [](double x) { return x; }),
               tessera::SubmissionError);
}

TEST(Registry, WrongArgumentTypeAtInvokeNamesTheArgument) {
  const auto& fn = tessera::Registry::global().get("weighted");
  std::vector<tessera::Value> args{tessera::Value(std::string("x")), tessera::Value(1.0)};
  try {
    fn.invoke(args);
    FAIL();
  } catch (const tessera::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("weighted: argument 0 expects vector<double>"), std::string::npos)
        << e.what();
  }
}

TEST(Registry, UnregisteredFunctionPointerIsRejectedAtSubmission) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto unregistered = +[](std::int64_t x) { return x; };
  EXPECT_THROW(client.submit(unregistered, 1), tessera::SubmissionError);
}

}  // namespace
