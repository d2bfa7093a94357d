// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of coalesce_stats.hpp: the defaults; a Coalescer offers its view to
// its telemetry and to nothing with NoTelemetry(); and the degrade_coalesce_*
// series a MetricsRegistry renders for it (each role, the requests that gave
// up waiting, failed and completed calls, in flight), gone once it is
// destroyed; and docs/metrics.md lists exactly the series it exports.

#include "degrade/coalesce_stats.hpp"

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "degrade/coalesce.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Features = Coalescer<std::string, int>;

TEST(CoalesceStatsTest, DefaultsSayNothingYet) {
  const CoalesceStats s;
  EXPECT_EQ(s.leaders + s.joined + s.uncoalesced + s.refused, 0u);
  EXPECT_EQ(s.timed_out + s.failed + s.completed + s.inflight, 0u);
  EXPECT_EQ(s.call_seconds, 0);
  EXPECT_EQ(s.max_inflight, 0u);
}

class CoalesceSpy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& v) override {
    view = v.As<CoalesceStats>();
    name = v.name();
    return nullptr;
  }
  const CoalesceView* view = nullptr;
  std::string name;
};

TEST(CoalesceStatsTest, OffersItsViewToItsTelemetryAndNotToNone) {
  CoalesceSpy spy;
  CoalescerSettings s;
  s.name = "features";
  s.max_inflight = 7;
  s.metrics = &spy;
  auto c = Features::Create(s).value();
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "features");
  (void)c->Do("u1", absl::Seconds(1), [] { return 1; });
  EXPECT_EQ(spy.view->stats().leaders, 1u);
  EXPECT_EQ(spy.view->stats().max_inflight, 7u);

  CoalesceSpy ignored;
  ScopedDefaultTelemetry scope(&ignored);
  s.metrics = NoTelemetry();
  auto none = Features::Create(s).value();
  EXPECT_EQ(ignored.view, nullptr);
  s.metrics = nullptr;
  auto by_default = Features::Create(s).value();
  EXPECT_NE(ignored.view, nullptr);
}

TEST(CoalesceStatsTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  MetricsRegistry registry;
  testing::ManualExecutor executor;
  CoalescerSettings s;
  s.name = "features";
  s.executor = &executor;
  s.metrics = &registry;
  s.max_inflight = 1;
  auto c = Features::Create(s).value();
  (void)c->Do("a", absl::ZeroDuration(),
              [] { return absl::StatusOr<int>(absl::InternalError("x")); });
  (void)c->Do("a", absl::ZeroDuration(), [] { return 1; });
  (void)c->Do("b", absl::ZeroDuration(), [] { return 1; });
  executor.set_refusing(true);
  (void)c->Do("c", absl::ZeroDuration(), [] { return 1; });
  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_coalesce_total{coalescer="features",role="leader"})", 1},
       {R"(degrade_coalesce_total{coalescer="features",role="joined"})", 1},
       {R"(degrade_coalesce_total{coalescer="features",role="uncoalesced"})",
        1},
       {R"(degrade_coalesce_total{coalescer="features",role="refused"})", 1},
       {R"(degrade_coalesce_timed_out_total{coalescer="features"})", 3},
       {R"(degrade_coalesce_inflight{coalescer="features"})", 1},
       {R"(degrade_coalesce_max_inflight{coalescer="features"})", 1},
       {R"(degrade_coalesce_failed_total{coalescer="features"})", 0},
       {R"(degrade_coalesce_completed_total{coalescer="features"})", 0}});
  executor.RunAll();
  text = registry.RenderPrometheus();
  ExpectSeries(
      text, {{R"(degrade_coalesce_inflight{coalescer="features"})", 0},
             {R"(degrade_coalesce_failed_total{coalescer="features"})", 1},
             {R"(degrade_coalesce_completed_total{coalescer="features"})", 2}});
  EXPECT_NE(text.find("# TYPE degrade_coalesce_total counter"),
            std::string::npos);
  c.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_coalesce_").empty()) << text;
}

TEST(CoalesceStatsTest, MetricsDocListsExactlyTheExportedSeries) {
  MetricsRegistry registry;
  CoalescerSettings s;
  s.metrics = &registry;
  auto c = Features::Create(s).value();
  std::set<std::string> exported;
  std::istringstream text(registry.RenderPrometheus());
  for (std::string line; std::getline(text, line);) {
    if (absl::StartsWith(line, "# TYPE degrade_coalesce_")) {
      exported.insert(std::string(absl::StripPrefix(line, "# TYPE "))
                          .substr(0, line.find(' ', 7) - 7));
    }
  }
  std::set<std::string> documented;
  // Found from this file's path, which the build gives absolute, so the
  // test needs no definition of its own in batched executables.
  const std::string here = __FILE__;
  const std::string path =
      here.substr(0, here.rfind("/tests/")) + "/docs/metrics.md";
  std::ifstream doc(path);
  ASSERT_TRUE(doc.good()) << path;
  for (std::string line; std::getline(doc, line);) {
    if (absl::StartsWith(line, "| `degrade_coalesce_")) {
      documented.insert(line.substr(3, line.find('`', 3) - 3));
    }
  }
  EXPECT_EQ(exported.size(), 7u);
  EXPECT_EQ(exported, documented);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
