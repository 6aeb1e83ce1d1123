// Process isolation forks the multithreaded worker without exec. glibc's malloc takes its locks across a
// fork, but the allocators of GCC 12's sanitizers do not: a child forked while another thread holds their
// lock waits for ever (seen under AddressSanitizer, and under ThreadSanitizer in a child blocked in
// calloc from Cap'n Proto's MallocMessageBuilder). Until simulation processes come from a fork server
// started before the worker's threads, tests of process isolation cannot run under either sanitizer.
#pragma once

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SKIP_UNLESS_FORK_IS_SAFE()                                                                          \
  GTEST_SKIP() << "process isolation forks a multithreaded process, which deadlocks in GCC 12's sanitizer " \
                  "allocators; this test runs in the plain build"
#else
#define SKIP_UNLESS_FORK_IS_SAFE() static_cast<void>(0)
#endif
