// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// How a breaker's `Counts` are assembled from its parts: the lifetime
// shard sums minus the generation's base snapshot (closed), the exact trial
// ledger (half-open, the window fields too), and the sliding window's view
// (closed). With a time window all
// of gobreaker's fields come from the window's buckets, as gobreaker v2's
// rolling counts do, so a rule over `total_failures` sees the rolled
// numbers; the consecutive counts are capped at the window's totals, which
// is what v2's roll leaves of a run that began in a dropped bucket.
//
//   CountsParts p;
//   p.totals = shards.Sum();  p.base = base;  p.window = &stats;
//   Counts c = AssembleCounts(p);
//
// Pure function of its inputs. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_COUNTS_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_COUNTS_HPP_

#include <algorithm>
#include <cstdint>

#include "degrade/breaker_types.hpp"
#include "degrade/detail/breaker/trial_ledger.hpp"
#include "degrade/detail/breaker/windows.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

struct CountsParts {
  BreakerTotals totals;  // the shard sums now
  BreakerTotals base;    // the shard sums when the generation began
  uint64_t consecutive_failures = 0;
  uint64_t successes_at_last_failure = 0;
  // Set in half-open: the generation's trials.
  const TrialLedger* trials = nullptr;
  // The window's view, when the breaker has a window.
  const WindowStats* window = nullptr;
  bool time_window = false;
};

inline Counts AssembleCounts(const CountsParts& p) {
  // The shards are summed field by field while other threads add to them,
  // so a difference can momentarily come out negative: clamp at zero.
  const auto diff = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  const BreakerTotals& t = p.totals;
  const BreakerTotals& base = p.base;
  Counts c;
  c.requests =
      diff(diff(t.admitted, base.admitted), diff(t.abandoned, base.abandoned));
  c.total_successes = diff(t.successes, base.successes);
  c.total_failures = diff(t.failures, base.failures);
  c.total_exclusions = diff(t.exclusions, base.exclusions);
  c.consecutive_failures = p.consecutive_failures;
  c.consecutive_successes =
      diff(t.successes, std::max(p.successes_at_last_failure, base.successes));
  if (p.trials != nullptr) {
    // Half-open figures come from the exact per-generation trial ledger,
    // which a straggling call from an earlier generation cannot touch.
    const TrialLedger& l = *p.trials;
    c.requests = l.admitted - l.abandoned;
    c.total_successes = l.succeeded;
    c.consecutive_successes = l.failed > 0 ? 0 : l.succeeded;
    c.total_failures = l.failed;
    c.consecutive_failures = l.failed;
    c.total_exclusions = l.excluded;
  }
  if (p.trials != nullptr) {
    // resilience4j's half-open metrics: a count window of the permitted
    // trials, whatever the closed state's window. A time window's buckets
    // could drop a trial the decision counts, a smaller count window could
    // hold only the last few.
    c.window_calls = p.trials->reported();
    c.window_failures = p.trials->failed;
    c.window_slow_calls = p.trials->slow;
  } else if (p.window != nullptr) {
    const WindowStats& ws = *p.window;
    c.window_calls = ws.calls;
    c.window_failures = ws.failures;
    c.window_slow_calls = ws.slow;
    if (p.time_window) {
      c.requests = ws.requests;
      c.total_successes = ws.successes;
      c.total_failures = ws.failures;
      c.total_exclusions = ws.exclusions;
      c.consecutive_failures = std::min(c.consecutive_failures, ws.failures);
      c.consecutive_successes = std::min(c.consecutive_successes, ws.successes);
    }
  } else {
    c.window_calls = c.total_successes + c.total_failures;
    c.window_failures = c.total_failures;
    c.window_slow_calls = diff(t.slow_calls, base.slow_calls);
  }
  return c;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_COUNTS_HPP_
