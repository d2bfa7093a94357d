// Benchmarks of the retry components (issue 16), each against a baseline in
// the same run:
//
//   BM_Budget_Withdraw          RetryBudget::TryWithdraw() that is granted
//                               (the budget is kept in funds: see below)
//   BM_Budget_Deposit           RetryBudget::Deposit()
//   BM_Baseline_RelaxedFetchAdd one relaxed fetch_add on a shared word: the
//                               floor of anything counted per request
//   BM_Baseline_CoarseClockCas  a coarse clock read and one compare-and-swap
//                               on a shared word: the floor of an exact
//                               withdrawal
//   BM_Degrade_BreakerDirect    breaker.Execute(Work), default settings
//   BM_Degrade_BreakerDeposit   budget.Deposit() then breaker.Execute(Work):
//                               what a budgeted retry costs at least, so
//                               that retry over it is the wrapper's own cost
//   BM_Degrade_RetryFirstTime   Retry(retrier, breaker, deadline, Work) with a
//                               RetryBudget (Deposit() included) that
//                               succeeds first time
//   BM_Degrade_RetryUnbudgeted  the same without a budget (info)
//   BM_Throttle_Admit           AdaptiveThrottler::Admit() + Record(true)
//                               while nothing is refused (info)
//
// All on the real clock, at 1 and 2 threads sharing one component. Every
// benchmark reports `allocs_per_call` (heap allocations inside the timed
// loop per call). benchmarks/retry_ratios.py turns the output into the
// table with the targets: withdraw <= 10 ns, retry first time <= 1.2x the
// breaker-direct call (with a budget: the breaker-direct call and a
// Deposit()), zero allocations.
//
// Keeping the budget in funds: percent_can_retry = 1 and a floor of 10^6
// retries/s over 60 s allow 6 x 10^7 retries per window, more than a run
// makes; the counter `granted` (the fraction granted) shows it held.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "run_counted.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/retry.hpp"
#include "degrade/retry_budget.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/throttle.hpp"

namespace {

__attribute__((noinline)) absl::StatusOr<int> Work() {
  absl::StatusOr<int> result{42};
  benchmark::DoNotOptimize(result);
  return result;
}

using degrade_bench::RunCounted;

std::unique_ptr<degrade::RetryBudget> RichBudget() {
  degrade::RetryBudgetSettings s;
  s.percent_can_retry = 1.0;
  s.min_retries_per_sec = 1'000'000;
  s.ttl = absl::Seconds(60);
  s.metrics = degrade::NoTelemetry();
  return degrade::RetryBudget::Create(s).value();
}

degrade::BreakerSettings DefaultBreaker() {
  degrade::BreakerSettings s;
  s.name = "bench";
  s.metrics = degrade::NoTelemetry();
  return s;
}

// Shared by the threads of one run; built by thread 0 before the others
// start timing (benchmark's threads start together after setup).
std::unique_ptr<degrade::RetryBudget> g_budget;
std::unique_ptr<degrade::CircuitBreaker<int>> g_breaker;
std::unique_ptr<degrade::Retrier> g_retrier;
std::unique_ptr<degrade::AdaptiveThrottler> g_throttler;
std::atomic<uint64_t> g_word{0};

void SetUp(const benchmark::State& state, bool budgeted) {
  if (state.thread_index() != 0) return;
  g_budget = RichBudget();
  g_breaker = std::make_unique<degrade::CircuitBreaker<int>>(DefaultBreaker());
  degrade::RetrySettings p;
  p.name = "bench";
  p.budget = budgeted ? g_budget.get() : nullptr;
  p.unbudgeted = !budgeted;
  p.metrics = degrade::NoTelemetry();
  g_retrier = degrade::Retrier::Create(p).value();
  degrade::ThrottleSettings t;
  t.metrics = degrade::NoTelemetry();
  g_throttler = degrade::AdaptiveThrottler::Create(t).value();
}

void BM_Budget_Withdraw(benchmark::State& state) {
  SetUp(state, true);
  // The floor (6e7 over the 60 s window) is fewer retries than a run's
  // iterations at these speeds; requests deposited beforehand (at 100%)
  // keep every timed withdrawal a granted one.
  if (state.thread_index() == 0) {
    for (int i = 0; i < 200'000'000; ++i) g_budget->Deposit();
  }
  uint64_t granted = 0;
  RunCounted(state, [&] { granted += g_budget->TryWithdraw() ? 1 : 0; });
  state.counters["granted"] = benchmark::Counter(
      static_cast<double>(granted), benchmark::Counter::kAvgIterations);
}

void BM_Budget_Deposit(benchmark::State& state) {
  SetUp(state, true);
  RunCounted(state, [] { g_budget->Deposit(); });
}

void BM_Baseline_RelaxedFetchAdd(benchmark::State& state) {
  RunCounted(state, [] { g_word.fetch_add(1, std::memory_order_relaxed); });
}

// The floor of a withdrawal: the coarse clock read and one compare-and-swap
// on a shared word, which any exact lock-free budget needs at the least.
void BM_Baseline_CoarseClockCas(benchmark::State& state) {
  const degrade::RealClock& clock = degrade::RealClock::Instance();
  RunCounted(state, [&clock] {
    uint64_t w = g_word.load(std::memory_order_relaxed);
    const uint64_t stamp = static_cast<uint64_t>(clock.CoarseUnixNanos());
    while (!g_word.compare_exchange_weak(w, w + (stamp & 1) + 1,
                                         std::memory_order_relaxed)) {
    }
  });
}

void BM_Degrade_BreakerDirect(benchmark::State& state) {
  SetUp(state, true);
  RunCounted(state, [] {
    auto r = g_breaker->Execute(Work);
    benchmark::DoNotOptimize(r);
  });
}

void BM_Degrade_BreakerDeposit(benchmark::State& state) {
  SetUp(state, true);
  RunCounted(state, [] {
    g_budget->Deposit();
    auto r = g_breaker->Execute(Work);
    benchmark::DoNotOptimize(r);
  });
}

void RetryFirstTime(benchmark::State& state, bool budgeted) {
  SetUp(state, budgeted);
  const degrade::Deadline deadline = degrade::Deadline::At(absl::InfiniteFuture());
  RunCounted(state, [&] {
    auto r = degrade::Retry(*g_retrier, *g_breaker, deadline, Work);
    benchmark::DoNotOptimize(r);
  });
}
void BM_Degrade_RetryFirstTime(benchmark::State& state) {
  RetryFirstTime(state, true);
}
void BM_Degrade_RetryUnbudgeted(benchmark::State& state) {
  RetryFirstTime(state, false);
}

void BM_Throttle_Admit(benchmark::State& state) {
  SetUp(state, true);
  RunCounted(state, [] {
    absl::Status s = g_throttler->Admit();
    benchmark::DoNotOptimize(s);
    g_throttler->Record(true);
  });
}

}  // namespace

#define DEGRADE_RETRY_BENCHMARK(fn) \
  BENCHMARK(fn)->UseRealTime()->Threads(1)->Threads(2)

DEGRADE_RETRY_BENCHMARK(BM_Budget_Withdraw);
DEGRADE_RETRY_BENCHMARK(BM_Budget_Deposit);
DEGRADE_RETRY_BENCHMARK(BM_Baseline_RelaxedFetchAdd);
DEGRADE_RETRY_BENCHMARK(BM_Baseline_CoarseClockCas);
DEGRADE_RETRY_BENCHMARK(BM_Degrade_BreakerDirect);
DEGRADE_RETRY_BENCHMARK(BM_Degrade_BreakerDeposit);
DEGRADE_RETRY_BENCHMARK(BM_Degrade_RetryFirstTime);
DEGRADE_RETRY_BENCHMARK(BM_Degrade_RetryUnbudgeted);
DEGRADE_RETRY_BENCHMARK(BM_Throttle_Admit);

BENCHMARK_MAIN();
