// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of breaker_types.hpp: the rates of an empty and a full window, the
// window factories, state names.

#include "degrade/breaker_types.hpp"

#include <cstdint>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace {

TEST(CountsTest, RatesAreZeroForAnEmptyWindowAndExactOtherwise) {
  Counts c;
  EXPECT_EQ(c.failure_rate(), 0.0);
  EXPECT_EQ(c.slow_call_rate(), 0.0);
  c.window_calls = 8;
  c.window_failures = 2;
  c.window_slow_calls = 8;
  EXPECT_EQ(c.failure_rate(), 0.25);
  EXPECT_EQ(c.slow_call_rate(), 1.0);
  // Huge counts keep their ratio.
  c.window_calls = UINT64_MAX;
  c.window_failures = UINT64_MAX;
  EXPECT_EQ(c.failure_rate(), 1.0);
}

TEST(SlidingWindowTest, FactoriesSetKindSizeAndLength) {
  const SlidingWindow none;
  EXPECT_EQ(none.kind, SlidingWindow::Kind::kNone);
  const SlidingWindow count = SlidingWindow::Count(100);
  EXPECT_EQ(count.kind, SlidingWindow::Kind::kCount);
  EXPECT_EQ(count.size, 100u);
  const SlidingWindow time = SlidingWindow::Time(absl::Seconds(10));
  EXPECT_EQ(time.kind, SlidingWindow::Kind::kTime);
  EXPECT_EQ(time.size, 10u);  // buckets by default
  EXPECT_EQ(time.length, absl::Seconds(10));
  EXPECT_EQ(SlidingWindow::Time(absl::Seconds(1), 4).size, 4u);
}

TEST(StateTest, NamesAreGobreakers) {
  EXPECT_EQ(StateName(State::kClosed), "closed");
  EXPECT_EQ(StateName(State::kHalfOpen), "half-open");
  EXPECT_EQ(StateName(State::kOpen), "open");
  EXPECT_EQ(StateName(static_cast<State>(3)), "unknown");
}

TEST(BreakerTotalsTest, StartsAtZero) {
  const BreakerTotals t;
  EXPECT_EQ(t.admitted + t.successes + t.failures + t.exclusions +
                t.slow_calls + t.abandoned + t.stale + t.rejected_open +
                t.rejected_too_many,
            0u);
}

}  // namespace
}  // namespace degrade
