// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of trip.hpp: each rule's boundaries, on its own and inside a
// breaker; validation of the library's rules (a resilience4j percentage
// typed as is, zero minimums, AnyOf of nothing); what Check says when a
// rule trips; the capping of a rate rule's minimum at a count window; and
// the properties the breaker reads to decide when to ask a rule.

#include "degrade/trip.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <optional>
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
// Validation (issue 14, item 1)
// ---------------------------------------------------------------------------

// The resilience4j user's mistake: failureRateThreshold is a percentage
// there. Accepted as is, FailureRate(50.0, 5) could never trip.
TEST(TripRuleTest, AResilience4jPercentageIsRefusedWithTheFractionMessage) {
  const absl::Status st = trip::FailureRate(50.0, 5).Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "rates are fractions in (0, 1]: for 50% write 0.5");
  EXPECT_EQ(trip::SlowCallRate(33.3, 10).Validate().message(),
            "rates are fractions in (0, 1]: for 33.3% write 0.333");
  EXPECT_EQ(trip::FailureRate(100.0, 10).Validate().message(),
            "rates are fractions in (0, 1]: for 100% write 1");
  EXPECT_FALSE(trip::FailureRate(50.0, 5)(WindowCounts(50, 50)))
      << "what a 50.0 would have done: never trip";
}

TEST(TripRuleTest, RatesOutsideZeroToOneAreRefused) {
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  for (const double rate : {0.0, -0.0, kNaN, kInf, -kInf, -0.1, 1.0000001,
                            100.5, 1e308, -50.0}) {
    SCOPED_TRACE(rate);
    for (const trip::Rule& rule :
         {trip::FailureRate(rate, 5), trip::SlowCallRate(rate, 5)}) {
      const absl::Status st = rule.Validate();
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(st.message(), HasSubstr("rates are fractions in (0, 1]"));
    }
  }
  // Just over 1 looks like a percentage, and the hint keeps every digit.
  EXPECT_EQ(trip::FailureRate(1.0000001, 5).Validate().message(),
            "rates are fractions in (0, 1]: for 1.0000001% write 0.010000001");
  // Beyond 100 it cannot be a percentage: no hint.
  EXPECT_EQ(trip::FailureRate(100.5, 5).Validate().message(),
            "rates are fractions in (0, 1]");
}

TEST(TripRuleTest, OneAndTinyRatesAreAccepted) {
  EXPECT_TRUE(trip::FailureRate(1.0, 5).Validate().ok());
  EXPECT_TRUE(trip::SlowCallRate(1.0, 1).Validate().ok());
  EXPECT_TRUE(trip::FailureRate(1e-9, 1).Validate().ok());
  EXPECT_TRUE(trip::FailureRate(0.5).Validate().ok());
  EXPECT_EQ(trip::FailureRate(0.5).minimum_calls(), 100u)
      << "resilience4j's default minimumNumberOfCalls";
}

TEST(TripRuleTest, ZeroMinimumCallsIsRefused) {
  for (const trip::Rule& rule :
       {trip::FailureRate(0.5, 0), trip::SlowCallRate(0.5, 0)}) {
    const absl::Status st = rule.Validate();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "minimum_calls must be at least 1");
  }
}

TEST(TripRuleTest, ZeroConsecutiveFailuresIsRefused) {
  const absl::Status st = trip::ConsecutiveFailures(0).Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "consecutive_failures needs n >= 1");
  EXPECT_TRUE(trip::ConsecutiveFailures(1).Validate().ok());
}

TEST(TripRuleTest, AnAnyOfOfOnlyEmptyRulesIsRefused) {
  for (const trip::Rule& rule :
       {trip::AnyOf(nullptr, trip::Rule()), trip::AnyOf(std::vector<trip::Rule>{}),
        trip::AnyOf(trip::AnyOf(nullptr))}) {
    SCOPED_TRACE(rule.Describe());
    const absl::Status st = rule.Validate();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(),
                HasSubstr("any_of needs at least one rule that is not empty"));
  }
  // An empty part next to a real one is skipped, as when deciding.
  EXPECT_TRUE(
      trip::AnyOf(nullptr, trip::ConsecutiveFailures(2)).Validate().ok());
}

TEST(TripRuleTest, NestedAnyOfIsValidatedRecursivelyAndNamesThePart) {
  const trip::Rule rule = trip::AnyOf(
      trip::ConsecutiveFailures(3),
      trip::AnyOf(trip::SlowCallRate(0.5, 10), trip::FailureRate(50.0, 5)));
  const absl::Status st = rule.Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "part 2.2 (failure_rate(50, minimum_calls=5)): rates are "
            "fractions in (0, 1]: for 50% write 0.5");
  EXPECT_EQ(trip::AnyOf(trip::FailureRate(0.5, 0)).Validate().message(),
            "part 1 (failure_rate(0.5, minimum_calls=0)): minimum_calls must "
            "be at least 1");
  // The first bad part, in order, is the one reported.
  EXPECT_THAT(trip::AnyOf(trip::ConsecutiveFailures(0),
                          trip::FailureRate(2.0, 1))
                  .Validate()
                  .message(),
              HasSubstr("part 1 (consecutive_failures(0))"));
}

TEST(TripRuleTest, CustomRulesAreValidAndAnEmptyRuleIsNot) {
  EXPECT_TRUE(trip::Rule(NeverTrip).Validate().ok());
  EXPECT_TRUE(
      trip::AnyOf([](const Counts&) { return true; }).Validate().ok());
  const absl::Status st = trip::Rule().Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "an empty rule decides nothing");
}

// ---------------------------------------------------------------------------
// A value type that takes whatever std::function took
// ---------------------------------------------------------------------------

TEST(TripRuleTest, EveryCallableAStdFunctionTookIsACustomRule) {
  int calls = 0;
  const trip::Rule lambda = [&calls](const Counts& c) {
    ++calls;
    return c.total_failures > 2;
  };
  EXPECT_EQ(lambda.kind(), trip::Rule::Kind::kCustom);
  Counts c;
  c.total_failures = 3;
  EXPECT_TRUE(lambda(c));
  EXPECT_EQ(calls, 1);

  EXPECT_EQ(trip::Rule(NeverTrip).kind(), trip::Rule::Kind::kCustom);
  EXPECT_EQ(trip::Rule(&NeverTrip).kind(), trip::Rule::Kind::kCustom);
  const std::function<bool(const Counts&)> function = NeverTrip;
  EXPECT_EQ(trip::Rule(function).kind(), trip::Rule::Kind::kCustom);

  // What used to leave a std::function empty leaves the Rule empty.
  bool (*null_pointer)(const Counts&) = nullptr;
  const trip::Rule from_null_pointer = null_pointer;
  const trip::Rule from_empty_function = std::function<bool(const Counts&)>();
  const trip::Rule from_nullptr = nullptr;
  for (const trip::Rule* r :
       {&from_null_pointer, &from_empty_function, &from_nullptr}) {
    EXPECT_FALSE(static_cast<bool>(*r));
    EXPECT_TRUE(*r == nullptr && nullptr == *r);
    EXPECT_FALSE(*r != nullptr || nullptr != *r);
    EXPECT_EQ(r->kind(), trip::Rule::Kind::kEmpty);
    EXPECT_FALSE((*r)(c)) << "an empty rule answers false";
  }
  EXPECT_TRUE(lambda != nullptr);

  // A Rule converts back to a std::function, and mixes with lambdas.
  const std::function<bool(const Counts&)> back = trip::ConsecutiveFailures(2);
  c.consecutive_failures = 2;
  EXPECT_TRUE(back(c));
  const trip::Rule mixed =
      trip::AnyOf(NeverTrip, trip::ConsecutiveFailures(2));
  EXPECT_TRUE(mixed(c));
  EXPECT_EQ(mixed.parts().size(), 2u);
}

TEST(TripRuleTest, AccessorsReadTheParametersAndDescribeSpellsThem) {
  const trip::Rule fr = trip::FailureRate(0.5, 20);
  EXPECT_EQ(fr.kind(), trip::Rule::Kind::kFailureRate);
  EXPECT_EQ(fr.rate(), 0.5);
  EXPECT_EQ(fr.minimum_calls(), 20u);
  EXPECT_EQ(fr.failures(), 0u);
  EXPECT_TRUE(fr.parts().empty());
  EXPECT_EQ(fr.Describe(), "failure_rate(0.5, minimum_calls=20)");

  const trip::Rule sr = trip::SlowCallRate(0.8, 50);
  EXPECT_EQ(sr.kind(), trip::Rule::Kind::kSlowCallRate);
  EXPECT_EQ(sr.Describe(), "slow_call_rate(0.8, minimum_calls=50)");

  const trip::Rule cf = trip::ConsecutiveFailures(6);
  EXPECT_EQ(cf.kind(), trip::Rule::Kind::kConsecutiveFailures);
  EXPECT_EQ(cf.failures(), 6u);
  EXPECT_EQ(cf.rate(), 0.0);
  EXPECT_EQ(cf.minimum_calls(), 0u);
  EXPECT_EQ(cf.Describe(), "consecutive_failures(6)");

  const trip::Rule any = trip::AnyOf(cf, nullptr, NeverTrip);
  EXPECT_EQ(any.kind(), trip::Rule::Kind::kAnyOf);
  ASSERT_EQ(any.parts().size(), 3u);
  EXPECT_EQ(any.parts()[0].failures(), 6u);
  EXPECT_EQ(any.Describe(), "any_of(consecutive_failures(6), empty, custom)");
  EXPECT_EQ(trip::Rule().Describe(), "empty");

  // The minimum as given is shown (so a 0 can be seen), the effective one
  // (at least 1) is read.
  EXPECT_EQ(trip::FailureRate(0.5, 0).Describe(),
            "failure_rate(0.5, minimum_calls=0)");
  EXPECT_EQ(trip::FailureRate(0.5, 0).minimum_calls(), 1u);
  EXPECT_EQ(trip::FailureRate(1.0000001, 5).Describe(),
            "failure_rate(1.0000001, minimum_calls=5)")
      << "six digits would show 1, which is valid";
}

// ---------------------------------------------------------------------------
// Check: why it tripped (issue 14, item 7's data)
// ---------------------------------------------------------------------------

TEST(TripRuleTest, CheckSaysWhichRuleTrippedAndWhatItSaw) {
  TripReason why;
  Counts c = WindowCounts(50, 31, 40);
  c.consecutive_failures = 6;
  c.total_failures = 31;

  ASSERT_TRUE(trip::FailureRate(0.5, 20).Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kFailureRate);
  EXPECT_EQ(why.value, 0.62);
  EXPECT_EQ(why.threshold, 0.5);
  EXPECT_EQ(why.calls, 50u);
  EXPECT_EQ(why.counts.window_failures, 31u);
  EXPECT_EQ(why.counts.consecutive_failures, 6u);

  ASSERT_TRUE(trip::SlowCallRate(0.75, 50).Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kSlowCallRate);
  EXPECT_EQ(why.value, 0.8);
  EXPECT_EQ(why.threshold, 0.75);
  EXPECT_EQ(why.calls, 50u);

  ASSERT_TRUE(trip::ConsecutiveFailures(6).Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kConsecutiveFailures);
  EXPECT_EQ(why.value, 6.0);
  EXPECT_EQ(why.threshold, 6.0);

  ASSERT_TRUE(trip::Rule([](const Counts& k) { return k.total_failures > 30; })
                  .Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kCustom);
  EXPECT_EQ(why.counts.total_failures, 31u);
  EXPECT_EQ(why.calls, 50u);

  // No place to write to is fine.
  EXPECT_TRUE(trip::ConsecutiveFailures(6).Check(c, nullptr));
}

TEST(TripRuleTest, CheckOfAnyOfNamesThePartThatTripped) {
  const trip::Rule rule =
      trip::AnyOf(trip::ConsecutiveFailures(10), trip::FailureRate(0.5, 4),
                  trip::SlowCallRate(0.5, 4));
  Counts c = WindowCounts(4, 1, 3);  // only the slow-call rate is reached
  c.consecutive_failures = 1;
  TripReason why;
  ASSERT_TRUE(rule.Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kSlowCallRate);
  EXPECT_EQ(why.value, 0.75);

  c.window_failures = 2;  // now the failure rate too: the first part wins
  ASSERT_TRUE(rule.Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kFailureRate);
  EXPECT_EQ(why.value, 0.5);

  const trip::Rule nested = trip::AnyOf(
      trip::ConsecutiveFailures(10), trip::AnyOf(nullptr, trip::ConsecutiveFailures(1)));
  ASSERT_TRUE(nested.Check(c, &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kConsecutiveFailures);
  EXPECT_EQ(why.threshold, 1.0);
}

TEST(TripRuleTest, CheckLeavesTheReasonAloneWhenItDoesNotTrip) {
  TripReason why;
  why.rule = TripReason::Rule::kCustom;
  why.calls = 7;
  EXPECT_FALSE(trip::AnyOf(trip::FailureRate(0.5, 4), trip::ConsecutiveFailures(3))
                   .Check(WindowCounts(4, 1), &why));
  EXPECT_EQ(why.rule, TripReason::Rule::kCustom);
  EXPECT_EQ(why.calls, 7u);
  EXPECT_FALSE(trip::Rule().Check(WindowCounts(4, 4), &why));
  EXPECT_EQ(why.calls, 7u);
}

TEST(TripRuleTest, ACustomRuleThatThrowsPropagatesFromCheck) {
  const trip::Rule rule = trip::AnyOf(
      trip::ConsecutiveFailures(100),
      [](const Counts&) -> bool { throw std::runtime_error("rule bug"); });
  TripReason why;
  EXPECT_THROW(rule.Check(WindowCounts(1, 1), &why), std::runtime_error);
  EXPECT_EQ(why.rule, TripReason::Rule::kNone);
  EXPECT_THROW(rule(WindowCounts(1, 1)), std::runtime_error);
}

// ---------------------------------------------------------------------------
// CappedAt: min(minimum_calls, window size)
// ---------------------------------------------------------------------------

TEST(TripRuleTest, CappedAtLowersOnlyTheMinimumsAboveTheCap) {
  EXPECT_EQ(trip::FailureRate(0.5, 6).CappedAt(5).minimum_calls(), 5u);
  EXPECT_EQ(trip::FailureRate(0.5).CappedAt(10).minimum_calls(), 10u)
      << "window 10, default minimum 100";
  EXPECT_EQ(trip::SlowCallRate(0.5, 3).CappedAt(10).minimum_calls(), 3u);
  EXPECT_EQ(trip::FailureRate(0.5, 6).CappedAt(0).minimum_calls(), 1u);
  const trip::Rule capped = trip::FailureRate(0.5, 6).CappedAt(5);
  EXPECT_EQ(capped.rate(), 0.5);
  EXPECT_TRUE(capped(WindowCounts(5, 3))) << "trips once the window is full";

  const trip::Rule any = trip::AnyOf(
      trip::ConsecutiveFailures(20), trip::FailureRate(0.5, 50),
      trip::AnyOf(trip::SlowCallRate(0.8, 8), nullptr, NeverTrip));
  const trip::Rule c = any.CappedAt(10);
  ASSERT_EQ(c.parts().size(), 3u);
  EXPECT_EQ(c.parts()[0].failures(), 20u) << "consecutive is not a rate";
  EXPECT_EQ(c.parts()[1].minimum_calls(), 10u);
  EXPECT_EQ(c.parts()[2].parts()[0].minimum_calls(), 8u);
  EXPECT_EQ(c.parts()[2].parts()[1].kind(), trip::Rule::Kind::kEmpty);
  EXPECT_EQ(c.parts()[2].parts()[2].kind(), trip::Rule::Kind::kCustom);
  EXPECT_EQ(c.calls_to_decide(), 8u);
  EXPECT_EQ(any.parts()[1].minimum_calls(), 50u) << "the original is intact";
}

// The example: a count window of 5 with FailureRate(0.5, 6) never
// tripped, since the window never holds 6 calls.
TEST(TripRuleTest, ACountWindowSmallerThanTheMinimumStillTrips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(5);
  s.ready_to_trip = trip::FailureRate(0.5, 6);
  Breaker b(s);
  EXPECT_EQ(b.settings().ready_to_trip.minimum_calls(), 5u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "4 calls: below the minimum";
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen);
}

// resilience4j's common "slidingWindowSize 10, minimumNumberOfCalls 100".
TEST(TripRuleTest, WindowTenWithTheDefaultMinimumTripsAtTenCalls) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock);
  s.window = SlidingWindow::Count(10);
  s.ready_to_trip = trip::FailureRate(0.5);
  Breaker b(s);
  EXPECT_EQ(b.settings().ready_to_trip.minimum_calls(), 10u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunOk(b));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kClosed) << "9 calls";
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kOpen) << "5 of 10 failed";
}

// ---------------------------------------------------------------------------
// What the breaker reads to decide when to ask
// ---------------------------------------------------------------------------

struct PropertyRow {
  const char* label;
  trip::Rule rule;
  bool every_outcome;
  uint64_t calls_to_decide;
  std::optional<double> failure_threshold;
  std::optional<double> slow_threshold;
};

TEST(TripRuleTest, PropertiesTable) {
  constexpr uint64_t kNever = UINT64_MAX;
  const PropertyRow rows[] = {
      {"empty", trip::Rule(), false, kNever, std::nullopt, std::nullopt},
      {"consecutive", trip::ConsecutiveFailures(6), false, kNever,
       std::nullopt, std::nullopt},
      {"custom", trip::Rule(NeverTrip), false, kNever, std::nullopt,
       std::nullopt},
      {"failure rate", trip::FailureRate(0.5, 20), true, 20, 0.5,
       std::nullopt},
      {"slow rate", trip::SlowCallRate(0.8, 7), true, 7, std::nullopt, 0.8},
      {"zero minimum", trip::FailureRate(0.5, 0), true, 1, 0.5, std::nullopt},
      {"any of no rate",
       trip::AnyOf(trip::ConsecutiveFailures(3), NeverTrip), false, kNever,
       std::nullopt, std::nullopt},
      {"any of both",
       trip::AnyOf(trip::ConsecutiveFailures(3), trip::FailureRate(0.6, 30),
                   trip::SlowCallRate(0.9, 12), trip::FailureRate(0.4, 50)),
       true, 12, 0.4, 0.9},
      {"nested",
       trip::AnyOf(trip::ConsecutiveFailures(3),
                   trip::AnyOf(nullptr, trip::SlowCallRate(0.7, 9),
                               trip::SlowCallRate(0.2, 40))),
       true, 9, std::nullopt, 0.2},
  };
  for (const PropertyRow& row : rows) {
    SCOPED_TRACE(row.label);
    EXPECT_EQ(row.rule.decides_on_every_outcome(), row.every_outcome);
    EXPECT_EQ(row.rule.calls_to_decide(), row.calls_to_decide);
    EXPECT_EQ(row.rule.failure_rate_threshold(), row.failure_threshold);
    EXPECT_EQ(row.rule.slow_call_rate_threshold(), row.slow_threshold);
  }
}

TEST(TripRuleTest, RatesExceededTable) {
  const uint8_t kF = trip::Rule::kFailureRateExceeded;
  const uint8_t kS = trip::Rule::kSlowCallRateExceeded;
  const trip::Rule both = trip::AnyOf(trip::ConsecutiveFailures(1),
                                      trip::FailureRate(0.5, 4),
                                      trip::AnyOf(trip::SlowCallRate(0.5, 6)));
  struct Row {
    Counts counts;
    uint8_t bits;
  };
  const Row rows[] = {
      {WindowCounts(3, 3, 3), 0},        // neither minimum reached
      {WindowCounts(4, 2, 4), kF},       // slow part needs 6 calls
      {WindowCounts(6, 2, 3), kS},       // 33% failed, 50% slow
      {WindowCounts(6, 3, 3), kF | kS},  // both exactly at the threshold
      {WindowCounts(6, 2, 2), 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat(row.counts.window_calls, " calls, ",
                              row.counts.window_failures, " failed, ",
                              row.counts.window_slow_calls, " slow"));
    EXPECT_EQ(both.RatesExceeded(row.counts), row.bits);
  }
  Counts streak = WindowCounts(1, 1);
  streak.consecutive_failures = 50;
  EXPECT_EQ(trip::ConsecutiveFailures(1).RatesExceeded(streak), 0)
      << "not a rate";
  EXPECT_EQ(trip::Rule([](const Counts&) { return true; }).RatesExceeded(streak),
            0);
  EXPECT_EQ(trip::Rule().RatesExceeded(streak), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
