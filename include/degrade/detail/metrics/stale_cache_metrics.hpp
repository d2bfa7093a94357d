// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for a LastGoodCache (stale_cache.hpp),
// read through its view in stale_cache_stats.hpp: degrade_cache_*
// (docs/metrics.md lists them).
//
//   detail::WriteLastGoodCacheMetrics(view.stats(), name, w);
//
// Thread safety: a pure function of its arguments.

#ifndef DEGRADE_DETAIL_METRICS_STALE_CACHE_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_STALE_CACHE_METRICS_HPP_

#include <string>

#include "absl/strings/string_view.h"
#include "degrade/metric_writer.hpp"
#include "degrade/stale_cache_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_cache_*.
inline void WriteLastGoodCacheMetrics(const LastGoodCacheStats& st,
                                      const std::string& name,
                                      MetricWriter& w) {
  const std::string label = "cache";
  w.Gauge("degrade_cache_entries", "Values a last-good cache holds.",
          {{label, name}}, static_cast<double>(st.entries));
  w.Gauge("degrade_cache_bytes",
          "Bytes a last-good cache charges for the values it holds (key + "
          "value + per-entry overhead).",
          {{label, name}}, static_cast<double>(st.bytes));
  w.Gauge("degrade_cache_max_bytes",
          "A last-good cache's byte bound (degrade_cache_bytes never "
          "exceeds it).",
          {{label, name}}, static_cast<double>(st.max_bytes));
  w.Gauge("degrade_cache_max_entries",
          "A last-good cache's entry bound (degrade_cache_entries never "
          "exceeds it).",
          {{label, name}}, static_cast<double>(st.max_entries));
  // Every result and reason from the start: a rate() over what has not
  // happened yet is 0, not absent.
  constexpr absl::string_view kLookupsHelp =
      "Lookups in a last-good cache by result: hit (a value young enough), "
      "miss (none), too_old (older than the lookup allowed).";
  w.Counter("degrade_cache_lookups_total", kLookupsHelp,
            {{label, name}, {"result", "hit"}}, static_cast<double>(st.hits));
  w.Counter("degrade_cache_lookups_total", kLookupsHelp,
            {{label, name}, {"result", "miss"}},
            static_cast<double>(st.misses));
  w.Counter("degrade_cache_lookups_total", kLookupsHelp,
            {{label, name}, {"result", "too_old"}},
            static_cast<double>(st.too_old));
  constexpr absl::string_view kEvictionsHelp =
      "Values that left a last-good cache by reason: size (to make room), "
      "age (older than max_age), explicit (erased).";
  w.Counter("degrade_cache_evictions_total", kEvictionsHelp,
            {{label, name}, {"reason", "size"}},
            static_cast<double>(st.evictions_size));
  w.Counter("degrade_cache_evictions_total", kEvictionsHelp,
            {{label, name}, {"reason", "age"}},
            static_cast<double>(st.evictions_age));
  w.Counter("degrade_cache_evictions_total", kEvictionsHelp,
            {{label, name}, {"reason", "explicit"}},
            static_cast<double>(st.evictions_explicit));
  w.Counter("degrade_cache_inserts_total",
            "Puts that stored a key a last-good cache did not hold.",
            {{label, name}}, static_cast<double>(st.inserts));
  w.Counter("degrade_cache_refused_total",
            "Puts a last-good cache refused: a value heavier than a shard's "
            "byte budget, a null value, or a clock at an infinite time.",
            {{label, name}},
            static_cast<double>(st.refused_too_big + st.refused_null +
                                st.refused_clock));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_STALE_CACHE_METRICS_HPP_
