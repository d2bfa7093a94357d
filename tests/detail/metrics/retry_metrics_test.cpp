// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/metrics/retry_metrics.hpp through MetricsRegistry's AttachRetryBudget,
// AttachRetrier and AttachThrottler, with fake views: the series and
// values for known stats, the attempts histogram's cumulative buckets, and
// a detached view no longer exported.

#include "degrade/detail/metrics/retry_metrics.hpp"

#include <memory>
#include <string>
#include <utility>

#include "degrade/metrics_registry.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RetryMetricsTest, RetrierExportsAttemptsHistogramAndStops) {
  MetricsRegistry registry;
  FakeView<RetrierView, RetrierStats> view("recall");
  view.st.attempts[0] = 90;
  view.st.attempts[1] = 8;
  view.st.attempts[2] = 2;
  view.st.stops[static_cast<int>(RetryStop::kSucceeded)] = 97;
  view.st.stops[static_cast<int>(RetryStop::kBudgetExhausted)] = 3;
  auto attachment = registry.AttachRetrier(view);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE degrade_retry_attempts histogram"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_retry_attempts_bucket{retrier=\"recall\",le=\"1\"} 90"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_retry_attempts_bucket{retrier=\"recall\",le=\"2\"} 98"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_retry_attempts_bucket{retrier=\"recall\",le=\"+Inf\"} 100"));
  EXPECT_THAT(text,
              HasSubstr("degrade_retry_attempts_sum{retrier=\"recall\"} 112"));
  EXPECT_THAT(text, HasSubstr("degrade_retry_calls_total{retrier=\"recall\","
                              "stop=\"budget_exhausted\"} 3"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_retry_calls_total{retrier=\"recall\",stop=\"shed\"} 0"));
  attachment.reset();
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("recall")));
}

TEST(RetryMetricsTest, BudgetAndThrottleExportTheirWindowsAndTotals) {
  MetricsRegistry registry;
  FakeView<RetryBudgetView, RetryBudgetStats> budget("rank");
  budget.st.balance = 12.5;
  budget.st.refused = 4;
  budget.st.granted = 9;
  FakeView<ThrottleView, ThrottleStats> throttle("rank");
  throttle.st.rejection_probability = 0.25;
  throttle.st.throttled = 7;
  throttle.st.window_accepts = 30;
  auto a = registry.AttachRetryBudget(budget);
  auto b = registry.AttachThrottler(throttle);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text,
              HasSubstr("degrade_retry_budget_balance{budget=\"rank\"} 12.5"));
  EXPECT_THAT(
      text, HasSubstr("degrade_retry_budget_refused_total{budget=\"rank\"} 4"));
  EXPECT_THAT(
      text, HasSubstr("degrade_retry_budget_granted_total{budget=\"rank\"} 9"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_throttle_rejection_probability{throttle=\"rank\"} 0.25"));
  EXPECT_THAT(
      text, HasSubstr("degrade_throttle_rejected_total{throttle=\"rank\"} 7"));
  EXPECT_THAT(
      text, HasSubstr("degrade_throttle_window_accepts{throttle=\"rank\"} 30"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
