// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/breaker_counts.hpp: Counts assembled from the
// generation's counters, the half-open ledger and the window, and rolled with a
// time window as gobreaker v2 does.

#include "degrade/detail/breaker/breaker_counts.hpp"

#include "degrade/breaker_types.hpp"
#include "degrade/detail/breaker/trial_ledger.hpp"
#include "degrade/detail/breaker/windows.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using detail::AssembleCounts;
using detail::CountsParts;
using detail::TrialLedger;
using detail::WindowStats;

CountsParts Generation() {
  CountsParts p;
  p.base.admitted = 100;
  p.base.successes = 60;
  p.base.failures = 30;
  p.totals = p.base;
  p.totals.admitted += 12;
  p.totals.successes += 7;
  p.totals.failures += 4;
  p.totals.exclusions += 1;
  p.totals.slow_calls += 2;
  p.consecutive_failures = 3;
  p.successes_at_last_failure = 65;
  return p;
}

TEST(BreakerCountsTest, WithoutAWindowTheRatesCoverTheGeneration) {
  const Counts c = AssembleCounts(Generation());
  EXPECT_EQ(c.requests, 12u);
  EXPECT_EQ(c.total_successes, 7u);
  EXPECT_EQ(c.total_failures, 4u);
  EXPECT_EQ(c.total_exclusions, 1u);
  EXPECT_EQ(c.consecutive_failures, 3u);
  EXPECT_EQ(c.consecutive_successes, 2u);
  EXPECT_EQ(c.window_calls, 11u);
  EXPECT_EQ(c.window_failures, 4u);
  EXPECT_EQ(c.window_slow_calls, 2u);
}

TEST(BreakerCountsTest, ACountWindowOnlyFeedsTheRates) {
  CountsParts p = Generation();
  WindowStats ws;
  ws.calls = 5;
  ws.failures = 2;
  ws.slow = 1;
  p.window = &ws;
  const Counts c = AssembleCounts(p);
  EXPECT_EQ(c.total_failures, 4u) << "the generation's, not the window's";
  EXPECT_EQ(c.window_calls, 5u);
  EXPECT_EQ(c.window_failures, 2u);
}

TEST(BreakerCountsTest, ATimeWindowRollsEveryFieldAndCapsTheRuns) {
  CountsParts p = Generation();
  WindowStats ws;
  ws.calls = 3;
  ws.failures = 1;
  ws.successes = 2;
  ws.requests = 4;
  ws.exclusions = 1;
  p.window = &ws;
  p.time_window = true;
  const Counts c = AssembleCounts(p);
  EXPECT_EQ(c.requests, 4u);
  EXPECT_EQ(c.total_successes, 2u);
  EXPECT_EQ(c.total_failures, 1u);
  EXPECT_EQ(c.total_exclusions, 1u);
  EXPECT_EQ(c.consecutive_failures, 1u) << "a run no longer than the window";
  EXPECT_EQ(c.consecutive_successes, 2u);
}

TEST(BreakerCountsTest, HalfOpenReadsTheLedger) {
  CountsParts p = Generation();
  TrialLedger l;
  l.Admit(1);
  l.Admit(2);
  l.Admit(3);
  l.Succeed(1);
  l.Slow();
  l.Fail(2);
  l.Abandon(3);
  p.trials = &l;
  const Counts c = AssembleCounts(p);
  EXPECT_EQ(c.requests, 2u);
  EXPECT_EQ(c.total_successes, 1u);
  EXPECT_EQ(c.total_failures, 1u);
  EXPECT_EQ(c.consecutive_successes, 0u);
  EXPECT_EQ(c.window_calls, 2u);
  EXPECT_EQ(c.window_slow_calls, 1u) << "the trials' own slow calls";
}

// Half-open, the window fields are the trials' (resilience4j's half-open
// window, a count window of the permitted calls), not the closed window's.
TEST(BreakerCountsTest, HalfOpenWindowFieldsAreTheTrialsWhateverTheWindow) {
  for (bool time_window : {false, true}) {
    CountsParts p = Generation();
    TrialLedger l;
    for (int i = 0; i < 3; ++i) {
      l.Admit(i);
      l.Succeed(i);
    }
    l.Admit(3);
    l.Fail(3);
    WindowStats stale;  // what a closed-shaped window would show
    stale.calls = 1;
    stale.successes = 1;
    p.trials = &l;
    p.window = &stale;
    p.time_window = time_window;
    const Counts c = AssembleCounts(p);
    EXPECT_EQ(c.window_calls, 4u) << time_window;
    EXPECT_EQ(c.window_failures, 1u) << time_window;
    EXPECT_DOUBLE_EQ(c.failure_rate(), 0.25) << time_window;
    EXPECT_EQ(c.total_successes, 3u) << time_window;
  }
}

TEST(BreakerCountsTest, RacingShardSumsNeverGoNegative) {
  CountsParts p = Generation();
  p.totals.successes = p.base.successes - 1;  // read mid-update
  const Counts c = AssembleCounts(p);
  EXPECT_EQ(c.total_successes, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
