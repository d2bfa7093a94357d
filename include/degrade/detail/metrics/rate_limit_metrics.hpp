// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the rate limiters (rate_limit.hpp,
// keyed_rate_limit.hpp), read through their views in rate_limit_stats.hpp:
// degrade_rate_limit_* and degrade_keyed_rate_limit_* (docs/metrics.md
// lists them).
//
//   detail::WriteRateLimitMetrics(view.stats(), name, w);
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_RATE_LIMIT_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_RATE_LIMIT_METRICS_HPP_

#include <string>

#include "absl/strings/string_view.h"
#include "degrade/metric_writer.hpp"
#include "degrade/rate_limit_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_rate_limit_*.
inline void WriteRateLimitMetrics(const RateLimitStats& st,
                                  const std::string& name, MetricWriter& w) {
  const std::string label = "rate_limiter";
  // Both outcomes from the start: a rate() over refusals that have not
  // happened yet is 0, not absent.
  constexpr absl::string_view kRequestsHelp =
      "Requests through a rate limiter by result: admitted (with or without "
      "a wait) or refused.";
  w.Counter("degrade_rate_limit_requests_total", kRequestsHelp,
            {{label, name}, {"result", "admitted"}},
            static_cast<double>(st.admitted));
  w.Counter("degrade_rate_limit_requests_total", kRequestsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Counter("degrade_rate_limit_permits_total",
            "Permits the admitted requests took.", {{label, name}},
            static_cast<double>(st.admitted_permits));
  w.Gauge("degrade_rate_limit_rate",
          "The rate a rate limiter allows now, in permits per second "
          "(below the configured rate while warming up).",
          {{label, name}}, st.rate);
  w.Gauge("degrade_rate_limit_configured_rate",
          "A rate limiter's configured rate, in permits per second.",
          {{label, name}}, st.configured_rate);
}

// degrade_keyed_rate_limit_*.
inline void WriteKeyedRateLimitMetrics(const KeyedRateLimitStats& st,
                                       const std::string& name,
                                       MetricWriter& w) {
  const std::string label = "rate_limiter";
  constexpr absl::string_view kRequestsHelp =
      "Requests through a per-key rate limiter by result: admitted or "
      "refused.";
  w.Counter("degrade_keyed_rate_limit_requests_total", kRequestsHelp,
            {{label, name}, {"result", "admitted"}},
            static_cast<double>(st.admitted));
  w.Counter("degrade_keyed_rate_limit_requests_total", kRequestsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Counter("degrade_keyed_rate_limit_permits_total",
            "Permits the admitted requests took, all keys together.",
            {{label, name}}, static_cast<double>(st.admitted_permits));
  w.Gauge("degrade_keyed_rate_limit_rate",
          "A per-key rate limiter's default rate per key, in permits per "
          "second.",
          {{label, name}}, st.rate);
  w.Gauge("degrade_keyed_rate_limit_live_keys",
          "Keys holding state (in debt) in a per-key rate limiter's table.",
          {{label, name}}, static_cast<double>(st.live_keys));
  w.Gauge("degrade_keyed_rate_limit_capacity",
          "Slots of a per-key rate limiter's table (it never grows).",
          {{label, name}}, static_cast<double>(st.capacity));
  constexpr absl::string_view kEvictionsHelp =
      "Entries a per-key rate limiter evicted to make room, by kind: "
      "replenished (lossless) or in_debt (never: always 0).";
  w.Counter("degrade_keyed_rate_limit_evictions_total", kEvictionsHelp,
            {{label, name}, {"kind", "replenished"}},
            static_cast<double>(st.evictions - st.evictions_in_debt));
  w.Counter("degrade_keyed_rate_limit_evictions_total", kEvictionsHelp,
            {{label, name}, {"kind", "in_debt"}},
            static_cast<double>(st.evictions_in_debt));
  w.Counter("degrade_keyed_rate_limit_table_full_total",
            "Requests of a key not held whose two buckets held only keys "
            "in debt (charged to a shared overflow cell, or refused, as "
            "configured).",
            {{label, name}}, static_cast<double>(st.table_full));
  w.Gauge("degrade_keyed_rate_limit_overrides",
          "Keys with their own limit in a per-key rate limiter.",
          {{label, name}}, static_cast<double>(st.overrides));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_RATE_LIMIT_METRICS_HPP_
