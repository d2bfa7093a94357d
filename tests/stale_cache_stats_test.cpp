// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of stale_cache_stats.hpp: the defaults, and the degrade_cache_*
// series a MetricsRegistry renders for a LastGoodCache (every lookup
// result and eviction reason from the start), gone once it is destroyed.

#include "degrade/stale_cache_stats.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/stale_cache.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(LastGoodCacheStatsTest, DefaultsSayNothingYet) {
  const LastGoodCacheStats s;
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.hits + s.misses + s.too_old, 0u);
  EXPECT_EQ(s.evictions_size + s.evictions_age + s.evictions_explicit, 0u);
}

TEST(LastGoodCacheStatsTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  using Vec = std::vector<float>;
  using VecCache = LastGoodCache<uint64_t, Vec>;
  FakeClock clock;
  MetricsRegistry registry;
  LastGoodCacheSettings s;
  s.name = "features";
  s.max_entries = 1;
  s.max_bytes = 1 << 20;
  s.clock = &clock;
  s.metrics = &registry;
  auto cache = VecCache::Create(s).value();
  ASSERT_TRUE(cache->Put(1, Vec(64)));
  ASSERT_TRUE(cache->Put(2, Vec(64)));  // evicts 1
  ASSERT_TRUE(cache->Erase(2));
  ASSERT_TRUE(cache->Put(3, Vec(64)));
  EXPECT_TRUE(cache->FindStale(3).hit());
  EXPECT_FALSE(cache->FindStale(1).hit());
  clock.Advance(absl::Hours(2));
  EXPECT_FALSE(cache->FindStale(3).hit());
  EXPECT_FALSE(cache->Put(4, std::shared_ptr<const Vec>()));
  const std::string text = registry.RenderPrometheus();
  const double bytes = 8 + sizeof(Vec) + 256 + VecCache::kOverhead;
  ExpectSeries(
      text,
      {{R"(degrade_cache_entries{cache="features"})", 1},
       {R"(degrade_cache_bytes{cache="features"})", bytes},
       {R"(degrade_cache_max_bytes{cache="features"})", 1 << 20},
       {R"(degrade_cache_max_entries{cache="features"})", 1},
       {R"(degrade_cache_lookups_total{cache="features",result="hit"})", 1},
       {R"(degrade_cache_lookups_total{cache="features",result="miss"})", 1},
       {R"(degrade_cache_lookups_total{cache="features",result="too_old"})", 1},
       {R"(degrade_cache_evictions_total{cache="features",reason="size"})", 1},
       {R"(degrade_cache_evictions_total{cache="features",reason="age"})", 0},
       {R"(degrade_cache_evictions_total{cache="features",reason="explicit"})",
        1},
       {R"(degrade_cache_inserts_total{cache="features"})", 3},
       {R"(degrade_cache_refused_total{cache="features"})", 1}});
  cache.reset();
  EXPECT_TRUE(
      LinesStartingWith(registry.RenderPrometheus(), "degrade_cache_").empty());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
