// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The arithmetic of DAGOR's adaptive admission, as a pure function so it
// can be tested table by table: given one window's histogram of requests
// per rank and whether the window was overloaded, where the threshold goes.
//
// DAGOR (SoCC'18) moves the admission level so that about alpha (5%) fewer
// of the window's requests would have been admitted after an overloaded
// window, and about beta (1%) more after a calm one. "Would have been"
// reads the histogram: the requests of a rank are what admitting or
// shedding that rank is worth. Ranks nobody sent are worth nothing, so a
// walk passes over them without stopping.
//
// Thread-compatible: plain values.

#ifndef DEGRADE_DETAIL_ADMISSION_WINDOW_HPP_
#define DEGRADE_DETAIL_ADMISSION_WINDOW_HPP_

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

struct AdmissionStep {
  double tighten_fraction = 0.05;
  double loosen_fraction = 0.01;
  int min_threshold = 0;  // tightening stops here
};

// The threshold after one window.
//
// `threshold` is the adaptive threshold before the window; `in_force` the
// one that actually decided (min of it and the manager's floor). Tightening
// walks down from `in_force`: when the manager already sheds more than the
// adaptive threshold would, cutting ranks the manager refuses anyway would
// change nothing for several windows while the queue keeps growing.
// Loosening walks up from `threshold`, at least one rank.
//
// REQUIRES: 0 <= min_threshold <= kAdmitAllRank, 0 <= in_force <=
// threshold <= kAdmitAllRank, fractions in (0, 1]. A window without
// requests changes nothing.
inline int NextAdmissionThreshold(const RankHistogram& hist, int threshold,
                                  int in_force, bool overloaded,
                                  const AdmissionStep& step) {
  uint64_t total = 0;
  for (const uint64_t n : hist) total += n;
  if (total == 0) return threshold;

  const int from = overloaded ? in_force : threshold;
  uint64_t admitted = 0;
  for (int r = 0; r < from; ++r) admitted += hist[static_cast<std::size_t>(r)];
  const double fraction =
      overloaded ? step.tighten_fraction : step.loosen_fraction;
  // At least one request's worth: a window of 10 requests at 5% still moves.
  const auto want = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(admitted))));

  if (overloaded) {
    if (from <= step.min_threshold) return std::min(threshold, from);
    int t = from;
    uint64_t removed = 0;
    while (t > step.min_threshold && removed < want) {
      --t;
      removed += hist[static_cast<std::size_t>(t)];
    }
    return t;
  }
  int t = from;
  uint64_t added = 0;
  while (t < kAdmitAllRank && added < want) {
    added += hist[static_cast<std::size_t>(t)];
    ++t;
  }
  return t;
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

#endif  // DEGRADE_DETAIL_ADMISSION_WINDOW_HPP_
