// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for a fallback ladder (ladder.hpp) and a
// recovery ramp (recovery_ramp.hpp), read through their views in
// ladder_stats.hpp: degrade_ladder_*, degrade_stale_age_seconds and
// degrade_recovery_ramp_* (docs/metrics.md lists them).
//
//   detail::WriteLadderMetrics(view.stats(), name, w);
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_LADDER_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_LADDER_METRICS_HPP_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "degrade/degrade_reason.hpp"
#include "degrade/ladder_stats.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_ladder_* and degrade_stale_age_seconds.
inline void WriteLadderMetrics(const LadderStats& st, const std::string& name,
                               MetricWriter& w) {
  const std::string label = "ladder";
  // Every rung from the start, so that a share computed before the first
  // outage is 0, not absent.
  constexpr absl::string_view kServedHelp =
      "Requests a fallback ladder served, by rung: fresh (the live call), "
      "stale-1m/-10m/-1h/-old (the key's own last-known-good value, by "
      "age), segment, global (defaults), failed (no rung left).";
  const auto served = [&](absl::string_view tier, uint64_t n) {
    w.Counter("degrade_ladder_served_total", kServedHelp,
              {{label, name}, {"tier", std::string(tier)}},
              static_cast<double>(n));
  };
  served("fresh", st.fresh);
  served(TierName(FallbackTier::kStale1m), st.stale[0]);
  served(TierName(FallbackTier::kStale10m), st.stale[1]);
  served(TierName(FallbackTier::kStale1h), st.stale[2]);
  served(TierName(FallbackTier::kStaleOld), st.stale[3]);
  served(TierName(FallbackTier::kSegment), st.segment);
  served(TierName(FallbackTier::kGlobal), st.global);
  served("failed", st.failed);
  w.Counter("degrade_ladder_store_calls_total",
            "Live calls a fallback ladder made to its store.", {{label, name}},
            static_cast<double>(st.store_calls));
  w.Counter("degrade_ladder_limit_refused_total",
            "Requests a fallback ladder served down the ladder because its "
            "admit rung (a fleet quota, a rate limit) refused the live call.",
            {{label, name}}, static_cast<double>(st.limit_refused));
  w.Counter("degrade_ladder_ramp_refused_total",
            "Requests a fallback ladder served down the ladder because its "
            "recovery ramp had no room for the live call.",
            {{label, name}}, static_cast<double>(st.ramp_refused));
  w.Counter("degrade_ladder_cached_fresh_total",
            "Requests a fallback ladder served from its cache without a call "
            "because the value was younger than fresh_for (counted in "
            "tier=fresh too).",
            {{label, name}}, static_cast<double>(st.cached_fresh));
  w.Counter("degrade_ladder_revalidations_total",
            "Background refreshes a fallback ladder began while serving a "
            "stale value (stale-while-revalidate).",
            {{label, name}}, static_cast<double>(st.revalidations));
  w.Histogram(
      "degrade_stale_age_seconds",
      "The ages of the last-known-good values a fallback ladder "
      "served, in seconds.",
      {{label, name}},
      absl::Span<const double>(kStaleAgeBounds.data(), kStaleAgeBounds.size()),
      absl::Span<const uint64_t>(st.stale_age_buckets.data(),
                                 st.stale_age_buckets.size()),
      st.stale_age_sum_seconds);
}

// degrade_recovery_ramp_*.
inline void WriteRecoveryRampMetrics(const RecoveryRampStats& st,
                                     const std::string& name, MetricWriter& w) {
  const std::string label = "ramp";
  w.Gauge("degrade_recovery_ramp_state",
          "Where a recovery ramp stands: 0 steady, 1 the breaker is not "
          "closed (rate frozen), 2 ramping back up.",
          {{label, name}}, static_cast<double>(st.state));
  w.Gauge("degrade_recovery_ramp_base_rate",
          "The pre-outage call rate a recovery ramp measures against, per "
          "second.",
          {{label, name}}, st.base_rate);
  w.Gauge("degrade_recovery_ramp_allowed_rate",
          "The call rate a recovery ramp admits now, per second (0 when not "
          "ramping: no cap).",
          {{label, name}}, st.allowed_rate);
  constexpr absl::string_view kCallsHelp =
      "Live calls through a recovery ramp by result: admitted, refused (sent "
      "down the fallback ladder), forced (refused, then admitted because the "
      "key had nothing cached), passed (the breaker was not closed).";
  w.Counter("degrade_recovery_ramp_calls_total", kCallsHelp,
            {{label, name}, {"result", "admitted"}},
            static_cast<double>(st.admitted));
  w.Counter("degrade_recovery_ramp_calls_total", kCallsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Counter("degrade_recovery_ramp_calls_total", kCallsHelp,
            {{label, name}, {"result", "passed"}},
            static_cast<double>(st.passed_while_open));
  w.Counter("degrade_recovery_ramp_calls_total", kCallsHelp,
            {{label, name}, {"result", "forced"}},
            static_cast<double>(st.forced));
  w.Counter("degrade_recovery_ramp_outages_total",
            "Times a recovery ramp saw its breaker leave closed.",
            {{label, name}}, static_cast<double>(st.outages));
  w.Counter("degrade_recovery_ramps_total", "Recovery ramps begun.",
            {{label, name}}, static_cast<double>(st.ramps));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_LADDER_METRICS_HPP_
