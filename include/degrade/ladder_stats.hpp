// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: ladder_stats.hpp
// -----------------------------------------------------------------------------
//
// What a fallback ladder (ladder.hpp) and a recovery ramp
// (recovery_ramp.hpp) tell an operator, as plain snapshots a telemetry reads
// through a `StatsView` (stats_view.hpp). During a feature-store outage the
// questions are: how many requests still get the user's own features (the
// stale tiers), how old those are, how many fell to a segment's or the
// global average, and, once the store is back, how fast calls are let back
// in. `MetricsRegistry` exports them as `degrade_ladder_*`,
// `degrade_stale_age_seconds` and `degrade_recovery_ramp_*`
// (docs/metrics.md).
//
//   degrade::LadderStats st = ladder.stats();
//   const uint64_t own = st.fresh + st.stale_total();
//   double share_own = double(own) / double(st.requests());
//
// Thread safety: plain values.

#ifndef DEGRADE_LADDER_STATS_HPP_
#define DEGRADE_LADDER_STATS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>

#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Where a recovery ramp stands: all is well (measuring the call rate), the
// breaker is not closed (the rate frozen), or ramping back up.
enum class RampState : uint8_t { kSteady = 0, kOutage = 1, kRamping = 2 };

struct RecoveryRampStats {
  RampState state = RampState::kSteady;
  // The pre-outage rate the ramp is measured against, calls per second.
  double base_rate = 0;
  // The rate admitted now while ramping; 0 when not ramping (no cap).
  double allowed_rate = 0;
  // Calls admitted (steady or ramping) and refused by the ramp.
  uint64_t admitted = 0;
  uint64_t refused = 0;
  // Calls passed on while the breaker was not closed (the breaker decided).
  uint64_t passed_while_open = 0;
  // Calls refused and then admitted anyway (`RecoveryRamp::Force`: the
  // caller had nothing cached to serve instead); not in `refused`.
  uint64_t forced = 0;
  // Outages seen (the breaker left closed) and ramps begun.
  uint64_t outages = 0;
  uint64_t ramps = 0;
};

// The upper bounds, in seconds, of the buckets of the stale-age histogram:
// 10 s, 1 min, 10 min, 1 h, 6 h, 24 h, then +Inf. The tag's coarse buckets
// (FallbackTier) are a subset, so the two agree.
inline constexpr std::array<double, 6> kStaleAgeBounds = {
    10, 60, 600, 3600, 6 * 3600, 24 * 3600};

struct LadderStats {
  // Requests served by each rung.
  uint64_t fresh = 0;
  // The key's own last-known-good value, by the tag's age bucket: at most
  // 1 min, 10 min, 1 h, older.
  std::array<uint64_t, 4> stale{};
  uint64_t segment = 0;
  uint64_t global = 0;
  // Requests with no rung left: the call failed, nothing cached, no
  // segment, no global default loaded. They get the call's error.
  uint64_t failed = 0;
  // Live calls the ladder made (through the breaker) and how many of the
  // requests the recovery ramp sent down the ladder instead.
  uint64_t store_calls = 0;
  uint64_t ramp_refused = 0;
  // Requests the `admit` rung (a fleet quota, a rate limit) refused a live
  // call: served down the ladder.
  uint64_t limit_refused = 0;
  // Of `fresh`, those served from the cache without a call (younger than
  // `fresh_for`); background refreshes begun (stale-while-revalidate).
  uint64_t cached_fresh = 0;
  uint64_t revalidations = 0;
  // The ages of the stale values served, as a histogram over
  // `kStaleAgeBounds` (+Inf last) and their sum in seconds.
  std::array<uint64_t, kStaleAgeBounds.size() + 1> stale_age_buckets{};
  double stale_age_sum_seconds = 0;

  uint64_t stale_total() const {
    return stale[0] + stale[1] + stale[2] + stale[3];
  }
  uint64_t requests() const {
    return fresh + stale_total() + segment + global + failed;
  }
};

using LadderView = StatsView<LadderStats>;
using RecoveryRampView = StatsView<RecoveryRampStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_LADDER_STATS_HPP_
