// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A segment lookup on the feature stage's fallback path:
// SegmentDefaults::Find over 100,000 segments of 64 floats, for a segment
// that exists and for one that does not, against the global tier's read,
// DefaultFeatures::snapshot() (the same lock and shared_ptr copy, no hash
// lookup), and against a bare absl::flat_hash_map find on the same keys
// (no lock, no shared ownership). The lookup must allocate nothing.
// Compare with: python3 benchmarks/segment_defaults_ratios.py <binary>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "alloc_counter.hpp"
#include "degrade/default_features.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/telemetry.hpp"
#include "run_counted.hpp"

namespace {

constexpr std::size_t kSegments = 100'000;
constexpr std::size_t kDim = 64;
constexpr std::size_t kKeys = 1024;  // looked up in turn; a power of two

degrade::SegmentVectors MakeVectors() {
  degrade::SegmentVectors v;
  v.reserve(kSegments);
  for (std::size_t i = 0; i < kSegments; ++i) {
    v.emplace(absl::StrCat("C", i % 200, "|p", i % 5, "|", i),
              std::vector<float>(kDim, static_cast<float>(i)));
  }
  return v;
}

// Ids spread over the set, and ids of the same shape that are not in it.
const std::vector<std::string>& Keys(bool known) {
  static const auto* keys = [] {
    auto* k = new std::vector<std::string>[2];
    for (std::size_t j = 0; j < kKeys; ++j) {
      const std::size_t i = (j * 97) % kSegments;
      k[1].push_back(absl::StrCat("C", i % 200, "|p", i % 5, "|", i));
      k[0].push_back(absl::StrCat("C", i % 200, "|p", i % 5, "|x", i));
    }
    return k;
  }();
  return keys[known ? 1 : 0];
}

degrade::SegmentDefaults& Shared() {
  static auto* s = [] {
    degrade::SegmentDefaultsOptions o;
    o.expected_dimension = kDim;
    o.metrics = degrade::NoTelemetry();
    auto* out = new degrade::SegmentDefaults(o);
    if (!out->Set(MakeVectors(), "bench").ok()) std::abort();
    return out;
  }();
  return *s;
}

const degrade::SegmentVectors& BareMap() {
  static const auto* m = new degrade::SegmentVectors(MakeVectors());
  return *m;
}

degrade::DefaultFeatures& Global() {
  static auto* f = [] {
    degrade::DefaultFeaturesOptions o;
    o.expected_dimension = kDim;
    o.metrics = degrade::NoTelemetry();
    auto* out = new degrade::DefaultFeatures(o);
    if (!out->Set(std::vector<float>(kDim, 0.5f)).ok()) std::abort();
    return out;
  }();
  return *f;
}

using degrade_bench::RunCounted;

void BM_GlobalSnapshot(benchmark::State& state) {
  auto& global = Global();
  RunCounted(state, [&global] {
    auto v = global.snapshot();
    benchmark::DoNotOptimize(v);
  });
}

void BM_BareMapFind(benchmark::State& state) {
  const auto& map = BareMap();
  const auto& keys = Keys(/*known=*/true);
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 31;
  RunCounted(state, [&] {
    const auto it = map.find(absl::string_view(keys[i++ & (kKeys - 1)]));
    benchmark::DoNotOptimize(it);
  });
}

void BM_SegmentFind(benchmark::State& state) {
  auto& segments = Shared();
  const auto& keys = Keys(/*known=*/true);
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 31;
  RunCounted(state, [&] {
    auto v = segments.Find(keys[i++ & (kKeys - 1)]);
    benchmark::DoNotOptimize(v);
  });
}

void BM_SegmentFindUnknown(benchmark::State& state) {
  auto& segments = Shared();
  const auto& keys = Keys(/*known=*/false);
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 31;
  RunCounted(state, [&] {
    auto v = segments.Find(keys[i++ & (kKeys - 1)]);
    benchmark::DoNotOptimize(v);
  });
}

}  // namespace

BENCHMARK(BM_GlobalSnapshot)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_BareMapFind)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_SegmentFind)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_SegmentFindUnknown)->UseRealTime()->Threads(1)->Threads(2);

BENCHMARK_MAIN();
