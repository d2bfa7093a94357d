// Benchmarks of degrade::CircuitBreaker against a mutex-based baseline that
// implements gobreaker's algorithm (benchmarks/baseline/mutex_breaker.hpp).
//
// Workloads (each at 1 and 2 threads, wall-clock time per call):
//   BM_BareCall                          the protected function called directly
//   BM_Floor                             the bare call plus the physical floor
//                                        of a breaker: one acquire load of a
//                                        shared word and one relaxed add (no
//                                        read-modify-write) on a cache line
//                                        the calling thread owns
//   BM_FloorRmw                          the same with the add a relaxed
//                                        fetch_add (for reading the above)
//   BM_<Impl>_ClosedSuccess              closed breaker, every call succeeds
//   BM_<Impl>_ClosedSuccessInterval60s   the same with a 60 s closed interval
//   BM_<Impl>_ClosedSuccessTimeWindow    the same with a 10 s / 10-bucket
//                                        time window
//   BM_<Impl>_OpenReject                 open breaker rejecting every call
//   BM_Degrade_ClosedSuccessCountWindowRate
//                                        a count window of 100 and
//                                        trip::FailureRate(0.5, 20)
//   BM_Degrade_ClosedSuccessListener     default settings, one telemetry
//                                        listener that wants every call
//                                        (OnCall: one relaxed add)
// where <Impl> is Degrade or Baseline. All threads of a run share one breaker.
//
// Every benchmark reports `allocs_per_call`: heap allocations made by the
// benchmark threads inside the timed loop, divided by the number of calls.
// benchmarks/ratios.py turns the output into the comparison table.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "run_counted.hpp"
#include "baseline/mutex_breaker.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"

namespace {

// ---------------------------------------------------------------------------
// The protected function: trivial, out of line, and opaque to the optimizer.
// ---------------------------------------------------------------------------
__attribute__((noinline)) absl::StatusOr<int> Work() {
  absl::StatusOr<int> result{42};
  benchmark::DoNotOptimize(result);
  return result;
}

__attribute__((noinline)) absl::StatusOr<int> FailingWork() {
  return absl::UnavailableError("backend down");
}

using degrade_bench::RunCounted;

// ---------------------------------------------------------------------------
// Breaker configurations. Both implementations get the same settings.
// ---------------------------------------------------------------------------
enum class Config {
  kDefault,
  kInterval60s,
  kTimeWindow,
  kOpen,
  kCountWindowRate,  // degrade only
  kListener,         // degrade only
};

// A listener that asks for every call and does what a cheap per-call metric
// does: one relaxed add. Its count is read after the run, so the add is not
// optimised away.
class CountingListener final : public degrade::BreakerListener {
 public:
  explicit CountingListener(std::atomic<std::uint64_t>* calls)
      : calls_(calls) {}
  bool wants_calls() const override { return true; }
  void OnCall(const degrade::BreakerCall& call) override {
    (void)call;
    calls_->fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t>* calls_;
};

class CountingTelemetry final : public degrade::Telemetry {
 public:
  std::unique_ptr<degrade::BreakerListener> AttachBreaker(
      const degrade::BreakerView& breaker) override {
    (void)breaker;
    return std::make_unique<CountingListener>(&calls);
  }
  std::atomic<std::uint64_t> calls{0};
};

CountingTelemetry& ListenerTelemetry() {
  static CountingTelemetry* const telemetry = new CountingTelemetry;
  return *telemetry;
}

// Long enough that a tripped breaker stays open for the whole run.
constexpr int kOpenTimeoutHours = 24;

degrade::BreakerSettings DegradeSettings(Config config) {
  degrade::BreakerSettings s;
  s.name = "bench";
  switch (config) {
    case Config::kDefault:
      break;
    case Config::kInterval60s:
      s.interval = absl::Seconds(60);
      break;
    case Config::kTimeWindow:
      s.window = degrade::SlidingWindow::Time(absl::Seconds(10), 10);
      break;
    case Config::kOpen:
      s.timeout = absl::Hours(kOpenTimeoutHours);
      break;
    case Config::kCountWindowRate:
      s.window = degrade::SlidingWindow::Count(100);
      s.ready_to_trip = degrade::trip::FailureRate(0.5, 20);
      break;
    case Config::kListener:
      s.metrics = &ListenerTelemetry();
      break;
  }
  return s;
}

degrade_baseline::Settings BaselineSettings(Config config) {
  degrade_baseline::Settings s;
  s.name = "bench";
  switch (config) {
    case Config::kDefault:
      break;
    case Config::kInterval60s:
      s.interval = std::chrono::seconds(60);
      break;
    case Config::kTimeWindow:  // gobreaker v2: Interval 10 s, BucketPeriod 1 s
      s.interval = std::chrono::seconds(10);
      s.bucket_period = std::chrono::seconds(1);
      break;
    case Config::kOpen:
      s.timeout = std::chrono::hours(kOpenTimeoutHours);
      break;
    case Config::kCountWindowRate:
    case Config::kListener:
      break;  // not benchmarked on the baseline
  }
  return s;
}

using DegradeBreaker = degrade::CircuitBreaker<int>;
using BaselineBreaker = degrade_baseline::MutexBreaker<int>;

DegradeBreaker* MakeBreaker(Config config, DegradeBreaker*) {
  return new DegradeBreaker(DegradeSettings(config));
}
BaselineBreaker* MakeBreaker(Config config, BaselineBreaker*) {
  return new BaselineBreaker(BaselineSettings(config));
}

// Trips `breaker` the same way for both implementations: by failing calls
// (the default ready_to_trip opens after more than 5 consecutive failures).
// Returns whether it now rejects calls without running them.
template <typename Breaker>
bool TripByFailures(Breaker& breaker) {
  for (int i = 0; i < 100; ++i) {
    bool called = false;
    auto result = breaker.Execute([&called] {
      called = true;
      return FailingWork();
    });
    benchmark::DoNotOptimize(result);
    if (!called) return !result.ok();
  }
  return false;
}

// One breaker per (implementation, configuration), created on first use and
// shared by all threads and by the 1- and 2-thread runs. Never destroyed.
template <typename Breaker, Config kConfig>
Breaker& Shared() {
  static Breaker* const breaker = [] {
    Breaker* b = MakeBreaker(kConfig, static_cast<Breaker*>(nullptr));
    if (kConfig == Config::kOpen && !TripByFailures(*b)) {
      std::fprintf(stderr, "breaker_benchmark: could not trip the breaker\n");
      std::abort();
    }
    return b;
  }();
  return *breaker;
}

// ---------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------
void BM_BareCall(benchmark::State& state) {
  RunCounted(state, [] {
    auto result = Work();
    benchmark::DoNotOptimize(result);
  });
}

// The floor's shared word (read by every thread, written by none) and the
// lines each benchmark thread owns.
struct alignas(64) OwnedLine {
  std::atomic<std::uint64_t> count{0};
};
std::atomic<std::uint64_t> g_floor_word{0};
OwnedLine g_owned_lines[64];

template <bool kRmw>
void Floor(benchmark::State& state) {
  std::atomic<std::uint64_t>& mine =
      g_owned_lines[static_cast<std::size_t>(state.thread_index()) % 64].count;
  RunCounted(state, [&mine] {
    // The same shape as a breaker's success: decide on the word, call,
    // count. The result is returned through the same StatusOr.
    if (g_floor_word.load(std::memory_order_acquire) == 0) {
      auto result = Work();
      if (kRmw) {
        mine.fetch_add(1, std::memory_order_relaxed);
      } else {
        mine.store(mine.load(std::memory_order_relaxed) + 1,
                   std::memory_order_relaxed);
      }
      benchmark::DoNotOptimize(result);
    }
  });
  if (mine.load(std::memory_order_relaxed) == 0) {
    state.SkipWithError("the floor counted nothing");
  }
}

void BM_Floor(benchmark::State& state) { Floor<false>(state); }
void BM_FloorRmw(benchmark::State& state) { Floor<true>(state); }

template <typename Breaker, Config kConfig>
void ClosedSuccess(benchmark::State& state) {
  Breaker& breaker = Shared<Breaker, kConfig>();
  RunCounted(state, [&breaker] {
    auto result = breaker.Execute([] { return Work(); });
    benchmark::DoNotOptimize(result);
  });
  if (!breaker.Execute([] { return Work(); }).ok()) {
    state.SkipWithError("closed breaker rejected or failed a call");
  }
}

template <typename Breaker>
void OpenReject(benchmark::State& state) {
  Breaker& breaker = Shared<Breaker, Config::kOpen>();
  RunCounted(state, [&breaker] {
    auto result = breaker.Execute([] { return Work(); });
    benchmark::DoNotOptimize(result);
  });
  bool called = false;
  auto result = breaker.Execute([&called] {
    called = true;
    return Work();
  });
  if (called || result.ok())
    state.SkipWithError("open breaker let a call through");
}

void BM_Degrade_ClosedSuccess(benchmark::State& state) {
  ClosedSuccess<DegradeBreaker, Config::kDefault>(state);
}
void BM_Baseline_ClosedSuccess(benchmark::State& state) {
  ClosedSuccess<BaselineBreaker, Config::kDefault>(state);
}
void BM_Degrade_ClosedSuccessInterval60s(benchmark::State& state) {
  ClosedSuccess<DegradeBreaker, Config::kInterval60s>(state);
}
void BM_Baseline_ClosedSuccessInterval60s(benchmark::State& state) {
  ClosedSuccess<BaselineBreaker, Config::kInterval60s>(state);
}
void BM_Degrade_ClosedSuccessTimeWindow(benchmark::State& state) {
  ClosedSuccess<DegradeBreaker, Config::kTimeWindow>(state);
}
void BM_Baseline_ClosedSuccessTimeWindow(benchmark::State& state) {
  ClosedSuccess<BaselineBreaker, Config::kTimeWindow>(state);
}
void BM_Degrade_ClosedSuccessCountWindowRate(benchmark::State& state) {
  ClosedSuccess<DegradeBreaker, Config::kCountWindowRate>(state);
}
void BM_Degrade_ClosedSuccessListener(benchmark::State& state) {
  ClosedSuccess<DegradeBreaker, Config::kListener>(state);
  if (state.thread_index() == 0 &&
      ListenerTelemetry().calls.load(std::memory_order_relaxed) == 0) {
    state.SkipWithError("the listener saw no call");
  }
}
void BM_Degrade_OpenReject(benchmark::State& state) {
  OpenReject<DegradeBreaker>(state);
}
void BM_Baseline_OpenReject(benchmark::State& state) {
  OpenReject<BaselineBreaker>(state);
}

}  // namespace

#define DEGRADE_BREAKER_BENCHMARK(fn) \
  BENCHMARK(fn)->UseRealTime()->Threads(1)->Threads(2)

DEGRADE_BREAKER_BENCHMARK(BM_BareCall);
DEGRADE_BREAKER_BENCHMARK(BM_Floor);
DEGRADE_BREAKER_BENCHMARK(BM_FloorRmw);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_ClosedSuccess);
DEGRADE_BREAKER_BENCHMARK(BM_Baseline_ClosedSuccess);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_ClosedSuccessInterval60s);
DEGRADE_BREAKER_BENCHMARK(BM_Baseline_ClosedSuccessInterval60s);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_ClosedSuccessTimeWindow);
DEGRADE_BREAKER_BENCHMARK(BM_Baseline_ClosedSuccessTimeWindow);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_ClosedSuccessCountWindowRate);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_ClosedSuccessListener);
DEGRADE_BREAKER_BENCHMARK(BM_Degrade_OpenReject);
DEGRADE_BREAKER_BENCHMARK(BM_Baseline_OpenReject);

BENCHMARK_MAIN();
