// RunCounted(state, body): the timed loop of the benchmarks that count heap
// allocations. Runs `body` once per iteration and reports `allocs_per_call`:
// the allocations this thread made inside the loop, summed over threads and
// divided by the total number of iterations (calls). Needs alloc_counter.cpp
// linked in (degrade_add_benchmark does it).
#ifndef DEGRADE_BENCHMARKS_RUN_COUNTED_HPP_
#define DEGRADE_BENCHMARKS_RUN_COUNTED_HPP_

#include <benchmark/benchmark.h>

#include <cstdint>

#include "alloc_counter.hpp"

namespace degrade_bench {

template <typename Body>
void RunCounted(benchmark::State& state, Body body) {
  const std::uint64_t before = ThreadAllocations();
  for (auto _ : state) {
    body();
  }
  const std::uint64_t allocations = ThreadAllocations() - before;
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}

}  // namespace degrade_bench

#endif  // DEGRADE_BENCHMARKS_RUN_COUNTED_HPP_
