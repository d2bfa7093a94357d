// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of limiter_settings.hpp on its own: LimitAlgorithm's names, the
// defaults, the bounds users are told about, and the header's example.
// Every rejected field with its value is tabled in concurrency_limiter_test;
// here, what the table does not show: order, escaping, and the constants
// agreeing with the machinery behind them.

#include "degrade/limiter_settings.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/detail/overload/sample_window.hpp"
#include "degrade/request_class.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

LimiterSettings Valid() {
  LimiterSettings s;
  s.name = "gpu";
  s.min_limit = 1;
  s.max_limit = 100;
  return s;
}

bool Names(const absl::Status& s, absl::string_view text) {
  return s.code() == absl::StatusCode::kInvalidArgument &&
         s.message().find(text) != absl::string_view::npos;
}

TEST(LimiterSettingsTest, EachAlgorithmHasItsStableName) {
  EXPECT_EQ(LimitAlgorithmName(LimitAlgorithm::kFixed), "fixed");
  EXPECT_EQ(LimitAlgorithmName(LimitAlgorithm::kAimd), "aimd");
  EXPECT_EQ(LimitAlgorithmName(LimitAlgorithm::kGradient2), "gradient2");
  EXPECT_EQ(LimitAlgorithmName(LimitAlgorithm::kVegas), "vegas");
  // A value read from a config file or a cast can be anything.
  EXPECT_EQ(LimitAlgorithmName(static_cast<LimitAlgorithm>(4)), "unknown");
  EXPECT_EQ(LimitAlgorithmName(static_cast<LimitAlgorithm>(255)), "unknown");
}

TEST(LimiterSettingsTest, TheDefaultsAreGradient2AndTheBoundsAreMandatory) {
  LimiterSettings s;
  EXPECT_EQ(s.name, "limiter");
  EXPECT_EQ(s.algorithm, LimitAlgorithm::kGradient2);
  EXPECT_EQ(s.initial_limit, 20);
  EXPECT_EQ(s.window_samples, 10);
  EXPECT_EQ(s.aimd_backoff, 0.9);
  EXPECT_EQ(s.aimd_timeout, absl::Seconds(5));
  EXPECT_EQ(s.rtt_tolerance, 1.5);
  EXPECT_EQ(s.long_window, 600);
  EXPECT_EQ(s.probe_multiplier, 30);
  EXPECT_EQ(s.probe_limit, 3);
  EXPECT_FALSE(s.probe_holds_admissions);
  EXPECT_EQ(s.max_healthy_latency, absl::ZeroDuration());
  for (double share : s.guaranteed_share) EXPECT_EQ(share, 0.0);
  // Neither bound has a usable default; each is asked for by name.
  EXPECT_EQ(ValidateLimiterSettings(s),
            absl::InvalidArgumentError(
                "concurrency limiter 'limiter': setting 'min_limit' = 0 is "
                "invalid: must be >= 1"));
  s.min_limit = 1;
  EXPECT_EQ(ValidateLimiterSettings(s),
            absl::InvalidArgumentError(
                "concurrency limiter 'limiter': setting 'max_limit' = 0 is "
                "invalid: must be >= min_limit (1)"));
  s.max_limit = 200;
  EXPECT_TRUE(ValidateLimiterSettings(s).ok()) << ValidateLimiterSettings(s);
}

TEST(LimiterSettingsTest, TheLongestSampleIsTheWindowsCapAndIsAccepted) {
  EXPECT_EQ(kLongestLimiterSample, detail::SampleWindow::kMaxSample);
  LimiterSettings s = Valid();
  s.max_healthy_latency = kLongestLimiterSample;
  EXPECT_TRUE(ValidateLimiterSettings(s).ok()) << ValidateLimiterSettings(s);
  s.max_healthy_latency = kLongestLimiterSample + absl::Nanoseconds(1);
  EXPECT_TRUE(Names(ValidateLimiterSettings(s), "'max_healthy_latency'"))
      << ValidateLimiterSettings(s);
}

TEST(LimiterSettingsTest, TheLimitBoundIsInclusive) {
  LimiterSettings s = Valid();
  s.max_limit = kMaxConcurrencyLimit;
  EXPECT_TRUE(ValidateLimiterSettings(s).ok()) << ValidateLimiterSettings(s);
  s.max_limit = kMaxConcurrencyLimit + 1;
  EXPECT_TRUE(Names(ValidateLimiterSettings(s), "'max_limit' = 32001"))
      << ValidateLimiterSettings(s);
}

TEST(LimiterSettingsTest, SharesMaySumToOneAndNoMore) {
  LimiterSettings s = Valid();
  s.guaranteed_share = {0.25, 0.25, 0.25, 0.25};
  EXPECT_TRUE(ValidateLimiterSettings(s).ok()) << ValidateLimiterSettings(s);
  s.guaranteed_share[static_cast<int>(Criticality::kSheddable)] = 0.3;
  EXPECT_TRUE(
      Names(ValidateLimiterSettings(s), "'guaranteed_share' = (sum 1.05)"))
      << ValidateLimiterSettings(s);
}

TEST(LimiterSettingsTest, TheFirstFaultInDeclarationOrderIsReported) {
  LimiterSettings s = Valid();
  s.aimd_backoff = std::nan("");
  s.gradient_smoothing = std::nan("");
  s.probe_limit = 0;
  EXPECT_TRUE(Names(ValidateLimiterSettings(s), "'aimd_backoff' = nan"))
      << ValidateLimiterSettings(s);
  s.aimd_backoff = 0.5;
  EXPECT_TRUE(Names(ValidateLimiterSettings(s), "'gradient_smoothing' = nan"))
      << ValidateLimiterSettings(s);
  s.gradient_smoothing = 1;
  EXPECT_TRUE(Names(ValidateLimiterSettings(s), "'probe_limit' = 0"))
      << ValidateLimiterSettings(s);
}

TEST(LimiterSettingsTest, TheNameIsEscapedInErrors) {
  // A name from a config file must not break the log line it lands in.
  LimiterSettings s = Valid();
  s.name = "gpu\nFAKE LINE";
  s.min_limit = 0;
  const absl::Status v = ValidateLimiterSettings(s);
  EXPECT_TRUE(Names(v, "concurrency limiter 'gpu\\nFAKE LINE'")) << v;
  EXPECT_EQ(v.message().find('\n'), absl::string_view::npos) << v;
}

TEST(LimiterSettingsTest, TheHeadersExampleSaysWhatValidationSays) {
  LimiterSettings s;
  s.name = "inference";
  s.algorithm = LimitAlgorithm::kAimd;
  s.min_limit = 4;
  s.max_limit = 256;
  EXPECT_TRUE(ValidateLimiterSettings(s).ok()) << ValidateLimiterSettings(s);
  s.aimd_backoff = 1.0;
  EXPECT_EQ(ValidateLimiterSettings(s),
            absl::InvalidArgumentError(
                "concurrency limiter 'inference': setting 'aimd_backoff' = 1 "
                "is invalid: must be in [0.5, 1)"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
