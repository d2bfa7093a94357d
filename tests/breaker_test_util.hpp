// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the breaker tests beyond gobreaker (windows, slow calls,
// trip rules, backoff, half-open wait, manual control, exclusions,
// settings): a breaker on a FakeClock with a 1 s timeout that never trips,
// calls that take fake time, a recorder of transitions, and checks of how
// long a breaker stays open.

#ifndef DEGRADE_TESTS_BREAKER_TEST_UTIL_HPP_
#define DEGRADE_TESTS_BREAKER_TEST_UTIL_HPP_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {

// Readable failure messages for states (found by argument-dependent lookup).
inline void PrintTo(State s, std::ostream* os) { *os << StateName(s); }

namespace breaker_test {

using Breaker = CircuitBreaker<void>;

inline constexpr absl::Duration kTimeout = absl::Seconds(1);
inline constexpr absl::Duration kNs = absl::Nanoseconds(1);

// A FakeClock instant that is a whole number of seconds since the Unix
// epoch, so second-wide time-window buckets begin exactly at it.
inline const absl::Time kAlignedStart = absl::FromUnixSeconds(1'700'000'000);

inline absl::Status Failure() { return absl::UnavailableError("backend down"); }
inline absl::Status ClientError() {
  return absl::InvalidArgumentError("bad query");
}

inline bool NeverTrip(const Counts&) { return false; }

// Settings on `clock` with a 1 s open timeout and a rule that never trips;
// tests replace what they exercise.
inline BreakerSettings TestSettings(const FakeClock* clock,
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
inline bool RunWith(Breaker& b, const absl::Status& outcome) {
  bool ran = false;
  const absl::Status result = b.Execute([&] {
    ran = true;
    return outcome;
  });
  return ran;
}
inline bool RunOk(Breaker& b) { return RunWith(b, absl::OkStatus()); }
inline bool RunFailure(Breaker& b) { return RunWith(b, Failure()); }

// Runs a call that takes `duration` of fake time and returns `outcome`.
inline bool RunTaking(Breaker& b, FakeClock& clock, absl::Duration duration,
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
inline void ExpectOpenForExactly(Breaker& b, FakeClock& clock,
                                 absl::Duration d) {
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
inline absl::Duration StepUntilNotOpen(Breaker& b, FakeClock& clock,
                                       absl::Duration step,
                                       absl::Duration limit) {
  absl::Duration elapsed = absl::ZeroDuration();
  while (elapsed <= limit) {
    clock.Advance(step);
    elapsed += step;
    if (b.state() != State::kOpen) return elapsed;
  }
  return absl::InfiniteDuration();
}

inline BreakerSettings BackoffSettings(const FakeClock* clock) {
  BreakerSettings s = TestSettings(clock, "backoff");
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  s.backoff_multiplier = 2.0;
  s.max_timeout = absl::Seconds(5);
  return s;
}

inline constexpr absl::Duration kMaxWait = absl::Seconds(3);

inline BreakerSettings MaxWaitSettings(const FakeClock* clock,
                                       Transitions* events) {
  BreakerSettings s = BackoffSettings(clock);
  s.name = "max-wait";
  s.half_open_max_wait = kMaxWait;
  if (events != nullptr) events->AttachTo(s);
  return s;
}

// Trips `b` and lets it go half-open; returns the trial's permit.
inline absl::StatusOr<Permit> TripAndAdmitTrial(Breaker& b, FakeClock& clock) {
  EXPECT_TRUE(RunFailure(b));
  clock.Advance(kTimeout + kNs);
  EXPECT_EQ(b.state(), State::kHalfOpen);
  return b.Allow();
}

}  // namespace breaker_test
}  // namespace degrade

#endif  // DEGRADE_TESTS_BREAKER_TEST_UTIL_HPP_
