// Asserting that a call fails with a given error type whose message names what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace tessera::testing {

// `make` throws an Error whose message contains `expected`.
template <class Error, class F>
void expect_error(F&& make, const std::string& expected) {
  try {
    make();
    ADD_FAILURE() << "no error; expected one mentioning '" << expected << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

}  // namespace tessera::testing
