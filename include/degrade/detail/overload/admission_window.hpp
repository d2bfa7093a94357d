// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The arithmetic of DAGOR's adaptive admission, as a pure function so it
// can be tested table by table: given one window's histogram of requests
// per rank and whether the window was overloaded, where the level (a
// threshold and a part of its boundary rank) goes.
//
// DAGOR (SoCC'18) moves the admission level so that about alpha (5%) fewer
// of the window's requests would have been admitted after an overloaded
// window, and about beta (1%) more after a calm one. "Would have been"
// reads the histogram: the requests of a rank are what admitting or
// shedding that rank is worth. Ranks nobody sent are worth nothing, so a
// walk passes over them without stopping.
//
// Thread-compatible: plain values.

#ifndef DEGRADE_DETAIL_OVERLOAD_ADMISSION_WINDOW_HPP_
#define DEGRADE_DETAIL_OVERLOAD_ADMISSION_WINDOW_HPP_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "degrade/request_class.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Requests per rank in one window.
using RankHistogram = std::array<uint64_t, kAdmitAllRank>;

// An adaptive level: a threshold rank and the part of that rank's requests
// admitted, in 1/kLevelSteps, as one int (rank * kLevelSteps + part) so the
// hot path reads both with one relaxed load. Part 0 is a plain threshold.
//
// Why parts: a rank is whatever traffic carries it, and unlabelled traffic
// is all CRITICAL:0. Walking whole ranks, "about 5% fewer" would then shed
// 100%, and a service that sheds everything hears nothing from its queue.
inline constexpr int kLevelBits = 10;
inline constexpr int kLevelSteps = 1 << kLevelBits;
inline constexpr int kAdmitAllLevel = kAdmitAllRank * kLevelSteps;

constexpr int LevelRank(int level) { return level >> kLevelBits; }
constexpr int LevelPart(int level) { return level & (kLevelSteps - 1); }
// The threshold a level reports: every rank at or above it is refused.
constexpr int LevelThreshold(int level) {
  return LevelRank(level) + (LevelPart(level) != 0 ? 1 : 0);
}

// Whether the n-th request of a window is among the `part`/kLevelSteps of
// the boundary rank admitted. A Weyl sequence (n times the golden ratio,
// top bits): deterministic, no state, and any run of consecutive n admits
// within a few requests of the exact share, whatever the interleaving.
inline bool AdmitsPart(uint64_t n, int part) {
  return static_cast<int>((n * 0x9E3779B97F4A7C15ull) >> (64 - kLevelBits)) <
         part;
}

struct AdmissionStep {
  double tighten_fraction = 0.05;
  double loosen_fraction = 0.01;
  int min_threshold = 0;  // tightening stops here (a rank, not a level)
};

// What `level` admits of `hist`, counting the boundary rank by its part.
inline double AdmittedAt(const RankHistogram& hist, int level) {
  const int rank = LevelRank(level);
  double admitted = 0;
  for (int r = 0; r < rank; ++r) {
    admitted += static_cast<double>(hist[static_cast<std::size_t>(r)]);
  }
  if (rank < kAdmitAllRank) {
    admitted += static_cast<double>(hist[static_cast<std::size_t>(rank)]) *
                LevelPart(level) / kLevelSteps;
  }
  return admitted;
}

// The level after one window.
//
// `level` is the adaptive level before the window; `in_force` the one that
// actually decided (min of it and the manager's floor). Tightening walks
// down from `in_force`: when the manager already sheds more than the
// adaptive level would, cutting ranks the manager refuses anyway would
// change nothing for several windows while the queue keeps growing.
// Loosening walks up from `level`.
//
// Whole ranks while they fit; a rank worth more than twice what the step
// wants is cut (or restored) only in part, so no window sheds much more
// than tighten_fraction. A part restored after a calm window is at least
// loosen_fraction of the rank: from a rank refused whole, multiplicative
// growth from nothing would take hundreds of windows; this takes about
// 1/loosen_fraction.
//
// The result is always in [min_threshold * kLevelSteps, kAdmitAllLevel],
// whatever the manager's floor. REQUIRES: 0 <= min_threshold <=
// kAdmitAllRank, 0 <= in_force <= level <= kAdmitAllLevel, fractions in
// (0, 1]. A window without requests changes nothing.
inline int NextAdmissionLevel(const RankHistogram& hist, int level,
                              int in_force, bool overloaded,
                              const AdmissionStep& step) {
  uint64_t total = 0;
  for (const uint64_t n : hist) total += n;
  if (total == 0) return level;
  const int min_level = step.min_threshold * kLevelSteps;
  const auto clamped = [min_level](int l) {
    return std::clamp(l, min_level, kAdmitAllLevel);
  };
  const auto at = [&hist](int r) {
    return static_cast<double>(hist[static_cast<std::size_t>(r)]);
  };

  const int from = overloaded ? in_force : level;
  const double fraction =
      overloaded ? step.tighten_fraction : step.loosen_fraction;
  // At least one request's worth: a window of 10 requests at 5% still moves.
  const double want =
      std::max(1.0, std::ceil(fraction * AdmittedAt(hist, from)));

  int l = from;
  double moved = 0;
  if (overloaded) {
    while (l > min_level && moved < want) {
      // The boundary rank's admitted part, or else the whole rank below.
      const int part = LevelPart(l);
      const int r = part != 0 ? LevelRank(l) : LevelRank(l) - 1;
      const double worth =
          at(r) * (part != 0 ? part : kLevelSteps) / kLevelSteps;
      if (moved + worth > 2 * want) {
        // Keep what the step does not want; rounding the part down sheds
        // at least that.
        const double keep = (worth - (want - moved)) / at(r);
        const int keep_part = static_cast<int>(std::floor(keep * kLevelSteps));
        if (keep_part > 0) return clamped(r * kLevelSteps + keep_part);
      }
      l = r * kLevelSteps;
      moved += worth;
    }
    return clamped(l);
  }
  while (l < kAdmitAllLevel && moved < want) {
    const int r = LevelRank(l);
    const int part = LevelPart(l);
    const double worth = at(r) * (kLevelSteps - part) / kLevelSteps;
    if (moved + worth > 2 * want) {
      const double add = (want - moved) / at(r);
      const int add_part = std::max(
          static_cast<int>(std::ceil(add * kLevelSteps)),
          static_cast<int>(std::ceil(step.loosen_fraction * kLevelSteps)));
      if (part + add_part < kLevelSteps) {
        return clamped(r * kLevelSteps + part + add_part);
      }
    }
    l = (r + 1) * kLevelSteps;
    moved += worth;
  }
  return clamped(l);
}

// "320 (admits through SHEDDABLE_PLUS:63)": what a threshold admits, in the
// words an operator reads in a config.
inline std::string DescribeAdmissionThreshold(int threshold) {
  if (threshold <= 0) return "0 (admits nothing)";
  if (threshold >= kAdmitAllRank) {
    return absl::StrCat(threshold, " (admits everything)");
  }
  const int last = threshold - 1;
  RequestClass rc;
  rc.criticality = static_cast<Criticality>(last / kNumCohorts);
  rc.cohort = static_cast<uint8_t>(last % kNumCohorts);
  return absl::StrCat(threshold, " (admits through ", EncodeRequestClass(rc),
                      ")");
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_OVERLOAD_ADMISSION_WINDOW_HPP_
