// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: coalesce_stats.hpp
// -----------------------------------------------------------------------------
//
// What a `Coalescer` (coalesce.hpp) reports, as a plain value, and the
// read-only view it offers a `Telemetry` (telemetry.hpp, stats_view.hpp).
//
// Every request is exactly one of: a leader (it started the shared call of
// its key), joined (it waited for a call already running), uncoalesced (the
// table was full: it got a call of its own) or refused (the executor would
// not take the call). `timed_out` counts, among the first three, the
// requests that gave up waiting at their own budget; the call they left
// still ran to its end.
//
//   degrade::CoalesceStats s = coalescer->stats();
//   double saved = double(s.joined) / double(s.leaders + s.joined);
//
// Thread safety: the struct is a plain value. A view's functions may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_COALESCE_STATS_HPP_
#define DEGRADE_COALESCE_STATS_HPP_

#include <cstdint>

#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// CoalesceStats
//
// A snapshot of a Coalescer: totals since it was created, and what is in
// flight now. Counts read while requests run may be a moment apart from
// each other; they are exact once the requests are done.
struct CoalesceStats {
  // Requests that started a shared call (one per call).
  uint64_t leaders = 0;
  // Requests that waited for a call another request had started.
  uint64_t joined = 0;
  // Requests of a key not in flight while the table held `max_inflight`
  // keys: each got a call of its own, not shared.
  uint64_t uncoalesced = 0;
  // Requests whose call the executor refused (full or stopping): the call
  // was not run and nothing stayed registered.
  uint64_t refused = 0;
  // Requests (leaders, joined or uncoalesced) that returned
  // DEADLINE_EXCEEDED at their own budget before the call ended.
  uint64_t timed_out = 0;
  // Calls (shared or uncoalesced) that ended with a non-OK status or threw.
  uint64_t failed = 0;
  // Calls (shared or uncoalesced) that ended, and the sum of their
  // durations on the coalescer's clock, in seconds.
  uint64_t completed = 0;
  double call_seconds = 0;
  // Keys with a shared call in flight now.
  uint64_t inflight = 0;
  // The bound on `inflight` (settings' max_inflight).
  uint64_t max_inflight = 0;
};

// What a Telemetry may read of a coalescer while attached (StatsView).
using CoalesceView = StatsView<CoalesceStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_COALESCE_STATS_HPP_
