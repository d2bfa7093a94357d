// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: rate_limit_stats.hpp
// -----------------------------------------------------------------------------
//
// What the rate limiters report, as plain values, and the read-only views
// they offer a `Telemetry` (telemetry.hpp, stats_view.hpp):
//
//   * `RateLimiter` (rate_limit.hpp): requests admitted and refused, the
//     permits admitted, and the rate it allows now (below the configured
//     rate while it warms up);
//   * `KeyedRateLimiter` (keyed_rate_limit.hpp): the same totals over all
//     keys, the keys it holds state for, and its evictions, split into the
//     lossless ones (a key that had replenished) and those of a key still
//     in debt (whose limit was forgiven).
//
//   degrade::RateLimitStats s = limiter->stats();
//   double refused_share = double(s.refused) / double(s.admitted + s.refused);
//
// Thread safety: the structs are plain values. A view's functions may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_RATE_LIMIT_STATS_HPP_
#define DEGRADE_RATE_LIMIT_STATS_HPP_

#include <cstdint>

#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// RateLimitStats
//
// A snapshot of a RateLimiter: totals since it was created, and its rate.
struct RateLimitStats {
  // Requests admitted (with or without a wait) and refused.
  uint64_t admitted = 0;
  uint64_t refused = 0;
  // Permits the admitted requests took (a request may take several).
  uint64_t admitted_permits = 0;
  // The rate it allows now, in permits per second: the configured rate,
  // or less while warming up.
  double rate = 0;
  // The configured rate, in permits per second.
  double configured_rate = 0;
};

// KeyedRateLimitStats
//
// A snapshot of a KeyedRateLimiter, all keys together.
struct KeyedRateLimitStats {
  uint64_t admitted = 0;
  uint64_t refused = 0;
  uint64_t admitted_permits = 0;
  // The default per-key rate, in permits per second.
  double rate = 0;
  // Keys that hold state now (are in debt: have not replenished), and the
  // slots of the table, which never grows.
  uint64_t live_keys = 0;
  uint64_t capacity = 0;
  // Entries evicted to make room: keys that had replenished (lossless).
  uint64_t evictions = 0;
  // Evictions of a key still in debt: always 0, as the table never evicts
  // one (kept for dashboards that alert on it).
  uint64_t evictions_in_debt = 0;
  // Requests of a key not held whose two buckets held only keys in debt:
  // charged to a shared overflow cell (`KeyedRateLimitSettings::when_full`
  // = kShareOverflow, admitted or refused by it) or refused (kRefuse).
  uint64_t table_full = 0;
  // Keys with their own limit.
  uint64_t overrides = 0;
};

// What a Telemetry may read of a limiter while attached (StatsView).
using RateLimitView = StatsView<RateLimitStats>;
using KeyedRateLimitView = StatsView<KeyedRateLimitStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RATE_LIMIT_STATS_HPP_
