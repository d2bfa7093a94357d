// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for a hedging policy, read through its
// view (hedge_stats.hpp): degrade_hedge_* (docs/metrics.md lists them). A
// free function of a stats snapshot and the registered name, like
// overload_metrics.hpp, so it is tested with a fake view and the policy
// knows none of it.
//
//   detail::WriteHedgeMetrics(view.stats(), w.component(), w);
//
// Thread safety: a pure function of its arguments.

#ifndef DEGRADE_DETAIL_METRICS_HEDGE_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_HEDGE_METRICS_HPP_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "degrade/hedge_stats.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_hedge_*.
inline void WriteHedgeMetrics(const HedgeStats& st, const std::string& name,
                              MetricWriter& w) {
  const std::string label = "hedge";
  w.Counter("degrade_hedge_calls_total", "Calls run through the hedge policy.",
            {{label, name}}, static_cast<double>(st.calls));
  w.Counter("degrade_hedge_sent_total",
            "Extra attempts (hedges) sent because no attempt had answered "
            "within the delay.",
            {{label, name}}, static_cast<double>(st.hedges_sent));
  w.Counter("degrade_hedge_won_total", "Calls answered by a hedge.",
            {{label, name}}, static_cast<double>(st.hedges_won));
  w.Counter("degrade_hedge_cancelled_total",
            "Attempts that lost the race and were told to stop (counted as "
            "excluded at the breaker).",
            {{label, name}}, static_cast<double>(st.attempts_cancelled));
  // One series per reason from the start, so rate() of either is 0, not
  // absent, until the first.
  const std::pair<const char*, uint64_t> not_sent[] = {
      {"budget", st.hedges_over_budget}, {"refused", st.hedges_refused}};
  for (const auto& [reason, count] : not_sent) {
    w.Counter("degrade_hedge_not_sent_total",
              "Hedges that were due but not sent: budget (the max_extra_load "
              "cap), refused (the executor or the breaker).",
              {{label, name}, {"reason", reason}}, static_cast<double>(count));
  }
  w.Gauge("degrade_hedge_delay_seconds",
          "The hedge delay in force (fixed, or the latency quantile); +Inf "
          "while too few latencies are known to hedge.",
          {{label, name}},
          st.delay == absl::InfiniteDuration()
              ? std::numeric_limits<double>::infinity()
              : absl::ToDoubleSeconds(st.delay));
  w.Gauge("degrade_hedge_extra_load_ratio",
          "Hedges per call over the policy's sliding window (capped by "
          "max_extra_load).",
          {{label, name}}, st.extra_load);
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_HEDGE_METRICS_HPP_
