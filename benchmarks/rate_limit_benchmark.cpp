// Benchmarks of degrade::RateLimiter and degrade::KeyedRateLimiter (issue
// 33), each against a baseline in the same run:
//
//   BM_Degrade_TryAcquire          RateLimiter::TryAcquire(), admitted (1e9/s
//                                  with a burst of 1e9: nothing is refused);
//                                  it reads the coarse clock (burst / rate
//                                  >= 20 ms)
//   BM_Degrade_TryAcquireCredit    the same with credit_per_thread = 64
//   BM_Baseline_MutexTokenBucket   the token bucket written the obvious way:
//                                  a std::mutex around double tokens and the
//                                  last refill time, refilled on consume
//                                  (Envoy's TokenBucketImpl), reading the
//                                  same coarse clock
//   BM_Degrade_TryAcquirePrecise,
//   BM_Baseline_MutexTokenBucketPrecise
//                                  info: the same two on the precise clock
//   BM_Degrade_Refused             info: TryAcquire() refused (one an hour,
//                                  drained): a load and a clock read, no store
//   BM_Floor_CoarseClock           info: the coarse clock read alone
//   BM_Floor_ClockCas              info: the clock read and one CAS on a
//                                  shared word: the least any limiter on one
//                                  word costs
//   BM_Keyed_LiveKey               KeyedRateLimiter<uint64_t>::TryAcquire() on
//                                  a key held in the table (1,024 live keys
//                                  per thread, cycled), admitted
//   BM_Sim_ZipfScan                a simulation, not a timing: Zipf(1.0)
//                                  over 1 M keys plus a scan of 10 M keys seen
//                                  once, on a FakeClock, and the share of the
//                                  1,000 hottest keys' requests that found
//                                  their exact state (counter kept_pct), in
//                                  the keyed table and in a plain LRU of the
//                                  same size (lru_kept_pct)
//
// Each timed row reports `allocs_per_call`: heap allocations by the
// benchmark threads inside the timed loop per call (must be 0).
// benchmarks/rate_limit_ratios.py prints the comparison:
//   python3 benchmarks/rate_limit_ratios.py
//   build/bench/benchmarks/rate_limit_benchmark --repetitions 5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/telemetry.hpp"
#include "multi_threaded.hpp"

namespace {

// The mutex baseline in a multi-threaded process (multi_threaded.hpp).
[[maybe_unused]] const bool kMultiThreaded = degrade_bench::StartIdleThread();

// The baseline: what a token bucket behind a mutex costs.
class MutexTokenBucket {
 public:
  MutexTokenBucket(double rate, double burst, bool coarse)
      : rate_per_ns_(rate / 1e9),
        burst_(burst),
        tokens_(burst),
        coarse_(coarse) {
    last_ = Now();
  }
  bool TryAcquire() {
    const int64_t now = Now();
    std::lock_guard<std::mutex> lock(mu_);
    if (now > last_) {
      tokens_ = std::min(
          burst_, tokens_ + static_cast<double>(now - last_) * rate_per_ns_);
      last_ = now;
    }
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  int64_t Now() const {
    const degrade::RealClock& c = degrade::RealClock::Instance();
    return coarse_ ? c.CoarseUnixNanos() : c.UnixNanos();
  }
  std::mutex mu_;
  const double rate_per_ns_;
  const double burst_;
  double tokens_;
  int64_t last_ = 0;
  const bool coarse_;
};

degrade::RateLimiter* MakeLimiter(double rate, int64_t burst, bool precise) {
  degrade::RateLimitSettings s;
  s.name = "bench";
  s.rate = rate;
  s.burst = burst;
  s.precise_clock = precise;
  s.metrics = degrade::NoTelemetry();
  return degrade::RateLimiter::Create(s).value().release();
}

degrade::RateLimiter* SharedLimiter(bool precise) {
  static degrade::RateLimiter* const coarse =
      MakeLimiter(1e9, 1'000'000'000, false);
  static degrade::RateLimiter* const fine =
      MakeLimiter(1e9, 1'000'000'000, true);
  return precise ? fine : coarse;
}

MutexTokenBucket* SharedBaseline(bool precise) {
  static MutexTokenBucket* const coarse = new MutexTokenBucket(1e9, 1e9, true);
  static MutexTokenBucket* const fine = new MutexTokenBucket(1e9, 1e9, false);
  return precise ? fine : coarse;
}

template <typename Body>
void Measure(benchmark::State& state, Body body) {
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  int64_t refused = 0;
  for (auto _ : state) refused += body() ? 0 : 1;
  const std::uint64_t allocations = degrade_bench::ThreadAllocations() - before;
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  state.counters["refused"] = benchmark::Counter(
      static_cast<double>(refused), benchmark::Counter::kAvgIterations);
}

void BM_Degrade_TryAcquire(benchmark::State& state) {
  degrade::RateLimiter* l = SharedLimiter(false);
  Measure(state, [l] { return l->TryAcquire(); });
}
BENCHMARK(BM_Degrade_TryAcquire)->Threads(1)->Threads(2)->UseRealTime();

// With credit_per_thread = 64: a thread spends from its own word and
// takes from the shared one once per 65 calls.
void BM_Degrade_TryAcquireCredit(benchmark::State& state) {
  static degrade::RateLimiter* const l = [] {
    degrade::RateLimitSettings s;
    s.name = "bench_credit";
    s.rate = 1e9;
    s.burst = 1'000'000'000;
    s.credit_per_thread = 64;
    s.metrics = degrade::NoTelemetry();
    return degrade::RateLimiter::Create(s).value().release();
  }();
  Measure(state, [] { return l->TryAcquire(); });
}
BENCHMARK(BM_Degrade_TryAcquireCredit)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_MutexTokenBucket(benchmark::State& state) {
  MutexTokenBucket* b = SharedBaseline(false);
  Measure(state, [b] { return b->TryAcquire(); });
}
BENCHMARK(BM_Baseline_MutexTokenBucket)->Threads(1)->Threads(2)->UseRealTime();

void BM_Degrade_TryAcquirePrecise(benchmark::State& state) {
  degrade::RateLimiter* l = SharedLimiter(true);
  Measure(state, [l] { return l->TryAcquire(); });
}
BENCHMARK(BM_Degrade_TryAcquirePrecise)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_MutexTokenBucketPrecise(benchmark::State& state) {
  MutexTokenBucket* b = SharedBaseline(true);
  Measure(state, [b] { return b->TryAcquire(); });
}
BENCHMARK(BM_Baseline_MutexTokenBucketPrecise)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

void BM_Degrade_Refused(benchmark::State& state) {
  static degrade::RateLimiter* const l = [] {
    degrade::RateLimiter* r = MakeLimiter(degrade::kMinRateLimit, 1, false);
    r->TryAcquire();
    return r;
  }();
  Measure(state, [] { return l->TryAcquire(); });
}
BENCHMARK(BM_Degrade_Refused)->Threads(1)->Threads(2)->UseRealTime();

void BM_Floor_CoarseClock(benchmark::State& state) {
  const degrade::RealClock& c = degrade::RealClock::Instance();
  Measure(state, [&c] {
    benchmark::DoNotOptimize(c.CoarseUnixNanos());
    return true;
  });
}
BENCHMARK(BM_Floor_CoarseClock)->Threads(1)->Threads(2)->UseRealTime();

// The least any limiter on one shared word costs: the clock read and one
// compare-and-swap that always succeeds (the next TAT).
void BM_Floor_ClockCas(benchmark::State& state) {
  const degrade::RealClock& c = degrade::RealClock::Instance();
  alignas(64) static std::atomic<int64_t> word{0};
  Measure(state, [&c] {
    const int64_t now = c.CoarseUnixNanos();
    int64_t w = word.load(std::memory_order_relaxed);
    while (!word.compare_exchange_weak(w, std::max(w, now) + 1,
                                       std::memory_order_relaxed)) {
    }
    return true;
  });
}
BENCHMARK(BM_Floor_ClockCas)->Threads(1)->Threads(2)->UseRealTime();

using KeyedLimiter = degrade::KeyedRateLimiter<uint64_t>;

KeyedLimiter* SharedKeyed() {
  static KeyedLimiter* const l = [] {
    degrade::KeyedRateLimitSettings s;
    s.name = "bench";
    s.rate = 1e9;
    s.burst = 1'000'000'000;
    s.max_keys = 1 << 20;
    s.metrics = degrade::NoTelemetry();
    return KeyedLimiter::Create(s).value().release();
  }();
  return l;
}

void BM_Keyed_LiveKey(benchmark::State& state) {
  KeyedLimiter* l = SharedKeyed();
  const uint64_t base = static_cast<uint64_t>(state.thread_index()) << 32;
  for (uint64_t k = 0; k < 1024; ++k) l->TryAcquire(base + k);  // now live
  uint64_t i = 0;
  Measure(state, [&] { return l->TryAcquire(base + (i++ & 1023)); });
}
BENCHMARK(BM_Keyed_LiveKey)->Threads(1)->Threads(2)->UseRealTime();

// ---- The simulation ----

// A plain LRU table of TATs (ns), the same size as the keyed table.
class Lru {
 public:
  explicit Lru(std::size_t cap) : cap_(cap) { index_.reserve(cap * 2); }
  int64_t Debt(uint64_t k, int64_t now) const {
    auto it = index_.find(k);
    return it == index_.end() ? 0
                              : std::max<int64_t>(0, it->second->second - now);
  }
  void Acquire(uint64_t k, int64_t now, int64_t interval, int64_t tolerance) {
    auto it = index_.find(k);
    int64_t tat = now;
    if (it != index_.end()) {
      tat = std::max(tat, it->second->second);
      order_.erase(it->second);
      index_.erase(it);
    }
    const int64_t next = tat + interval;
    order_.emplace_front(k, next - tolerance <= now ? next : tat);
    index_[k] = order_.begin();
    if (order_.size() > cap_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  std::size_t cap_;
  std::list<std::pair<uint64_t, int64_t>> order_;
  std::unordered_map<uint64_t,
                     std::list<std::pair<uint64_t, int64_t>>::iterator>
      index_;
};

// 100,000 requests a second of simulated time: half Zipf(1.0) over 1 M
// keys, half a scan of keys seen once (10 M of them over 200 s); 10/s per
// key with a burst of 5. About 10,000 keys are in debt at once; the table
// has state(0) slots.
void BM_Sim_ZipfScan(benchmark::State& state) {
  constexpr int kUniverse = 1'000'000, kHot = 1000;
  constexpr int64_t kScan = 10'000'000;
  constexpr int64_t kInterval = 100'000'000, kTolerance = 500'000'000;
  const std::size_t slots = static_cast<std::size_t>(state.range(0));
  std::vector<double> cdf(kUniverse);
  double sum = 0;
  for (int k = 0; k < kUniverse; ++k) cdf[k] = (sum += 1.0 / (k + 1));
  for (double& c : cdf) c /= sum;
  double kept_pct = 0, lru_pct = 0, in_debt = 0;
  for (auto _ : state) {
    degrade::FakeClock clock;
    const absl::Time start = clock.Now();
    degrade::KeyedRateLimitSettings s;
    s.name = "sim";
    s.rate = 10;
    s.burst = 5;
    s.max_keys = slots;
    s.clock = &clock;
    s.metrics = degrade::NoTelemetry();
    auto l = KeyedLimiter::Create(s).value();
    Lru lru(slots);
    std::unordered_map<uint64_t, int64_t> ref;
    degrade::detail::SplitMix64 rng(7);
    int64_t checks = 0, kept = 0, lru_kept = 0;
    for (int64_t scan = 0; scan < kScan; ++scan) {
      for (int half = 0; half < 2; ++half) {
        clock.Advance(absl::Microseconds(10));
        const int64_t now = absl::ToInt64Nanoseconds(clock.Now() - start);
        if (half == 1) {
          const uint64_t key =
              (uint64_t{1} << 40) + static_cast<uint64_t>(scan);
          l->TryAcquire(key);
          lru.Acquire(key, now, kInterval, kTolerance);
          continue;
        }
        const uint64_t k = static_cast<uint64_t>(
            std::upper_bound(cdf.begin(), cdf.end(), rng.NextUnit()) -
            cdf.begin());
        if (k < kHot) {
          auto [it, fresh] = ref.emplace(k, now);
          const int64_t want = std::max<int64_t>(0, it->second - now);
          ++checks;
          kept += absl::ToInt64Nanoseconds(l->Debt(k)) == want ? 1 : 0;
          lru_kept += lru.Debt(k, now) == want ? 1 : 0;
          const int64_t next = std::max(it->second, now) + kInterval;
          if (next - kTolerance <= now) it->second = next;
        }
        l->TryAcquire(k);
        lru.Acquire(k, now, kInterval, kTolerance);
      }
    }
    kept_pct = 100.0 * static_cast<double>(kept) / static_cast<double>(checks);
    lru_pct =
        100.0 * static_cast<double>(lru_kept) / static_cast<double>(checks);
    in_debt = static_cast<double>(l->stats().evictions_in_debt);
    state.counters["memory_bytes"] = static_cast<double>(l->memory_bytes());
  }
  state.counters["kept_pct"] = kept_pct;
  state.counters["lru_kept_pct"] = lru_pct;
  state.counters["evictions_in_debt"] = in_debt;
}
BENCHMARK(BM_Sim_ZipfScan)
    ->Arg(8192)
    ->Arg(16384)
    ->Arg(32768)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
