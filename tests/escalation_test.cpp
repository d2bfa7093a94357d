// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of escalation.hpp: an episode past `after` fires once, levels below
// the threshold are ignored, breakers and stages can be left out. Every clock
// is a FakeClock.

#include "degrade/escalation.hpp"

#include <atomic>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/stage_metrics.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- Escalation ----

TEST(EscalationTest, ABreakerOpenPastTheLimitFiresOncePerEpisode) {
  FakeClock clock;
  Fixture f(&clock);
  BreakerSettings s = ExportedBreaker("recall", &clock, f.registry.get());
  CircuitBreaker<int> b(s);
  std::vector<std::pair<DegradationEpisode, absl::Duration>> fired;
  EscalationOptions o;
  o.clock = &clock;
  o.on_escalate = [&fired](const DegradationEpisode& e, absl::Duration d) {
    fired.emplace_back(e, d);
  };
  EscalationWatch watch(*f.registry, o);
  b.ForceOpen();
  clock.Advance(absl::Minutes(30));
  EXPECT_EQ(watch.Check(), 0);  // exactly 30 minutes: not longer yet
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(watch.Check(), 1);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].first.kind, "breaker");
  EXPECT_EQ(fired[0].first.name, "recall");
  EXPECT_EQ(fired[0].second, absl::Minutes(30) + absl::Seconds(1));
  clock.Advance(absl::Hours(2));
  EXPECT_EQ(watch.Check(), 0);  // the same episode fires once
  EXPECT_THAT(f.lines.back(), HasSubstr(R"("event":"escalation")"));
  // A new episode fires again.
  b.Reset();
  EXPECT_EQ(watch.Check(), 0);
  b.ForceOpen();
  clock.Advance(absl::Minutes(31));
  EXPECT_EQ(watch.Check(), 1);
  EXPECT_EQ(fired.size(), 2u);
}

TEST(EscalationTest, OnlyLevelsAtOrAboveTheThresholdCount) {
  FakeClock clock;
  MetricsRegistry registry;
  ManagerOptions mo;
  mo.name = "inference";
  mo.clock = &clock;
  mo.metrics = &registry;
  mo.log_sink = [](absl::string_view) {};
  DegradationManager m(mo);
  ASSERT_TRUE(m.Reload(TwoLevels()).ok());
  std::vector<DegradationEpisode> fired;
  EscalationOptions o;
  o.clock = &clock;
  o.min_level = 2;
  o.after = absl::Minutes(10);
  o.on_escalate = [&fired](const DegradationEpisode& e, absl::Duration) {
    fired.push_back(e);
    throw std::runtime_error("pager down");  // swallowed
  };
  EscalationWatch watch(registry, o);
  (void)m.Observe("queue_length", 25);  // level 1 only
  clock.Advance(absl::Minutes(20));
  EXPECT_EQ(watch.Check(), 0);
  (void)m.Observe("queue_length", 60);  // level 2 from now
  clock.Advance(absl::Minutes(9));
  EXPECT_EQ(watch.Check(), 0);
  clock.Advance(absl::Minutes(2));
  EXPECT_EQ(watch.Check(), 1);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].kind, "level");
  EXPECT_EQ(fired[0].name, "inference");
  EXPECT_EQ(fired[0].level, 2);
}

TEST(EscalationTest, StagesAndBreakersCanBeLeftOut) {
  FakeClock clock;
  MetricsRegistry registry;
  StageMetrics stages({"recsys", &registry, &clock});
  DegradationTrace t;
  t.Add("rank", DegradeReason::kTimeout);
  stages.Observe(t);
  EscalationOptions o;
  o.clock = &clock;
  o.stages = false;
  EscalationWatch without(registry, o);
  o.stages = true;
  EscalationWatch with(registry, o);
  clock.Advance(absl::Hours(1));
  EXPECT_EQ(without.Check(), 0);
  EXPECT_EQ(with.Check(), 1);
}

}  // namespace
}  // namespace degrade
