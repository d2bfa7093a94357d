// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of hedge_stats.hpp: the defaults, and that a HedgePolicy offers its
// view to the telemetry it is built with (and to nothing with
// NoTelemetry()), the view reading the policy's live stats.

#include "degrade/hedge_stats.hpp"

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/hedge.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gtest/gtest.h"
#include "support/process_defaults.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(HedgeStatsTest, DefaultsSayNothingHappenedAndNoDelayIsKnown) {
  const HedgeStats st;
  EXPECT_EQ(st.calls, 0u);
  EXPECT_EQ(st.hedges_sent, 0u);
  EXPECT_EQ(st.hedges_won, 0u);
  EXPECT_EQ(st.attempts_cancelled, 0u);
  EXPECT_EQ(st.hedges_over_budget, 0u);
  EXPECT_EQ(st.hedges_refused, 0u);
  EXPECT_EQ(st.delay, absl::InfiniteDuration());
  EXPECT_EQ(st.extra_load, 0.0);
}

class Spy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachHedge(
      const HedgeView& h) override {
    view = &h;
    name = h.name();  // the view is readable inside Attach
    return nullptr;
  }
  const HedgeView* view = nullptr;
  std::string name;
};

TEST(HedgeStatsTest, APolicyOffersItsViewToItsTelemetry) {
  FakeClock clock;
  Spy spy;
  HedgeSettings s;
  s.name = "ann";
  s.delay = absl::Milliseconds(5);
  s.clock = &clock;
  s.metrics = &spy;
  auto policy = *HedgePolicy::Create(s);
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "ann");
  testing::ManualExecutor executor;
  auto call = StartHedge(*policy, executor, [] { return 1; });
  executor.RunAll();
  (void)call.Take();
  EXPECT_EQ(spy.view->stats().calls, 1u);
  EXPECT_EQ(spy.view->stats().delay, absl::Milliseconds(5));
}

TEST(HedgeStatsTest, NoTelemetryAttachesNothing) {
  Spy spy;
  degrade_tests::DefaultTelemetryGuard guard(&spy);
  HedgeSettings s;
  s.metrics = NoTelemetry();
  auto policy = *HedgePolicy::Create(s);
  EXPECT_EQ(spy.view, nullptr);
  s.metrics = nullptr;  // the default
  auto observed = *HedgePolicy::Create(s);
  EXPECT_NE(spy.view, nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
