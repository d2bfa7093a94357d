// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The success path through a combinator: WithFallback(breaker, ...) against
// calling the breaker directly and against the bare call, with a trivially
// copyable result (int). The combinator must add little to the breaker
// (target: at most 1.2x the breaker-direct time) and allocate nothing.
// Compare with: python3 benchmarks/fallback_ratios.py <binary>

#include <benchmark/benchmark.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "alloc_counter.hpp"
#include "run_counted.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/fallback.hpp"

namespace {

__attribute__((noinline)) absl::StatusOr<int> Work() {
  absl::StatusOr<int> result{42};
  benchmark::DoNotOptimize(result);
  return result;
}

degrade::CircuitBreaker<int>& SharedBreaker() {
  static auto* breaker = [] {
    degrade::BreakerSettings s;
    s.name = "bench";
    return new degrade::CircuitBreaker<int>(s);
  }();
  return *breaker;
}

using degrade_bench::RunCounted;

void BM_BareCall(benchmark::State& state) {
  RunCounted(state, [] {
    auto r = Work();
    benchmark::DoNotOptimize(r);
  });
}

void BM_BreakerDirect(benchmark::State& state) {
  auto& breaker = SharedBreaker();
  RunCounted(state, [&breaker] {
    auto r = breaker.Execute([] { return Work(); });
    benchmark::DoNotOptimize(r);
  });
}

void BM_WithFallback(benchmark::State& state) {
  auto& breaker = SharedBreaker();
  RunCounted(state, [&breaker] {
    degrade::StageResult<int> r = degrade::WithFallback(
        breaker, "features", [] { return Work(); }, 0);
    benchmark::DoNotOptimize(r);
  });
}

}  // namespace

BENCHMARK(BM_BareCall)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_BreakerDirect)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_WithFallback)->UseRealTime()->Threads(1)->Threads(2);

BENCHMARK_MAIN();
