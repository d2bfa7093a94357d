// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: source_stats.hpp
// -----------------------------------------------------------------------------
//
// What the data sources a service leans on report, as plain values, and the
// read-only views they offer a `Telemetry` (the pattern of
// hot_list_stats.hpp):
//
//   * the GPU source (gpu_signal.hpp, `NvmlGpuSource`): is NVML answering
//     (`available`), what did it last say, and how often and how did it
//     fail. A GPU that fell off the bus leaves a manager on its last value,
//     which looks healthy on every other graph;
//   * the default features (default_features.hpp, `DefaultFeatures`): how
//     old is the vector the feature stage falls back to, and are reloads
//     being refused (a bad file never replaces a good one, so only this
//     says the offline job is shipping garbage);
//   * the segment defaults (segment_defaults.hpp, `SegmentDefaults`): the
//     same for the per-segment averages, plus how many segments serve and
//     how many lookups found their segment (the rest fell to the global
//     average).
//
//   degrade::GpuSourceStats g = (*gpu)->stats();
//   if (!g.available) Page((*gpu)->name(), g.errors_unavailable);
//
//   degrade::DefaultFeaturesStats f = defaults->stats();
//   if (f.age > absl::Hours(48) || f.refused > 0) Warn(defaults->name());
//
// Thread safety: the structs are plain values. A view's functions may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_SOURCE_STATS_HPP_
#define DEGRADE_SOURCE_STATS_HPP_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// GpuSourceStats
//
// A snapshot of an NvmlGpuSource: totals since it was loaded, and the
// latest read.
struct GpuSourceStats {
  // True while the latest read succeeded (the last poll was OK).
  bool available = false;
  // The latest successful reading, in [0, 1].
  double utilization = 0;
  // Reads (Utilization() calls, Load()'s own included).
  uint64_t reads = 0;
  // Failed reads by status code: UNAVAILABLE (an NVML call failed) and
  // OUT_OF_RANGE (NVML reported more than 100%).
  uint64_t errors_unavailable = 0;
  uint64_t errors_out_of_range = 0;
  // NVML's return code of the latest failed NVML call (15 is GPU_IS_LOST);
  // 0 when none failed yet. Kept after recovery: it says what last broke.
  int last_nvml_error = 0;
};

// DefaultFeaturesStats
//
// A snapshot of a DefaultFeatures.
struct DefaultFeaturesStats {
  // Time since the serving vector was installed, on the features' clock;
  // InfiniteDuration() before the first. Never negative (a clock stepped
  // back reads as zero).
  absl::Duration age = absl::InfiniteDuration();
  // The serving vector's dimension; 0 before the first.
  std::size_t dimension = 0;
  // Loads (Reload, Set, Load) that were accepted (swapped in) and refused
  // (the previous vector kept serving).
  uint64_t accepted = 0;
  uint64_t refused = 0;
  // Whether the latest load was accepted (true before any).
  bool last_ok = true;
};

// SegmentDefaultsStats
//
// A snapshot of a SegmentDefaults.
struct SegmentDefaultsStats {
  // Time since the serving set was installed, on its clock;
  // InfiniteDuration() before the first. Never negative.
  absl::Duration age = absl::InfiniteDuration();
  // The serving set's dimension (every segment's) and its segment count; 0
  // before the first.
  std::size_t dimension = 0;
  std::size_t segments = 0;
  // Loads (Reload, Set, Load) that were accepted (swapped in) and refused
  // (the previous set kept serving).
  uint64_t accepted = 0;
  uint64_t refused = 0;
  // Whether the latest load was accepted (true before any).
  bool last_ok = true;
  // Find() calls that returned a vector (`lookups_hit`) and that returned
  // null, the segment unknown or nothing loaded yet (`lookups_unknown`):
  // those fell to the global tier.
  uint64_t lookups_hit = 0;
  uint64_t lookups_unknown = 0;
};

// What a Telemetry may read of a GPU source, default features or segment
// defaults while attached (StatsView).
using GpuSourceView = StatsView<GpuSourceStats>;
using DefaultFeaturesView = StatsView<DefaultFeaturesStats>;
using SegmentDefaultsView = StatsView<SegmentDefaultsStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_SOURCE_STATS_HPP_
