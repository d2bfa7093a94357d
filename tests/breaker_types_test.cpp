// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of breaker_types.hpp: the rates of an empty and a full window, the
// window factories, state names (out-of-range ones included), and the
// TripReason's JSON and text.

#include "degrade/breaker_types.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

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
  EXPECT_EQ(StateName(static_cast<State>(3)), "unknown state: 3");
}

// Issue 14, item 9: a log line said "unknown" whatever the byte was.
TEST(StateTest, AnOutOfRangeStateSaysWhichValueItIs) {
  EXPECT_EQ(StateName(static_cast<State>(7)), "unknown state: 7");
  EXPECT_EQ(StateName(static_cast<State>(255)), "unknown state: 255");
  // The view points at storage that lives as long as the program.
  const absl::string_view first = StateName(static_cast<State>(42));
  EXPECT_EQ(StateName(static_cast<State>(42)).data(), first.data());
  EXPECT_EQ(first, "unknown state: 42");
}

// A reason as Check fills it for a failure rate of 31/50 >= 0.5.
TripReason FailureRateReason() {
  TripReason r;
  r.rule = TripReason::Rule::kFailureRate;
  r.calls = 50;
  r.counts.window_calls = 50;
  r.counts.window_failures = 31;
  r.value = r.counts.failure_rate();
  r.threshold = 0.5;
  return r;
}

TEST(TripReasonTest, JsonOfEachRuleIsTheDocumentedObject) {
  using nlohmann::json;
  const TripReason rate = FailureRateReason();
  EXPECT_EQ(rate.ToJson(),
            R"({"rule":"failure_rate","rate":0.62,"calls":50,"threshold":0.5})");
  EXPECT_EQ(json::parse(rate.ToJson()),
            json::parse(R"({"rule":"failure_rate","rate":0.62,"calls":50,
                            "threshold":0.5})"));

  TripReason slow = rate;
  slow.rule = TripReason::Rule::kSlowCallRate;
  slow.value = 2.0 / 3;  // six significant digits
  slow.threshold = 0.75;
  EXPECT_EQ(slow.ToJson(),
            R"({"rule":"slow_call_rate","rate":0.666667,"calls":50,"threshold":0.75})");

  TripReason streak;
  streak.rule = TripReason::Rule::kConsecutiveFailures;
  streak.value = 6;
  streak.threshold = 6;
  EXPECT_EQ(json::parse(streak.ToJson()),
            json::parse(R"({"rule":"consecutive_failures","failures":6,
                            "threshold":6})"));

  TripReason custom;
  custom.rule = TripReason::Rule::kCustom;
  custom.counts.window_failures = 3;
  custom.counts.window_calls = 10;
  EXPECT_EQ(json::parse(custom.ToJson()),
            json::parse(R"({"rule":"custom","failures":3,"calls":10})"));

  EXPECT_EQ(TripReason().ToJson(), R"({"rule":"none"})");
}

TEST(TripReasonTest, JsonStaysValidForAnyValue) {
  using nlohmann::json;
  const double kInf = std::numeric_limits<double>::infinity();
  TripReason r = FailureRateReason();
  r.value = std::numeric_limits<double>::quiet_NaN();
  r.threshold = kInf;
  r.calls = UINT64_MAX;
  const json j = json::parse(r.ToJson());  // throws on invalid JSON
  EXPECT_TRUE(j["rate"].is_null());
  EXPECT_TRUE(j["threshold"].is_null());
  EXPECT_EQ(j["calls"].get<uint64_t>(), UINT64_MAX);

  TripReason streak;
  streak.rule = TripReason::Rule::kConsecutiveFailures;
  streak.value = 1e300;
  streak.threshold = -kInf;
  const json s = json::parse(streak.ToJson());
  EXPECT_EQ(s["failures"].get<double>(), 1e300);
  EXPECT_TRUE(s["threshold"].is_null());

  TripReason unknown;
  unknown.rule = static_cast<TripReason::Rule>(9);
  EXPECT_EQ(json::parse(unknown.ToJson())["rule"], "unknown");
}

TEST(TripReasonTest, ToStringReadsLikeTheIssue) {
  EXPECT_EQ(FailureRateReason().ToString(),
            "failure rate 62% of 50 calls >= 50%");
  TripReason slow = FailureRateReason();
  slow.rule = TripReason::Rule::kSlowCallRate;
  slow.value = 0.8;
  slow.threshold = 0.625;
  EXPECT_EQ(slow.ToString(), "slow-call rate 80% of 50 calls >= 62.5%");
  TripReason streak;
  streak.rule = TripReason::Rule::kConsecutiveFailures;
  streak.value = 6;
  streak.threshold = 6;
  EXPECT_EQ(streak.ToString(), "6 consecutive failures >= 6");
  TripReason custom;
  custom.rule = TripReason::Rule::kCustom;
  custom.counts.window_failures = 3;
  custom.counts.window_calls = 10;
  EXPECT_EQ(custom.ToString(), "custom rule (3 failures in 10 calls)");
  EXPECT_EQ(TripReason().ToString(), "none");
}

TEST(TripReasonTest, RuleNames) {
  EXPECT_EQ(TripRuleName(TripReason::Rule::kNone), "none");
  EXPECT_EQ(TripRuleName(TripReason::Rule::kConsecutiveFailures),
            "consecutive_failures");
  EXPECT_EQ(TripRuleName(TripReason::Rule::kFailureRate), "failure_rate");
  EXPECT_EQ(TripRuleName(TripReason::Rule::kSlowCallRate), "slow_call_rate");
  EXPECT_EQ(TripRuleName(TripReason::Rule::kCustom), "custom");
  EXPECT_EQ(TripRuleName(static_cast<TripReason::Rule>(200)), "unknown");
}

TEST(BreakerTotalsTest, StartsAtZero) {
  const BreakerTotals t;
  EXPECT_EQ(t.admitted + t.successes + t.failures + t.exclusions +
                t.slow_calls + t.abandoned + t.stale + t.rejected_open +
                t.rejected_too_many,
            0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
