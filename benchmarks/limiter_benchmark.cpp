// Benchmarks of degrade::ConcurrencyLimiter against a mutex-based limiter
// doing the same work (issue 15: acquire + release <= 1/3 of it at 1 and 2
// threads, no allocation per acquire).
//
//   BM_Degrade_TryAcquireSuccess   TryAcquire() then Success(latency) on a
//                                  Gradient2 limiter (default settings: a
//                                  window of 10 samples)
//   BM_Degrade_TryAcquireIgnore    the same reported with Ignore() (no sample:
//                                  the acquire and release alone)
//   BM_Baseline_MutexLimiter       a mutex around an in-flight count and a
//                                  Gradient2 update per sample (the way
//                                  Netflix's AbstractLimiter synchronises)
//   BM_Floor_Cas                   info: one compare-and-swap on a shared word
//                                  (the least an acquire that can not
//                                  overshoot costs) and a plain store
//   BM_Floor_CasFetchSub           info: that CAS plus one fetch_sub (an
//                                  exact in-flight count, nothing else)
//   BM_Floor_CasWindow             info: BM_Floor_Cas plus a sample kept in
//                                  plain per-thread stores and, every 10
//                                  samples, a mutex around one Gradient2
//                                  LimitCore::Update (the least a limiter
//                                  training on windows of 10 costs without a
//                                  shared read-modify-write on release)
//
// All threads of a run share one limiter, whose limit is far above the
// threads so that nothing is refused. Each reports `allocs_per_call`: heap
// allocations by the benchmark threads inside the timed loop per call.
// benchmarks/limiter_ratios.py turns the output into the comparison table:
//   python3 benchmarks/limiter_ratios.py build/bench/benchmarks/limiter_benchmark --repetitions 5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/detail/overload/limit_algorithms.hpp"
#include "degrade/telemetry.hpp"
#include "multi_threaded.hpp"

namespace {

// The mutex baseline in a multi-threaded process (multi_threaded.hpp).
[[maybe_unused]] const bool kMultiThreaded = degrade_bench::StartIdleThread();

// The baseline: one mutex, a check-and-increment under it, and the
// Gradient2 arithmetic per sample under it on release.
class MutexLimiter {
 public:
  bool TryAcquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= static_cast<int>(limit_)) return false;
    ++in_flight_;
    return true;
  }
  void Success(absl::Duration latency) {
    std::lock_guard<std::mutex> lock(mu_);
    const int in_flight = in_flight_--;
    const double rtt = std::max(absl::ToDoubleMicroseconds(latency), 1.0);
    if (long_rtt_ <= 0) long_rtt_ = rtt;
    long_rtt_ += (rtt - long_rtt_) / 600;
    if (long_rtt_ / rtt > 2) long_rtt_ *= 0.95;
    if (2 * in_flight < limit_) return;
    const double g = std::clamp(1.5 * long_rtt_ / rtt, 0.5, 1.0);
    limit_ = std::clamp(limit_ * 0.8 + 0.2 * (limit_ * g + 4), 1.0, 10000.0);
  }

 private:
  std::mutex mu_;
  int in_flight_ = 0;
  double limit_ = 10000;
  double long_rtt_ = 0;
};

degrade::ConcurrencyLimiter* SharedLimiter() {
  static degrade::ConcurrencyLimiter* const limiter = [] {
    degrade::LimiterSettings s;
    s.name = "bench";
    s.min_limit = 1000;
    s.initial_limit = 10000;
    s.max_limit = 10000;
    s.metrics = degrade::NoTelemetry();
    return degrade::ConcurrencyLimiter::Create(s).value().release();
  }();
  return limiter;
}

MutexLimiter* SharedBaseline() {
  static MutexLimiter* const limiter = new MutexLimiter();
  return limiter;
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

const absl::Duration kLatency = absl::Microseconds(500);

void BM_Degrade_TryAcquireSuccess(benchmark::State& state) {
  degrade::ConcurrencyLimiter* l = SharedLimiter();
  Measure(state, [l] {
    std::optional<degrade::LimiterPermit> p = l->TryAcquire();
    if (!p.has_value()) return false;
    p->Success(kLatency);
    return true;
  });
}
BENCHMARK(BM_Degrade_TryAcquireSuccess)->Threads(1)->Threads(2)->UseRealTime();

void BM_Degrade_TryAcquireIgnore(benchmark::State& state) {
  degrade::ConcurrencyLimiter* l = SharedLimiter();
  Measure(state, [l] {
    std::optional<degrade::LimiterPermit> p = l->TryAcquire();
    if (!p.has_value()) return false;
    p->Ignore();
    return true;
  });
}
BENCHMARK(BM_Degrade_TryAcquireIgnore)->Threads(1)->Threads(2)->UseRealTime();

void BM_Baseline_MutexLimiter(benchmark::State& state) {
  MutexLimiter* l = SharedBaseline();
  Measure(state, [l] {
    if (!l->TryAcquire()) return false;
    l->Success(kLatency);
    return true;
  });
}
BENCHMARK(BM_Baseline_MutexLimiter)->Threads(1)->Threads(2)->UseRealTime();

// The floors: what the atomics alone cost on this machine, no limiter.
std::atomic<uint64_t>& FloorWord() {
  alignas(64) static std::atomic<uint64_t> word{0};
  return word;
}

bool FloorAcquire(std::atomic<uint64_t>& word) {
  uint64_t w = word.load(std::memory_order_relaxed);
  do {
    if (w >= (uint64_t{1} << 62)) return false;
  } while (!word.compare_exchange_weak(w, w + 1, std::memory_order_acquire,
                                       std::memory_order_relaxed));
  return true;
}

void BM_Floor_Cas(benchmark::State& state) {
  std::atomic<uint64_t>& word = FloorWord();
  alignas(64) std::atomic<uint64_t> mine{0};  // a per-thread release count
  Measure(state, [&] {
    if (!FloorAcquire(word)) return false;
    mine.store(mine.load(std::memory_order_relaxed) + 1,
               std::memory_order_release);
    return true;
  });
}
BENCHMARK(BM_Floor_Cas)->Threads(1)->Threads(2)->UseRealTime();

void BM_Floor_CasFetchSub(benchmark::State& state) {
  std::atomic<uint64_t>& word = FloorWord();
  Measure(state, [&] {
    if (!FloorAcquire(word)) return false;
    word.fetch_sub(1, std::memory_order_release);
    return true;
  });
}
BENCHMARK(BM_Floor_CasFetchSub)->Threads(1)->Threads(2)->UseRealTime();

void BM_Floor_CasWindow(benchmark::State& state) {
  std::atomic<uint64_t>& word = FloorWord();
  static std::mutex mu;
  static degrade::detail::LimitCore core([] {
    degrade::detail::LimitParams p;
    p.min_limit = 1000;
    p.initial_limit = 10000;
    p.max_limit = 10000;
    return p;
  }());
  struct alignas(64) Mine {
    std::atomic<uint64_t> released{0}, samples{0}, sum_us{0};
  } mine;
  Measure(state, [&] {
    if (!FloorAcquire(word)) return false;
    mine.released.store(mine.released.load(std::memory_order_relaxed) + 1,
                        std::memory_order_release);
    const uint64_t n = mine.samples.load(std::memory_order_relaxed) + 1;
    mine.sum_us.store(mine.sum_us.load(std::memory_order_relaxed) + 500,
                      std::memory_order_relaxed);
    mine.samples.store(n, std::memory_order_release);
    if (n % 10 == 0) {
      std::lock_guard<std::mutex> lock(mu);
      degrade::detail::LimitWindow w;
      w.samples = 10;
      w.average_latency_us = 500;
      w.max_in_flight = 1;
      benchmark::DoNotOptimize(core.Update(w));
    }
    return true;
  });
}
BENCHMARK(BM_Floor_CasWindow)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
