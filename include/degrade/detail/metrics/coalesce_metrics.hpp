// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for a Coalescer (coalesce.hpp), read
// through its view in coalesce_stats.hpp: degrade_coalesce_* (docs/metrics.md
// lists them).
//
//   detail::WriteCoalesceMetrics(view.stats(), name, w);
//
// Thread safety: a pure function of its arguments.

#ifndef DEGRADE_DETAIL_METRICS_COALESCE_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_COALESCE_METRICS_HPP_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "degrade/coalesce_stats.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_coalesce_*.
inline void WriteCoalesceMetrics(const CoalesceStats& st,
                                 const std::string& name, MetricWriter& w) {
  const std::string label = "coalescer";
  // The roles partition the requests, so sum() over them is the request
  // count; the requests that gave up waiting are a series of their own
  // because they are also one of these.
  constexpr absl::string_view kRolesHelp =
      "Requests through a coalescer by role: leader (started the shared "
      "call), joined (waited for one in flight), uncoalesced (table full: a "
      "call of its own) or refused (the executor would not run it).";
  const std::pair<absl::string_view, uint64_t> roles[] = {
      {"leader", st.leaders},
      {"joined", st.joined},
      {"uncoalesced", st.uncoalesced},
      {"refused", st.refused}};
  for (const auto& [role, n] : roles) {
    w.Counter("degrade_coalesce_total", kRolesHelp,
              {{label, name}, {"role", std::string(role)}},
              static_cast<double>(n));
  }
  w.Counter("degrade_coalesce_timed_out_total",
            "Requests that gave up waiting for a coalescer's call at their "
            "own budget (the call went on).",
            {{label, name}}, static_cast<double>(st.timed_out));
  w.Counter("degrade_coalesce_failed_total",
            "Calls a coalescer ran (shared or uncoalesced) that ended with "
            "an error or threw.",
            {{label, name}}, static_cast<double>(st.failed));
  w.Counter("degrade_coalesce_completed_total",
            "Calls a coalescer ran (shared or uncoalesced) that ended.",
            {{label, name}}, static_cast<double>(st.completed));
  w.Counter("degrade_coalesce_call_seconds_total",
            "Seconds the ended calls of a coalescer took, all together.",
            {{label, name}}, st.call_seconds);
  w.Gauge("degrade_coalesce_inflight",
          "Keys with a shared call in flight in a coalescer.", {{label, name}},
          static_cast<double>(st.inflight));
  w.Gauge("degrade_coalesce_max_inflight",
          "The bound on a coalescer's keys in flight (beyond it requests "
          "run uncoalesced).",
          {{label, name}}, static_cast<double>(st.max_inflight));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_COALESCE_METRICS_HPP_
