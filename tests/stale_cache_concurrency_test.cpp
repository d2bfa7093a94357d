// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Concurrency tests of stale_cache.hpp (run under ThreadSanitizer):
// readers, writers, erasers, sweeps and a moving clock on one cache, every
// value read checked whole (never torn, never freed under the reader),
// both bounds sampled throughout, and the counts adding up afterwards; and
// readers of one hot key while it is replaced and evicted.

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/stale_cache.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Payload = std::vector<uint64_t>;
using PayloadCache = LastGoodCache<uint64_t, Payload>;

uint64_t Word(uint64_t key, uint64_t version, std::size_t i) {
  return key * 0x9E3779B97F4A7C15ull + version * 31 + i;
}

// A value that says whose it is and can be checked whole.
Payload MakePayload(uint64_t key, uint64_t version, std::size_t n) {
  Payload p(n + 2);
  p[0] = key;
  p[1] = version;
  for (std::size_t i = 2; i < p.size(); ++i) p[i] = Word(key, version, i);
  return p;
}

bool Whole(const Payload& p, uint64_t key) {
  if (p.size() < 2 || p[0] != key) return false;
  for (std::size_t i = 2; i < p.size(); ++i) {
    if (p[i] != Word(key, p[1], i)) return false;
  }
  return true;
}

TEST(LastGoodCacheConcurrencyTest, ReadersWritersSweepsKeepValuesWhole) {
  FakeClock clock;
  LastGoodCacheSettings s;
  s.name = "stress";
  s.max_entries = 200;
  s.max_bytes = 4 * 20000;
  s.shards = 4;
  s.clock = &clock;
  s.stale_if_error = absl::Minutes(10);
  s.max_age = absl::Minutes(30);
  auto cache = PayloadCache::Create(s).value();

  constexpr int kWriters = 2;
  constexpr int kReaders = 3;
  constexpr int kPutsPerWriter = 20000;
  std::atomic<int> writers_left{kWriters};
  std::atomic<uint64_t> stored{0};
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> broken{0};
  std::atomic<uint64_t> over_bound{0};
  std::atomic<uint64_t> too_old_served{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      for (int i = 0; i < kPutsPerWriter; ++i) {
        const uint64_t key = rng() % 400;
        // Mostly small, now and then most of a shard's budget.
        const std::size_t n = rng() % 50 == 0 ? 2000 : rng() % 40;
        if (cache->Put(key, MakePayload(key, i, n))) stored.fetch_add(1);
        if (i % 500 == 0) cache->Erase(rng() % 400);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      uint64_t mine = 0;
      while (writers_left.load() > 0) {
        const uint64_t key = rng() % 400;
        PayloadCache::Lookup l = cache->FindStale(key);
        ++mine;
        if (l.hit()) {
          if (!Whole(*l.value, key)) broken.fetch_add(1);
          if (l.age > s.stale_if_error) too_old_served.fetch_add(1);
        } else if (l.value != nullptr) {
          broken.fetch_add(1);
        }
      }
      lookups.fetch_add(mine);
    });
  }
  threads.emplace_back([&] {  // time, sweeps and the bounds
    while (writers_left.load() > 0) {
      clock.Advance(absl::Minutes(1));
      cache->SweepExpired();
      const LastGoodCacheStats st = cache->stats();
      if (st.bytes > s.max_bytes || st.entries > s.max_entries) {
        over_bound.fetch_add(1);
      }
      std::this_thread::yield();
    }
  });
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(broken.load(), 0u);
  EXPECT_EQ(over_bound.load(), 0u);
  EXPECT_EQ(too_old_served.load(), 0u);
  const LastGoodCacheStats st = cache->stats();
  EXPECT_EQ(st.hits + st.misses + st.too_old, lookups.load());
  EXPECT_EQ(st.inserts + st.replaced, stored.load());
  EXPECT_EQ(st.entries, st.inserts - st.evictions_size - st.evictions_age -
                            st.evictions_explicit);
  EXPECT_LE(st.bytes, s.max_bytes);
  EXPECT_GT(st.hits, 0u);
  EXPECT_GT(st.evictions_size, 0u);
  // After a sweep nothing older than max_age is held.
  clock.Advance(absl::Minutes(31));
  cache->SweepExpired();
  EXPECT_EQ(cache->stats().entries, 0u);
}

TEST(LastGoodCacheConcurrencyTest, AHotKeyReplacedAndEvictedUnderReaders) {
  FakeClock clock;
  LastGoodCacheSettings s;
  s.name = "hot";
  s.max_entries = 2;
  s.max_bytes = 1 << 20;
  s.shards = 1;
  s.clock = &clock;
  auto cache = PayloadCache::Create(s).value();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> broken{0};
  std::atomic<uint64_t> hits{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      std::vector<std::shared_ptr<const Payload>> kept;
      while (!done.load()) {
        PayloadCache::Lookup l = cache->FindStale(7);
        if (!l.hit()) continue;
        hits.fetch_add(1);
        if (!Whole(*l.value, 7)) broken.fetch_add(1);
        // Hold some past their eviction and check them again later.
        if (kept.size() < 64) kept.push_back(l.value);
      }
      for (const auto& p : kept) {
        if (!Whole(*p, 7)) broken.fetch_add(1);
      }
    });
  }
  for (uint64_t v = 0; v < 20000; ++v) {
    cache->Put(7, MakePayload(7, v, 16 + v % 32));
    // Two other keys push 7 out of the two slots now and then.
    if (v % 8 == 0) {
      cache->Put(1000 + v, MakePayload(1000 + v, v, 4));
      cache->Put(2000 + v, MakePayload(2000 + v, v, 4));
    }
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(broken.load(), 0u);
  const LastGoodCacheStats st = cache->stats();
  EXPECT_LE(st.entries, 2u);
  EXPECT_EQ(st.hits, hits.load());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
