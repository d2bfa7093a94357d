// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A cheap quantile estimator for a route's recent latency, so a hedge can
// go out at the route's p95 rather than at a constant someone guessed
// (brpc #2695). signals.hpp's LatencyTracker keeps a mean or an EWMA, which
// says nothing about the tail a hedge is for.
//
// Latencies fall into log-spaced buckets: exact up to 8 units of 1.024 us,
// then four buckets per octave, so a bucket is at most a quarter of its
// lower bound wide and a quantile read from it is within about 25% of the
// true one (interpolated linearly inside the bucket, usually much closer).
// 112 buckets reach about 8 minutes; anything longer counts in the last.
// The buckets are summed over a sliding window (tick_window.hpp: ten
// ticks of window/10), so the estimate follows the route as it speeds up or
// slows down.
//
// Recording is a bucket index from the leading bit (no logarithm) and one
// relaxed add. Reading a quantile sums every bucket of every tick
// (112 x 10 loads): callers cache it (HedgePolicy refreshes its delay a
// few times per window).
//
// Thread safety: Record() and Quantile() from any thread, concurrently.

#ifndef DEGRADE_DETAIL_RETRY_LATENCY_HISTOGRAM_HPP_
#define DEGRADE_DETAIL_RETRY_LATENCY_HISTOGRAM_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/numeric/bits.h"
#include "absl/time/time.h"
#include "degrade/detail/tick_window.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class LatencyHistogram {
 public:
  static constexpr std::size_t kBuckets = 112;
  static constexpr int kUnitShift = 10;  // one unit is 1024 ns

  LatencyHistogram(absl::Duration window, absl::Time origin)
      : counts_(window, origin) {}

  // Counts one latency at `now`. A negative latency counts as zero.
  void Record(absl::Time now, absl::Duration latency) {
    counts_.Add(BucketOf(latency), counts_.TickOf(now));
  }

  // Samples in the window ending at `now`.
  uint64_t count(absl::Time now) const {
    uint64_t n = 0;
    for (uint64_t c : counts_.Sum(counts_.TickOf(now))) n += c;
    return n;
  }

  // The `q` quantile (0 < q < 1) of the window ending at `now`, or nullopt
  // with fewer than `min_samples` (at least 1) samples in it.
  std::optional<absl::Duration> Quantile(absl::Time now, double q,
                                         uint64_t min_samples) const {
    const auto sums = counts_.Sum(counts_.TickOf(now));
    uint64_t total = 0;
    for (uint64_t c : sums) total += c;
    if (total == 0 || total < min_samples) return std::nullopt;
    const double rank = q * static_cast<double>(total);
    double below = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      if (sums[i] == 0) continue;
      const double here = static_cast<double>(sums[i]);
      if (below + here >= rank || i + 1 == kBuckets) {
        const double frac = here > 0 ? (rank - below) / here : 0;
        const double lo = static_cast<double>(LowerBound(i));
        const double hi = static_cast<double>(LowerBound(i + 1));
        const double units = lo + (frac < 0 ? 0 : frac) * (hi - lo);
        return absl::Nanoseconds(units * (1 << kUnitShift));
      }
      below += here;
    }
    return std::nullopt;  // unreachable: total > 0
  }

  // The bucket of `latency`. Monotonic in the latency.
  static std::size_t BucketOf(absl::Duration latency) {
    const int64_t ns = absl::ToInt64Nanoseconds(latency);
    const uint64_t v = ns <= 0 ? 0 : static_cast<uint64_t>(ns) >> kUnitShift;
    if (v < 8) return static_cast<std::size_t>(v);
    const int msb = 63 - absl::countl_zero(v);
    const std::size_t sub = static_cast<std::size_t>(v >> (msb - 2)) & 3;
    const std::size_t i = 4 * static_cast<std::size_t>(msb - 1) + sub;
    return i < kBuckets ? i : kBuckets - 1;
  }

  // The smallest value, in units, of bucket `i` (i <= kBuckets: the bound
  // past the last bucket is its upper one).
  static uint64_t LowerBound(std::size_t i) {
    if (i < 4) return i;
    const int msb = static_cast<int>(i / 4) + 1;
    return (4 + uint64_t{i % 4}) << (msb - 2);
  }

 private:
  TickWindow<kBuckets> counts_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RETRY_LATENCY_HISTOGRAM_HPP_
