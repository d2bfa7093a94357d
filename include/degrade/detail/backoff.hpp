// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The library's two backoff rules.
//
// `FullJitter` is the retry rule (gRPC A6, AWS's "full jitter"), used by the
// Retrier and the etcd watcher's reconnects: wait uniformly in
// [0, min(initial * multiplier^attempt, max)]. Drawing from zero spreads
// a crowd of clients that failed together over the whole window.
//
// `OpenBackoff` is the breaker's: how long a breaker stays open: `timeout`,
// multiplied by `backoff_multiplier` after each failed half-open trial
// (capped at `max_timeout` when set), back to `timeout` when the breaker
// closes or is reset by hand; each open period is then jittered by a factor
// drawn uniformly from [1 - jitter, 1 + jitter] so that a fleet of
// instances does not probe a recovering dependency in step, while no
// instance probes much earlier than `timeout` (full jitter would let it
// probe at once). The cap is applied again after the jitter: `max_timeout`
// bounds every open period actually used, so at the cap the jitter only
// shortens. The draws come from a SplitMix64 seeded from the breaker's
// name: the same breaker repeats the same sequence, which keeps tests on a
// FakeClock exact.
//
// FullJitter is pure and thread-safe; OpenBackoff is thread-compatible (the
// breaker keeps it under its lock).

#ifndef DEGRADE_DETAIL_BACKOFF_HPP_
#define DEGRADE_DETAIL_BACKOFF_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/detail/splitmix.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The wait before backoff number `attempt` (0 for the first; a negative
// one counts as 0), given `u` uniform in [0, 1): u * min(initial *
// multiplier^attempt, max), computed in double seconds so that the
// Retrier's waits stay what they were. The ceiling saturates: a growth
// that overflows a double is `max`, and InfiniteDuration() when `max` is
// infinite too (for u > 0). A `max` below `initial` wins. Zero when u, or
// either bound, is not positive. REQUIRES: multiplier >= 1 (NaN is read as
// "already past max").
inline absl::Duration FullJitter(absl::Duration initial, double multiplier,
                                 absl::Duration max, int attempt, double u) {
  const double first = absl::ToDoubleSeconds(initial);
  const double cap = absl::ToDoubleSeconds(max);
  if (!(u > 0.0) || !(first > 0.0) || !(cap > 0.0)) {
    return absl::ZeroDuration();
  }
  const double grown = first * std::pow(multiplier, std::max(attempt, 0));
  const double ceiling = grown < cap ? grown : cap;
  return absl::Seconds(u * ceiling);
}

class OpenBackoff {
 public:
  // REQUIRES: base > 0 (may be InfiniteDuration), multiplier >= 1 and
  // finite, cap 0 (none) or >= base, 0 <= jitter <= 1: what
  // NormalizeBreakerSettings guarantees.
  OpenBackoff(absl::Duration base, double multiplier, absl::Duration cap,
              double jitter, uint64_t seed)
      : base_(base),
        multiplier_(multiplier),
        cap_(cap),
        jitter_(jitter),
        current_(base),
        rng_(seed) {}

  // The open duration the next trip will use, before jitter.
  absl::Duration current() const { return current_; }

  // A half-open trial failed: the next open period is longer.
  void Grow() {
    if (multiplier_ <= 1.0) return;
    absl::Duration next = current_ * multiplier_;
    if (cap_ > absl::ZeroDuration()) next = std::min(next, cap_);
    current_ = next;
  }

  // The breaker closed (or was moved by hand): back to the base.
  void Reset() { current_ = base_; }

  // The duration of the open period starting now: current() jittered, and
  // never over the cap.
  absl::Duration NextOpenPeriod() {
    if (jitter_ <= 0.0) return current_;
    const double u = rng_.NextUnit();  // [0, 1)
    const absl::Duration d = current_ * (1.0 - jitter_ + 2.0 * jitter_ * u);
    return cap_ > absl::ZeroDuration() ? std::min(d, cap_) : d;
  }

 private:
  const absl::Duration base_;
  const double multiplier_;
  const absl::Duration cap_;
  const double jitter_;
  absl::Duration current_;
  SplitMix64 rng_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BACKOFF_HPP_
