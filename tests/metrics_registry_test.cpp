// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of metrics_registry.hpp: the registry's lifetime rules, and what each
// component that attaches to it (breaker, manager, hot list) exports through
// its telemetry view, on a FakeClock; and a race of scrapes with components
// being built, called and destroyed (run under TSan).

#include "degrade/metrics_registry.hpp"

#include <algorithm>
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
#include "degrade/detail/splitmix.hpp"
#include "degrade/escalation.hpp"
#include "degrade/fallback.hpp"
#include "degrade/stage_metrics.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- Registry lifetime ----

// A component of the generic seam whose stats type the registry does not
// know: offered, declined, nothing registered or rendered.
TEST(RegistryTest, AComponentOfAnUnknownStatsTypeIsDeclined) {
  struct UnknownStats {
    int n = 0;
  };
  struct Unknown {
    const std::string& name() const { return name_; }
    UnknownStats stats() const { return {}; }
    std::string name_ = "mystery";
  } unknown;
  const detail::OwnerView<Unknown, UnknownStats> view(&unknown);
  MetricsRegistry registry;
  const std::string before = registry.RenderPrometheus();
  EXPECT_EQ(registry.AttachComponent(view), nullptr);
  EXPECT_EQ(registry.RenderPrometheus(), before);
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("mystery")));
}

TEST(RegistryTest, ComponentsUnregisterWhenDestroyed) {
  FakeClock clock;
  MetricsRegistry registry;
  BreakerSettings s = ExportedBreaker("recall", &clock, &registry);
  {
    CircuitBreaker<int> b(s);
    EXPECT_THAT(registry.Names("breaker"), ElementsAre("recall"));
    EXPECT_THAT(registry.RenderPrometheus(),
                HasSubstr(R"(degrade_breaker_state{breaker="recall"} 0)"));
  }
  EXPECT_TRUE(registry.Names("breaker").empty());
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("recall")));
}

TEST(RegistryTest, DuplicateNamesAreMadeUniqueAndFreedAgain) {
  FakeClock clock;
  MetricsRegistry registry;
  BreakerSettings s = ExportedBreaker("recall", &clock, &registry);
  auto first = std::make_unique<CircuitBreaker<int>>(s);
  CircuitBreaker<int> second(s);
  EXPECT_THAT(registry.Names("breaker"), ElementsAre("recall", "recall#2"));
  // Each series stays unique.
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(LinesStartingWith(text, "degrade_breaker_state{").size(), 2u);
  first.reset();
  CircuitBreaker<int> third(s);
  EXPECT_THAT(registry.Names("breaker"), ElementsAre("recall", "recall#2"));
  // The same name under another kind is no clash.
  auto other = registry.Register("manager", "recall", nullptr);
  EXPECT_EQ(other.name(), "recall");
}

TEST(RegistryTest, ARegistrationMayOutliveItsRegistry) {
  auto registry = std::make_unique<MetricsRegistry>();
  MetricsRegistry::Registration r =
      registry->Register("test", "x", [](MetricWriter&) {});
  registry.reset();
  EXPECT_EQ(r.name(), "x");
  r.Reset();  // no use after free (ASan)
  EXPECT_EQ(r.name(), "");
}

TEST(RegistryTest, MovedRegistrationUnregistersOnce) {
  MetricsRegistry registry;
  MetricsRegistry::Registration a = registry.Register("test", "x", nullptr);
  MetricsRegistry::Registration b = std::move(a);
  EXPECT_THAT(registry.Names("test"), ElementsAre("x"));
  MetricsRegistry::Registration c = registry.Register("test", "y", nullptr);
  c = std::move(b);  // drops y, keeps x
  EXPECT_THAT(registry.Names("test"), ElementsAre("x"));
  c.Reset();
  EXPECT_TRUE(registry.Names("test").empty());
}

TEST(RegistryTest, AThrowingCollectorLosesOnlyItsOwnSamples) {
  MetricsRegistry registry;
  auto bad = registry.Register("test", "bad", [](MetricWriter& w) {
    w.Gauge("before_throw", "written before the throw", {}, 1);
    throw std::runtime_error("scrape failed");
  });
  auto good = registry.Register("test", "good", [](MetricWriter& w) {
    w.Gauge("good_gauge", "fine", {}, 7);
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(SampleValue(text, "good_gauge"), 7);
}

TEST(RegistryTest, DestructionWaitsForACollectionInProgress) {
  MetricsRegistry registry;
  std::promise<void> entered;
  std::atomic<bool> collecting{false};
  auto r = std::make_unique<MetricsRegistry::Registration>(
      registry.Register("test", "slow", [&](MetricWriter& w) {
        collecting = true;
        entered.set_value();
        // Hold the collection until unregistering has begun (the name is
        // gone from the registry), so the destroyer is certainly racing it.
        while (!registry.Names("test").empty()) std::this_thread::yield();
        w.Gauge("slow_gauge", "", {}, 1);
        collecting = false;
      }));
  std::thread scraper([&] { (void)registry.RenderPrometheus(); });
  entered.get_future().wait();
  std::thread destroyer([&] {
    r.reset();
    // Unregistering returned: the collection must have finished.
    EXPECT_FALSE(collecting.load());
  });
  destroyer.join();
  scraper.join();
  EXPECT_FALSE(collecting.load());
}

// A collector or probe calling back into its registry (issue 13,
// re-entrancy). It used to wait for its own entry lock, held by the outer
// scrape: a deadlock. Now the nested call leaves out the component whose
// callback is running and renders the rest; the outer call is whole.
TEST(RegistryTest, CollectorsAndProbesMayCallTheirRegistry) {
  struct Case {
    const char* name;
    // What the outer call returns, rendered to text; the callbacks below
    // make the nested call.
    std::function<std::string(const MetricsRegistry&)> outer;
  };
  const std::vector<Case> cases = {
      {"RenderPrometheus from a collector",
       [](const MetricsRegistry& r) { return r.RenderPrometheus(); }},
      {"Episodes from a probe",
       [](const MetricsRegistry& r) {
         std::string names;
         for (const DegradationEpisode& e : r.Episodes()) names += e.name + ";";
         return names;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MetricsRegistry registry;
    std::string nested_text;
    std::string nested_names;
    int depth = 0;
    auto episode = [](const std::string& name,
                      std::vector<DegradationEpisode>* out) {
      DegradationEpisode e;
      e.kind = EpisodeKind::kStage;
      e.name = name;
      out->push_back(e);
    };
    auto reentrant = registry.Register(
        "test", "reentrant",
        [&](MetricWriter& w) {
          w.Gauge("reentrant_gauge", "", {}, 1);
          if (depth++ == 0) nested_text = registry.RenderPrometheus();
        },
        [&](const std::string& name, std::vector<DegradationEpisode>* out) {
          episode(name, out);
          if (depth++ == 0) {
            for (const DegradationEpisode& e : registry.Episodes())
              nested_names += e.name + ";";
          }
        });
    auto plain = registry.Register(
        "test", "plain",
        [](MetricWriter& w) { w.Gauge("plain_gauge", "", {}, 2); }, episode);
    const std::string outer = c.outer(registry);
    EXPECT_EQ(depth, 1);
    if (!nested_text.empty()) {
      EXPECT_EQ(SampleValue(nested_text, "plain_gauge"), 2);
      EXPECT_TRUE(std::isnan(SampleValue(nested_text, "reentrant_gauge")));
      EXPECT_EQ(SampleValue(outer, "plain_gauge"), 2);
      EXPECT_EQ(SampleValue(outer, "reentrant_gauge"), 1);
    } else {
      EXPECT_EQ(nested_names, "plain;");
      EXPECT_EQ(outer, "reentrant;plain;");
    }
  }
}

// ---- What the components export ----

TEST(BreakerMetricsTest, OutcomesStateTransitionsAndDegradedTime) {
  FakeClock clock;
  Fixture f(&clock);
  BreakerSettings s = ExportedBreaker("rank", &clock, f.registry.get());
  s.timeout = absl::Seconds(10);
  s.ready_to_trip = trip::ConsecutiveFailures(2);
  CircuitBreaker<int> b(s);
  (void)b.Execute([] { return 1; });
  for (int i = 0; i < 2; ++i) {
    (void)b.Execute(
        []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  }
  (void)b.Execute([] { return 1; });  // rejected: open
  clock.Advance(absl::Seconds(4));
  std::string text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_breaker_state{breaker="rank"})", 2},
       {R"(degrade_breaker_in_state{breaker="rank",state="open"})", 1},
       {R"(degrade_breaker_in_state{breaker="rank",state="half-open"})", 0},
       {R"(degrade_breaker_in_state{breaker="rank",state="closed"})", 0},
       {R"(degrade_breaker_calls_total{breaker="rank",outcome="success"})", 1},
       {R"(degrade_breaker_calls_total{breaker="rank",outcome="failure"})", 2},
       {R"(degrade_breaker_calls_total{breaker="rank",outcome="rejected_open"})",
        1},
       {R"(degrade_breaker_transitions_total{breaker="rank",from="closed",to="open"})",
        1},
       {R"(degrade_breaker_degraded_seconds{breaker="rank"})", 4}});

  // Past the timeout a scrape reports half-open without moving the
  // breaker (no transition is counted or logged by scraping).
  clock.Advance(absl::Seconds(7));
  text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_breaker_state{breaker="rank"})", 1},
       {R"(degrade_breaker_in_state{breaker="rank",state="half-open"})", 1},
       {R"(degrade_breaker_in_state{breaker="rank",state="open"})", 0},
       {R"(degrade_breaker_transitions_total{breaker="rank",from="open",to="half-open"})",
        0}});
  (void)b.Execute([] { return 1; });  // the trial succeeds: closed
  text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_breaker_state{breaker="rank"})", 0},
       {R"(degrade_breaker_in_state{breaker="rank",state="closed"})", 1},
       {R"(degrade_breaker_in_state{breaker="rank",state="half-open"})", 0},
       {R"(degrade_breaker_degraded_seconds{breaker="rank"})", 0},
       {R"(degrade_breaker_transitions_total{breaker="rank",from="half-open",to="closed"})",
        1}});
  // One log line per transition, in order.
  ASSERT_EQ(f.lines.size(), 3u);
  EXPECT_THAT(f.lines[0], HasSubstr(R"("event":"breaker_state_change")"));
  EXPECT_THAT(f.lines[0],
              HasSubstr(R"("breaker":"rank","from":"closed","to":"open")"));
  EXPECT_THAT(f.lines[1], HasSubstr(R"("from":"open","to":"half-open")"));
  EXPECT_THAT(f.lines[2], HasSubstr(R"("from":"half-open","to":"closed")"));
  for (const std::string& line : f.lines) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
}

TEST(BreakerMetricsTest, SlowAndExcludedCallsAreCounted) {
  FakeClock clock;
  MetricsRegistry registry;
  BreakerSettings s = ExportedBreaker("features", &clock, &registry);
  s.slow_call_duration = absl::Milliseconds(50);
  s.is_excluded = [](const absl::Status& st) {
    return absl::IsInvalidArgument(st);
  };
  CircuitBreaker<int> b(s);
  (void)b.Execute([&] {
    clock.Advance(absl::Milliseconds(80));
    return 1;
  });
  (void)b.Execute(
      []() -> absl::StatusOr<int> { return absl::InvalidArgumentError("x"); });
  const std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_breaker_slow_calls_total{breaker="features"})", 1},
       {R"(degrade_breaker_calls_total{breaker="features",outcome="excluded"})",
        1}});
}

TEST(ManagerMetricsTest, LevelTransitionsTimeAtLevelFeaturesAndReloads) {
  FakeClock clock;
  Fixture f(&clock);
  ManagerOptions o;
  o.name = "inference";
  o.clock = &clock;
  o.metrics = f.registry.get();
  DegradationManager m(o);
  ASSERT_TRUE(m.Reload(TwoLevels()).ok());
  DegradationConfig bad = TwoLevels();
  bad.levels[1].enter = {{"queue_length", 5}};  // not rising: rejected
  EXPECT_FALSE(m.Reload(bad).ok());
  FeatureGate debug = m.Feature("debug_log");
  FeatureGate personal = m.Feature("personalization");
  clock.Advance(absl::Seconds(5));
  (void)m.Observe("queue_length", 60);  // straight to level 2
  clock.Advance(absl::Seconds(3));
  std::string text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_level{manager="inference"})", 2},
       {R"(degrade_levels{manager="inference"})", 2},
       {R"(degrade_level_transitions_total{manager="inference",from="0",to="2"})",
        1},
       {R"(degrade_level_seconds_total{manager="inference",level="0"})", 5},
       {R"(degrade_level_seconds_total{manager="inference",level="2"})", 3},
       {R"(degrade_feature_enabled{manager="inference",feature="debug_log"})",
        0},
       {R"(degrade_config_reloads_total{manager="inference",result="applied"})",
        1},
       {R"(degrade_config_reloads_total{manager="inference",result="rejected"})",
        1},
       {R"(degrade_manager_degraded_seconds{manager="inference"})", 3}});

  // Staged recovery: 2 -> 1 after a hold, 1 -> 0 after another.
  (void)m.Observe("queue_length", 0);
  clock.Advance(absl::Seconds(10));
  (void)m.Observe("queue_length", 0);
  clock.Advance(absl::Seconds(10));
  (void)m.Observe("queue_length", 0);
  text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_level{manager="inference"})", 0},
       {R"(degrade_level_transitions_total{manager="inference",from="2",to="1"})",
        1},
       {R"(degrade_level_transitions_total{manager="inference",from="1",to="0"})",
        1},
       {R"(degrade_feature_enabled{manager="inference",feature="personalization"})",
        1},
       {R"(degrade_manager_degraded_seconds{manager="inference"})", 0}});
  (void)debug;
  (void)personal;
}

TEST(ManagerMetricsTest, TheControlInForceIsItsVersionAndItsEnd) {
  FakeClock clock;
  Fixture f(&clock);
  ManagerOptions o;
  o.name = "inference";
  o.clock = &clock;
  o.metrics = f.registry.get();
  DegradationManager m(o);
  ASSERT_TRUE(m.Reload(TwoLevels()).ok());
  ExpectSeries(f.registry->RenderPrometheus(),
               {{R"(degrade_control_version{manager="inference"})", 0},
                {R"(degrade_control_expires_at_seconds{manager="inference"})",
                 0}});
  DegradationManager::Control c;
  c.level = 1;
  c.version = 42;
  c.until = clock.Now() + absl::Minutes(30);
  ASSERT_TRUE(m.SetControl(c).ok());
  const double end = absl::ToDoubleSeconds(c.until - absl::UnixEpoch());
  ExpectSeries(
      f.registry->RenderPrometheus(),
      {{R"(degrade_control_version{manager="inference"})", 42},
       {R"(degrade_control_expires_at_seconds{manager="inference"})", end},
       {R"(degrade_level{manager="inference"})", 1}});
  clock.Advance(absl::Minutes(30));
  m.Evaluate();
  ExpectSeries(f.registry->RenderPrometheus(),
               {{R"(degrade_control_version{manager="inference"})", 0},
                {R"(degrade_control_expires_at_seconds{manager="inference"})",
                 0}});
}

TEST(ManagerMetricsTest, ExplicitSinkIsRateLimitedPerEventKind) {
  FakeClock clock;
  std::vector<std::string> lines;
  ManagerOptions o;
  o.clock = &clock;
  auto owned = std::make_unique<MetricsRegistry>();
  o.metrics = owned.get();
  o.log_sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.max_log_lines_per_second = 2;
  DegradationManager m(o);
  for (int i = 0; i < 10; ++i) {
    (void)m.RejectReload(absl::InvalidArgumentError("bad file"));
  }
  EXPECT_EQ(lines.size(), 2u);
  clock.Advance(absl::Seconds(1));
  (void)m.RejectReload(absl::InvalidArgumentError("bad file"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[2], HasSubstr(R"("suppressed":8})"));
  EXPECT_EQ(m.rejected_reloads(), 11u);  // counting is never limited
}

TEST(HotListMetricsTest, AgeRisesWhileRefreshesFail) {
  FakeClock clock;
  MetricsRegistry registry;
  bool fail = false;
  HotListOptions<std::string> o;
  o.name = "hot";
  o.clock = &clock;
  o.metrics = &registry;
  o.source = [&fail]() -> absl::StatusOr<std::vector<std::string>> {
    if (fail) return absl::UnavailableError("redis down");
    return std::vector<std::string>{"a", "b", "c"};
  };
  HotList<std::string> hot(std::move(o));
  std::string text = registry.RenderPrometheus();
  EXPECT_EQ(
      SampleValue(text, R"(degrade_hot_list_age_seconds{hot_list="hot"})"),
      std::numeric_limits<double>::infinity());
  ASSERT_TRUE(hot.RefreshOnce().ok());
  fail = true;
  clock.Advance(absl::Minutes(90));
  EXPECT_FALSE(hot.RefreshOnce().ok());
  text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_hot_list_age_seconds{hot_list="hot"})", 5400},
       {R"(degrade_hot_list_items{hot_list="hot"})", 3},
       {R"(degrade_hot_list_refreshes_total{hot_list="hot",result="ok"})", 1},
       {R"(degrade_hot_list_refreshes_total{hot_list="hot",result="failed"})",
        1}});
}

// ---- Concurrency (run under TSan by the tsan preset) ----

TEST(MetricsConcurrencyTest, ScrapesRaceCallsRegistrationsAndDestruction) {
  MetricsRegistry registry;
  std::atomic<bool> stop{false};
  StageMetrics stages({"p", &registry, nullptr});
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      int round = 0;
      while (!stop.load()) {
        BreakerSettings s;
        s.name = absl::StrCat("b", t);
        s.metrics = &registry;
        s.ready_to_trip = trip::ConsecutiveFailures(1);
        CircuitBreaker<int> b(s);
        for (int i = 0; i < 50; ++i) {
          (void)b.Execute([i]() -> absl::StatusOr<int> {
            if (i % 3 == 0) return absl::UnavailableError("x");
            return i;
          });
          DegradationTrace trace;
          if (i % 2 == 0) {
            trace.Add(absl::StrCat("stage", (i + round) % 5),
                      DegradeReason::kError);
          }
          stages.Observe(trace);
        }
        ++round;
      }
    });
  }
  EscalationOptions eo;
  eo.after = absl::ZeroDuration();
  EscalationWatch watch(registry, eo);
  for (int i = 0; i < 200; ++i) {
    const std::string text = registry.RenderPrometheus();
    ASSERT_THAT(text, HasSubstr("degrade_request_degraded_stages_count"));
    (void)registry.RenderJson();
    watch.Check();
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(stages.requests_at_depth(0), 0u);
}

// Found by review: churn made each registration scan every suffix, and a
// freed suffix was not handed out again.
TEST(RegistryTest, NamesStayUniqueUnderChurnAndTheLowestFreedSuffixComesBack) {
  MetricsRegistry registry;
  std::vector<MetricsRegistry::Registration> live;
  for (int i = 0; i < 200; ++i) {
    live.push_back(registry.Register("test", "x", nullptr));
  }
  EXPECT_EQ(live[0].name(), "x");
  EXPECT_EQ(live[199].name(), "x#200");
  // Free #50 and #7 and #120; the next three get #7, #50, #120 back.
  live[49].Reset();
  live[6].Reset();
  live[119].Reset();
  auto a = registry.Register("test", "x", nullptr);
  auto b = registry.Register("test", "x", nullptr);
  auto c = registry.Register("test", "x", nullptr);
  auto fresh = registry.Register("test", "x", nullptr);
  EXPECT_EQ(a.name(), "x#7");
  EXPECT_EQ(b.name(), "x#50");
  EXPECT_EQ(c.name(), "x#120");
  EXPECT_EQ(fresh.name(), "x#201");
  // A registration dropped at once frees its name for the next.
  EXPECT_EQ(registry.Register("test", "x", nullptr).name(), "x#202");
  EXPECT_EQ(registry.Register("test", "x", nullptr).name(), "x#202");
  // A component registered by a suffixed name is skipped, not duplicated.
  auto explicit_name = registry.Register("test", "x#203", nullptr);
  auto d = registry.Register("test", "x", nullptr);
  auto e = registry.Register("test", "x", nullptr);
  EXPECT_EQ(d.name(), "x#202");
  EXPECT_EQ(e.name(), "x#204");
  // Seeded churn: names stay unique.
  detail::SplitMix64 rng(7);
  for (int step = 0; step < 2000; ++step) {
    const std::size_t i = rng.Next() % live.size();
    live[i].Reset();
    live[i] = registry.Register("test", "x", nullptr);
  }
  std::vector<std::string> names = registry.Names("test");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
