// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of source_stats.hpp: the defaults; DefaultFeatures' stats moving on
// real loads (accepted, refused) and its age on a FakeClock, never negative
// when the clock steps back; that it offers its view to its telemetry and
// to nothing with NoTelemetry(); and the degrade_default_features_* series a
// MetricsRegistry renders for it, gone once it is destroyed. The GPU
// source's are in gpu_signal_test.cpp (they need the fake NVML), the
// segment defaults' in segment_defaults_test.cpp.

#include "degrade/source_stats.hpp"

#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/default_features.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(SourceStatsTest, DefaultsSayNothingYet) {
  const GpuSourceStats g;
  EXPECT_FALSE(g.available);
  EXPECT_EQ(g.utilization, 0);
  EXPECT_EQ(g.reads, 0u);
  EXPECT_EQ(g.errors_unavailable, 0u);
  EXPECT_EQ(g.errors_out_of_range, 0u);
  EXPECT_EQ(g.last_nvml_error, 0);
  const DefaultFeaturesStats f;
  EXPECT_EQ(f.age, absl::InfiniteDuration());
  EXPECT_EQ(f.dimension, 0u);
  EXPECT_EQ(f.accepted, 0u);
  EXPECT_EQ(f.refused, 0u);
  EXPECT_TRUE(f.last_ok);
  const SegmentDefaultsStats seg;
  EXPECT_EQ(seg.age, absl::InfiniteDuration());
  EXPECT_EQ(seg.dimension, 0u);
  EXPECT_EQ(seg.segments, 0u);
  EXPECT_EQ(seg.accepted, 0u);
  EXPECT_EQ(seg.refused, 0u);
  EXPECT_TRUE(seg.last_ok);
  EXPECT_EQ(seg.lookups_hit, 0u);
  EXPECT_EQ(seg.lookups_unknown, 0u);
}

class Spy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& v) override {
    view = v.As<DefaultFeaturesStats>();
    name = v.name();  // the view is readable inside Attach
    return nullptr;
  }
  const DefaultFeaturesView* view = nullptr;
  std::string name;
};

class DefaultFeaturesStatsTest : public ::testing::Test {
 protected:
  DefaultFeaturesOptions Options(Telemetry* metrics) {
    DefaultFeaturesOptions o;
    o.name = "avg";
    o.clock = &clock_;
    o.metrics = metrics;
    return o;
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.Path(name);
    ::degrade_tests::WriteInPlace(path, text);
    return path;
  }

  FakeClock clock_;
  ::degrade_tests::TempDir dir_{"source_stats_test"};
};

TEST_F(DefaultFeaturesStatsTest, OffersItsViewToItsTelemetryAndNotToNone) {
  Spy spy;
  DefaultFeatures f(Options(&spy));
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "avg");
  ASSERT_TRUE(f.Set({1, 2, 3}).ok());
  EXPECT_EQ(spy.view->stats().dimension, 3u);

  Spy ignored;
  ScopedDefaultTelemetry scope(&ignored);
  DefaultFeatures none(Options(NoTelemetry()));
  EXPECT_EQ(ignored.view, nullptr);
  DefaultFeatures by_default(Options(nullptr));  // the process default
  EXPECT_NE(ignored.view, nullptr);
}

TEST_F(DefaultFeaturesStatsTest, ReloadsAreCountedAndAgeRunsOnTheClock) {
  DefaultFeatures f(Options(NoTelemetry()));
  EXPECT_EQ(f.stats().age, absl::InfiniteDuration());  // nothing loaded

  const std::string good =
      Write("good.json", R"({"dimension":2,"values":[1,2]})");
  const std::string bad = Write("bad.json", R"({"dimension":2,"values":[1]})");
  ASSERT_TRUE(f.Reload(good).ok());
  clock_.Advance(absl::Minutes(5));
  DefaultFeaturesStats st = f.stats();
  EXPECT_EQ(st.age, absl::Minutes(5));
  EXPECT_EQ(f.age(), absl::Minutes(5));
  EXPECT_EQ(st.dimension, 2u);
  EXPECT_EQ(st.accepted, 1u);
  EXPECT_EQ(st.refused, 0u);
  EXPECT_TRUE(st.last_ok);

  // A refused reload keeps the old vector, and its age keeps growing.
  EXPECT_FALSE(f.Reload(bad).ok());
  EXPECT_FALSE(f.Reload(dir_.Path("missing.json")).ok());
  clock_.Advance(absl::Minutes(1));
  st = f.stats();
  EXPECT_EQ(st.age, absl::Minutes(6));
  EXPECT_EQ(st.accepted, 1u);
  EXPECT_EQ(st.refused, 2u);
  EXPECT_FALSE(st.last_ok);

  // An accepted one restarts the age.
  ASSERT_TRUE(f.Reload(good).ok());
  st = f.stats();
  EXPECT_EQ(st.age, absl::ZeroDuration());
  EXPECT_EQ(st.accepted, 2u);
  EXPECT_TRUE(st.last_ok);
}

TEST_F(DefaultFeaturesStatsTest, AClockSteppingBackNeverMakesTheAgeNegative) {
  DefaultFeatures f(Options(NoTelemetry()));
  ASSERT_TRUE(f.Set({1, 2}).ok());
  clock_.Set(clock_.Now() - absl::Hours(1));
  EXPECT_EQ(f.stats().age, absl::ZeroDuration());
  EXPECT_EQ(f.age(), absl::ZeroDuration());
  clock_.Advance(absl::Hours(1) + absl::Seconds(3));
  EXPECT_EQ(f.stats().age, absl::Seconds(3));
}

TEST_F(DefaultFeaturesStatsTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  MetricsRegistry registry;
  auto f = std::make_unique<DefaultFeatures>(Options(&registry));
  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_default_features_age_seconds{default_features="avg"})",
        std::numeric_limits<double>::infinity()},
       {R"(degrade_default_features_dimension{default_features="avg"})", 0},
       {R"(degrade_default_features_reloads_total{default_features="avg",result="accepted"})",
        0},
       {R"(degrade_default_features_reloads_total{default_features="avg",result="refused"})",
        0},
       {R"(degrade_default_features_last_reload_ok{default_features="avg"})",
        1}});

  ASSERT_TRUE(f->Set({1, 2, 3}).ok());
  clock_.Advance(absl::Seconds(90));
  EXPECT_FALSE(f->Set({1, 2}).ok());  // another dimension: refused
  text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_default_features_age_seconds{default_features="avg"})", 90},
       {R"(degrade_default_features_dimension{default_features="avg"})", 3},
       {R"(degrade_default_features_reloads_total{default_features="avg",result="accepted"})",
        1},
       {R"(degrade_default_features_reloads_total{default_features="avg",result="refused"})",
        1},
       {R"(degrade_default_features_last_reload_ok{default_features="avg"})",
        0}});
  EXPECT_NE(text.find("# TYPE degrade_default_features_reloads_total counter"),
            std::string::npos);

  f.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_default_features_").empty())
      << text;
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
