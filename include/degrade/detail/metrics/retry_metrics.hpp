// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the retry components, read through
// their views in retry_stats.hpp: degrade_retry_budget_*, degrade_retry_*
// and degrade_throttle_* (docs/metrics.md lists them). Free functions of a
// stats snapshot and the registered name, as in overload_metrics.hpp, so
// they are tested with fake views and the components know none of it.
//
//   detail::WriteRetrierMetrics(view.stats(), w.component(), w);
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_RETRY_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_RETRY_METRICS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "degrade/metric_writer.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_retry_budget_*.
inline void WriteRetryBudgetMetrics(const RetryBudgetStats& st,
                                    const std::string& name, MetricWriter& w) {
  const std::string label = "budget";
  w.Gauge("degrade_retry_budget_balance",
          "Retries the budget would grant now (percent of the window's "
          "requests plus the floor, minus the window's retries).",
          {{label, name}}, st.balance);
  w.Gauge("degrade_retry_budget_window_requests",
          "Requests deposited over the budget's sliding window.",
          {{label, name}}, static_cast<double>(st.window_requests));
  w.Gauge("degrade_retry_budget_window_retries",
          "Retries withdrawn over the budget's sliding window.",
          {{label, name}}, static_cast<double>(st.window_retries));
  w.Counter("degrade_retry_budget_granted_total", "Retries the budget allowed.",
            {{label, name}}, static_cast<double>(st.granted));
  w.Counter("degrade_retry_budget_refused_total",
            "Retries the budget refused: the caller returned the error it "
            "had.",
            {{label, name}}, static_cast<double>(st.refused));
}

// The attempts histogram's bounds: 1, 2, ..., kAttemptBuckets - 1 (the
// overflow bucket holds kAttemptBuckets, the most a policy allows).
inline const std::array<double, kAttemptBuckets - 1>& AttemptBounds() {
  static const std::array<double, kAttemptBuckets - 1> bounds = [] {
    std::array<double, kAttemptBuckets - 1> b{};
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<double>(i + 1);
    return b;
  }();
  return bounds;
}

// degrade_retry_*.
inline void WriteRetrierMetrics(const RetrierStats& st, const std::string& name,
                                MetricWriter& w) {
  const std::string label = "retrier";
  double sum = 0;
  for (std::size_t i = 0; i < kAttemptBuckets; ++i) {
    sum += static_cast<double>(i + 1) * static_cast<double>(st.attempts[i]);
  }
  w.Histogram("degrade_retry_attempts",
              "Attempts made per call, the first included.", {{label, name}},
              AttemptBounds(), st.attempts, sum);
  for (std::size_t i = 0; i < kNumRetryStops; ++i) {
    w.Counter("degrade_retry_calls_total",
              "Calls through the retrier, by why they stopped (succeeded, "
              "not_retryable, attempts_exhausted, deadline, "
              "budget_exhausted, do_not_retry, breaker_rejected, shed).",
              {{label, name},
               {"stop", std::string(RetryStopName(static_cast<RetryStop>(i)))}},
              static_cast<double>(st.stops[i]));
  }
}

// degrade_throttle_*.
inline void WriteThrottleMetrics(const ThrottleStats& st,
                                 const std::string& name, MetricWriter& w) {
  const std::string label = "throttle";
  w.Gauge("degrade_throttle_rejection_probability",
          "The probability a request is refused locally now.", {{label, name}},
          st.rejection_probability);
  w.Gauge("degrade_throttle_window_requests",
          "Requests asked for over the throttler's sliding window.",
          {{label, name}}, static_cast<double>(st.window_requests));
  w.Gauge("degrade_throttle_window_accepts",
          "Requests the server accepted over the sliding window.",
          {{label, name}}, static_cast<double>(st.window_accepts));
  w.Counter("degrade_throttle_admitted_total",
            "Requests the throttler let through.", {{label, name}},
            static_cast<double>(st.admitted));
  w.Counter("degrade_throttle_rejected_total",
            "Requests refused locally (a ThrottledError), never sent.",
            {{label, name}}, static_cast<double>(st.throttled));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_RETRY_METRICS_HPP_
