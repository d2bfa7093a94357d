// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of metrics.hpp and event_log.hpp: the exposition format, the
// registry's lifetime rules, what each component exports, the per-key rate
// limiter and the escalation hook. Every clock is a FakeClock.

#include "degrade/metrics.hpp"

#include <atomic>
#include <cmath>
#include <future>
#include <initializer_list>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/event_log.hpp"
#include "degrade/fallback.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace degrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The lines of `text` that start with `prefix`.
std::vector<std::string> LinesStartingWith(const std::string& text,
                                           absl::string_view prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line);
  }
  return out;
}

// The value of the one sample line `series` (name plus labels exactly as
// rendered); NaN when it is absent.
double SampleValue(const std::string& text, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, series) && line.size() > series.size() &&
        line[series.size()] == ' ') {
      const std::string v(line.substr(series.size() + 1));
      if (v == "+Inf") return std::numeric_limits<double>::infinity();
      return std::stod(v);
    }
  }
  return std::nan("");
}

// Expects each series (name plus labels exactly as rendered) in `text` to
// have the paired value.
void ExpectSeries(
    const std::string& text,
    std::initializer_list<std::pair<absl::string_view, double>> expected) {
  for (const auto& [series, value] : expected) {
    EXPECT_EQ(SampleValue(text, series), value) << series;
  }
}

// Settings for a breaker named `name` on `clock`, exporting to `registry`.
BreakerSettings ExportedBreaker(absl::string_view name, const Clock* clock,
                                MetricsRegistry* registry) {
  BreakerSettings s;
  s.name = std::string(name);
  s.clock = clock;
  s.metrics = registry;
  return s;
}

// A registry whose event log writes into a vector, on `clock`.
struct Fixture {
  explicit Fixture(const Clock* clock, uint32_t per_key = 1000) {
    EventLogOptions o;
    o.sink = [this](absl::string_view line) { lines.emplace_back(line); };
    o.clock = clock;
    o.max_lines_per_key = per_key;
    registry = std::make_unique<MetricsRegistry>(std::move(o));
  }
  std::vector<std::string> lines;
  std::unique_ptr<MetricsRegistry> registry;
};

// ---- Exposition format ----

TEST(ExpositionTest, HelpTypeAndSamplesSortedByNameThenLabels) {
  MetricsRegistry registry;
  auto a = registry.Register("test", "a", [](MetricWriter& w) {
    w.Gauge("zeta_gauge", "Last family.", {{"k", "b"}}, 2);
    w.Counter("alpha_total", "First family.", {{"k", "b"}}, 5);
  });
  auto b = registry.Register("test", "b", [](MetricWriter& w) {
    w.Gauge("zeta_gauge", "ignored: the first HELP wins", {{"k", "a"}}, 1);
    w.Counter("alpha_total", "", {{"k", "a"}}, 3);
  });
  const std::string text = registry.RenderPrometheus();
  const std::vector<std::string> lines =
      absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 8u);
  EXPECT_EQ(lines[0], "# HELP alpha_total First family.");
  EXPECT_EQ(lines[1], "# TYPE alpha_total counter");
  EXPECT_EQ(lines[2], R"(alpha_total{k="a"} 3)");
  EXPECT_EQ(lines[3], R"(alpha_total{k="b"} 5)");
  // degrade_log_lines_total and degrade_metrics_dropped_samples_total sort
  // between the two.
  EXPECT_EQ(lines[lines.size() - 4], "# HELP zeta_gauge Last family.");
  EXPECT_EQ(lines[lines.size() - 3], "# TYPE zeta_gauge gauge");
  EXPECT_EQ(lines[lines.size() - 2], R"(zeta_gauge{k="a"} 1)");
  EXPECT_EQ(lines[lines.size() - 1], R"(zeta_gauge{k="b"} 2)");
  EXPECT_EQ(text.back(), '\n');
  // Every family appears exactly once.
  EXPECT_EQ(LinesStartingWith(text, "# TYPE zeta_gauge").size(), 1u);
}

TEST(ExpositionTest, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    w.Gauge("escape_gauge", "back\\slash and\nnewline \"quoted\"",
            {{"v", "a\\b\"c\nd"}}, 1);
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("# HELP escape_gauge back\\\\slash and\\nnewline "
                              "\"quoted\"\n"));
  EXPECT_THAT(text, HasSubstr("escape_gauge{v=\"a\\\\b\\\"c\\nd\"} 1\n"));
}

TEST(ExpositionTest, InvalidUtf8InNamesBecomesTheReplacementCharacter) {
  // One bad byte would make Prometheus refuse the whole scrape; names can
  // come from anywhere (a BreakerFamily key taken from a request).
  FakeClock clock;
  MetricsRegistry registry;
  BreakerSettings s = ExportedBreaker("caf\xe9", &clock, &registry);
  CircuitBreaker<int> latin1(s);
  s.name = "\xe6\x8e\xa8\xe8\x8d\x90";  // valid UTF-8 is kept
  CircuitBreaker<int> chinese(s);
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    w.Gauge("help_gauge", "bad \xff byte", {}, 1);
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(
      text, HasSubstr("degrade_breaker_state{breaker=\"caf\xEF\xBF\xBD\"} 0"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "degrade_breaker_state{breaker=\"\xe6\x8e\xa8\xe8\x8d\x90\"} 0"));
  EXPECT_THAT(text, HasSubstr("# HELP help_gauge bad \xEF\xBF\xBD byte\n"));
  EXPECT_THAT(text, Not(HasSubstr("caf\xe9\"")));
}

TEST(ExpositionTest, ValuesUseTheFormatsSpellings) {
  EXPECT_EQ(detail::FormatMetricValue(0), "0");
  EXPECT_EQ(detail::FormatMetricValue(-3), "-3");
  EXPECT_EQ(detail::FormatMetricValue(12345678901234.0), "12345678901234");
  EXPECT_EQ(detail::FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(detail::FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(detail::FormatMetricValue(1e300), "1e+300");
  EXPECT_EQ(detail::FormatMetricValue(std::nan("")), "NaN");
  EXPECT_EQ(detail::FormatMetricValue(std::numeric_limits<double>::infinity()),
            "+Inf");
  EXPECT_EQ(detail::FormatMetricValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
}

TEST(ExpositionTest, SamplesThatWouldBreakTheFormatAreDroppedAndCounted) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    w.Gauge("ok_gauge", "fine", {{"a", "1"}}, 1);
    w.Gauge("0bad_name", "bad metric name", {}, 1);               // dropped
    w.Gauge("bad-name", "bad metric name", {}, 1);                // dropped
    w.Gauge("ok_gauge2", "bad label", {{"__reserved", "x"}}, 1);  // dropped
    w.Gauge("ok_gauge3", "bad label", {{"le", "x"}}, 1);          // dropped
    w.Gauge("ok_gauge4", "bad label", {{"a-b", "x"}}, 1);         // dropped
    w.Counter("no_suffix", "counter without _total", {}, 1);      // dropped
    w.Counter("ok_gauge_total", "a counter", {}, 1);
    w.Gauge("ok_gauge_total", "type clash", {{"x", "y"}}, 1);     // dropped
    w.Gauge("ok_gauge", "duplicate label set", {{"a", "1"}}, 2);  // dropped
    const double bounds[] = {2, 1};
    const uint64_t buckets[] = {1, 1, 1};
    w.Histogram("bad_histogram", "bounds not ascending", {}, bounds, buckets,
                0);  // dropped
    w.Gauge("dup_labels", "a label name twice", {{"a", "1"}, {"a", "2"}},
            1);                                                 // dropped
    w.Counter("neg_total", "a negative counter", {}, -1);       // dropped
    w.Counter("nan_total", "a NaN counter", {}, std::nan(""));  // dropped
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(SampleValue(text, "degrade_metrics_dropped_samples_total"), 12);
  EXPECT_EQ(SampleValue(text, R"(ok_gauge{a="1"})"), 1);  // the first wins
  EXPECT_THAT(text, Not(HasSubstr("bad")));
  EXPECT_THAT(text, Not(HasSubstr("no_suffix")));
  EXPECT_THAT(text, Not(HasSubstr("dup_labels")));
  EXPECT_THAT(text, Not(HasSubstr("neg_total")));
  EXPECT_THAT(text, Not(HasSubstr("nan_total")));
  EXPECT_THAT(text, Not(HasSubstr("__reserved")));
  EXPECT_EQ(LinesStartingWith(text, "ok_gauge_total").size(), 1u);
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    const double bounds[] = {0.5, 1, 2.5};
    const uint64_t buckets[] = {1, 2, 0, 3};  // the last is +Inf
    w.Histogram("h_seconds", "A histogram.", {{"p", "q"}}, bounds, buckets,
                17.5);
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(LinesStartingWith(text, "h_seconds"),
              ElementsAre(R"(h_seconds_bucket{p="q",le="0.5"} 1)",
                          R"(h_seconds_bucket{p="q",le="1"} 3)",
                          R"(h_seconds_bucket{p="q",le="2.5"} 3)",
                          R"(h_seconds_bucket{p="q",le="+Inf"} 6)",
                          R"(h_seconds_sum{p="q"} 17.5)",
                          R"(h_seconds_count{p="q"} 6)"));
  EXPECT_THAT(text, HasSubstr("# TYPE h_seconds histogram\n"));
}

TEST(ExpositionTest, JsonSnapshotCarriesTheSameValues) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    w.Gauge("g", "gauge", {{"k", "v\"q"}}, 0.5);
    w.Gauge("inf_gauge", "infinite", {},
            std::numeric_limits<double>::infinity());
    const double bounds[] = {1};
    const uint64_t buckets[] = {2, 1};
    w.Histogram("h", "histogram", {}, bounds, buckets, 4);
  });
  const nlohmann::json j = nlohmann::json::parse(registry.RenderJson());
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& m : j.at("metrics")) by_name[m.at("name")] = m;
  ASSERT_TRUE(by_name.count("g"));
  EXPECT_EQ(by_name["g"]["type"], "gauge");
  EXPECT_EQ(by_name["g"]["samples"][0]["labels"]["k"], "v\"q");
  EXPECT_EQ(by_name["g"]["samples"][0]["value"], 0.5);
  EXPECT_EQ(by_name["inf_gauge"]["samples"][0]["value"], "+Inf");
  const auto& h = by_name["h"]["samples"][0];
  EXPECT_EQ(h["count"], 3);
  EXPECT_EQ(h["sum"], 4);
  EXPECT_EQ(h["buckets"][0]["le"], 1);
  EXPECT_EQ(h["buckets"][0]["count"], 2);
  EXPECT_EQ(h["buckets"][1]["le"], "+Inf");
  EXPECT_EQ(h["buckets"][1]["count"], 3);
}

// ---- Registry lifetime ----

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
       {R"(degrade_breaker_transitions_total{breaker="rank",from="open",to="half-open"})",
        0}});
  (void)b.Execute([] { return 1; });  // the trial succeeds: closed
  text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_breaker_state{breaker="rank"})", 0},
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

DegradationConfig TwoLevels() {
  DegradationConfig c;
  c.name = "inference";
  c.hold = absl::Seconds(10);
  LevelSpec l1;
  l1.enter = {{"queue_length", 20}};
  l1.recover = {{"queue_length", 10}};
  l1.disable = {"debug_log"};
  LevelSpec l2;
  l2.enter = {{"queue_length", 50}};
  l2.recover = {{"queue_length", 40}};
  l2.disable = {"personalization"};
  c.levels = {l1, l2};
  return c;
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

TEST(ManagerMetricsTest, ExplicitSinkIsRateLimitedPerEventKind) {
  FakeClock clock;
  std::vector<std::string> lines;
  ManagerOptions o;
  o.clock = &clock;
  o.metrics = std::make_unique<MetricsRegistry>().release();
  std::unique_ptr<MetricsRegistry> owned(o.metrics);
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

TEST(StageMetricsTest, FallbacksByStageAndReasonAndDepthHistogram) {
  FakeClock clock;
  Fixture f(&clock);
  StageMetrics stages({"recsys", f.registry.get(), &clock});
  DegradationTrace none;
  DegradationTrace recall_open;
  recall_open.Add("recall", DegradeReason::kBreakerOpen);
  DegradationTrace two;
  two.Add("features", DegradeReason::kTimeout);
  two.Add("recall", DegradeReason::kError);
  stages.Observe(none);
  stages.Observe(recall_open);
  stages.Observe(recall_open);
  stages.Observe(two);
  EXPECT_EQ(stages.fallbacks("recall", DegradeReason::kBreakerOpen), 2u);
  EXPECT_EQ(stages.fallbacks("recall", DegradeReason::kError), 1u);
  EXPECT_EQ(stages.fallbacks("rank", DegradeReason::kError), 0u);
  EXPECT_EQ(stages.requests_at_depth(0), 1u);
  EXPECT_EQ(stages.requests_at_depth(1), 2u);
  EXPECT_EQ(stages.requests_at_depth(2), 1u);
  const std::string text = f.registry->RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_fallbacks_total{pipeline="recsys",stage="recall",reason="open"})",
        2},
       {R"(degrade_fallbacks_total{pipeline="recsys",stage="features",reason="timeout"})",
        1},
       {R"(degrade_request_degraded_stages_bucket{pipeline="recsys",le="0"})",
        1},
       {R"(degrade_request_degraded_stages_bucket{pipeline="recsys",le="1"})",
        3},
       {R"(degrade_request_degraded_stages_count{pipeline="recsys"})", 4},
       {R"(degrade_request_degraded_stages_sum{pipeline="recsys"})", 4}});
  // One fallback_served line per stage and request (the limit is high).
  ASSERT_EQ(f.lines.size(), 4u);
  EXPECT_THAT(f.lines[0],
              HasSubstr(R"("event":"fallback_served","pipeline":"recsys",)"
                        R"("stage":"recall","reason":"open")"));
}

TEST(StageMetricsTest, DegradedTimeRunsUntilANormalAnswer) {
  FakeClock clock;
  MetricsRegistry registry;
  StageMetrics stages({"recsys", &registry, &clock});
  DegradationTrace recall;
  recall.Add("recall", DegradeReason::kError);
  stages.Observe(recall);
  clock.Advance(absl::Seconds(30));
  stages.Observe(recall);  // still degraded: the episode goes on
  const auto degraded = [&] {
    return SampleValue(
        registry.RenderPrometheus(),
        R"(degrade_stage_degraded_seconds{pipeline="recsys",stage="recall"})");
  };
  EXPECT_EQ(degraded(), 30);
  ASSERT_EQ(registry.Episodes().size(), 1u);
  EXPECT_EQ(registry.Episodes()[0].kind, "stage");
  EXPECT_EQ(registry.Episodes()[0].name, "recall");
  EXPECT_EQ(registry.Episodes()[0].source, "recsys");
  stages.Observe(DegradationTrace());  // a normal answer ends it
  EXPECT_EQ(degraded(), 0);
  EXPECT_TRUE(registry.Episodes().empty());
}

TEST(StageMetricsTest, OnlyAStageThatRanCanEndItsEpisode) {
  FakeClock clock;
  MetricsRegistry registry;
  StageMetrics stages({"recsys", &registry, &clock});
  const absl::string_view all[] = {"recall", "rank", "rerank"};
  const absl::string_view no_rerank[] = {"recall", "rank"};
  DegradationTrace rerank_failed;
  rerank_failed.Add("rerank", DegradeReason::kError);
  stages.Observe(rerank_failed, all);
  clock.Advance(absl::Minutes(10));
  // Requests that never reached re-ranking say nothing about it.
  stages.Observe(DegradationTrace(), no_rerank);
  clock.Advance(absl::Minutes(10));
  ASSERT_EQ(registry.Episodes().size(), 1u);
  EXPECT_EQ(registry.Episodes()[0].since, clock.Now() - absl::Minutes(20));
  // Nor does a trace with an entry it could not name.
  DegradationTrace full;
  for (std::size_t i = 0; i < kTraceCapacity + 1; ++i) {
    full.Add(absl::StrCat("s", i), DegradeReason::kShed);
  }
  ASSERT_GT(full.dropped(), 0u);
  stages.Observe(full);
  EXPECT_FALSE(registry.Episodes().empty());
  // A request that ran it normally does.
  stages.Observe(DegradationTrace(), all);
  for (const DegradationEpisode& e : registry.Episodes()) {
    EXPECT_NE(e.name, "rerank");
  }
}

TEST(StageMetricsTest, LogLinesUseTheUniqueRegisteredName) {
  FakeClock clock;
  Fixture f(&clock);
  StageMetrics a({"p", f.registry.get(), &clock});
  StageMetrics b({"p", f.registry.get(), &clock});
  EXPECT_EQ(b.name(), "p#2");
  DegradationTrace t;
  t.Add("recall", DegradeReason::kError);
  a.Observe(t);
  b.Observe(t);
  ASSERT_EQ(f.lines.size(), 2u);
  EXPECT_THAT(f.lines[0], HasSubstr(R"("pipeline":"p",)"));
  EXPECT_THAT(f.lines[1], HasSubstr(R"("pipeline":"p#2",)"));
}

TEST(StageMetricsTest, TooManyStageNamesShareOneSeriesAndUnnamedAreCounted) {
  FakeClock clock;
  MetricsRegistry registry;
  StageMetrics stages({"p", &registry, &clock});
  for (std::size_t i = 0; i < StageMetrics::kMaxStages + 10; ++i) {
    DegradationTrace t;
    t.Add(absl::StrCat("s", i), DegradeReason::kError);
    stages.Observe(t);
  }
  EXPECT_EQ(stages.fallbacks("_other", DegradeReason::kError), 11u);
  EXPECT_EQ(stages.fallbacks("s0", DegradeReason::kError), 1u);
  DegradationTrace full;
  for (std::size_t i = 0; i < kTraceCapacity + 2; ++i) {
    full.Add(absl::StrCat("x", i), DegradeReason::kShed);
  }
  stages.Observe(full);
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(
      SampleValue(
          text,
          R"(degrade_fallbacks_total{pipeline="p",stage="_unnamed",reason="unknown"})"),
      2);
  EXPECT_EQ(LinesStartingWith(
                text, R"(degrade_fallbacks_total{pipeline="p",stage="_other")")
                .size(),
            2u);  // error and shed
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

// ---- The rate limiter ----

TEST(EventLogTest, AtMostNLinesPerKeyPerIntervalAndTheNextCarriesTheCount) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 3;
  o.interval = absl::Seconds(1);
  EventLog log(std::move(o));
  for (int i = 0; i < 10; ++i) log.Emit("k", R"({"n":1})");
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(log.suppressed_total(), 7u);
  // Another key has its own allowance.
  EXPECT_TRUE(log.Emit("other", "{}"));
  clock.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(log.Emit("k", R"({"n":2})"));  // same window
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(log.Emit("k", R"({"n":3})"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4], R"({"n":3,"suppressed":8})");
  EXPECT_TRUE(log.Emit("k", R"({"n":4})"));
  EXPECT_EQ(lines[5], R"({"n":4})");  // the count was reported once
  EXPECT_EQ(log.written_total(), 6u);
}

TEST(EventLogTest, AStageDegradingEveryRequestAt10kQpsWritesAHandfulPerSecond) {
  FakeClock clock;
  Fixture f(&clock, /*per_key=*/5);
  StageMetrics stages({"recsys", f.registry.get(), &clock});
  DegradationTrace t;
  t.Add("recall", DegradeReason::kBreakerOpen);
  // 10 simulated seconds at 10k requests per second.
  for (int s = 0; s < 10; ++s) {
    for (int i = 0; i < 10000; ++i) {
      stages.Observe(t);
      clock.Advance(absl::Microseconds(100));
    }
  }
  EXPECT_EQ(stages.fallbacks("recall", DegradeReason::kBreakerOpen), 100000u);
  // Each window of one second takes 5 lines, and suppresses the other 9995.
  EXPECT_EQ(f.lines.size(), 50u);
  // Nothing is lost silently: written + suppressed = every event, and the
  // lines say how many were suppressed before them.
  uint64_t reported = 0;
  for (const std::string& line : f.lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("suppressed")) reported += j["suppressed"].get<uint64_t>();
  }
  EXPECT_EQ(
      f.registry->log().written_total() + f.registry->log().suppressed_total(),
      100000u);
  // The first line of each later window reports the previous one's 9995;
  // the last window's are pending until the next line.
  EXPECT_EQ(reported, 9u * 9995u);
}

TEST(EventLogTest, AClockThatJumpsBackOrSaturatesStartsANewWindow) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 1;
  EventLog log(std::move(o));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_FALSE(log.Emit("k", "{}"));
  clock.Set(clock.Now() - absl::Hours(1));  // back: not stuck for an hour
  EXPECT_TRUE(log.Emit("k", "{}"));
  clock.Set(absl::InfiniteFuture());  // saturated readings: no overflow (UBSan)
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_FALSE(log.Emit("k", "{}"));
  EXPECT_EQ(lines.size(), 3u);
}

TEST(EventLogTest, KeysPastTheCapShareOneLimitUnlessIdleOnesCanGo) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 1;
  o.max_keys = 2;
  EventLog log(std::move(o));
  // Held keys in their window: nothing can be forgotten.
  EventLog::Key a = log.GetKey("a");
  EventLog::Key b = log.GetKey("b");
  EXPECT_TRUE(log.Emit(a, [] { return std::string("{}"); }));
  EXPECT_TRUE(log.Emit(b, [] { return std::string("{}"); }));
  EXPECT_TRUE(log.Emit("c", "{}"));   // the first overflow key
  EXPECT_FALSE(log.Emit("d", "{}"));  // shares c's allowance
  EXPECT_EQ(log.key_overflows(), 2u);
  // Their owners are gone (a BreakerFamily evicted them) and their windows
  // are over: a new key gets a limit of its own.
  a = EventLog::Key();
  b = EventLog::Key();
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(log.Emit("e", "{}"));
  EXPECT_TRUE(log.Emit("f", "{}"));
  EXPECT_EQ(log.key_overflows(), 2u);
  EXPECT_EQ(lines.size(), 5u);
}

TEST(EventLogTest, ZeroLimitSilencesAndAThrowingSinkLosesOnlyItsLine) {
  FakeClock clock;
  EventLogOptions silent;
  silent.sink = [](absl::string_view) { FAIL() << "nothing may be written"; };
  silent.clock = &clock;
  silent.max_lines_per_key = 0;
  EventLog quiet(std::move(silent));
  EXPECT_FALSE(quiet.Emit("k", "{}"));
  EXPECT_EQ(quiet.suppressed_total(), 1u);

  int calls = 0;
  EventLogOptions o;
  o.sink = [&calls](absl::string_view) {
    ++calls;
    throw std::runtime_error("disk full");
  };
  o.clock = &clock;
  EventLog log(std::move(o));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_EQ(calls, 2);
  std::vector<std::string> lines;
  log.SetSink([&lines](absl::string_view l) { lines.emplace_back(l); });
  EXPECT_TRUE(log.Emit("j", R"({"a":1})"));
  EXPECT_THAT(lines, ElementsAre(R"({"a":1})"));
}

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

}  // namespace
}  // namespace degrade
