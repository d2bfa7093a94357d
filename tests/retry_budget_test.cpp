// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// RetryBudget as a Finagle user knows it, on a FakeClock: the floor of
// min_retries_per_sec x ttl, 20% of the window's requests on top, the
// window sliding a tenth of ttl at a time, refusals counted, the stats and
// the telemetry view, every bad setting named; and threads racing for the
// last retries never overdraw (label concurrency, run under TSan).

#include "degrade/retry_budget.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/metrics_registry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

std::unique_ptr<RetryBudget> MakeBudget(const FakeClock& clock,
                                        RetryBudgetSettings s = {}) {
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return RetryBudget::Create(s).value();
}

int WithdrawAll(RetryBudget& b, int at_most = 1'000'000) {
  int n = 0;
  while (n < at_most && b.TryWithdraw()) ++n;
  return n;
}

TEST(RetryBudgetTest, AQuietClientHasTheFloor) {
  FakeClock clock;
  auto b = MakeBudget(clock);
  EXPECT_DOUBLE_EQ(b->balance(), 100.0);  // 10 per second x 10 s
  EXPECT_EQ(WithdrawAll(*b), 100);
  EXPECT_FALSE(b->TryWithdraw());
  EXPECT_EQ(b->stats().granted, 100u);
  EXPECT_EQ(b->stats().refused, 2u);  // the one that ended the loop, and this
}

TEST(RetryBudgetTest, RequestsAddTwentyPercentOnTopOfTheFloor) {
  FakeClock clock;
  RetryBudgetSettings s;
  s.min_retries_per_sec = 0;
  auto b = MakeBudget(clock, s);
  for (int i = 0; i < 1000; ++i) b->Deposit();
  EXPECT_DOUBLE_EQ(b->balance(), 200.0);
  EXPECT_EQ(WithdrawAll(*b), 200);
  const RetryBudgetStats st = b->stats();
  EXPECT_EQ(st.window_requests, 1000u);
  EXPECT_EQ(st.window_retries, 200u);
  EXPECT_EQ(st.balance, 0.0);
}

TEST(RetryBudgetTest, TheWindowSlidesATenthOfTtlAtATime) {
  FakeClock clock;
  RetryBudgetSettings s;
  s.min_retries_per_sec = 0;
  s.percent_can_retry = 1.0;
  auto b = MakeBudget(clock, s);
  // 10 requests in each second of the 10 s window.
  for (int sec = 0; sec < 10; ++sec) {
    for (int i = 0; i < 10; ++i) b->Deposit();
    clock.Advance(absl::Seconds(1));
  }
  // Now at 10 s: the first second's requests have left, nine remain.
  EXPECT_EQ(b->stats().window_requests, 90u);
  clock.Advance(absl::Seconds(4));
  EXPECT_EQ(b->stats().window_requests, 50u);
  clock.Advance(absl::Seconds(6));
  EXPECT_EQ(b->stats().window_requests, 0u);
  EXPECT_FALSE(b->TryWithdraw());
}

TEST(RetryBudgetTest, RetriesLeaveTheWindowTooAndTheBudgetRefills) {
  FakeClock clock;
  auto b = MakeBudget(clock);
  EXPECT_EQ(WithdrawAll(*b), 100);
  clock.Advance(absl::Seconds(5));
  EXPECT_FALSE(b->TryWithdraw());  // the retries are still in the window
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(WithdrawAll(*b), 100);
}

TEST(RetryBudgetTest, ZeroPercentAndZeroFloorRefusesEveryRetry) {
  FakeClock clock;
  RetryBudgetSettings s;
  s.percent_can_retry = 0;
  s.min_retries_per_sec = 0;
  auto b = MakeBudget(clock, s);
  for (int i = 0; i < 100; ++i) b->Deposit();
  EXPECT_FALSE(b->TryWithdraw());
  EXPECT_EQ(b->stats().refused, 1u);
}

TEST(RetryBudgetTest, RefusesBadSettingsNamingSettingAndValue) {
  struct Case {
    void (*mutate)(RetryBudgetSettings&);
    const char* text;
  };
  const Case cases[] = {
      {[](RetryBudgetSettings& s) { s.percent_can_retry = -0.1; },
       "'percent_can_retry' = -0.1"},
      {[](RetryBudgetSettings& s) { s.percent_can_retry = 1.5; },
       "'percent_can_retry' = 1.5"},
      {[](RetryBudgetSettings& s) {
         s.percent_can_retry = std::numeric_limits<double>::quiet_NaN();
       },
       "'percent_can_retry' = nan"},
      {[](RetryBudgetSettings& s) {
         s.percent_can_retry = std::numeric_limits<double>::infinity();
       },
       "'percent_can_retry' = inf"},
      {[](RetryBudgetSettings& s) { s.min_retries_per_sec = -1; },
       "'min_retries_per_sec' = -1"},
      {[](RetryBudgetSettings& s) { s.ttl = absl::Milliseconds(500); },
       "'ttl' = 500ms"},
      {[](RetryBudgetSettings& s) { s.ttl = absl::Seconds(61); },
       "'ttl' = 1m1s"},
      {[](RetryBudgetSettings& s) { s.name = ""; }, "'name'"},
  };
  for (const Case& c : cases) {
    RetryBudgetSettings s;
    c.mutate(s);
    const absl::Status st = RetryBudget::Create(s).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(st.message(), HasSubstr(c.text));
    EXPECT_EQ(ValidateRetryBudgetSettings(s), st);
  }
  RetryBudgetSettings edge;
  edge.percent_can_retry = 1.0;
  edge.ttl = absl::Seconds(60);
  EXPECT_TRUE(RetryBudget::Create(edge).ok());
  edge.percent_can_retry = 0.0;
  edge.ttl = absl::Seconds(1);
  EXPECT_TRUE(RetryBudget::Create(edge).ok());
}

TEST(RetryBudgetTest, ExportsItsSeriesThroughTheRegistry) {
  FakeClock clock;
  MetricsRegistry registry;
  RetryBudgetSettings s;
  s.name = "recall";
  s.clock = &clock;
  s.metrics = &registry;
  auto b = RetryBudget::Create(s).value();
  b->Deposit();
  WithdrawAll(*b);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("degrade_retry_budget_granted_total{budget=\"recall\"} 100"));
  EXPECT_THAT(text, HasSubstr("degrade_retry_budget_refused_total{budget=\"recall\"} 1"));
  EXPECT_THAT(text, HasSubstr("degrade_retry_budget_window_requests{budget=\"recall\"} 1"));
  b.reset();
  EXPECT_THAT(registry.RenderPrometheus(), ::testing::Not(HasSubstr("recall")));
}

TEST(RetryBudgetConcurrencyTest, ThreadsRacingForTheLastRetriesNeverOverdraw) {
  FakeClock clock;
  RetryBudgetSettings s;
  s.min_retries_per_sec = 0;
  auto b = MakeBudget(clock, s);
  constexpr int kThreads = 4;
  constexpr int kRequests = 5000;
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRequests; ++i) {
        b->Deposit();
        if (i % 2 == 0 && b->TryWithdraw()) {
          granted.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const RetryBudgetStats st = b->stats();
  EXPECT_EQ(st.window_requests, uint64_t{kThreads * kRequests});
  EXPECT_EQ(st.window_retries, static_cast<uint64_t>(granted.load()));
  EXPECT_EQ(st.granted + st.refused, uint64_t{kThreads * kRequests / 2});
  // Never more than 20% of the requests deposited.
  EXPECT_LE(granted.load(), kThreads * kRequests / 5);
  // And the budget was not left unused: every deposit made room for 0.2.
  EXPECT_GE(granted.load(), kThreads * kRequests / 5 - kThreads);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
