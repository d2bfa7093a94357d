// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of trip.hpp: each rule's boundaries, on its own and inside a
// breaker.

#include "degrade/trip.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker_test_util.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace {

using namespace breaker_test;  // NOLINT: the shared helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// ---------------------------------------------------------------------------
// Trip rules
// ---------------------------------------------------------------------------

Counts WindowCounts(uint64_t calls, uint64_t failures, uint64_t slow = 0) {
  Counts c;
  c.window_calls = calls;
  c.window_failures = failures;
  c.window_slow_calls = slow;
  return c;
}

TEST(TripRuleTest, FailureRateBoundaries) {
  const trip::Rule rule = trip::FailureRate(0.5, 4);
  EXPECT_FALSE(rule(WindowCounts(3, 3))) << "below minimum_calls";
  EXPECT_TRUE(rule(WindowCounts(4, 2))) << "exactly the rate";
  EXPECT_FALSE(rule(WindowCounts(4, 1)));
  EXPECT_FALSE(rule(WindowCounts(5, 2))) << "0.4";
}

TEST(TripRuleTest, ZeroMinimumCallsStillNeedsOneCall) {
  EXPECT_FALSE(trip::FailureRate(0.0, 0)(WindowCounts(0, 0)));
  EXPECT_TRUE(trip::FailureRate(0.0, 0)(WindowCounts(1, 0)));
  EXPECT_FALSE(trip::SlowCallRate(0.0, 0)(WindowCounts(0, 0)));
  EXPECT_TRUE(trip::SlowCallRate(0.0, 0)(WindowCounts(1, 0)));
}

TEST(TripRuleTest, SlowCallRateBoundaries) {
  const trip::Rule rule = trip::SlowCallRate(0.75, 4);
  EXPECT_FALSE(rule(WindowCounts(3, 0, 3))) << "below minimum_calls";
  EXPECT_TRUE(rule(WindowCounts(4, 0, 3))) << "exactly the rate";
  EXPECT_FALSE(rule(WindowCounts(4, 4, 2))) << "failures are not slow calls";
}

TEST(TripRuleTest, ConsecutiveFailuresTripsAtExactlyN) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "n - 1 failures";
  ASSERT_TRUE(RunOk(b));  // breaks the streak
  EXPECT_EQ(b.counts().consecutive_failures, 0u);
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen) << "n failures in a row";
}

TEST(TripRuleTest, AnyOfTripsWhenTheFirstRuleTrips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip =
      trip::AnyOf(trip::ConsecutiveFailures(3), trip::FailureRate(0.5, 100));
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(TripRuleTest, AnyOfTripsWhenTheSecondRuleTrips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip =
      trip::AnyOf(trip::ConsecutiveFailures(3), trip::FailureRate(0.5, 6));
  Breaker b(s);

  // Alternating: never two failures in a row.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(RunOk(b));
    ASSERT_TRUE(RunFailure(b));
  }
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));  // 3 of 6 failed
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(TripRuleTest, AnyOfDoesNotTripWhenNeitherRuleTrips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip =
      trip::AnyOf(trip::ConsecutiveFailures(3), trip::FailureRate(0.5, 6));
  Breaker b(s);

  // S S F S S F F: at most 2 in a row, 3 of 7 failed.
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.counts().consecutive_failures, 2u);
  EXPECT_EQ(b.counts().window_calls, 7u);
}

TEST(TripRuleTest, AnyOfSkipsEmptyRulesAndAnEmptyListNeverTrips) {
  const trip::Rule with_empty = trip::AnyOf(
      std::vector<trip::Rule>{nullptr, trip::ConsecutiveFailures(2)});
  Counts c;
  c.consecutive_failures = 1;
  EXPECT_FALSE(with_empty(c));
  c.consecutive_failures = 2;
  EXPECT_TRUE(with_empty(c));

  const trip::Rule none = trip::AnyOf(std::vector<trip::Rule>{});
  c.consecutive_failures = 1000;
  EXPECT_FALSE(none(c));
}

}  // namespace
}  // namespace degrade
