// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of what a breaker does beyond gobreaker besides windows and backoff:
// manual control (ForceOpen, Disable, Reset), exclusions, and user callbacks
// that throw. FakeClock only.

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
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kOpen)))
      << "a manual change is reported even when the state stays";
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
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kClosed)))
      << "Disable() is reported though the state stays closed";

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

// on_state_change calling its own breaker's manual controls (issue 13,
// re-entrancy): callbacks run outside the breaker's lock and one at a time,
// so each call works, and the transitions it makes are reported after the
// one being handled, in order, never nested.
// Issue 13 (re-entrancy): ready_to_trip ran under the breaker's lock, so a
// rule that read or moved its own breaker deadlocked (EDEADLK or a hang).
// It now runs outside the lock; the trip happens only if the counts it saw
// are still the current generation's. A call through the breaker made from
// inside the rule is counted but does not ask the rule again.
TEST(ManualControlTest, ReadyToTripMayCallItsOwnBreaker) {
  struct Case {
    const char* name;
    std::function<bool(CircuitBreaker<int>&, const Counts&)> rule;
    State final_state;
  };
  const std::vector<Case> cases = {
      {"reads counts and state",
       [](CircuitBreaker<int>& b, const Counts& c) {
         return b.counts().consecutive_failures >= 2 &&
                b.state() == State::kClosed && c.consecutive_failures >= 2;
       },
       State::kOpen},
      {"ForceOpen, then says trip: one transition, forced open",
       [](CircuitBreaker<int>& b, const Counts& c) {
         if (c.consecutive_failures < 2) return false;
         b.ForceOpen();
         return true;  // the generation moved on: no second trip
       },
       State::kOpen},
      {"Reset, then says trip: the reset wins",
       [](CircuitBreaker<int>& b, const Counts& c) {
         if (c.consecutive_failures < 2) return false;
         b.Reset();
         return true;
       },
       State::kClosed},
      {"calls through the breaker: no recursion",
       [](CircuitBreaker<int>& b, const Counts& c) {
         (void)b.Execute([]() -> absl::StatusOr<int> {
           return absl::UnavailableError("nested");
         });
         return c.consecutive_failures >= 3;
       },
       State::kOpen},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeClock clock;
    CircuitBreaker<int>* self = nullptr;
    int transitions = 0;
    BreakerSettings s;
    s.name = "reentrant-rule";
    s.clock = &clock;
    s.ready_to_trip = [&](const Counts& counts) {
      return c.rule(*self, counts);
    };
    s.on_state_change = [&](const std::string&, State, State) {
      ++transitions;
    };
    CircuitBreaker<int> b(s);
    self = &b;
    for (int i = 0; i < 2 && b.state() == State::kClosed; ++i) {
      (void)b.Execute([]() -> absl::StatusOr<int> {
        return absl::UnavailableError("down");
      });
    }
    EXPECT_EQ(b.state(), c.final_state);
    EXPECT_LE(transitions, 2);
  }
}

// Found by review (issue 13): with the rule outside the lock, an interval
// ending while the rule ran made the breaker drop a trip decided inside
// the interval (the rule here takes 2 ms of the fake clock).
TEST(ManualControlTest, AnIntervalEndingWhileTheRuleRunsKeepsItsTrip) {
  FakeClock clock;
  BreakerSettings s;
  s.name = "slow-rule";
  s.clock = &clock;
  s.interval = absl::Seconds(10);
  s.ready_to_trip = [&clock](const Counts& c) {
    clock.Advance(absl::Milliseconds(2));
    return c.consecutive_failures >= 3;
  };
  CircuitBreaker<int> b(s);
  clock.Advance(absl::Seconds(10) - absl::Milliseconds(5));
  for (int i = 0; i < 3; ++i) {
    (void)b.Execute([]() -> absl::StatusOr<int> {
      return absl::UnavailableError("down");
    });
  }
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(ManualControlTest, OnStateChangeMayDriveItsOwnBreaker) {
  struct Case {
    const char* name;
    std::function<void(CircuitBreaker<int>&)> calls;
    State final_state;
    std::vector<std::pair<State, State>> reported;
  };
  const std::vector<Case> cases = {
      {"Reset", [](CircuitBreaker<int>& b) { b.Reset(); }, State::kClosed,
       {{State::kClosed, State::kOpen}, {State::kOpen, State::kClosed}}},
      {"Disable", [](CircuitBreaker<int>& b) { b.Disable(); }, State::kClosed,
       {{State::kClosed, State::kOpen}, {State::kOpen, State::kClosed}}},
      // Reported too (a manual change with the state kept), after the
      // first: in order, never nested.
      {"ForceOpen again", [](CircuitBreaker<int>& b) { b.ForceOpen(); },
       State::kOpen, {{State::kClosed, State::kOpen}, {State::kOpen, State::kOpen}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeClock clock;
    CircuitBreaker<int>* self = nullptr;
    int depth = 0;
    bool nested = false;
    std::vector<std::pair<State, State>> reported;
    BreakerSettings s;
    s.name = "reentrant";
    s.clock = &clock;
    s.on_state_change = [&](const std::string&, State from, State to) {
      nested = nested || depth > 0;
      ++depth;
      reported.emplace_back(from, to);
      if (reported.size() == 1) c.calls(*self);
      --depth;
    };
    CircuitBreaker<int> b(s);
    self = &b;
    b.ForceOpen();
    EXPECT_EQ(b.state(), c.final_state);
    EXPECT_EQ(reported, c.reported);
    EXPECT_FALSE(nested);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
