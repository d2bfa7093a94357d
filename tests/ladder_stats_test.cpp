// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of ladder_stats.hpp: the defaults and the arithmetic helpers; the
// degrade_recovery_ramp_* series a MetricsRegistry renders for a
// RecoveryRamp through an outage and a ramp, gone once it is destroyed; the
// degrade_ladder_* series and the stale-age histogram (ladder_test.cpp
// drives a ladder; here the writer is checked on a snapshot).

#include "degrade/ladder_stats.hpp"

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/metrics/ladder_metrics.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(LadderStatsTest, DefaultsSayNothingYetAndTheSumsAddUp) {
  LadderStats st;
  EXPECT_EQ(st.requests(), 0u);
  st.fresh = 5;
  st.stale = {1, 2, 3, 4};
  st.segment = 6;
  st.global = 7;
  st.failed = 8;
  EXPECT_EQ(st.stale_total(), 10u);
  EXPECT_EQ(st.requests(), 36u);
  const RecoveryRampStats r;
  EXPECT_EQ(r.state, RampState::kSteady);
  EXPECT_EQ(r.ramps, 0u);
  // The histogram's bounds hold the tag's coarse buckets, so the two agree.
  EXPECT_EQ(kStaleAgeBounds[1], 60);
  EXPECT_EQ(kStaleAgeBounds[2], 600);
  EXPECT_EQ(kStaleAgeBounds[3], 3600);
}

TEST(LadderStatsTest, TheRegistryRendersARampThroughAnOutageUntilItIsGone) {
  FakeClock clock;
  MetricsRegistry registry;
  RecoveryRampSettings s;
  s.name = "features";
  s.clock = &clock;
  s.metrics = &registry;
  auto ramp = RecoveryRamp::Create(s).value();
  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_recovery_ramp_state{ramp="features"})", 0},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="admitted"})",
        0},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="refused"})",
        0},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="passed"})",
        0},
       {R"(degrade_recovery_ramps_total{ramp="features"})", 0}});
  for (int i = 0; i < 1000; ++i) {  // 100 calls a second for 10 s
    ramp->Admit(true);
    clock.Advance(absl::Milliseconds(10));
  }
  ramp->Admit(false);
  text = registry.RenderPrometheus();
  EXPECT_EQ(
      SampleValue(text, R"(degrade_recovery_ramp_state{ramp="features"})"), 1);
  EXPECT_NEAR(
      SampleValue(text, R"(degrade_recovery_ramp_base_rate{ramp="features"})"),
      100, 10);
  clock.Advance(absl::Seconds(5));
  ramp->Admit(true);  // the ramp begins
  ramp->Admit(true);  // the next one waits its turn
  text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_recovery_ramp_state{ramp="features"})", 2},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="admitted"})",
        1001},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="refused"})",
        1},
       {R"(degrade_recovery_ramp_calls_total{ramp="features",result="passed"})",
        1},
       {R"(degrade_recovery_ramp_outages_total{ramp="features"})", 1},
       {R"(degrade_recovery_ramps_total{ramp="features"})", 1}});
  EXPECT_NEAR(
      SampleValue(text,
                  R"(degrade_recovery_ramp_allowed_rate{ramp="features"})"),
      0.1 * ramp->base_rate(), 1e-6);
  ramp.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_recovery_ramp").empty()) << text;
}

TEST(LadderStatsTest, TheLadderWriterRendersEveryRungAndTheAgeHistogram) {
  LadderStats st;
  st.fresh = 10;
  st.stale = {4, 3, 2, 1};
  st.segment = 5;
  st.global = 6;
  st.failed = 1;
  st.store_calls = 11;
  st.ramp_refused = 2;
  st.stale_age_buckets = {1, 3, 3, 2, 1, 0, 0};
  st.stale_age_sum_seconds = 12345;
  MetricsRegistry registry;
  FakeView<LadderView, LadderStats> view("features");
  view.st = st;
  auto attachment = registry.AttachComponent(view);
  ASSERT_NE(attachment, nullptr);
  const std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_ladder_served_total{ladder="features",tier="fresh"})", 10},
       {R"(degrade_ladder_served_total{ladder="features",tier="stale-1m"})", 4},
       {R"(degrade_ladder_served_total{ladder="features",tier="stale-10m"})",
        3},
       {R"(degrade_ladder_served_total{ladder="features",tier="stale-1h"})", 2},
       {R"(degrade_ladder_served_total{ladder="features",tier="stale-old"})",
        1},
       {R"(degrade_ladder_served_total{ladder="features",tier="segment"})", 5},
       {R"(degrade_ladder_served_total{ladder="features",tier="global"})", 6},
       {R"(degrade_ladder_served_total{ladder="features",tier="failed"})", 1},
       {R"(degrade_ladder_store_calls_total{ladder="features"})", 11},
       {R"(degrade_ladder_ramp_refused_total{ladder="features"})", 2},
       {R"(degrade_stale_age_seconds_bucket{ladder="features",le="10"})", 1},
       {R"(degrade_stale_age_seconds_bucket{ladder="features",le="600"})", 7},
       {R"(degrade_stale_age_seconds_bucket{ladder="features",le="+Inf"})", 10},
       {R"(degrade_stale_age_seconds_count{ladder="features"})", 10},
       {R"(degrade_stale_age_seconds_sum{ladder="features"})", 12345}});
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
