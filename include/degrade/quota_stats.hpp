// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: quota_stats.hpp
// -----------------------------------------------------------------------------
//
// What a fleet-wide quota (redis/quota.hpp, `redis::ClusterQuota`) reports,
// as plain values, and the read-only view it offers a `Telemetry`. They live
// in the core, apart from the adapter, so the metrics registry can export a
// quota without the core knowing hiredis.
//
// The one number to watch is the mode: `kLeasing` is the normal state (the
// instance spends tokens the fleet's bucket in Redis handed it); `kGrace`
// says Redis stopped answering and the instance spends what it holds and
// then its last share; `kFairShare` says it has been out of touch longer than
// the lease and its grace, and admits the global limit divided by the last
// known number of instances.
//
//   degrade::ClusterQuotaStats s = (*quota)->stats();
//   if (s.mode != degrade::QuotaMode::kLeasing) Warn(QuotaModeName(s.mode));
//   double per_1000 = 1000.0 * s.round_trips / std::max<uint64_t>(1,
//   s.admitted);
//
// Thread safety: plain values; a view's functions may be called from any
// thread while its attachment lives.

#ifndef DEGRADE_QUOTA_STATS_HPP_
#define DEGRADE_QUOTA_STATS_HPP_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// QuotaMode
//
// Where a fleet quota's tokens come from now (see the file comment).
enum class QuotaMode : int {
  kLeasing = 0,
  kGrace = 1,
  kFairShare = 2,
};

// "leasing", "grace", "fair_share": the label values of degrade_quota_mode.
inline absl::string_view QuotaModeName(QuotaMode mode) {
  switch (mode) {
    case QuotaMode::kLeasing:
      return "leasing";
    case QuotaMode::kGrace:
      return "grace";
    case QuotaMode::kFairShare:
      return "fair_share";
  }
  return "unknown";
}

// ClusterQuotaStats
//
// A snapshot of one instance's side of a fleet quota: totals since it was
// created, and the state of its latest refresh.
struct ClusterQuotaStats {
  QuotaMode mode = QuotaMode::kFairShare;
  // The fleet-wide limit, tokens per second (the same on every instance).
  double limit_per_second = 0;
  // This instance's rate now, tokens per second: the share of its latest
  // lease (leasing, grace) or the fair share (limit / members).
  double share_per_second = 0;
  // Instances the latest lease counted (or the configured expectation
  // before any lease).
  int64_t members = 0;
  // Leased tokens this instance holds and has not spent.
  int64_t held = 0;
  // Tokens granted by Redis, in total.
  uint64_t leased = 0;
  // Tokens requests took (admitted) and were refused.
  uint64_t admitted = 0;
  uint64_t refused = 0;
  // Lease calls sent to Redis (each one script run, counted when sent,
  // whatever came back) and refreshes that failed (transport errors, a
  // reply that made no sense, the breaker refusing).
  uint64_t round_trips = 0;
  uint64_t errors = 0;
  // Leases that found the fleet's bucket running below this instance's
  // limit: another live instance is configured with a lower one (a rollout
  // of a new limit). The fleet then runs at the lowest.
  uint64_t limit_conflicts = 0;
  // The limit the fleet's bucket ran at in the latest lease, tokens per
  // second: the lowest among the live instances (this one's before any).
  double fleet_limit_per_second = 0;
};

using ClusterQuotaView = StatsView<ClusterQuotaStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_QUOTA_STATS_HPP_
