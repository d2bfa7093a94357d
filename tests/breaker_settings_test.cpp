// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of breaker_settings.hpp: every invalid setting is refused with a
// message naming the breaker, the field and the rule; the constructor
// repairs each to its default; and, rule by rule, whatever validation
// refuses normalisation repairs.

#include "degrade/breaker_settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
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
#include "degrade/detail/splitmix.hpp"
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
        // Issue 13: a positive duration under 1 ns became 0 in the
        // breaker's nanosecond integers, which means default/off: a 0.5 ns
        // timeout was 60 s, a 0.5 ns half_open_max_wait no limit at all.
        InvalidCase{"SubNanosecondInterval",
                    [](BreakerSettings& s) { s.interval = kNs / 2; },
                    "interval"},
        InvalidCase{"SubNanosecondTimeout",
                    [](BreakerSettings& s) { s.timeout = kNs / 4; }, "timeout"},
        InvalidCase{"SubNanosecondSlowCallDuration",
                    [](BreakerSettings& s) { s.slow_call_duration = kNs / 2; },
                    "slow_call_duration"},
        InvalidCase{"SubNanosecondMaxTimeout",
                    [](BreakerSettings& s) { s.max_timeout = kNs / 2; },
                    "max_timeout"},
        InvalidCase{"SubNanosecondHalfOpenMaxWait",
                    [](BreakerSettings& s) { s.half_open_max_wait = kNs / 2; },
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
                    "window.size"},
        // Issue 14: the library's rules are validated like any setting.
        InvalidCase{"PercentageFailureRate",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::FailureRate(50.0, 5);
                    },
                    "ready_to_trip"},
        InvalidCase{"ZeroFailureRate",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::FailureRate(0.0, 5);
                    },
                    "ready_to_trip"},
        InvalidCase{"NaNSlowCallRate",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::SlowCallRate(kNaN, 5);
                    },
                    "ready_to_trip"},
        InvalidCase{"ZeroMinimumCalls",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::FailureRate(0.5, 0);
                    },
                    "ready_to_trip"},
        InvalidCase{"ZeroConsecutiveFailures",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::ConsecutiveFailures(0);
                    },
                    "ready_to_trip"},
        InvalidCase{"AnyOfNothing",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::AnyOf(nullptr, trip::Rule());
                    },
                    "ready_to_trip"},
        InvalidCase{"NestedBadPart",
                    [](BreakerSettings& s) {
                      s.ready_to_trip = trip::AnyOf(
                          trip::ConsecutiveFailures(5),
                          trip::AnyOf(trip::SlowCallRate(1.5, 10)));
                    },
                    "ready_to_trip"}),
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

TEST(SettingsValidationTest, APercentageRuleIsRefusedWithTheFractionMessage) {
  BreakerSettings s;
  s.name = "x";
  s.ready_to_trip = trip::FailureRate(50.0, 5);
  const absl::Status st = ValidateBreakerSettings(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "circuit breaker 'x': setting 'ready_to_trip' = failure_rate(50, "
            "minimum_calls=5) is invalid: rates are fractions in (0, 1]: for "
            "50% write 0.5");
  s.ready_to_trip = trip::AnyOf(trip::ConsecutiveFailures(6),
                                trip::FailureRate(0.5, 0));
  EXPECT_EQ(ValidateBreakerSettings(s).message(),
            "circuit breaker 'x': setting 'ready_to_trip' = "
            "any_of(consecutive_failures(6), failure_rate(0.5, "
            "minimum_calls=0)) is invalid: part 2 (failure_rate(0.5, "
            "minimum_calls=0)): minimum_calls must be at least 1");
}

TEST(SettingsValidationTest, TheNameIsEscapedLikeEveryOtherComponents) {
  BreakerSettings s;
  s.name = "a\nb\xff";
  s.backoff_jitter = 2.0;
  EXPECT_EQ(ValidateBreakerSettings(s).message(),
            "circuit breaker 'a\\nb\xEF\xBF\xBD': setting 'backoff_jitter' = 2 "
            "is invalid: must be in [0, 1]");
}

// Every way the field was assigned while it was a std::function still
// compiles and validates: an unset rule, nullptr, lambdas, functions,
// std::function and the trip:: rules.
TEST(SettingsValidationTest, ReadyToTripTakesEveryCallableItTookBefore) {
  BreakerSettings s;
  s.name = "callables";
  EXPECT_TRUE(ValidateBreakerSettings(s).ok()) << "unset: the default rule";
  s.ready_to_trip = nullptr;
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.ready_to_trip = [](const Counts& c) { return c.total_failures > 3; };
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.ready_to_trip = NeverTrip;
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.ready_to_trip = std::function<bool(const Counts&)>(NeverTrip);
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  s.ready_to_trip = trip::FailureRate(1.0, 1);
  EXPECT_TRUE(ValidateBreakerSettings(s).ok());
  const std::function<bool(const Counts&)> out = s.ready_to_trip;
  EXPECT_TRUE(out(Counts{0, 0, 0, 0, 0, 0, 1, 1, 0}));
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

// Issue 14: FailureRate(50.0, 5) was accepted and never tripped. The
// constructor, which cannot refuse, falls back to the default rule.
TEST(SettingsFallbackTest, AnInvalidRuleBecomesTheDefaultRule) {
  const trip::Rule invalid[] = {
      trip::FailureRate(50.0, 5), trip::FailureRate(0.5, 0),
      trip::ConsecutiveFailures(0), trip::AnyOf(nullptr, nullptr),
      trip::AnyOf(trip::ConsecutiveFailures(2), trip::SlowCallRate(-1, 4))};
  for (const trip::Rule& rule : invalid) {
    SCOPED_TRACE(rule.Describe());
    FakeClock clock(kAlignedStart);
    BreakerSettings s = TestSettings(&clock);
    s.ready_to_trip = rule;
    Breaker b(s);
    EXPECT_EQ(b.settings().ready_to_trip.Describe(), "consecutive_failures(6)");
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunFailure(b));
    EXPECT_EQ(b.state(), State::kClosed) << "5 failures";
    ASSERT_TRUE(RunFailure(b));
    EXPECT_EQ(b.state(), State::kOpen) << "gobreaker's more than 5";
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
// One rule table: whatever validation refuses, normalisation repairs
// ---------------------------------------------------------------------------

// Every rule, broken on its own, is the one validation reports, and the
// repair leaves settings that pass.
TEST(BreakerSettingRulesTest, EachRuleBrokenAloneIsReportedAndRepaired) {
  using S = BreakerSettings;
  struct Case {
    const char* field;
    void (*breaks)(S&);
  };
  const Case cases[] = {
      {"interval", [](S& s) { s.interval = -kNs; }},
      {"interval", [](S& s) { s.interval = kNs / 2; }},
      {"timeout", [](S& s) { s.timeout = -absl::Seconds(1); }},
      {"timeout", [](S& s) { s.timeout = kNs / 4; }},
      {"slow_call_duration", [](S& s) { s.slow_call_duration = -kNs; }},
      {"slow_call_duration", [](S& s) { s.slow_call_duration = kNs / 2; }},
      {"max_timeout", [](S& s) { s.max_timeout = -kNs; }},
      {"max_timeout", [](S& s) { s.max_timeout = kNs / 2; }},
      {"max_timeout", [](S& s) { s.max_timeout = absl::Seconds(59); }},
      {"half_open_max_wait", [](S& s) { s.half_open_max_wait = -kNs; }},
      {"half_open_max_wait", [](S& s) { s.half_open_max_wait = kNs / 2; }},
      {"backoff_multiplier", [](S& s) { s.backoff_multiplier = 0.5; }},
      {"backoff_jitter", [](S& s) { s.backoff_jitter = -0.01; }},
      {"window.kind",
       [](S& s) { s.window.kind = static_cast<SlidingWindow::Kind>(3); }},
      {"window.size", [](S& s) { s.window = SlidingWindow::Count(0); }},
      {"window.size",
       [](S& s) { s.window = SlidingWindow::Count(kMaxCountWindowCalls + 1); }},
      {"window.size", [](S& s) { s.window = SlidingWindow::Time(kNs, 0); }},
      {"window.length",
       [](S& s) { s.window = SlidingWindow::Time(absl::ZeroDuration()); }},
      {"window.size",
       [](S& s) {
         s.window = SlidingWindow::Time(absl::Hours(1), UINT32_MAX);
       }},
      {"window.size", [](S& s) { s.window = SlidingWindow::Time(kNs, 2); }},
      {"ready_to_trip", [](S& s) { s.ready_to_trip = trip::FailureRate(50.0, 5); }},
      {"half_open_policy",
       [](S& s) { s.half_open_policy = static_cast<HalfOpenPolicy>(2); }},
      {"half_open_failure_rate", [](S& s) { s.half_open_failure_rate = 50; }},
      {"half_open_slow_call_rate",
       [](S& s) { s.half_open_slow_call_rate = std::nan(""); }},
      {"half_open_wait_from",
       [](S& s) { s.half_open_wait_from = static_cast<HalfOpenWaitFrom>(2); }},
      {"half_open_wait_expiry",
       [](S& s) {
         s.half_open_wait_expiry = static_cast<HalfOpenWaitExpiry>(7);
       }},
      {"initial_state",
       [](S& s) { s.initial_state = static_cast<InitialState>(5); }},
  };
  ASSERT_EQ(std::size(cases), detail::BreakerSettingRules().size())
      << "a rule without a case here";
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    S s;
    s.name = "rules";
    cases[i].breaks(s);
    const absl::Status st = ValidateBreakerSettings(s);
    ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << i;
    EXPECT_THAT(st.message(),
                HasSubstr(absl::StrCat("setting '", cases[i].field, "'")))
        << st;
    EXPECT_EQ(detail::BreakerSettingRules()[i].field, cases[i].field);
    EXPECT_TRUE(detail::BreakerSettingRules()[i].broken(s)) << i;
    const S repaired = detail::NormalizeBreakerSettings(s);
    EXPECT_TRUE(ValidateBreakerSettings(repaired).ok())
        << ValidateBreakerSettings(repaired);
  }
}

// Seeded random settings drawn from each field's extremes (negative, zero,
// 1 ns, huge, infinite, NaN, ...): normalised settings always validate, and
// settings that validate keep every field but the "off" spellings.
TEST(BreakerSettingRulesTest, NormalisedSettingsAlwaysValidate) {
  const absl::Duration durations[] = {-absl::InfiniteDuration(),
                                      -absl::Seconds(1),
                                      -kNs,
                                      absl::ZeroDuration(),
                                      kNs / 4,
                                      kNs,
                                      absl::Milliseconds(5),
                                      absl::Seconds(59),
                                      absl::Seconds(60),
                                      absl::Hours(24 * 365 * 300),
                                      absl::InfiniteDuration()};
  const double ratios[] = {-1.0,
                           0.0,
                           0.5,
                           1.0,
                           1.5,
                           2.0,
                           1e308,
                           std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  const uint32_t sizes[] = {0, 1, 2, 10, 1000, 100000, 100001, UINT32_MAX};
  detail::SplitMix64 rng(2026);
  detail::SplitMix64 rule_rng(14);
  const auto pick = [&rng](const auto& pool) {
    return pool[rng.Next() % std::size(pool)];
  };
  int valid = 0;
  for (int i = 0; i < 20000; ++i) {
    BreakerSettings s;
    s.name = "random";
    s.interval = pick(durations);
    s.timeout = pick(durations);
    s.slow_call_duration = pick(durations);
    s.max_timeout = pick(durations);
    s.half_open_max_wait = pick(durations);
    s.backoff_multiplier = pick(ratios);
    s.backoff_jitter = pick(ratios);
    // Rules come from their own generator, so the draws of the other
    // fields are the ones this test always made; most draws leave the rule
    // unset, so that valid settings stay common.
    const uint64_t minimums[] = {0, 1, 5, 100, UINT64_MAX};
    const auto pick_rule = [&rule_rng](const auto& pool) {
      return pool[rule_rng.Next() % std::size(pool)];
    };
    switch (rule_rng.Next() % 12) {
      case 1:
        s.ready_to_trip =
            trip::FailureRate(pick_rule(ratios), pick_rule(minimums));
        break;
      case 2:
        s.ready_to_trip =
            trip::SlowCallRate(pick_rule(ratios), pick_rule(minimums));
        break;
      case 3:
        s.ready_to_trip = trip::ConsecutiveFailures(pick_rule(minimums));
        break;
      case 4:
        s.ready_to_trip = trip::AnyOf(
            rule_rng.Next() % 2 ? trip::Rule() : trip::ConsecutiveFailures(6),
            trip::FailureRate(pick_rule(ratios), pick_rule(minimums)));
        break;
      default:
        break;
    }
    switch (rng.Next() % 4) {
      case 0:
        break;
      case 3:
        s.window.kind = static_cast<SlidingWindow::Kind>(3 + rng.Next() % 250);
        s.window.size = pick(sizes);
        break;
      case 1:
        s.window = SlidingWindow::Count(pick(sizes));
        break;
      default:
        s.window = SlidingWindow::Time(pick(durations), pick(sizes));
    }
    const BreakerSettings n = detail::NormalizeBreakerSettings(s);
    ASSERT_TRUE(ValidateBreakerSettings(n).ok())
        << "draw " << i << ": " << ValidateBreakerSettings(n);
    ASSERT_TRUE(static_cast<bool>(n.ready_to_trip));
    if (!ValidateBreakerSettings(s).ok()) continue;
    ++valid;
    const auto off = [](absl::Duration d) {
      return d == absl::InfiniteDuration() ? absl::ZeroDuration() : d;
    };
    EXPECT_EQ(n.interval, off(s.interval));
    EXPECT_EQ(n.timeout, s.timeout);
    EXPECT_EQ(n.slow_call_duration, off(s.slow_call_duration));
    EXPECT_EQ(n.max_timeout, s.max_timeout);
    EXPECT_EQ(n.half_open_max_wait, off(s.half_open_max_wait));
    EXPECT_EQ(n.backoff_multiplier, s.backoff_multiplier);
    EXPECT_EQ(n.backoff_jitter, s.backoff_jitter);
    EXPECT_EQ(n.window.kind, s.window.kind);
    if (s.ready_to_trip && s.window.kind != SlidingWindow::Kind::kCount) {
      EXPECT_EQ(n.ready_to_trip.Describe(), s.ready_to_trip.Describe());
    }
  }
  EXPECT_GT(valid, 50);  // the pools do produce valid settings too
}

TEST(BreakerSettingRulesTest, TheDefaultTripRuleIsGobreakers) {
  const BreakerSettings n = detail::NormalizeBreakerSettings(BreakerSettings{});
  Counts c;
  c.consecutive_failures = 5;
  EXPECT_FALSE(n.ready_to_trip(c));
  c.consecutive_failures = 6;
  EXPECT_TRUE(n.ready_to_trip(c));
  EXPECT_EQ(detail::EffectiveOpenTimeout(n), absl::Seconds(60));
}

// resilience4j: the effective minimum is min(minimumNumberOfCalls,
// slidingWindowSize). Only a count window bounds the calls it holds.
TEST(BreakerSettingRulesTest, ACountWindowCapsTheRuleAtItsSize) {
  struct Row {
    SlidingWindow window;
    trip::Rule rule;
    uint64_t minimum;
  };
  const Row rows[] = {
      {SlidingWindow::Count(5), trip::FailureRate(0.5, 6), 5},
      {SlidingWindow::Count(10), trip::FailureRate(0.5), 10},
      {SlidingWindow::Count(10), trip::SlowCallRate(0.5, 4), 4},
      {SlidingWindow{}, trip::FailureRate(0.5), 100},
      {SlidingWindow::Time(absl::Seconds(10)), trip::FailureRate(0.5), 100},
      // An invalid window is dropped first, and nothing caps the rule.
      {SlidingWindow::Count(0), trip::FailureRate(0.5, 6), 6},
  };
  for (const Row& row : rows) {
    BreakerSettings s;
    s.window = row.window;
    s.ready_to_trip = trip::AnyOf(trip::ConsecutiveFailures(3), row.rule);
    const BreakerSettings n = detail::NormalizeBreakerSettings(s);
    SCOPED_TRACE(n.ready_to_trip.Describe());
    EXPECT_EQ(n.ready_to_trip.calls_to_decide(), row.minimum);
    EXPECT_EQ(n.ready_to_trip.parts()[0].failures(), 3u);
    EXPECT_TRUE(ValidateBreakerSettings(n).ok());
  }
  BreakerSettings custom;
  custom.window = SlidingWindow::Count(5);
  custom.ready_to_trip = NeverTrip;
  EXPECT_EQ(detail::NormalizeBreakerSettings(custom).ready_to_trip.kind(),
            trip::Rule::Kind::kCustom);
}

// A sub-nanosecond timeout used to be truncated to 0, i.e. the 60 s
// default; the constructor now repairs it to 1 ns, the shortest it honours.
TEST(SettingsFallbackTest, ASubNanosecondTimeoutIsOneNanosecondNotSixtySeconds) {
  FakeClock clock;
  BreakerSettings s;
  s.name = "sub-ns";
  s.clock = &clock;
  s.timeout = kNs / 2;
  s.ready_to_trip = [](const Counts& c) { return c.consecutive_failures >= 1; };
  Breaker b(s);
  (void)b.Execute([] { return absl::UnavailableError("down"); });
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Advance(2 * kNs);
  EXPECT_EQ(b.state(), State::kHalfOpen);
}

// Found by review: validation accepted windows that the constructor could
// not build (4 G buckets: bad_alloc) or that crashed the first failure (an
// out-of-range kind). Create refuses them; the constructor repairs them.
TEST(SettingsFallbackTest, HugeOrUnknownWindowsAreRefusedAndRepaired) {
  FakeClock clock;
  const SlidingWindow bad[] = {
      SlidingWindow::Count(UINT32_MAX),
      SlidingWindow::Time(absl::Hours(1), UINT32_MAX),
      [] {
        SlidingWindow w = SlidingWindow::Count(10);
        w.kind = static_cast<SlidingWindow::Kind>(7);
        return w;
      }(),
  };
  for (const SlidingWindow& w : bad) {
    BreakerSettings s = TestSettings(&clock, "huge");
    s.window = w;
    s.ready_to_trip = trip::ConsecutiveFailures(2);
    EXPECT_EQ(CircuitBreaker<void>::Create(s).status().code(),
              absl::StatusCode::kInvalidArgument);
    Breaker b(s);
    EXPECT_EQ(b.settings().window.kind, SlidingWindow::Kind::kNone);
    EXPECT_TRUE(RunFailure(b));
    EXPECT_TRUE(RunFailure(b));
    EXPECT_EQ(b.state(), State::kOpen);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
