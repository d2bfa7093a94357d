// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of rate_limit_stats.hpp: the defaults; a RateLimiter offers its
// view to its telemetry and to nothing with NoTelemetry(); and the
// degrade_rate_limit_* series a MetricsRegistry renders for it (admitted,
// refused, permits, the rate while warming up), gone once it is destroyed.
// The keyed limiter's series are in keyed_rate_limit_test.cpp.

#include "degrade/rate_limit_stats.hpp"

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(RateLimitStatsTest, DefaultsSayNothingYet) {
  const RateLimitStats r;
  EXPECT_EQ(r.admitted, 0u);
  EXPECT_EQ(r.refused, 0u);
  EXPECT_EQ(r.admitted_permits, 0u);
  EXPECT_EQ(r.rate, 0);
  const KeyedRateLimitStats k;
  EXPECT_EQ(k.live_keys, 0u);
  EXPECT_EQ(k.evictions, 0u);
  EXPECT_EQ(k.evictions_in_debt, 0u);
}

class Spy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& v) override {
    view = v.As<RateLimitStats>();
    name = v.name();
    return nullptr;
  }
  const RateLimitView* view = nullptr;
  std::string name;
};

RateLimitSettings Settings(const FakeClock& clock, Telemetry* metrics) {
  RateLimitSettings s;
  s.name = "store";
  s.rate = 10;
  s.burst = 2;
  s.clock = &clock;
  s.metrics = metrics;
  return s;
}

TEST(RateLimitStatsTest, OffersItsViewToItsTelemetryAndNotToNone) {
  FakeClock clock;
  Spy spy;
  auto l = RateLimiter::Create(Settings(clock, &spy)).value();
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "store");
  ASSERT_TRUE(l->TryAcquire(2));
  EXPECT_EQ(spy.view->stats().admitted_permits, 2u);

  Spy ignored;
  ScopedDefaultTelemetry scope(&ignored);
  auto none = RateLimiter::Create(Settings(clock, NoTelemetry())).value();
  EXPECT_EQ(ignored.view, nullptr);
  auto by_default = RateLimiter::Create(Settings(clock, nullptr)).value();
  EXPECT_NE(ignored.view, nullptr);
}

TEST(RateLimitStatsTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  FakeClock clock;
  MetricsRegistry registry;
  RateLimitSettings s = Settings(clock, &registry);
  s.warm_up = absl::Seconds(1);
  s.cold_factor = 4;
  auto l = RateLimiter::Create(s).value();
  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_rate_limit_requests_total{rate_limiter="store",result="admitted"})",
        0},
       {R"(degrade_rate_limit_requests_total{rate_limiter="store",result="refused"})",
        0},
       {R"(degrade_rate_limit_permits_total{rate_limiter="store"})", 0},
       {R"(degrade_rate_limit_rate{rate_limiter="store"})", 2.5},
       {R"(degrade_rate_limit_configured_rate{rate_limiter="store"})", 10}});
  ASSERT_TRUE(l->TryAcquire());
  ASSERT_FALSE(l->TryAcquire(2));
  ASSERT_FALSE(l->TryAcquire(5));
  clock.Advance(absl::Milliseconds(500));  // half way up the ramp
  text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_rate_limit_requests_total{rate_limiter="store",result="admitted"})",
        1},
       {R"(degrade_rate_limit_requests_total{rate_limiter="store",result="refused"})",
        2},
       {R"(degrade_rate_limit_permits_total{rate_limiter="store"})", 1}});
  EXPECT_NEAR(
      SampleValue(text, R"(degrade_rate_limit_rate{rate_limiter="store"})"),
      6.25, 1e-3);
  EXPECT_NE(text.find("# TYPE degrade_rate_limit_requests_total counter"),
            std::string::npos);
  l.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_rate_limit_").empty()) << text;
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
