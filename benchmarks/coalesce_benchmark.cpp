// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Coalescer (coalesce.hpp): what a request pays to go through it, and how
// late a request that gives up returns past its budget.
//
//   BM_Direct_Call            the call itself (a few ns of arithmetic): the
//                             baseline of the rows below
//   BM_Coalesce_DistinctKeys  Do() inline, each thread on a key of its own:
//                             the uncontended cost (register, run, publish,
//                             unregister)
//   BM_Coalesce_OneKey        Do() inline, every thread on one key: threads
//                             that meet join a call in flight and wait for it
//   BM_Coalesce_Executor      Do() with a ThreadPool(2), distinct keys: the
//                             hand-off to another thread and back
//   BM_CallWithTimeout        the same call through CallWithTimeout on the
//                             same pool: the hand-off alone, the baseline
//                             of the row above
//   BM_Coalesce_WaiterLateness/<budget_us>
//                             a call that never ends within the budget; the
//                             request's return time minus its budget, as
//                             late_p50_us, late_p99_us and late_max_us
//                             (target: <= 1 ms, research target B-7)
//   BM_CallWithTimeout_Lateness/<budget_us>
//                             the same through CallWithTimeout on the same
//                             pool: its baseline
//
// All at 1 and 2 threads, wall-clock time:
//
//   cmake --preset bench && cmake --build build/bench --target
//   coalesce_benchmark
//   build/bench/benchmarks/coalesce_benchmark --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one line)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "benchmark/benchmark.h"
#include "degrade/coalesce.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/telemetry.hpp"
#include "multi_threaded.hpp"

namespace {

// The rows with a lock or a condition variable in a multi-threaded process
// (multi_threaded.hpp).
[[maybe_unused]] const bool kMultiThreaded = degrade_bench::StartIdleThread();

using Coalesce = degrade::Coalescer<uint64_t, uint64_t>;

Coalesce* MakeCoalescer(degrade::Executor* executor) {
  degrade::CoalescerSettings s;
  s.name = "bench";
  s.executor = executor;
  s.metrics = degrade::NoTelemetry();
  return Coalesce::Create(s).value().release();
}

Coalesce* Inline() {
  static Coalesce* const c = MakeCoalescer(nullptr);
  return c;
}

// The protected call: a few ns of work the compiler cannot drop.
uint64_t Work(uint64_t key) {
  uint64_t x = key * 0x9E3779B97F4A7C15ull;
  benchmark::DoNotOptimize(x);
  return x ^ (x >> 29);
}

void BM_Direct_Call(benchmark::State& state) {
  const uint64_t key = static_cast<uint64_t>(state.thread_index());
  for (auto _ : state) benchmark::DoNotOptimize(Work(key));
}
BENCHMARK(BM_Direct_Call)->Threads(1)->Threads(2)->UseRealTime();

// Heap allocations per iteration of `state`'s loop since `before`.
void CountAllocations(benchmark::State& state, std::uint64_t before) {
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(degrade_bench::ThreadAllocations() - before),
      benchmark::Counter::kAvgIterations);
}

void BM_Coalesce_DistinctKeys(benchmark::State& state) {
  Coalesce* c = Inline();
  const uint64_t key = 1000 + static_cast<uint64_t>(state.thread_index());
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        c->Do(key, absl::InfiniteDuration(), [key] { return Work(key); }));
  }
  CountAllocations(state, before);
}
BENCHMARK(BM_Coalesce_DistinctKeys)->Threads(1)->Threads(2)->UseRealTime();

void BM_Coalesce_OneKey(benchmark::State& state) {
  Coalesce* c = Inline();
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        c->Do(7, absl::InfiniteDuration(), [] { return Work(7); }));
  }
  CountAllocations(state, before);
  const degrade::CoalesceStats st = c->stats();
  state.counters["joined_share"] =
      static_cast<double>(st.joined) /
      static_cast<double>(std::max<uint64_t>(1, st.leaders + st.joined));
}
BENCHMARK(BM_Coalesce_OneKey)->Threads(1)->Threads(2)->UseRealTime();

// One pool for the two hand-off rows: a pool's wake-up cost depends on how
// recently its threads ran (an idle vCPU wakes in tens of us on a VM), so
// rows on different pools compare their pools, not their code.
degrade::ThreadPool* HandOffPool() {
  static degrade::ThreadPool* const pool = new degrade::ThreadPool(2);
  return pool;
}

void BM_Coalesce_Executor(benchmark::State& state) {
  static Coalesce* const c = MakeCoalescer(HandOffPool());
  const uint64_t key = 2000 + static_cast<uint64_t>(state.thread_index());
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        c->Do(key, absl::InfiniteDuration(), [key] { return Work(key); }));
  }
}
BENCHMARK(BM_Coalesce_Executor)->Threads(1)->Threads(2)->UseRealTime();

void BM_CallWithTimeout(benchmark::State& state) {
  degrade::ThreadPool* pool = HandOffPool();
  const uint64_t key = 2000 + static_cast<uint64_t>(state.thread_index());
  for (auto _ : state) {
    benchmark::DoNotOptimize(degrade::CallWithTimeout(
        *pool, absl::InfiniteDuration(), [key] { return Work(key); }));
  }
}
BENCHMARK(BM_CallWithTimeout)->Threads(1)->Threads(2)->UseRealTime();

// Holds a call until released.
class Gate {
 public:
  void Open() {
    degrade::detail::MutexLock lock(&mu_);
    open_ = true;
    cv_.SignalAll();
  }
  void Wait() {
    degrade::detail::MutexLock lock(&mu_);
    cv_.Wait(&mu_,
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_; });
  }

 private:
  degrade::detail::Mutex mu_;
  degrade::detail::CondVar cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i =
      std::min(v.size() - 1,
               static_cast<std::size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

// Runs a call that ends only after its request has given up, once per
// iteration, through `request(key, budget, call)`, and reports how far
// past the budget the request returned.
template <typename Request>
void MeasureLateness(benchmark::State& state, Request request) {
  const absl::Duration budget = absl::Microseconds(state.range(0));
  // A key of its own for every request: a call ended but not yet
  // unregistered must not be joined by the next iteration.
  uint64_t key =
      (uint64_t{1} << 32) * (3 + static_cast<uint64_t>(state.thread_index()));
  std::vector<double> late_us;
  for (auto _ : state) {
    ++key;
    auto gate = std::make_shared<Gate>();
    auto done = std::make_shared<Gate>();
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<uint64_t> r = request(key, budget, [gate, done, key] {
      gate->Wait();
      done->Open();
      return Work(key);
    });
    const auto end = std::chrono::steady_clock::now();
    const double waited_us =
        std::chrono::duration<double, std::micro>(end - start).count();
    state.SetIterationTime(waited_us * 1e-6);
    late_us.push_back(waited_us - absl::ToDoubleMicroseconds(budget));
    if (r.ok()) state.SkipWithError("the call ended within its budget");
    // Let the call end before the next one: one pool thread per bench
    // thread, each free when its request starts. Blocking, not spinning: a
    // spinning thread would delay the other thread's wake-up on 2 vCPUs
    // and inflate what this row measures.
    gate->Open();
    done->Wait();
  }
  state.counters["late_p50_us"] = Percentile(late_us, 0.5);
  state.counters["late_p99_us"] = Percentile(late_us, 0.99);
  state.counters["late_max_us"] = Percentile(late_us, 1.0);
}

degrade::ThreadPool* LatenessPool() {
  static degrade::ThreadPool* const pool = new degrade::ThreadPool(2);
  return pool;
}

void BM_Coalesce_WaiterLateness(benchmark::State& state) {
  static Coalesce* const c = MakeCoalescer(LatenessPool());
  MeasureLateness(state, [](uint64_t key, absl::Duration budget, auto call) {
    return c->Do(key, budget, call);
  });
}
BENCHMARK(BM_Coalesce_WaiterLateness)
    ->Arg(1000)
    ->Arg(10000)
    ->Threads(1)
    ->Threads(2)
    ->UseManualTime()
    ->Iterations(200);

// The same wait through CallWithTimeout on the same pool: the baseline.
void BM_CallWithTimeout_Lateness(benchmark::State& state) {
  MeasureLateness(state, [](uint64_t, absl::Duration budget, auto call) {
    return degrade::CallWithTimeout(*LatenessPool(), budget, call);
  });
}
BENCHMARK(BM_CallWithTimeout_Lateness)
    ->Arg(1000)
    ->Arg(10000)
    ->Threads(1)
    ->Threads(2)
    ->UseManualTime()
    ->Iterations(200);

}  // namespace

BENCHMARK_MAIN();
