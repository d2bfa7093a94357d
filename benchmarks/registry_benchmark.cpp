// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// MetricsRegistry name de-duplication (issue 13, defect 6): registering N
// components that share one name (every breaker left with the default empty
// name, a BreakerFamily's keys) must cost about what N distinct names cost.
// The registry once searched suffixes from #2 up for each registration,
// with its lock held: 2,000 same-named breakers took 6.4 s against 42 ms.
// Compare the two in one run:
//
//   build/bench/benchmarks/registry_benchmark
//   ratio = BM_RegisterSameName/N time / BM_RegisterDistinctNames/N time
//
// Near 1 means linear; the cubic search made it about 150 at N = 2000.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "degrade/metrics_registry.hpp"

namespace {

void RegisterAll(benchmark::State& state, bool same_name) {
  const int n = static_cast<int>(state.range(0));
  std::vector<std::string> names;
  names.reserve(n);
  for (int i = 0; i < n; ++i) {
    names.push_back(same_name ? std::string() : absl::StrCat("breaker-", i));
  }
  for (auto _ : state) {
    degrade::MetricsRegistry registry;
    std::vector<degrade::MetricsRegistry::Registration> live;
    live.reserve(n);
    for (int i = 0; i < n; ++i) {
      live.push_back(registry.Register("breaker", names[i], nullptr));
    }
    benchmark::DoNotOptimize(live.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_RegisterSameName(benchmark::State& state) { RegisterAll(state, true); }
void BM_RegisterDistinctNames(benchmark::State& state) {
  RegisterAll(state, false);
}

BENCHMARK(BM_RegisterSameName)->Arg(200)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RegisterDistinctNames)
    ->Arg(200)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
