// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of stage_metrics.hpp: fallbacks by stage and reason, the depth
// histogram, degraded time per stage and its episodes, log lines, the
// stage-name cap, and which registry it exports to (explicit, the process
// default, none). Every clock is a FakeClock.

#include "degrade/stage_metrics.hpp"

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
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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

// Issue 13 (time at the extremes): the degraded time was `now - since` on
// int64 nanoseconds, which overflowed (UB; the wrapped value was clamped
// to 0) for a stage that started degrading with the clock at InfinitePast
// and was scraped at InfiniteFuture. It now saturates; a clock stepped
// back reads 0, never a negative time. A start at InfinitePast read as the
// "not degraded" sentinel and lost the episode.
TEST(StageMetricsTest, DegradedTimeSaturatesAtTheExtremes) {
  FakeClock clock;
  MetricsRegistry registry;
  StageMetrics stages({"recsys", &registry, &clock});
  const auto degraded = [&] {
    return SampleValue(
        registry.RenderPrometheus(),
        R"(degrade_stage_degraded_seconds{pipeline="recsys",stage="recall"})");
  };
  DegradationTrace recall;
  recall.Add("recall", DegradeReason::kError);
  clock.Set(absl::InfinitePast());  // reads INT64_MIN ns, the sentinel
  stages.Observe(recall);
  ASSERT_EQ(registry.Episodes().size(), 1u) << "the episode is not lost";
  clock.Set(absl::InfiniteFuture());
  EXPECT_GT(degraded(), 9.2e9);  // saturated at INT64_MAX ns, not wrapped
  clock.Set(absl::InfinitePast());
  EXPECT_EQ(degraded(), 0);
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

// ---- Which registry: the rule every component follows ----

DegradationTrace OneFallback() {
  DegradationTrace t;
  t.Add("recall", DegradeReason::kError);
  return t;
}

constexpr absl::string_view kCheckoutRecall =
    R"(degrade_fallbacks_total{pipeline="checkout",stage="recall",reason="error"})";

// A service that made its own registry the process default expects every
// series there: StageMetrics' too, not split off into MetricsRegistry's
// Default().
TEST(StageMetricsTest, WithoutMetricsItUsesTheServicesDefaultRegistry) {
  FakeClock clock;
  MetricsRegistry service;
  const ScopedDefaultTelemetry scope(&service);
  StageMetricsOptions o;
  o.name = "checkout";
  o.clock = &clock;
  StageMetrics stages(o);
  EXPECT_TRUE(stages.exported());
  stages.Observe(OneFallback());
  EXPECT_EQ(SampleValue(service.RenderPrometheus(), kCheckoutRecall), 1);
  EXPECT_THAT(MetricsRegistry::Default().RenderPrometheus(),
              Not(HasSubstr(R"(pipeline="checkout")")));
}

// The scope puts back the default it found, so a test that sets one
// leaves none behind for the next.
TEST(StageMetricsTest, TheProcessDefaultIsRestoredAfterTheScope) {
  FakeClock clock;
  Telemetry* const before = DefaultTelemetry();
  MetricsRegistry service;
  {
    const ScopedDefaultTelemetry scope(&service);
    ASSERT_EQ(DefaultTelemetry(), &service);
    StageMetrics inside({"checkout", nullptr, &clock});
    inside.Observe(OneFallback());
  }
  EXPECT_EQ(DefaultTelemetry(), before);
  // Built after the scope: not in the service's registry.
  StageMetrics after({"later", NoTelemetry(), &clock});
  after.Observe(OneFallback());
  EXPECT_THAT(service.RenderPrometheus(),
              Not(HasSubstr(R"(pipeline="later")")));
}

TEST(StageMetricsTest, WithNoTelemetryItCountsButExportsNothing) {
  FakeClock clock;
  MetricsRegistry service;
  const ScopedDefaultTelemetry scope(&service);
  StageMetrics none({"solo", NoTelemetry(), &clock});
  EXPECT_FALSE(none.exported());
  EXPECT_EQ(none.name(), "solo");
  none.Observe(OneFallback());  // no registry, no log: still counted
  EXPECT_EQ(none.fallbacks("recall", DegradeReason::kError), 1u);
  EXPECT_EQ(none.requests_at_depth(1), 1u);
  EXPECT_THAT(service.RenderPrometheus(), Not(HasSubstr(R"(pipeline="solo")")));
  // And with no default at all, the same.
  const ScopedDefaultTelemetry no_default(nullptr);
  StageMetrics unset({"solo2", nullptr, &clock});
  EXPECT_FALSE(unset.exported());
  unset.Observe(OneFallback());
  EXPECT_EQ(unset.fallbacks("recall", DegradeReason::kError), 1u);
  EXPECT_THAT(MetricsRegistry::Default().RenderPrometheus(),
              Not(HasSubstr(R"(pipeline="solo2")")));
}

// A telemetry that wraps a registry (say, one that also bridges events to
// the service's logger) hands StageMetrics the registry it writes into.
TEST(StageMetricsTest, ATelemetryWrappingARegistryIsFollowed) {
  struct Wrapper : Telemetry {
    explicit Wrapper(MetricsRegistry* r) : inner(r) {}
    MetricsRegistry* AsMetricsRegistry() override { return inner; }
    MetricsRegistry* inner;
  };
  struct Other : Telemetry {};
  FakeClock clock;
  MetricsRegistry inner;
  Wrapper wrapper(&inner);
  StageMetrics stages({"checkout", &wrapper, &clock});
  EXPECT_TRUE(stages.exported());
  stages.Observe(OneFallback());
  EXPECT_EQ(SampleValue(inner.RenderPrometheus(), kCheckoutRecall), 1);
  Other other;
  StageMetrics elsewhere({"checkout", &other, &clock});
  EXPECT_FALSE(elsewhere.exported());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
