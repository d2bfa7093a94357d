// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of metric_writer.hpp and of the registry's renderings: the exposition
// format rules (ordering, escaping, value spellings, samples that would break
// the format dropped and counted, histograms) and the JSON snapshot.

#include "degrade/metric_writer.hpp"

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
#include "degrade/metrics_registry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"
#include "nlohmann/json.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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

// Found by review: each of these made promtool refuse the exposition, or
// exposed one label set twice.
TEST(ExpositionTest, AHistogramsSuffixedNamesAreRefusedEitherWayRound) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    const double bounds[] = {1, 2};
    const uint64_t buckets[] = {1, 1, 1};
    w.Histogram("rpc_latency_seconds", "latency", {}, bounds, buckets, 3);
    w.Gauge("rpc_latency_seconds_count", "clash", {}, 1);     // dropped
    w.Counter("rpc_latency_seconds_sum_total", "fine", {}, 1);
    w.Gauge("queue_bucket", "written first", {}, 1);
    w.Histogram("queue", "clash the other way", {}, bounds, buckets, 3);  // dropped
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(SampleValue(text, "degrade_metrics_dropped_samples_total"), 2);
  EXPECT_EQ(LinesStartingWith(text, "# HELP rpc_latency_seconds ").size(), 1u);
  EXPECT_EQ(LinesStartingWith(text, "rpc_latency_seconds_count ").size(), 1u);
  EXPECT_EQ(SampleValue(text, "rpc_latency_seconds_sum_total"), 1);
  EXPECT_EQ(SampleValue(text, "queue_bucket"), 1);
  EXPECT_THAT(text, Not(HasSubstr("# TYPE queue histogram")));
}

TEST(ExpositionTest, ALabelSetInAnotherOrderIsTheSameSet) {
  MetricsRegistry registry;
  auto r = registry.Register("test", "x", [](MetricWriter& w) {
    w.Gauge("pair", "two labels", {{"a", "1"}, {"b", "2"}}, 1);
    w.Gauge("pair", "the same set, reordered", {{"b", "2"}, {"a", "1"}}, 2);
    w.Gauge("pair", "another set", {{"a", "1"}, {"b", "3"}}, 3);
  });
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(LinesStartingWith(text, "pair{").size(), 2u);
  EXPECT_EQ(SampleValue(text, R"(pair{a="1",b="2"})"), 1);
  EXPECT_EQ(SampleValue(text, "degrade_metrics_dropped_samples_total"), 1);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
