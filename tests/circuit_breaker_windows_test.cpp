// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of the circuit breaker's features beyond gobreaker: sliding windows,
// slow calls, trip rules, backoff and jitter of the open duration, the
// half-open maximum wait, manual control, exclusions, settings validation and
// user callbacks that throw. No test sleeps: every breaker reads a FakeClock.

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
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {

// Readable failure messages for states (found by argument-dependent lookup).
static void PrintTo(State s, std::ostream* os) { *os << StateName(s); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Breaker = CircuitBreaker<void>;

constexpr absl::Duration kTimeout = absl::Seconds(1);
constexpr absl::Duration kNs = absl::Nanoseconds(1);

// A FakeClock instant that is a whole number of seconds since the Unix
// epoch, so second-wide time-window buckets begin exactly at it.
const absl::Time kAlignedStart = absl::FromUnixSeconds(1'700'000'000);

absl::Status Failure() { return absl::UnavailableError("backend down"); }
absl::Status ClientError() { return absl::InvalidArgumentError("bad query"); }

bool NeverTrip(const Counts&) { return false; }

// Settings on `clock` with a 1 s open timeout and a rule that never trips;
// tests replace what they exercise.
BreakerSettings TestSettings(const FakeClock* clock,
                             std::string name = "windows-test") {
  BreakerSettings s;
  s.name = std::move(name);
  s.clock = clock;
  s.timeout = kTimeout;
  s.ready_to_trip = NeverTrip;
  return s;
}

// Records on_state_change events.
struct Transitions {
  std::vector<std::pair<State, State>> events;
  void AttachTo(BreakerSettings& s) {
    s.on_state_change = [this](const std::string&, State from, State to) {
      events.emplace_back(from, to);
    };
  }
};

// Runs a call returning `outcome`; returns whether the breaker admitted it.
bool RunWith(Breaker& b, const absl::Status& outcome) {
  bool ran = false;
  const absl::Status result = b.Execute([&] {
    ran = true;
    return outcome;
  });
  return ran;
}
bool RunOk(Breaker& b) { return RunWith(b, absl::OkStatus()); }
bool RunFailure(Breaker& b) { return RunWith(b, Failure()); }

// Runs a call that takes `duration` of fake time and returns `outcome`.
bool RunTaking(Breaker& b, FakeClock& clock, absl::Duration duration,
               const absl::Status& outcome = absl::OkStatus()) {
  bool ran = false;
  const absl::Status result = b.Execute([&] {
    ran = true;
    clock.Advance(duration);
    return outcome;
  });
  return ran;
}

// REQUIRES: `b` opened at the clock's current time. Checks that it is still
// open (and rejects as open) exactly `d` later, and half-open 1 ns after that.
void ExpectOpenForExactly(Breaker& b, FakeClock& clock, absl::Duration d) {
  clock.Advance(d);
  EXPECT_EQ(b.state(), State::kOpen) << "at exactly " << d << " after opening";
  bool ran = false;
  const absl::Status at_expiry = b.Execute([&ran] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_FALSE(ran);
  EXPECT_TRUE(IsBreakerOpen(at_expiry)) << at_expiry;
  clock.Advance(kNs);
  EXPECT_EQ(b.state(), State::kHalfOpen)
      << "at " << d + kNs << " after opening";
}

// REQUIRES: `b` opened at the clock's current time. Moves the clock by `step`
// until `b` is no longer open; returns how long that took (the first step at
// which it was seen half-open), or InfiniteDuration() past `limit`.
absl::Duration StepUntilNotOpen(Breaker& b, FakeClock& clock,
                                absl::Duration step, absl::Duration limit) {
  absl::Duration elapsed = absl::ZeroDuration();
  while (elapsed <= limit) {
    clock.Advance(step);
    elapsed += step;
    if (b.state() != State::kOpen) return elapsed;
  }
  return absl::InfiniteDuration();
}

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
  EXPECT_EQ(c.total_failures, 1u) << "the generation's counts are not windowed";

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

// ---------------------------------------------------------------------------
// Exponential backoff and jitter of the open duration
// ---------------------------------------------------------------------------

BreakerSettings BackoffSettings(const FakeClock* clock) {
  BreakerSettings s = TestSettings(clock, "backoff");
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  s.backoff_multiplier = 2.0;
  s.max_timeout = absl::Seconds(5);
  return s;
}

TEST(BackoffTest, OpenDurationDoublesAfterEachFailedTrialUpToTheCap) {
  FakeClock clock(kAlignedStart);
  Breaker b(BackoffSettings(&clock));

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));

  const absl::Duration expected[] = {absl::Seconds(2), absl::Seconds(4),
                                     absl::Seconds(5), absl::Seconds(5)};
  for (const absl::Duration d : expected) {
    SCOPED_TRACE(absl::StrCat("open duration ", absl::FormatDuration(d)));
    ASSERT_EQ(b.state(), State::kHalfOpen);
    ASSERT_TRUE(RunFailure(b));  // the trial fails
    ASSERT_EQ(b.state(), State::kOpen);
    EXPECT_EQ(b.current_open_duration(), d);
    ExpectOpenForExactly(b, clock, d);
  }
}

TEST(BackoffTest, SuccessfulCloseResetsTheOpenDuration) {
  FakeClock clock(kAlignedStart);
  Breaker b(BackoffSettings(&clock));

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(1) + kNs);
  ASSERT_TRUE(RunFailure(b));  // 2 s
  clock.Advance(absl::Seconds(2) + kNs);
  ASSERT_TRUE(RunFailure(b));  // 4 s
  ASSERT_EQ(b.current_open_duration(), absl::Seconds(4));
  clock.Advance(absl::Seconds(4) + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);

  ASSERT_TRUE(RunOk(b));  // the trial succeeds
  ASSERT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

TEST(BackoffTest, MultiplierOfOneKeepsTheOpenDurationFixed) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.backoff_multiplier = 1.0;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

// Trips a jittered breaker named `name` (1 s timeout, no backoff) and
// measures `trips` successive open durations to the millisecond: each entry is
// the first whole millisecond at which the breaker was seen half-open.
std::vector<absl::Duration> MeasureJitteredOpenDurations(
    const std::string& name, int trips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, name);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  s.backoff_jitter = 0.5;
  Breaker b(s);

  std::vector<absl::Duration> observed;
  EXPECT_TRUE(RunFailure(b));
  for (int i = 0; i < trips; ++i) {
    EXPECT_EQ(b.state(), State::kOpen);
    const absl::Duration d =
        StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(3));
    observed.push_back(d);
    if (d == absl::InfiniteDuration()) break;
    EXPECT_TRUE(RunFailure(b));  // a failed trial reopens: a fresh draw
  }
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1))
      << "jitter must not feed back into the un-jittered duration";
  return observed;
}

TEST(BackoffTest, JitterKeepsTheOpenDurationWithinItsBounds) {
  const std::vector<absl::Duration> observed =
      MeasureJitteredOpenDurations("jittered", 50);
  ASSERT_EQ(observed.size(), 50u);
  absl::Duration min = absl::InfiniteDuration();
  absl::Duration max = -absl::InfiniteDuration();
  for (const absl::Duration d : observed) {
    // The true duration x satisfies d - 1ms <= x < d and 0.5s <= x <= 1.5s.
    EXPECT_GT(d, absl::Milliseconds(500)) << d;
    EXPECT_LE(d - absl::Milliseconds(1), absl::Milliseconds(1500)) << d;
    min = std::min(min, d);
    max = std::max(max, d);
  }
  // Without jitter every entry would be 1.001 s.
  EXPECT_GE(max - min, absl::Milliseconds(200))
      << "min " << min << ", max " << max;
}

TEST(BackoffTest, JitterIsDeterministicPerBreakerName) {
  const std::vector<absl::Duration> a1 = MeasureJitteredOpenDurations("a", 10);
  const std::vector<absl::Duration> a2 = MeasureJitteredOpenDurations("a", 10);
  const std::vector<absl::Duration> b = MeasureJitteredOpenDurations("b", 10);
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
}

TEST(BackoffTest, JitterAppliesToTheBackedOffDuration) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.max_timeout = absl::ZeroDuration();  // no cap
  s.backoff_jitter = 0.5;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(
        StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(10)),
        absl::InfiniteDuration());
    ASSERT_TRUE(RunFailure(b));
  }
  ASSERT_EQ(b.current_open_duration(), absl::Seconds(8));
  const absl::Duration d =
      StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(20));
  EXPECT_GT(d, absl::Seconds(4));
  EXPECT_LE(d - absl::Milliseconds(1), absl::Seconds(12));
}

// ---------------------------------------------------------------------------
// Half-open maximum wait
// ---------------------------------------------------------------------------

constexpr absl::Duration kMaxWait = absl::Seconds(3);

BreakerSettings MaxWaitSettings(const FakeClock* clock, Transitions* events) {
  BreakerSettings s = BackoffSettings(clock);
  s.name = "max-wait";
  s.half_open_max_wait = kMaxWait;
  if (events != nullptr) events->AttachTo(s);
  return s;
}

// Trips `b` and lets it go half-open; returns the trial's permit.
absl::StatusOr<Permit> TripAndAdmitTrial(Breaker& b, FakeClock& clock) {
  EXPECT_TRUE(RunFailure(b));
  clock.Advance(kTimeout + kNs);
  EXPECT_EQ(b.state(), State::kHalfOpen);
  return b.Allow();
}

TEST(HalfOpenMaxWaitTest, UnreportedTrialReopensTheBreakerAfterTheWait) {
  FakeClock clock(kAlignedStart);
  Transitions events;
  Breaker b(MaxWaitSettings(&clock, &events));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->admitted_state(), State::kHalfOpen);

  clock.Advance(kMaxWait);
  EXPECT_EQ(b.state(), State::kHalfOpen) << "at exactly the maximum wait";
  bool ran = false;
  const absl::Status second = b.Execute([&ran] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_FALSE(ran);
  EXPECT_TRUE(IsTooManyRequests(second)) << second;

  clock.Advance(kNs);
  EXPECT_EQ(b.state(), State::kOpen) << "1 ns past the maximum wait";
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2))
      << "the unreported trial counts as a failed trial";
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kHalfOpen),
                                         Pair(State::kHalfOpen, State::kOpen)));
  ExpectOpenForExactly(b, clock, absl::Seconds(2));

  // The trial reports at last, in a generation that has moved on.
  const uint64_t stale_before = b.totals().stale;
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.totals().stale, stale_before + 1);
  EXPECT_EQ(b.state(), State::kHalfOpen) << "a stale success closes nothing";
}

TEST(HalfOpenMaxWaitTest, NextCallPastTheWaitIsRejectedAsOpen) {
  FakeClock clock(kAlignedStart);
  Breaker b(MaxWaitSettings(&clock, nullptr));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(kMaxWait + kNs);
  absl::StatusOr<Permit> next = b.Allow();
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(IsBreakerOpen(next.status())) << next.status();
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2));
}

TEST(HalfOpenMaxWaitTest, TrialReportingAtExactlyTheWaitStillCloses) {
  FakeClock clock(kAlignedStart);
  Breaker b(MaxWaitSettings(&clock, nullptr));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(kMaxWait);
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
}

TEST(HalfOpenMaxWaitTest, TrialReportingPastTheWaitDoesNotCloseTheBreaker) {
  FakeClock clock(kAlignedStart);
  Transitions events;
  Breaker b(MaxWaitSettings(&clock, &events));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  // Nothing looks at the breaker until the trial reports, 1 ns too late.
  // The trial did not report within the maximum wait, so it is a failed
  // trial: the outcome must not depend on whether someone called state() in
  // between (compare UnreportedTrialReopensTheBreakerAfterTheWait).
  clock.Advance(kMaxWait + kNs);
  const uint64_t stale_before = b.totals().stale;
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2));
  EXPECT_EQ(b.totals().stale, stale_before + 1);
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kHalfOpen),
                                         Pair(State::kHalfOpen, State::kOpen)));
}

TEST(HalfOpenMaxWaitTest, ZeroMeansWaitForever) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = MaxWaitSettings(&clock, nullptr);
  s.half_open_max_wait = absl::ZeroDuration();
  Breaker b(s);

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(absl::Hours(1000));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
}

// ---------------------------------------------------------------------------
// Manual control
// ---------------------------------------------------------------------------

TEST(ManualControlTest, ForceOpenRejectsEverythingEvenAfterALongTime) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  Transitions events;
  events.AttachTo(s);
  Breaker b(s);

  b.ForceOpen();
  EXPECT_TRUE(b.forced_open());
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_FALSE(RunOk(b));

  clock.Advance(absl::Hours(10000));  // far beyond the 1 s timeout
  EXPECT_EQ(b.state(), State::kOpen);
  const absl::Status rejected = b.Execute([] { return absl::OkStatus(); });
  EXPECT_TRUE(IsBreakerOpen(rejected)) << rejected;
  absl::StatusOr<Permit> permit = b.Allow();
  ASSERT_FALSE(permit.ok());
  EXPECT_TRUE(IsBreakerOpen(permit.status())) << permit.status();

  EXPECT_EQ(b.totals().rejected_open, 3u);
  EXPECT_EQ(b.totals().admitted, 0u);
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen)));
}

TEST(ManualControlTest, ForceOpenOnAnOpenBreakerStopsItsTimeout) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  Transitions events;
  events.AttachTo(s);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  b.ForceOpen();
  clock.Advance(kTimeout + kNs);
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_FALSE(RunOk(b));
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen)))
      << "open -> open is not a state change";
}

TEST(ManualControlTest, DisableAdmitsEverythingAndNeverTrips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  Transitions events;
  events.AttachTo(s);
  Breaker b(s);

  b.Disable();
  EXPECT_TRUE(b.disabled());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(RunFailure(b)) << "call " << i;
  EXPECT_EQ(b.state(), State::kClosed);
  const Counts c = b.counts();
  EXPECT_EQ(c.total_failures, 100u);
  EXPECT_EQ(c.consecutive_failures, 100u);
  EXPECT_EQ(c.requests, 100u);
  EXPECT_EQ(b.totals().failures, 100u);
  EXPECT_TRUE(events.events.empty());

  b.Reset();  // back to normal: the next failure trips
  EXPECT_FALSE(b.disabled());
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(ManualControlTest, DisableClosesAnOpenBreaker) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  Transitions events;
  events.AttachTo(s);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  b.Disable();
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_TRUE(RunFailure(b));
  EXPECT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kClosed)));
}

TEST(ManualControlTest, ResetClearsCountsAndStartsANewGeneration) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(10);
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  Breaker b(s);

  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  const uint64_t generation = b.generation();
  b.Reset();
  EXPECT_NE(b.generation(), generation);
  EXPECT_EQ(b.state(), State::kClosed);
  const Counts c = b.counts();
  EXPECT_EQ(c.requests, 0u);
  EXPECT_EQ(c.total_successes, 0u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(c.consecutive_failures, 0u);
  EXPECT_EQ(c.window_calls, 0u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_EQ(b.totals().failures, 2u) << "lifetime totals survive Reset()";

  // The streak starts over: two more failures make 2, not 4.
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(ManualControlTest, ResetRestoresTheOpenDuration) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  Transitions events;
  events.AttachTo(s);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(1) + kNs);
  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(2) + kNs);
  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  ASSERT_EQ(b.current_open_duration(), absl::Seconds(4));

  events.events.clear();
  b.Reset();
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_FALSE(b.forced_open());
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kOpen, State::kClosed)));

  ASSERT_TRUE(RunFailure(b));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

TEST(ManualControlTest, ResetEndsForceOpen) {
  FakeClock clock(kAlignedStart);
  Breaker b(TestSettings(&clock));
  b.ForceOpen();
  ASSERT_FALSE(RunOk(b));
  b.Reset();
  EXPECT_FALSE(b.forced_open());
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_TRUE(RunOk(b));
}

// ---------------------------------------------------------------------------
// is_excluded
// ---------------------------------------------------------------------------

BreakerSettings ExcludingSettings(const FakeClock* clock) {
  BreakerSettings s = TestSettings(clock, "excluding");
  s.is_excluded = [](const absl::Status& st) {
    return st.code() == absl::StatusCode::kInvalidArgument;
  };
  return s;
}

TEST(ExclusionTest, ExcludedOutcomesCountOnlyAsExclusions) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = ExcludingSettings(&clock);
  s.window = SlidingWindow::Count(10);
  Breaker b(s);

  ASSERT_TRUE(RunWith(b, ClientError()));
  const Counts c = b.counts();
  EXPECT_EQ(c.requests, 1u);
  EXPECT_EQ(c.total_exclusions, 1u);
  EXPECT_EQ(c.total_successes, 0u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(c.window_calls, 0u);
  const BreakerTotals t = b.totals();
  EXPECT_EQ(t.exclusions, 1u);
  EXPECT_EQ(t.successes, 0u);
  EXPECT_EQ(t.failures, 0u);

  ASSERT_TRUE(RunFailure(b));  // a non-excluded error still fails
  EXPECT_EQ(b.counts().total_failures, 1u);
  EXPECT_EQ(b.counts().total_exclusions, 1u);
}

TEST(ExclusionTest, ExclusionIsCheckedBeforeIsSuccessful) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = ExcludingSettings(&clock);
  s.is_successful = [](const absl::Status&) { return true; };
  Breaker b(s);

  ASSERT_TRUE(RunWith(b, ClientError()));
  EXPECT_EQ(b.counts().total_exclusions, 1u);
  EXPECT_EQ(b.counts().total_successes, 0u);
}

TEST(ExclusionTest, ExcludedOutcomeDoesNotBreakAFailureStreak) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = ExcludingSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunWith(b, ClientError()));
  EXPECT_EQ(b.counts().consecutive_failures, 2u);
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(ExclusionTest, ExcludedTrialGivesBackTheHalfOpenSlot) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = ExcludingSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(kTimeout + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);

  absl::StatusOr<Permit> first = b.Allow();
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Permit> blocked = b.Allow();
  ASSERT_FALSE(blocked.ok());
  EXPECT_TRUE(IsTooManyRequests(blocked.status())) << blocked.status();

  first->Done(ClientError());
  EXPECT_EQ(b.state(), State::kHalfOpen) << "an exclusion is not a failure";
  EXPECT_EQ(b.counts().total_exclusions, 1u);

  absl::StatusOr<Permit> second = b.Allow();
  ASSERT_TRUE(second.ok()) << second.status();
  second->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
}

// ---------------------------------------------------------------------------
// Settings validation
// ---------------------------------------------------------------------------

struct InvalidCase {
  std::string label;
  std::function<void(BreakerSettings&)> mutate;
  std::string field;
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.label; }

class InvalidSettingsTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidSettingsTest, AreRefusedWithAMessageNamingBreakerAndField) {
  BreakerSettings s;
  s.name = "ranker-v2";
  GetParam().mutate(s);

  const absl::Status status = ValidateBreakerSettings(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("'ranker-v2'"));
  EXPECT_THAT(status.message(), HasSubstr("'" + GetParam().field + "'"));

  absl::StatusOr<std::unique_ptr<Breaker>> created = Breaker::Create(s);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status(), status);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

INSTANTIATE_TEST_SUITE_P(
    Fields, InvalidSettingsTest,
    ::testing::Values(
        InvalidCase{"NegativeInterval",
                    [](BreakerSettings& s) { s.interval = -kNs; }, "interval"},
        InvalidCase{"NegativeTimeout",
                    [](BreakerSettings& s) { s.timeout = -kNs; }, "timeout"},
        InvalidCase{"NegativeSlowCallDuration",
                    [](BreakerSettings& s) { s.slow_call_duration = -kNs; },
                    "slow_call_duration"},
        InvalidCase{"NegativeMaxTimeout",
                    [](BreakerSettings& s) { s.max_timeout = -kNs; },
                    "max_timeout"},
        InvalidCase{"NegativeHalfOpenMaxWait",
                    [](BreakerSettings& s) { s.half_open_max_wait = -kNs; },
                    "half_open_max_wait"},
        InvalidCase{"NaNMultiplier",
                    [](BreakerSettings& s) { s.backoff_multiplier = kNaN; },
                    "backoff_multiplier"},
        InvalidCase{"InfiniteMultiplier",
                    [](BreakerSettings& s) { s.backoff_multiplier = kInf; },
                    "backoff_multiplier"},
        InvalidCase{"MultiplierBelowOne",
                    [](BreakerSettings& s) { s.backoff_multiplier = 0.999; },
                    "backoff_multiplier"},
        InvalidCase{"JitterAboveOne",
                    [](BreakerSettings& s) { s.backoff_jitter = 1.5; },
                    "backoff_jitter"},
        InvalidCase{"NaNJitter",
                    [](BreakerSettings& s) { s.backoff_jitter = kNaN; },
                    "backoff_jitter"},
        InvalidCase{"NegativeJitter",
                    [](BreakerSettings& s) { s.backoff_jitter = -0.1; },
                    "backoff_jitter"},
        InvalidCase{
            "ZeroSizeCountWindow",
            [](BreakerSettings& s) { s.window = SlidingWindow::Count(0); },
            "window.size"},
        InvalidCase{"ZeroBucketTimeWindow",
                    [](BreakerSettings& s) {
                      s.window = SlidingWindow::Time(absl::Seconds(10), 0);
                    },
                    "window.size"},
        InvalidCase{"ZeroLengthTimeWindow",
                    [](BreakerSettings& s) {
                      s.window = SlidingWindow::Time(absl::ZeroDuration(), 10);
                    },
                    "window.length"},
        InvalidCase{"NegativeLengthTimeWindow",
                    [](BreakerSettings& s) {
                      s.window = SlidingWindow::Time(-absl::Seconds(1), 10);
                    },
                    "window.length"},
        InvalidCase{"InfiniteLengthTimeWindow",
                    [](BreakerSettings& s) {
                      s.window =
                          SlidingWindow::Time(absl::InfiniteDuration(), 10);
                    },
                    "window.length"},
        InvalidCase{"SubNanosecondBuckets",
                    [](BreakerSettings& s) {
                      s.window = SlidingWindow::Time(absl::Nanoseconds(9), 10);
                    },
                    "window.size"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) {
      return info.param.label;
    });

TEST(SettingsValidationTest, AcceptsBoundaryValues) {
  BreakerSettings s;
  s.name = "edges";
  s.interval = absl::ZeroDuration();
  s.timeout = absl::ZeroDuration();
  s.slow_call_duration = absl::ZeroDuration();
  s.max_timeout = absl::ZeroDuration();
  s.half_open_max_wait = absl::ZeroDuration();
  s.backoff_multiplier = 1.0;
  s.backoff_jitter = 0.0;
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.backoff_jitter = 1.0;
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.window = SlidingWindow::Count(1);
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.window = SlidingWindow::Time(absl::Nanoseconds(10), 10);  // 1 ns buckets
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());

  absl::StatusOr<std::unique_ptr<Breaker>> created = Breaker::Create(s);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_NE(*created, nullptr);
  EXPECT_EQ((*created)->name(), "edges");
}

TEST(SettingsValidationTest, CreateReportsTheFirstBadField) {
  BreakerSettings s;
  s.name = "two-bad";
  s.timeout = -absl::Seconds(1);
  s.backoff_jitter = 2.0;
  const absl::Status status = ValidateBreakerSettings(s);
  EXPECT_THAT(status.message(), HasSubstr("'timeout'"));
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("backoff_jitter")));
}

TEST(SettingsValidationTest, CreateRefusesOrHonoursAnInfiniteTimeout) {
  // Create() promises not to replace settings with defaults. An infinite
  // timeout either is refused, or keeps a tripped breaker open.
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "forever");
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.timeout = absl::InfiniteDuration();
  absl::StatusOr<std::unique_ptr<Breaker>> created = Breaker::Create(s);
  if (!created.ok()) {
    EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(created.status().message(), HasSubstr("'timeout'"));
    return;
  }
  Breaker& b = **created;
  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(60) + kNs);
  EXPECT_EQ(b.state(), State::kOpen)
      << "validated timeout=inf silently became the 60 s default";
}

TEST(SettingsFallbackTest, NaNMultiplierBehavesLikeNoBackoff) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.backoff_multiplier = kNaN;
  Breaker b(s);
  EXPECT_EQ(b.settings().backoff_multiplier, 1.0);

  ASSERT_TRUE(RunFailure(b));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
  ASSERT_TRUE(RunFailure(b));  // a failed trial
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

TEST(SettingsFallbackTest, MultiplierBelowOneBehavesLikeNoBackoff) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.backoff_multiplier = 0.5;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(1) + kNs);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

TEST(SettingsFallbackTest, NegativeTimeoutBecomesSixtySeconds) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.timeout = -absl::Seconds(1);
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(60));
  ExpectOpenForExactly(b, clock, absl::Seconds(60));
}

TEST(SettingsFallbackTest, InvalidJitterBecomesNoJitter) {
  for (const double jitter : {1.5, kNaN, -0.5}) {
    SCOPED_TRACE(jitter);
    FakeClock clock(kAlignedStart);
    BreakerSettings s = BackoffSettings(&clock);
    s.backoff_jitter = jitter;
    Breaker b(s);
    EXPECT_EQ(b.settings().backoff_jitter, 0.0);
    ASSERT_TRUE(RunFailure(b));
    ExpectOpenForExactly(b, clock, absl::Seconds(1));
  }
}

TEST(SettingsFallbackTest, InvalidWindowsBecomeTheWholeGeneration) {
  const SlidingWindow invalid[] = {
      SlidingWindow::Count(0), SlidingWindow::Time(absl::Seconds(10), 0),
      SlidingWindow::Time(absl::ZeroDuration(), 10),
      SlidingWindow::Time(absl::Nanoseconds(9), 10)};
  for (const SlidingWindow& w : invalid) {
    FakeClock clock(kAlignedStart);
    BreakerSettings s = TestSettings(&clock);
    s.window = w;
    Breaker b(s);
    EXPECT_EQ(b.settings().window.kind, SlidingWindow::Kind::kNone);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunFailure(b));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
    clock.Advance(absl::Hours(1));
    const Counts c = b.counts();
    EXPECT_EQ(c.window_calls, 8u);
    EXPECT_EQ(c.window_failures, 5u);
  }
}

TEST(SettingsFallbackTest, NegativeIntervalNeverClearsCounts) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.interval = -absl::Seconds(1);
  Breaker b(s);
  const uint64_t generation = b.generation();

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Hours(1000));
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.counts().total_failures, 1u);
  EXPECT_EQ(b.generation(), generation);
}

TEST(SettingsFallbackTest, NegativeHalfOpenMaxWaitMeansNoLimit) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = MaxWaitSettings(&clock, nullptr);
  s.half_open_max_wait = -absl::Seconds(1);
  Breaker b(s);

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(absl::Hours(1000));
  EXPECT_EQ(b.state(), State::kHalfOpen);
}

// ---------------------------------------------------------------------------
// Callbacks that throw
// ---------------------------------------------------------------------------

TEST(ThrowingCallbackTest, ReadyToTripThatThrowsMeansNoTrip) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  int calls = 0;
  s.ready_to_trip = [&calls](const Counts&) -> bool {
    ++calls;
    throw std::runtime_error("rule bug");
  };
  Breaker b(s);

  for (int i = 0; i < 20; ++i) ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(calls, 20) << "evaluated on every failure";
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.counts().total_failures, 20u);
  EXPECT_TRUE(RunOk(b)) << "the breaker still works";
}

TEST(ThrowingCallbackTest, IsSuccessfulThatThrowsCountsAsFailure) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(2);
  s.is_successful = [](const absl::Status&) -> bool {
    throw std::logic_error("classifier bug");
  };
  Breaker b(s);

  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.counts().total_failures, 1u);
  EXPECT_EQ(b.counts().total_successes, 0u);
  EXPECT_EQ(b.state(), State::kClosed);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(ThrowingCallbackTest, IsExcludedThatThrowsMeansNotExcluded) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.is_excluded = [](const absl::Status&) -> bool {
    throw std::runtime_error("exclusion bug");
  };
  Breaker b(s);

  ASSERT_TRUE(RunWith(b, ClientError()));
  ASSERT_TRUE(RunOk(b));
  const Counts c = b.counts();
  EXPECT_EQ(c.total_exclusions, 0u);
  EXPECT_EQ(c.total_failures, 1u);
  EXPECT_EQ(c.total_successes, 1u);
}

TEST(ThrowingCallbackTest, OnStateChangeThatThrowsIsSwallowed) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  std::vector<std::pair<State, State>> seen;
  s.on_state_change = [&seen](const std::string&, State from, State to) {
    seen.emplace_back(from, to);
    throw std::runtime_error("logger down");
  };
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
  clock.Advance(kTimeout + kNs);
  EXPECT_EQ(b.state(), State::kHalfOpen);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed);
  // Every transition still reached the callback after the first one threw.
  EXPECT_THAT(seen, ElementsAre(Pair(State::kClosed, State::kOpen),
                                Pair(State::kOpen, State::kHalfOpen),
                                Pair(State::kHalfOpen, State::kClosed)));
}

}  // namespace
}  // namespace degrade
