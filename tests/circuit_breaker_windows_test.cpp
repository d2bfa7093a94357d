// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of the breaker's sliding windows (count and time based) and slow
// calls. No test sleeps: every breaker reads a FakeClock.

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
namespace DEGRADE_TEST_UNIT {

using namespace breaker_test;  // NOLINT: the shared helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// ---------------------------------------------------------------------------
// Count-based window
// ---------------------------------------------------------------------------

TEST(CountWindowTest, KeepsOnlyTheLastNCompletedCalls) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  Breaker b(s);

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunFailure(b));
  Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 3u);
  EXPECT_EQ(c.window_failures, 3u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 1.0);

  ASSERT_TRUE(RunOk(b));  // window: F F F S
  c = b.counts();
  EXPECT_EQ(c.window_calls, 4u);
  EXPECT_EQ(c.window_failures, 3u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.75);

  ASSERT_TRUE(RunOk(b));  // window: F F S S (the first failure dropped out)
  c = b.counts();
  EXPECT_EQ(c.window_calls, 4u);
  EXPECT_EQ(c.window_failures, 2u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.5);

  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));  // window: S S S S
  c = b.counts();
  EXPECT_EQ(c.window_calls, 4u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.0);
  // The generation's counts are not windowed.
  EXPECT_EQ(c.total_failures, 3u);
  EXPECT_EQ(c.total_successes, 4u);
}

TEST(CountWindowTest, EmptyWindowHasZeroFailureRate) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  Breaker b(s);
  const Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 0u);
  EXPECT_EQ(c.failure_rate(), 0.0);
  EXPECT_EQ(c.slow_call_rate(), 0.0);
}

TEST(CountWindowTest, FailureRateDoesNotTripBelowMinimumCalls) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(10);
  s.ready_to_trip = trip::FailureRate(0.5, 4);
  Breaker b(s);

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "3 calls at 100% is below 4 calls";
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 1.0);

  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen) << "the 4th call reaches minimum_calls";
}

TEST(CountWindowTest, FailureRateTripsExactlyWhenTheRateReachesTheThreshold) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  s.ready_to_trip = trip::FailureRate(0.5, 4);
  Breaker b(s);

  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));  // window: S F S S = 0.25
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 0.25);

  ASSERT_TRUE(RunFailure(b));  // window: F S S F = 0.5, exactly the threshold
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(CountWindowTest, FailureRateBelowTheThresholdDoesNotTrip) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(5);
  s.ready_to_trip = trip::FailureRate(0.5, 4);
  Breaker b(s);

  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));  // window: S S S F F = 0.4
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 0.4);

  ASSERT_TRUE(RunFailure(b));  // window: S S F F F = 0.6
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(CountWindowTest, IsClearedOnEveryTransition) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  s.ready_to_trip = trip::FailureRate(0.5, 4);
  s.max_requests = 1;
  Breaker b(s);

  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.counts().window_calls, 0u) << "cleared on closed -> open";

  clock.Advance(kTimeout + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);
  EXPECT_EQ(b.counts().window_calls, 0u) << "cleared on open -> half-open";

  ASSERT_TRUE(RunOk(b));  // the trial succeeds
  ASSERT_EQ(b.state(), State::kClosed);
  Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 0u) << "cleared on half-open -> closed";
  EXPECT_EQ(c.failure_rate(), 0.0);

  // The rate starts from empty: had the trial's success stayed in the window,
  // S F F F (0.75 over 4 calls) would trip on the third failure.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunFailure(b));
  c = b.counts();
  EXPECT_EQ(c.window_calls, 3u);
  EXPECT_EQ(c.window_failures, 3u);
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

// ---------------------------------------------------------------------------
// Time-based window
// ---------------------------------------------------------------------------

TEST(TimeWindowTest, CallsDropOutBucketByBucket) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);  // 1 s buckets
  Breaker b(s);
  const absl::Time t0 = clock.Now();

  ASSERT_TRUE(RunFailure(b));  // bucket [t0, t0+1s)
  clock.Set(t0 + absl::Seconds(1));
  ASSERT_TRUE(RunOk(b));  // bucket [t0+1s, t0+2s)
  clock.Set(t0 + absl::Seconds(2));
  ASSERT_TRUE(RunOk(b));  // bucket [t0+2s, t0+3s)

  clock.Set(t0 + absl::Seconds(10) - kNs);
  Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 3u);
  EXPECT_EQ(c.window_failures, 1u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 1.0 / 3.0);

  clock.Set(t0 + absl::Seconds(10));  // the first bucket drops out
  c = b.counts();
  EXPECT_EQ(c.window_calls, 2u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_EQ(c.failure_rate(), 0.0);
  // Issue 14: with a time window all of Counts roll, as gobreaker v2's
  // rolling counts do (this said "not windowed" before).
  EXPECT_EQ(c.total_failures, 0u) << "the generation's counts roll too";
  EXPECT_EQ(c.total_successes, 2u);
  EXPECT_EQ(c.requests, 2u);

  clock.Set(t0 + absl::Seconds(11) - kNs);
  EXPECT_EQ(b.counts().window_calls, 2u);
  clock.Set(t0 + absl::Seconds(11));
  EXPECT_EQ(b.counts().window_calls, 1u);
  clock.Set(t0 + absl::Seconds(12) - kNs);
  EXPECT_EQ(b.counts().window_calls, 1u);
  clock.Set(t0 + absl::Seconds(12));
  EXPECT_EQ(b.counts().window_calls, 0u);
}

TEST(TimeWindowTest, OldestBucketDropsOutWhole) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  Breaker b(s);
  const absl::Time t0 = clock.Now();

  // Admitted at the very end of the first bucket: it leaves with that bucket,
  // 9 s + 1 ns later (the window spans between length - length/buckets and
  // length).
  clock.Set(t0 + absl::Seconds(1) - kNs);
  ASSERT_TRUE(RunFailure(b));
  clock.Set(t0 + absl::Seconds(10) - kNs);
  EXPECT_EQ(b.counts().window_failures, 1u);
  clock.Set(t0 + absl::Seconds(10));
  EXPECT_EQ(b.counts().window_failures, 0u);
  EXPECT_EQ(b.counts().window_calls, 0u);
}

TEST(TimeWindowTest, FailureRateIsComputedOverTheTimeWindow) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  s.ready_to_trip = trip::FailureRate(0.5, 3);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "2 calls are below minimum_calls";

  clock.Advance(absl::Seconds(10));  // both failures leave the window
  EXPECT_EQ(b.counts().window_calls, 0u);
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  // 1 failure in 3 calls; counting the expired failures it would be 3 in 5.
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 1.0 / 3.0);

  ASSERT_TRUE(RunFailure(b));  // 2 in 4
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(TimeWindowTest, CallsArePlacedByAdmissionTime) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  Breaker b(s);
  const absl::Time t0 = clock.Now();

  absl::StatusOr<Permit> permit = b.Allow();
  ASSERT_TRUE(permit.ok()) << permit.status();
  clock.Set(t0 + absl::Seconds(5));
  permit->Done(Failure());
  EXPECT_EQ(b.counts().window_failures, 1u);

  clock.Set(t0 + absl::Seconds(10) - kNs);
  EXPECT_EQ(b.counts().window_failures, 1u);
  // Placed at its completion (t0+5s) it would stay until t0+15s.
  clock.Set(t0 + absl::Seconds(10));
  EXPECT_EQ(b.counts().window_failures, 0u);
  EXPECT_EQ(b.counts().window_calls, 0u);
}

TEST(TimeWindowTest, IsClearedOnTransitions) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  s.ready_to_trip = trip::FailureRate(0.5, 2);
  s.max_requests = 1;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.counts().window_calls, 0u);
  clock.Advance(kTimeout + kNs);  // still well inside the 10 s window
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.counts().window_calls, 0u);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "1 call is below minimum_calls";
}

// ---------------------------------------------------------------------------
// Slow calls
// ---------------------------------------------------------------------------

constexpr absl::Duration kSlow = absl::Milliseconds(100);

TEST(SlowCallTest, SuccessLongerThanTheThresholdIsSlow) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(10);
  s.slow_call_duration = kSlow;
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));
  const Counts c = b.counts();
  EXPECT_EQ(c.window_slow_calls, 1u);
  EXPECT_EQ(c.window_calls, 1u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_EQ(c.total_successes, 1u) << "a slow success is still a success";
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_DOUBLE_EQ(c.slow_call_rate(), 1.0);
  EXPECT_EQ(b.totals().slow_calls, 1u);
  EXPECT_EQ(b.totals().successes, 1u);
}

TEST(SlowCallTest, CallTakingExactlyTheThresholdIsNotSlow) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(10);
  s.slow_call_duration = kSlow;
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, kSlow));
  EXPECT_EQ(b.counts().window_slow_calls, 0u);
  EXPECT_EQ(b.counts().window_calls, 1u);
  EXPECT_EQ(b.totals().slow_calls, 0u);
  EXPECT_EQ(b.counts().slow_call_rate(), 0.0);
}

TEST(SlowCallTest, SlowFailureCountsAsSlowAndAsFailure) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.slow_call_duration = kSlow;  // no window: the whole generation
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs, Failure()));
  const Counts c = b.counts();
  EXPECT_EQ(c.window_slow_calls, 1u);
  EXPECT_EQ(c.window_failures, 1u);
  EXPECT_EQ(c.window_calls, 1u);
  EXPECT_EQ(b.totals().slow_calls, 1u);
  EXPECT_EQ(b.totals().failures, 1u);
}

TEST(SlowCallTest, SlowCallRateTripsFromSlowSuccessesAlone) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  s.slow_call_duration = kSlow;
  s.ready_to_trip = trip::SlowCallRate(0.75, 4);
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));
  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));
  EXPECT_EQ(b.state(), State::kClosed) << "2 slow calls are below 4 calls";
  ASSERT_TRUE(RunTaking(b, clock, kSlow));  // not slow
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_DOUBLE_EQ(b.counts().slow_call_rate(), 2.0 / 3.0);

  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));  // 3 slow of 4 = 0.75
  EXPECT_EQ(b.state(), State::kOpen);
  const BreakerTotals t = b.totals();
  EXPECT_EQ(t.failures, 0u);
  EXPECT_EQ(t.successes, 4u);
  EXPECT_EQ(t.slow_calls, 3u);
}

TEST(SlowCallTest, SlowCallRateBelowTheThresholdDoesNotTrip) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(4);
  s.slow_call_duration = kSlow;
  s.ready_to_trip = trip::SlowCallRate(0.75, 4);
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, kSlow));
  ASSERT_TRUE(RunTaking(b, clock, kSlow));
  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));
  ASSERT_TRUE(RunTaking(b, clock, kSlow + kNs));  // 2 slow of 4 = 0.5
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_DOUBLE_EQ(b.counts().slow_call_rate(), 0.5);
}

TEST(SlowCallTest, ZeroThresholdTracksNoSlowCalls) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::SlowCallRate(0.5, 1);
  Breaker b(s);

  ASSERT_TRUE(RunTaking(b, clock, absl::Hours(1)));
  EXPECT_EQ(b.totals().slow_calls, 0u);
  EXPECT_EQ(b.counts().window_slow_calls, 0u);
  EXPECT_EQ(b.state(), State::kClosed);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
