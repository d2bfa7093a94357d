// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// LastGoodCache (stale_cache.hpp) against a std::mutex + std::list +
// std::unordered_map LRU holding the same shared_ptr values, in the same
// run, at 1 and 2 threads:
//
//   BM_Cache_Hit / BM_Baseline_LruHit   FindStale on a held key, 256 B values
//                                       (std::vector<float>(64)), 64 Ki keys
//   BM_Cache_HitHot / BM_Baseline_LruHitHot
//                                       the same on 1,024 keys (in the CPU's
//                                       caches)
//   BM_Cache_InsertEvict / BM_Baseline_LruInsertEvict
//                                       Put of a new key into a full cache
//                                       (every put evicts), the value made
//                                       beforehand (write-through hands over
//                                       a shared_ptr)
//   BM_Cache_InsertEvictByValue         the same, Put(key, V): one
//                                       allocate_shared and the vector copy
//   BM_Sim_Zipf                         hit ratio on Zipf(0.9) over 10 M users
//                                       with 1 M entries, against the oracle
//                                       (the 1 M hottest) and the LRU, then a
//                                       one-pass scan of 2 M new keys
//
//   python3 benchmarks/stale_cache_ratios.py
//   build/bench/benchmarks/stale_cache_benchmark

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "multi_threaded.hpp"

namespace {

[[maybe_unused]] const bool kMultiThreaded = degrade_bench::StartIdleThread();

using Vec = std::vector<float>;
using Value = std::shared_ptr<const Vec>;
using Cache = degrade::LastGoodCache<uint64_t, Vec>;

constexpr uint64_t kHeld = 1 << 16;

// The baseline: the textbook LRU, one lock, relinking on every hit.
class MutexLru {
 public:
  explicit MutexLru(std::size_t cap) : cap_(cap) { map_.reserve(2 * cap); }
  Value Get(uint64_t k) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void Put(uint64_t k, Value v) {
    Value dropped;  // freed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it != map_.end()) {
      dropped = std::move(it->second->second);
      it->second->second = std::move(v);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    if (map_.size() >= cap_) {
      dropped = std::move(order_.back().second);
      map_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(k, std::move(v));
    map_.emplace(k, order_.begin());
  }
  bool Contains(uint64_t k) {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.count(k) != 0;
  }

 private:
  std::mutex mu_;
  std::size_t cap_;
  std::list<std::pair<uint64_t, Value>> order_;
  std::unordered_map<uint64_t, std::list<std::pair<uint64_t, Value>>::iterator>
      map_;
};

std::unique_ptr<Cache> MakeCache(std::size_t entries) {
  degrade::LastGoodCacheSettings s;
  s.name = "bench";
  s.max_entries = entries;
  s.max_bytes = entries * (8 + 24 + 256 + Cache::kOverhead + 64);
  s.metrics = degrade::NoTelemetry();
  return Cache::Create(s).value();
}

Cache* HitCache() {
  static Cache* const c = [] {
    Cache* cache = MakeCache(2 * kHeld).release();
    for (uint64_t k = 0; k < kHeld; ++k) cache->Put(k, Vec(64, 1.0f));
    return cache;
  }();
  return c;
}

MutexLru* HitLru() {
  static MutexLru* const l = [] {
    MutexLru* lru = new MutexLru(2 * kHeld);
    for (uint64_t k = 0; k < kHeld; ++k) {
      lru->Put(k, std::make_shared<const Vec>(64, 1.0f));
    }
    return lru;
  }();
  return l;
}

template <typename Body>
void Measure(benchmark::State& state, Body body) {
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  int64_t missed = 0;
  for (auto _ : state) missed += body() ? 0 : 1;
  const std::uint64_t allocations = degrade_bench::ThreadAllocations() - before;
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  state.counters["missed"] = benchmark::Counter(
      static_cast<double>(missed), benchmark::Counter::kAvgIterations);
}

void BM_Cache_Hit(benchmark::State& state) {
  Cache* c = HitCache();
  degrade::detail::SplitMix64 rng(static_cast<uint64_t>(state.thread_index()));
  Measure(state, [&] {
    Cache::Lookup l = c->FindStale(rng.Next() & (kHeld - 1));
    benchmark::DoNotOptimize(l.value.get());
    return l.hit();
  });
}
BENCHMARK(BM_Cache_Hit)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_LruHit(benchmark::State& state) {
  MutexLru* l = HitLru();
  degrade::detail::SplitMix64 rng(static_cast<uint64_t>(state.thread_index()));
  Measure(state, [&] {
    Value v = l->Get(rng.Next() & (kHeld - 1));
    benchmark::DoNotOptimize(v.get());
    return v != nullptr;
  });
}
BENCHMARK(BM_Baseline_LruHit)->Threads(1)->Threads(2)->UseRealTime();

// The same on 1,024 keys, all in the CPU's caches: what a hit costs beyond
// its memory misses.
void BM_Cache_HitHot(benchmark::State& state) {
  Cache* c = HitCache();
  degrade::detail::SplitMix64 rng(static_cast<uint64_t>(state.thread_index()));
  Measure(state, [&] {
    Cache::Lookup l = c->FindStale(rng.Next() & 1023);
    benchmark::DoNotOptimize(l.value.get());
    return l.hit();
  });
}
BENCHMARK(BM_Cache_HitHot)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_LruHitHot(benchmark::State& state) {
  MutexLru* l = HitLru();
  degrade::detail::SplitMix64 rng(static_cast<uint64_t>(state.thread_index()));
  Measure(state, [&] {
    Value v = l->Get(rng.Next() & 1023);
    benchmark::DoNotOptimize(v.get());
    return v != nullptr;
  });
}
BENCHMARK(BM_Baseline_LruHitHot)->Threads(1)->Threads(2)->UseRealTime();

// Every thread puts keys of its own, never held, into a full cache.
void BM_Cache_InsertEvict(benchmark::State& state) {
  static Cache* const c = [] {
    Cache* cache = MakeCache(kHeld).release();
    for (uint64_t k = 0; k < kHeld; ++k) cache->Put(k, Vec(64, 1.0f));
    return cache;
  }();
  const Value v = std::make_shared<const Vec>(64, 2.0f);
  uint64_t k = (uint64_t{1} << 40) * (1 + state.thread_index()) +
               static_cast<uint64_t>(state.iterations());
  for (auto _ : state) benchmark::DoNotOptimize(c->Put(++k, v));
}
BENCHMARK(BM_Cache_InsertEvict)->Threads(1)->Threads(2)->UseRealTime();

void BM_Cache_InsertEvictByValue(benchmark::State& state) {
  static Cache* const c = [] {
    Cache* cache = MakeCache(kHeld).release();
    for (uint64_t k = 0; k < kHeld; ++k) cache->Put(k, Vec(64, 1.0f));
    return cache;
  }();
  const Vec v(64, 2.0f);
  uint64_t k = (uint64_t{1} << 40) * (1 + state.thread_index());
  for (auto _ : state) benchmark::DoNotOptimize(c->Put(++k, v));
}
BENCHMARK(BM_Cache_InsertEvictByValue)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_LruInsertEvict(benchmark::State& state) {
  static MutexLru* const l = [] {
    MutexLru* lru = new MutexLru(kHeld);
    for (uint64_t k = 0; k < kHeld; ++k) {
      lru->Put(k, std::make_shared<const Vec>(64, 1.0f));
    }
    return lru;
  }();
  const Value v = std::make_shared<const Vec>(64, 2.0f);
  uint64_t k = (uint64_t{1} << 40) * (1 + state.thread_index());
  for (auto _ : state) l->Put(++k, v);
}
BENCHMARK(BM_Baseline_LruInsertEvict)->Threads(1)->Threads(2)->UseRealTime();

// ---- Hit ratio at full scale (targets B-5, B-6) ----

// Zipf(s) over ranks 0..n-1: the exact CDF of the first ranks, where the
// mass is, and the continuous inverse for the tail (within a fraction of a
// percent there, and a binary search over 80 MB per sample is slow).
class Zipf {
 public:
  Zipf(uint64_t n, double s)
      : n_(n), s_(s), head_(std::min<uint64_t>(n, 1 << 20)) {
    double sum = 0;
    for (uint64_t i = 0; i < head_.size(); ++i) {
      sum += std::pow(static_cast<double>(i + 1), -s);
      head_[i] = sum;
    }
    // The tail's mass: the integral of x^-s from head + 1/2 to n + 1/2.
    lo_ = std::pow(static_cast<double>(head_.size()) + 0.5, 1 - s);
    hi_ = std::pow(static_cast<double>(n) + 0.5, 1 - s);
    const double tail = (hi_ - lo_) / (1 - s);
    total_ = sum + tail;
    head_mass_ = sum / total_;
  }
  uint64_t operator()(degrade::detail::SplitMix64& rng) const {
    const double u = rng.NextUnit();
    if (u < head_mass_) {
      const double target = u * total_;
      return static_cast<uint64_t>(
          std::upper_bound(head_.begin(), head_.end() - 1, target) -
          head_.begin());
    }
    const double v = (u - head_mass_) / (1 - head_mass_);
    const double x = std::pow(lo_ + v * (hi_ - lo_), 1 / (1 - s_));
    return std::min<uint64_t>(n_ - 1, static_cast<uint64_t>(x - 0.5));
  }
  double Mass(uint64_t r) const {
    if (r < head_.size()) {
      return (r == 0 ? head_[0] : head_[r] - head_[r - 1]) / total_;
    }
    return std::pow(static_cast<double>(r + 1), -s_) / total_;
  }

 private:
  uint64_t n_;
  double s_;
  std::vector<double> head_;
  double lo_ = 0, hi_ = 0, total_ = 0, head_mass_ = 0;
};

void BM_Sim_Zipf(benchmark::State& state) {
  const uint64_t users = static_cast<uint64_t>(state.range(0));
  const uint64_t cap = users / 10;
  const int64_t warm = static_cast<int64_t>(users);
  const int64_t measured = static_cast<int64_t>(users);
  using Small = degrade::LastGoodCache<uint64_t, uint32_t>;
  double ratio = 0, lru_ratio = 0, oracle = 0;
  double before = 0, after = 0, lru_before = 0, lru_after = 0;
  for (auto _ : state) {
    degrade::LastGoodCacheSettings s;
    s.name = "sim";
    s.max_entries = cap;
    s.max_bytes = cap * 256;
    s.metrics = degrade::NoTelemetry();
    auto cache = Small::Create(s).value();
    MutexLru lru(cap);
    const Zipf zipf(users, 0.9);
    degrade::detail::SplitMix64 rng(2026);
    const Value unit = std::make_shared<const Vec>();
    int64_t hits = 0, lru_hits = 0;
    const auto request = [&](uint64_t k) {
      const bool h = cache->Find(k, absl::InfiniteDuration()).hit();
      if (!h) cache->Put(k, static_cast<uint32_t>(k));
      const bool lh = lru.Get(k) != nullptr;
      if (!lh) lru.Put(k, unit);
      return std::make_pair(h, lh);
    };
    for (int64_t i = 0; i < warm + measured; ++i) {
      const auto [h, lh] = request(zipf(rng));
      if (i >= warm) {
        hits += h ? 1 : 0;
        lru_hits += lh ? 1 : 0;
      }
    }
    oracle = 0;
    for (uint64_t r = 0; r < cap; ++r) oracle += zipf.Mass(r);
    ratio = static_cast<double>(hits) / static_cast<double>(measured);
    lru_ratio = static_cast<double>(lru_hits) / static_cast<double>(measured);
    const auto coverage = [&](auto held) {
      double c = 0;
      for (uint64_t r = 0; r < 2 * cap; ++r) c += held(r) ? zipf.Mass(r) : 0;
      return c;
    };
    before = coverage([&](uint64_t k) { return cache->Contains(k); });
    lru_before = coverage([&](uint64_t k) { return lru.Contains(k); });
    for (uint64_t k = 0; k < 2 * cap; ++k) request(users + k);
    after = coverage([&](uint64_t k) { return cache->Contains(k); });
    lru_after = coverage([&](uint64_t k) { return lru.Contains(k); });
  }
  state.counters["oracle"] = oracle;
  state.counters["hit_ratio"] = ratio;
  state.counters["lru_hit_ratio"] = lru_ratio;
  state.counters["coverage_before_scan"] = before;
  state.counters["coverage_after_scan"] = after;
  state.counters["lru_coverage_before_scan"] = lru_before;
  state.counters["lru_coverage_after_scan"] = lru_after;
}
BENCHMARK(BM_Sim_Zipf)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
