// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Resource exhaustion: every component that starts threads, made to fail
// at each of its thread starts through the seam of detail/thread_start.hpp
// (tests/support/thread_start_failure.hpp), as the system fails them when
// the process is out of threads or address space (`ulimit -v`). None may
// end the process; each reports RESOURCE_EXHAUSTED naming itself, keeps
// what it was serving, and works when started again.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/thread_start_failure.hpp"

namespace degrade {
namespace {

using ::degrade_tests::FailThreadStarts;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ResourceExhaustionTest, ThreadPoolThatCannotStartAThreadJoinsTheOthers) {
  // Before the fix: the third start threw with two threads joinable, and
  // their destruction during the unwinding called std::terminate.
  for (int k = 1; k <= 5; ++k) {
    SCOPED_TRACE(k);
    FailThreadStarts fail(k);
    ThreadPool pool(5);
    EXPECT_EQ(fail.attempts(), k);  // nothing started after the failure
    EXPECT_EQ(pool.threads(), 0u);
    EXPECT_EQ(pool.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(pool.status().message(),
                AllOf(HasSubstr(absl::StrCat("ThreadPool: thread ", k, " of 5")),
                      HasSubstr("cannot start a thread"),
                      HasSubstr("thread start failed by the test")));
    EXPECT_FALSE(pool.Submit([] {}));
    absl::StatusOr<int> r =
        CallWithTimeout(pool, absl::InfiniteDuration(), [] { return 1; });
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  }
}

TEST(ResourceExhaustionTest, ThreadPoolCreateReturnsTheFailureAndThenWorks) {
  {
    FailThreadStarts fail(2);
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(3);
    ASSERT_FALSE(pool.ok());
    EXPECT_EQ(pool.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(pool.status().message(), HasSubstr("thread 2 of 3"));
  }
  // The system has threads again: the same call succeeds.
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(3);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_TRUE((*pool)->status().ok());
  EXPECT_EQ((*pool)->threads(), 3u);
  absl::StatusOr<int> r =
      CallWithTimeout(**pool, absl::InfiniteDuration(), [] { return 7; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 7);
}

}  // namespace
}  // namespace degrade
