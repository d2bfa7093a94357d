// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/thread_start.hpp: a thread that starts, one that cannot (through
// the test seam, as std::thread fails when the process is out of threads),
// and a seam that is removed again.

#include "degrade/detail/thread_start.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/process_defaults.hpp"
#include "support/thread_start_failure.hpp"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::FailThreadStarts;
using ::testing::HasSubstr;

TEST(ThreadStartTest, StartsAThreadRunningTheBody) {
  std::atomic<bool> ran{false};
  absl::StatusOr<std::thread> t = StartThread("test", [&ran] { ran = true; });
  ASSERT_TRUE(t.ok()) << t.status();
  t->join();
  EXPECT_TRUE(ran.load());
}

TEST(ThreadStartTest, AFailedStartIsResourceExhaustedNamingTheOwner) {
  std::atomic<int> ran{0};
  {
    FailThreadStarts fail(2);
    absl::StatusOr<std::thread> first = StartThread("pool", [&ran] { ++ran; });
    absl::StatusOr<std::thread> second =
        StartThread("pool: thread 2", [&ran] { ++ran; });
    ASSERT_TRUE(first.ok()) << first.status();
    first->join();
    EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(second.status().message(),
                HasSubstr("pool: thread 2: cannot start a thread: thread "
                          "start failed by the test"));
    EXPECT_EQ(fail.attempts(), 2);
  }
  EXPECT_EQ(ran.load(), 1);  // the failed one never ran
  // The seam is gone with its holder.
  absl::StatusOr<std::thread> again = StartThread("pool", [&ran] { ++ran; });
  ASSERT_TRUE(again.ok()) << again.status();
  again->join();
  EXPECT_EQ(ran.load(), 2);
}

void ThrowNonStd() { throw 42; }

TEST(ThreadStartTest, AnyThrowFromTheStartIsCaught) {
  absl::StatusOr<std::thread> t = [] {
    const ::degrade_tests::ThreadStartHookGuard hook(&ThrowNonStd);
    return StartThread("w", [] {});
  }();
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t.status().message(),
              HasSubstr("not derived from std::exception"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
