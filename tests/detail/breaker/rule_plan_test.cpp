// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/rule_plan.hpp: what the state machine learns from a
// trip rule, rule by rule.

#include "degrade/detail/breaker/rule_plan.hpp"

#include <cstdint>
#include <limits>

#include "degrade/breaker_settings.hpp"
#include "degrade/breaker_types.hpp"
#include "degrade/trip.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using detail::PlanRule;
using detail::RulePlan;

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

RulePlan Plan(trip::Rule rule, double fr = 0.0, double sr = 0.0) {
  BreakerSettings s;
  s.ready_to_trip = std::move(rule);
  s.half_open_failure_rate = fr;
  s.half_open_slow_call_rate = sr;
  return PlanRule(detail::NormalizeBreakerSettings(s));
}

TEST(RulePlanTest, GobreakersRulesAreAskedAfterFailuresOnly) {
  const RulePlan p = Plan(trip::ConsecutiveFailures(6));
  EXPECT_FALSE(p.every_outcome);
  EXPECT_TRUE(p.library);
  EXPECT_FALSE(p.has_rates);
  EXPECT_EQ(p.calls_to_decide, kNever);
  EXPECT_EQ(p.largest_minimum, 0u);
  const RulePlan custom = Plan([](const Counts&) { return false; });
  EXPECT_FALSE(custom.every_outcome);
  EXPECT_FALSE(custom.library) << "user code: asked outside the lock";
}

TEST(RulePlanTest, RatePartsDecideOnEveryOutcomeFromTheirMinimums) {
  const RulePlan p =
      Plan(trip::AnyOf(trip::FailureRate(0.5, 10), trip::SlowCallRate(0.8, 4),
                       trip::ConsecutiveFailures(3)));
  EXPECT_TRUE(p.every_outcome);
  EXPECT_TRUE(p.library);
  EXPECT_TRUE(p.has_rates);
  EXPECT_EQ(p.calls_to_decide, 4u);
  EXPECT_EQ(p.largest_minimum, 10u);
}

TEST(RulePlanTest, ACustomPartInsideAnyOfIsUserCode) {
  const RulePlan p =
      Plan(trip::AnyOf(trip::FailureRate(0.5, 10),
                       [](const Counts& c) { return c.requests > 9; }));
  EXPECT_TRUE(p.every_outcome);
  EXPECT_FALSE(p.library);
}

TEST(RulePlanTest, HalfOpenThresholdsComeFromSettingsThenTheRuleThenDefaults) {
  EXPECT_EQ(Plan(trip::ConsecutiveFailures(1)).half_open_failure_rate, 0.5);
  EXPECT_EQ(Plan(trip::ConsecutiveFailures(1)).half_open_slow_rate, 1.0);
  const RulePlan from_rule =
      Plan(trip::AnyOf(trip::FailureRate(0.3, 5), trip::SlowCallRate(0.7, 5)));
  EXPECT_EQ(from_rule.half_open_failure_rate, 0.3);
  EXPECT_EQ(from_rule.half_open_slow_rate, 0.7);
  const RulePlan set = Plan(trip::FailureRate(0.3, 5), 0.25, 0.9);
  EXPECT_EQ(set.half_open_failure_rate, 0.25);
  EXPECT_EQ(set.half_open_slow_rate, 0.9);
}

TEST(RulePlanTest, ACountWindowCapsTheMinimumsItPlansWith) {
  BreakerSettings s;
  s.window = SlidingWindow::Count(5);
  s.ready_to_trip =
      trip::AnyOf(trip::FailureRate(0.5, 6), trip::SlowCallRate(0.5, 100));
  const RulePlan p = PlanRule(detail::NormalizeBreakerSettings(s));
  EXPECT_EQ(p.calls_to_decide, 5u);
  EXPECT_EQ(p.largest_minimum, 5u);
}

TEST(RulePlanTest, HalfOpenDecidesAtTheUncappedMinimumOrThePermits) {
  BreakerSettings s;
  s.window = SlidingWindow::Count(3);
  s.ready_to_trip = trip::FailureRate(0.5, 20);
  const uint64_t uncapped = s.ready_to_trip.calls_to_decide();
  const RulePlan p = PlanRule(detail::NormalizeBreakerSettings(s));
  EXPECT_EQ(p.calls_to_decide, 3u) << "the closed state's, capped";
  EXPECT_EQ(detail::HalfOpenDecideAt(p, uncapped, 10), 10u)
      << "resilience4j: min(20, 10), not the closed window's 3";
  EXPECT_EQ(detail::HalfOpenDecideAt(p, uncapped, 50), 20u);
  EXPECT_EQ(detail::HalfOpenDecideAt(Plan(trip::FailureRate(0.5, 2)), 2, 4),
            2u);
  EXPECT_EQ(detail::HalfOpenDecideAt(Plan(trip::ConsecutiveFailures(3)),
                                     UINT64_MAX, 4),
            4u)
      << "no rate part: every permitted trial";
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
