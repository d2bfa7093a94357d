// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/metrics/hedge_metrics.hpp through
// MetricsRegistry::AttachHedge: the series for known stats (a fake view), +Inf
// for an unknown delay, and a real HedgePolicy registering itself and leaving
// on destruction.

#include "degrade/detail/metrics/hedge_metrics.hpp"

#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/hedge.hpp"
#include "degrade/hedge_stats.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class FakeHedge final : public HedgeView {
 public:
  explicit FakeHedge(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  HedgeStats stats() const override { return st; }
  HedgeStats st;

 private:
  std::string name_;
};

TEST(HedgeMetricsTest, ExportsCallsHedgesOutcomesDelayAndLoad) {
  MetricsRegistry registry;
  FakeHedge view("ann");
  view.st.calls = 1000;
  view.st.hedges_sent = 48;
  view.st.hedges_won = 30;
  view.st.attempts_cancelled = 47;
  view.st.hedges_over_budget = 5;
  view.st.hedges_refused = 2;
  view.st.delay = absl::Milliseconds(15);
  view.st.extra_load = 0.048;
  auto attachment = registry.AttachHedge(view);
  ASSERT_NE(attachment, nullptr);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(
      text,
      AllOf(HasSubstr("# TYPE degrade_hedge_calls_total counter"),
            HasSubstr("degrade_hedge_calls_total{hedge=\"ann\"} 1000"),
            HasSubstr("degrade_hedge_sent_total{hedge=\"ann\"} 48"),
            HasSubstr("degrade_hedge_won_total{hedge=\"ann\"} 30"),
            HasSubstr("degrade_hedge_cancelled_total{hedge=\"ann\"} 47")));
  EXPECT_THAT(
      text,
      AllOf(HasSubstr("degrade_hedge_not_sent_total{hedge=\"ann\",reason="
                      "\"budget\"} 5"),
            HasSubstr("degrade_hedge_not_sent_total{hedge=\"ann\",reason="
                      "\"refused\"} 2"),
            HasSubstr("# TYPE degrade_hedge_delay_seconds gauge"),
            HasSubstr("degrade_hedge_delay_seconds{hedge=\"ann\"} 0.015"),
            HasSubstr("degrade_hedge_extra_load_ratio{hedge=\"ann\"} 0.048")));
}

TEST(HedgeMetricsTest, AnUnknownDelayIsPlusInf) {
  MetricsRegistry registry;
  FakeHedge view("cold");
  auto attachment = registry.AttachHedge(view);
  EXPECT_THAT(registry.RenderPrometheus(),
              HasSubstr("degrade_hedge_delay_seconds{hedge=\"cold\"} +Inf"));
}

TEST(HedgeMetricsTest, APolicyRegistersItselfAndLeavesWhenDestroyed) {
  MetricsRegistry registry;
  FakeClock clock;
  HedgeSettings s;
  s.name = "vec";
  s.delay = absl::Milliseconds(5);
  s.clock = &clock;
  s.metrics = &registry;
  auto policy = *HedgePolicy::Create(s);
  testing::ManualExecutor executor;
  auto call = StartHedge(*policy, executor, [] { return 1; });
  executor.RunAll();
  (void)call.Take();
  EXPECT_THAT(
      registry.RenderPrometheus(),
      AllOf(HasSubstr("degrade_hedge_calls_total{hedge=\"vec\"} 1"),
            HasSubstr("degrade_hedge_delay_seconds{hedge=\"vec\"} 0.005")));
  policy.reset();
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("hedge=\"vec\"")));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
