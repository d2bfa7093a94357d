// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of stale_cache.hpp (LastGoodCache) on one thread: settings
// validation; ages on a FakeClock (stale_if_error and max_age never
// exceeded, a clock stepping back or jumping forward, sweeps); both bounds
// after every operation of a randomized run; refusals (too big, null, an
// infinite clock) and odd weighers; max_entries 1; values outliving the
// cache; and the hit-ratio simulation (Zipf
// 0.9 against an oracle and an LRU, and a one-pass scan). Threads are in
// stale_cache_concurrency_test.cpp.

#include "degrade/stale_cache.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/stale_cache_stats.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Vec = std::vector<float>;
using VecCache = LastGoodCache<uint64_t, Vec>;
using SmallCache = LastGoodCache<uint64_t, uint32_t>;

LastGoodCacheSettings CacheSettings(const Clock* clock, std::size_t entries,
                                    std::size_t bytes, std::size_t shards) {
  LastGoodCacheSettings s;
  s.name = "features";
  s.max_entries = entries;
  s.max_bytes = bytes;
  s.shards = shards;
  s.clock = clock;
  s.stale_if_error = absl::Hours(1);
  s.max_age = absl::Hours(24);
  return s;
}

// Every field the cache reports adds up, and both bounds hold.
void ExpectConsistent(const LastGoodCacheStats& st) {
  EXPECT_LE(st.entries, st.max_entries);
  EXPECT_LE(st.bytes, st.max_bytes);
  EXPECT_EQ(st.entries, st.inserts - st.evictions_size - st.evictions_age -
                            st.evictions_explicit);
}

TEST(LastGoodCacheTest, ValidationNamesEveryBadSetting) {
  FakeClock clock;
  const LastGoodCacheSettings good = CacheSettings(&clock, 1000, 1 << 20, 0);
  EXPECT_TRUE(VecCache::Validate(good).ok());
  struct Case {
    const char* field;
    void (*change)(LastGoodCacheSettings*);
  };
  const Case cases[] = {
      {"max_entries", [](LastGoodCacheSettings* s) { s->max_entries = 0; }},
      {"max_entries",
       [](LastGoodCacheSettings* s) { s->max_entries = std::size_t{1} << 40; }},
      {"max_bytes", [](LastGoodCacheSettings* s) { s->max_bytes = 0; }},
      {"max_bytes", [](LastGoodCacheSettings* s) { s->max_bytes = 10; }},
      {"max_bytes",  // fits one entry, not one per shard
       [](LastGoodCacheSettings* s) {
         s->shards = 64;
         s->max_bytes = 64 * 50;
       }},
      {"shards", [](LastGoodCacheSettings* s) { s->shards = 3; }},
      {"shards", [](LastGoodCacheSettings* s) { s->shards = 1 << 17; }},
      {"shards",
       [](LastGoodCacheSettings* s) {
         s->shards = 16;
         s->max_entries = 8;
       }},
      {"stale_if_error",
       [](LastGoodCacheSettings* s) {
         s->stale_if_error = absl::ZeroDuration();
       }},
      {"stale_if_error",
       [](LastGoodCacheSettings* s) { s->stale_if_error = -absl::Seconds(1); }},
      {"stale_if_error",
       [](LastGoodCacheSettings* s) {
         s->stale_if_error = absl::InfiniteDuration();
       }},
      {"max_age",
       [](LastGoodCacheSettings* s) { s->max_age = absl::InfiniteDuration(); }},
      {"max_age",
       [](LastGoodCacheSettings* s) { s->max_age = absl::ZeroDuration(); }},
      {"max_age",
       [](LastGoodCacheSettings* s) { s->max_age = absl::Minutes(59); }},
  };
  for (const Case& c : cases) {
    LastGoodCacheSettings s = good;
    c.change(&s);
    const absl::Status st = VecCache::Validate(s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_TRUE(absl::StrContains(st.message(), "last-good cache 'features'"))
        << st;
    EXPECT_TRUE(absl::StrContains(st.message(),
                                  absl::StrCat("setting '", c.field, "'")))
        << c.field << ": " << st;
    EXPECT_EQ(VecCache::Create(s).status(), st);
  }
}

// Target B-4: a slot less its key, the control block, a bucket head and a
// ghost place, for the sizing example (8 B keys, 256 B vectors).
static_assert(VecCache::kOverhead <= 64, "per-entry overhead");

TEST(LastGoodCacheTest, AutomaticShardsFitTheBounds) {
  FakeClock clock;
  auto big = VecCache::Create(CacheSettings(&clock, 1 << 20, 1 << 30, 0));
  ASSERT_TRUE(big.ok());
  EXPECT_GE((*big)->shard_count(), 16u);
  EXPECT_EQ((*big)->shard_count() & ((*big)->shard_count() - 1), 0u);
  // One entry: one shard, whatever the cores.
  auto one = VecCache::Create(CacheSettings(&clock, 1, 1 << 20, 0));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->shard_count(), 1u);
  // Bytes for three entries: two shards of one and a half.
  auto tight = VecCache::Create(CacheSettings(
      &clock, 1000, 3 * (8 + sizeof(Vec) + VecCache::kOverhead), 0));
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ((*tight)->shard_count(), 2u);
}

TEST(LastGoodCacheTest, AgesDecideWhatIsServed) {
  FakeClock clock;
  auto cache = VecCache::Create(CacheSettings(&clock, 100, 1 << 20, 1)).value();
  EXPECT_EQ(cache->FindStale(7).result, LastGoodResult::kMiss);
  ASSERT_TRUE(cache->Put(7, Vec(64, 1.5f)));
  clock.Advance(absl::Minutes(30));
  VecCache::Lookup l = cache->FindStale(7);
  ASSERT_TRUE(l.hit());
  EXPECT_EQ(l.age, absl::Minutes(30));
  EXPECT_EQ((*l.value)[63], 1.5f);
  clock.Advance(absl::Minutes(30));
  EXPECT_TRUE(cache->FindStale(7).hit());  // exactly stale_if_error
  clock.Advance(absl::Nanoseconds(1));
  l = cache->FindStale(7);
  EXPECT_EQ(l.result, LastGoodResult::kTooOld);
  EXPECT_EQ(l.value, nullptr);
  EXPECT_EQ(l.age, absl::Hours(1) + absl::Nanoseconds(1));
  // A longer allowance is served, up to max_age and never beyond it.
  EXPECT_TRUE(cache->Find(7, absl::Hours(2)).hit());
  clock.Advance(absl::Hours(23));
  EXPECT_EQ(cache->Find(7, absl::InfiniteDuration()).result,
            LastGoodResult::kTooOld);
  EXPECT_TRUE(cache->Contains(7));  // until a sweep
  EXPECT_EQ(cache->SweepExpired(), 1u);
  EXPECT_FALSE(cache->Contains(7));
  EXPECT_EQ(cache->Find(7, absl::InfiniteDuration()).result,
            LastGoodResult::kMiss);
  const LastGoodCacheStats st = cache->stats();
  EXPECT_EQ(st.hits, 3u);
  EXPECT_EQ(st.too_old, 2u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.evictions_age, 1u);
  ExpectConsistent(st);
}

TEST(LastGoodCacheTest, AClockSteppingBackReadsAsAgeZero) {
  FakeClock clock;
  auto cache = VecCache::Create(CacheSettings(&clock, 100, 1 << 20, 1)).value();
  const absl::Time t0 = clock.Now();
  ASSERT_TRUE(cache->Put(1, Vec(4)));
  clock.Set(t0 - absl::Hours(5));
  VecCache::Lookup l = cache->FindStale(1);
  ASSERT_TRUE(l.hit());
  EXPECT_EQ(l.age, absl::ZeroDuration());
  EXPECT_EQ(cache->SweepExpired(), 0u);
  // Written while the clock is back: aged from that reading.
  ASSERT_TRUE(cache->Put(2, Vec(4)));
  clock.Set(t0 + absl::Minutes(10));
  // Key 1 was read while the clock stood five hours back: its age then
  // stood still at zero (its write time moved to that reading), so the
  // forward step reads as time passing, as everywhere in the library (a
  // clock stepped back and corrected cannot be told from real time).
  EXPECT_EQ(cache->FindStale(1).age, absl::Hours(5) + absl::Minutes(10));
  EXPECT_EQ(cache->FindStale(2).result, LastGoodResult::kTooOld);
  // A jump far forward: everything is too old and swept.
  clock.Set(t0 + absl::Hours(24 * 365 * 100));
  EXPECT_EQ(cache->FindStale(1).result, LastGoodResult::kTooOld);
  EXPECT_EQ(cache->SweepExpired(), 2u);
  EXPECT_EQ(cache->stats().entries, 0u);
}

// A custom clock may read an infinity (FakeClock saturates instead).
class StuckClock final : public Clock {
 public:
  absl::Time Now() const override { return now; }
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
};

TEST(LastGoodCacheTest, AClockAtAnInfinityStampsNothing) {
  StuckClock clock;
  auto cache = VecCache::Create(CacheSettings(&clock, 100, 1 << 20, 1)).value();
  ASSERT_TRUE(cache->Put(3, Vec(4)));
  clock.now = absl::InfiniteFuture();
  EXPECT_FALSE(cache->Put(4, Vec(4)));
  EXPECT_EQ(cache->FindStale(3).result, LastGoodResult::kTooOld);
  clock.now = absl::InfinitePast();
  EXPECT_FALSE(cache->Put(4, Vec(4)));
  EXPECT_TRUE(cache->FindStale(3).hit());  // stepped back: age 0
  EXPECT_EQ(cache->stats().refused_clock, 2u);
  EXPECT_FALSE(cache->Contains(4));
}

TEST(LastGoodCacheTest, ReplacingRestampsAndMayGrow) {
  FakeClock clock;
  const std::size_t one = 8 + sizeof(Vec) + VecCache::kOverhead;
  // Room for about 4 small values or one big one.
  auto cache =
      VecCache::Create(CacheSettings(&clock, 10, 4 * (one + 64 * 4), 1))
          .value();
  for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(cache->Put(k, Vec(64)));
  EXPECT_EQ(cache->stats().entries, 4u);
  clock.Advance(absl::Minutes(50));
  ASSERT_TRUE(cache->Put(2, Vec(200, 2.0f)));  // evicts others, not itself
  VecCache::Lookup l = cache->FindStale(2);
  ASSERT_TRUE(l.hit());
  EXPECT_EQ(l.age, absl::ZeroDuration());
  EXPECT_EQ(l.value->size(), 200u);
  LastGoodCacheStats st = cache->stats();
  EXPECT_EQ(st.replaced, 1u);
  EXPECT_LT(st.entries, 4u);
  ExpectConsistent(st);
  // Bigger than the whole budget: refused, the held value kept.
  EXPECT_FALSE(cache->Put(2, Vec(10000)));
  EXPECT_EQ(cache->FindStale(2).value->size(), 200u);
  EXPECT_FALSE(cache->Put(5, std::shared_ptr<const Vec>()));
  st = cache->stats();
  EXPECT_EQ(st.refused_too_big, 1u);
  EXPECT_EQ(st.refused_null, 1u);
}

TEST(LastGoodCacheTest, WeighersReportingNothingOrEverything) {
  FakeClock clock;
  auto zero =
      VecCache::Create(CacheSettings(&clock, 5, 1 << 20, 1), [](const Vec&) {
        return std::size_t{0};
      }).value();
  for (uint64_t k = 0; k < 20; ++k) ASSERT_TRUE(zero->Put(k, Vec(1000)));
  LastGoodCacheStats st = zero->stats();
  EXPECT_EQ(st.entries, 5u);  // the entry bound still holds
  EXPECT_EQ(st.bytes, 5 * (8 + VecCache::kOverhead));
  auto huge =
      VecCache::Create(CacheSettings(&clock, 5, 1 << 20, 1), [](const Vec&) {
        return SIZE_MAX;
      }).value();
  EXPECT_FALSE(huge->Put(1, Vec()));
  EXPECT_EQ(huge->stats().refused_too_big, 1u);
  EXPECT_EQ(huge->stats().bytes, 0u);
}

TEST(LastGoodCacheTest, OneEntry) {
  FakeClock clock;
  auto cache = VecCache::Create(CacheSettings(&clock, 1, 1 << 20, 0)).value();
  for (uint64_t k = 0; k < 10; ++k) {
    ASSERT_TRUE(cache->Put(k, Vec(1, static_cast<float>(k))));
    ASSERT_TRUE(cache->FindStale(k).hit());
    if (k > 0) {
      EXPECT_FALSE(cache->Contains(k - 1));
    }
    EXPECT_EQ(cache->stats().entries, 1u);
  }
  EXPECT_TRUE(cache->Erase(9));
  EXPECT_FALSE(cache->Erase(9));
  EXPECT_EQ(cache->stats().entries, 0u);
  ASSERT_TRUE(cache->Put(11, Vec(1)));  // the erased slot is reused
  EXPECT_TRUE(cache->Contains(11));
  ExpectConsistent(cache->stats());
}

TEST(LastGoodCacheTest, BoundsHoldAfterEveryOperation) {
  FakeClock clock;
  std::mt19937_64 rng(42);
  for (std::size_t shards : {1, 4}) {
    const std::size_t max_bytes = shards * 6000;
    auto cache =
        VecCache::Create(CacheSettings(&clock, 40, max_bytes, shards)).value();
    std::size_t puts = 0;
    for (int op = 0; op < 20000; ++op) {
      const uint64_t key = rng() % 100;
      switch (rng() % 10) {
        case 0:
          cache->Erase(key);
          break;
        case 1:
          clock.Advance(absl::Minutes(static_cast<int64_t>(rng() % 600)));
          break;
        case 2:
          cache->SweepExpired();
          break;
        default: {
          // Sizes from empty to more than a shard's whole budget.
          const std::size_t n = rng() % 8 == 0 ? rng() % 2000 : rng() % 100;
          puts += cache->Put(key, Vec(n, static_cast<float>(key))) ? 1 : 0;
          VecCache::Lookup l = cache->Find(key, absl::InfiniteDuration());
          if (l.hit()) {
            EXPECT_TRUE(l.value->empty() ||
                        (*l.value)[0] == static_cast<float>(key));
          }
        }
      }
      const LastGoodCacheStats st = cache->stats();
      ASSERT_LE(st.bytes, max_bytes) << "op " << op;
      ASSERT_LE(st.entries, 40u) << "op " << op;
      ASSERT_EQ(st.entries, st.inserts - st.evictions_size - st.evictions_age -
                                st.evictions_explicit);
    }
    const LastGoodCacheStats st = cache->stats();
    EXPECT_EQ(puts, st.inserts + st.replaced);
    EXPECT_GT(st.refused_too_big, 0u);
    EXPECT_GT(st.evictions_size, 0u);
    EXPECT_GT(st.evictions_age, 0u);
  }
}

TEST(LastGoodCacheTest, ValuesOutliveTheCache) {
  FakeClock clock;
  std::shared_ptr<const Vec> held;
  {
    auto cache =
        VecCache::Create(CacheSettings(&clock, 10, 1 << 20, 1)).value();
    ASSERT_TRUE(cache->Put(1, Vec(64, 3.0f)));
    held = cache->FindStale(1).value;
    ASSERT_TRUE(cache->Put(1, Vec(64, 4.0f)));  // replaced while held
  }
  ASSERT_NE(held, nullptr);
  EXPECT_EQ((*held)[0], 3.0f);
  EXPECT_EQ(held.use_count(), 1);
}

TEST(LastGoodCacheTest, StringKeysAreChargedTheirBuffer) {
  FakeClock clock;
  auto cache = LastGoodCache<std::string, std::string>::Create(
                   CacheSettings(&clock, 10, 1 << 20, 1))
                   .value();
  const std::string key(100, 'k');
  ASSERT_TRUE(cache->Put(key, std::string(1000, 'v')));
  EXPECT_GE(cache->stats().bytes, 1100u);
  EXPECT_EQ(*cache->FindStale(key).value, std::string(1000, 'v'));
}

// ---- Hit ratio on a trace (targets B-5, B-6) ----

// Zipf(s) over ranks 0..n-1 by inverse CDF.
class Zipf {
 public:
  Zipf(std::size_t n, double s) : cdf_(n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += std::pow(static_cast<double>(i + 1), -s);
      cdf_[i] = sum;
    }
    for (double& c : cdf_) c /= sum;
  }
  uint64_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<uint64_t>(
        std::lower_bound(cdf_.begin(), cdf_.end() - 1, u) - cdf_.begin());
  }
  double Mass(uint64_t rank) const {
    return rank == 0 ? cdf_[0] : cdf_[rank] - cdf_[rank - 1];
  }

 private:
  std::vector<double> cdf_;
};

class ReferenceLru {
 public:
  explicit ReferenceLru(std::size_t cap) : cap_(cap) {}
  bool Access(uint64_t k) {
    auto it = map_.find(k);
    if (it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    if (map_.size() == cap_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(k);
    map_[k] = order_.begin();
    return false;
  }
  bool Contains(uint64_t k) const { return map_.count(k) != 0; }

 private:
  std::size_t cap_;
  std::list<uint64_t> order_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> map_;
};

// A request: the stage looks its value up; a miss fetches and writes
// through (one use per request, as in service).
bool Request(SmallCache& c, uint64_t k) {
  if (c.Find(k, absl::InfiniteDuration()).hit()) return true;
  c.Put(k, static_cast<uint32_t>(k));
  return false;
}

TEST(LastGoodCacheTest, ZipfCoverageNearTheOracleAndAScanBarelyHurts) {
  constexpr std::size_t kUsers = 1'000'000;
  constexpr std::size_t kCapacity = kUsers / 10;
  constexpr int kWarm = 1'000'000;
  constexpr int kMeasured = 1'500'000;
  FakeClock clock;
  LastGoodCacheSettings s = CacheSettings(&clock, kCapacity, 1 << 30, 16);
  auto cache = SmallCache::Create(s).value();
  ReferenceLru lru(kCapacity);
  const Zipf zipf(kUsers, 0.9);
  std::mt19937_64 rng(2026);
  int hits = 0;
  int lru_hits = 0;
  for (int i = 0; i < kWarm + kMeasured; ++i) {
    const uint64_t k = zipf(rng);
    const bool h = Request(*cache, k);
    const bool lh = lru.Access(k);
    if (i >= kWarm) {
      hits += h ? 1 : 0;
      lru_hits += lh ? 1 : 0;
    }
  }
  double oracle = 0;
  for (uint64_t r = 0; r < kCapacity; ++r) oracle += zipf.Mass(r);
  const double ratio = static_cast<double>(hits) / kMeasured;
  const double lru_ratio = static_cast<double>(lru_hits) / kMeasured;
  std::printf(
      "zipf(0.9) %zu users, capacity %zu: oracle %.4f s3fifo %.4f "
      "lru %.4f\n",
      kUsers, kCapacity, oracle, ratio, lru_ratio);
  EXPECT_GE(ratio, 0.9 * oracle);

  // Hot-set coverage: the request mass whose value is held.
  const auto coverage = [&](auto held) {
    double c = 0;
    for (uint64_t r = 0; r < 2 * kCapacity; ++r) {
      if (held(r)) c += zipf.Mass(r);
    }
    return c;
  };
  const double before =
      coverage([&](uint64_t k) { return cache->Contains(k); });
  const double lru_before =
      coverage([&](uint64_t k) { return lru.Contains(k); });
  for (uint64_t k = 0; k < 2 * kCapacity; ++k) {  // never seen, seen once
    Request(*cache, kUsers + k);
    lru.Access(kUsers + k);
  }
  const double after = coverage([&](uint64_t k) { return cache->Contains(k); });
  const double lru_after =
      coverage([&](uint64_t k) { return lru.Contains(k); });
  std::printf(
      "scan of %zu new keys: s3fifo coverage %.4f -> %.4f, lru "
      "%.4f -> %.4f\n",
      2 * kCapacity, before, after, lru_before, lru_after);
  EXPECT_GE(after, 0.9 * before);
  ExpectConsistent(cache->stats());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
