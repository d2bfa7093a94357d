// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of escalation.hpp: an episode past `after` fires once, levels below
// the threshold are ignored, breakers and stages can be left out. Every clock
// is a FakeClock.

#include "degrade/escalation.hpp"

#include <atomic>
#include <cmath>
#include <functional>
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
#include "support/tick_counter.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

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

// What a call from `on_escalate` back into its own watch does, on the
// watch's thread. Regression (issue 13, defect 3): Start() there joined the
// watch's own thread; the EDEADLK was swallowed and nothing was paged again
// (a second breaker degraded for 31 min was never escalated), and with
// -fno-exceptions it aborted. Each row makes its calls at the first page
// (breaker "a"); then breaker "b" passes the limit and must be paged by the
// watch's thread, or, when the callback stopped it, by the next Start().
TEST(EscalationTest, CallsFromOnEscalateIntoItsOwnWatch) {
  struct Case {
    const char* name;
    std::function<void(EscalationWatch&)> calls;
    bool keeps_paging;
  };
  const absl::Duration ms = absl::Milliseconds(1);
  const std::vector<Case> cases = {
      {"Start", [ms](EscalationWatch& w) { EXPECT_TRUE(w.Start(ms).ok()); },
       true},
      {"Check", [](EscalationWatch& w) { EXPECT_EQ(w.Check(), 0); }, true},
      {"Stop, Start",
       [ms](EscalationWatch& w) {
         w.Stop();
         EXPECT_TRUE(w.Start(ms).ok());
       },
       true},
      {"Stop", [](EscalationWatch& w) { w.Stop(); }, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeClock clock;
    Fixture f(&clock);
    CircuitBreaker<int> a(ExportedBreaker("a", &clock, f.registry.get()));
    CircuitBreaker<int> b(ExportedBreaker("b", &clock, f.registry.get()));
    degrade_tests::TickCounter paged;
    EscalationWatch* self = nullptr;
    EscalationOptions o;
    o.clock = &clock;
    o.on_escalate = [&](const DegradationEpisode&, absl::Duration) {
      if (paged.count() == 0) c.calls(*self);
      paged.Tick();
    };
    EscalationWatch watch(*f.registry, o);
    self = &watch;
    a.ForceOpen();
    clock.Advance(absl::Minutes(31));
    b.ForceOpen();
    ASSERT_TRUE(watch.Start(ms).ok());
    ASSERT_TRUE(paged.WaitFor(1));
    clock.Advance(absl::Minutes(31));  // now "b" is due too
    if (!c.keeps_paging) {
      ASSERT_TRUE(watch.Start(ms).ok());
    }
    EXPECT_TRUE(paged.WaitFor(2)) << "b was never paged";
    watch.Stop();
    EXPECT_EQ(paged.count(), 2u);
  }
}

// A probe that calls Check() (a component registered with its own probe,
// asking the watch) used to wait for the lock that very Check() held, and
// for its own registry entry. Now the nested Check() sees every episode but
// that probe's, and the outer one fires it.
TEST(EscalationTest, AProbeCallingCheckDoesNotDeadlock) {
  FakeClock clock;
  MetricsRegistry registry;
  EscalationWatch* self = nullptr;
  int nested = -1;
  MetricsRegistry::Registration r = registry.Register(
      "custom", "probe", [](MetricWriter&) {},
      [&](const std::string& name, std::vector<DegradationEpisode>* out) {
        if (self != nullptr && nested < 0) nested = self->Check();
        DegradationEpisode e;
        e.kind = EpisodeKind::kStage;
        e.name = name;
        e.since = absl::UnixEpoch();
        out->push_back(e);
      });
  EscalationOptions o;
  o.clock = &clock;
  EscalationWatch watch(registry, o);
  self = &watch;
  clock.Set(absl::UnixEpoch() + absl::Hours(1));
  EXPECT_EQ(watch.Check(), 1);
  EXPECT_EQ(nested, 0) << "the probe's own episode is left out of it";
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
