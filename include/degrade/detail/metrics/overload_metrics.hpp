// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the overload-control components
// (admission controller, disciplined queue, concurrency limiter), read
// through their views in overload_stats.hpp: degrade_admission_*,
// degrade_queue_* and degrade_limiter_* (docs/metrics.md lists them). Free
// functions of a stats snapshot and the registered name, so they are tested
// with fake views and the components know none of it.
//
//   detail::WriteQueueMetrics(view.stats(), w.component(), w);
//
// Each writer takes one snapshot: a scrape sees one consistent stats value
// per component (the counters the component keeps are read once).
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_OVERLOAD_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_OVERLOAD_METRICS_HPP_

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/metric_writer.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// One counter per criticality, labelled {<component_label>=name,
// criticality=CRITICAL_PLUS|...}: every class has a series from the start,
// so a rate() over a class that has not been shed yet is 0, not absent.
inline void WritePerCriticality(MetricWriter& w, absl::string_view metric,
                                absl::string_view help,
                                const std::string& component_label,
                                const std::string& name,
                                const PerCriticality& counts) {
  for (std::size_t i = 0; i < kNumCriticalities; ++i) {
    w.Counter(metric, help,
              {{component_label, name},
               {"criticality",
                std::string(CriticalityName(static_cast<Criticality>(i)))}},
              static_cast<double>(counts[i]));
  }
}

// The sojourn histogram's bounds in seconds (Prometheus' base unit), from
// kSojournBucketsMs.
inline const std::array<double, kSojournBucketsMs.size()>&
SojournBoundsSeconds() {
  static const std::array<double, kSojournBucketsMs.size()> bounds = [] {
    std::array<double, kSojournBucketsMs.size()> b{};
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = kSojournBucketsMs[i] / 1000.0;
    return b;
  }();
  return bounds;
}

// degrade_admission_*.
inline void WriteAdmissionMetrics(const AdmissionStats& st,
                                  const std::string& name, MetricWriter& w) {
  const std::string label = "admission";
  WritePerCriticality(w, "degrade_admission_admitted_total",
                      "Requests the admission controller let through, by "
                      "criticality.",
                      label, name, st.admitted);
  WritePerCriticality(w, "degrade_admission_shed_total",
                      "Requests the admission controller refused (a "
                      "ShedError), by criticality.",
                      label, name, st.shed);
  w.Gauge("degrade_admission_threshold",
          "The rank threshold in force: ranks below it are admitted "
          "(criticality * 128 + cohort); 512 admits everything.",
          {{label, name}}, static_cast<double>(st.threshold));
}

// degrade_queue_*.
inline void WriteQueueMetrics(const QueueStats& st, const std::string& name,
                              MetricWriter& w) {
  const std::string label = "queue";
  w.Gauge("degrade_queue_depth", "Items waiting in the queue.", {{label, name}},
          static_cast<double>(st.depth));
  w.Gauge("degrade_queue_capacity", "The queue's hard capacity.",
          {{label, name}}, static_cast<double>(st.capacity));
  w.Gauge("degrade_queue_lifo",
          "1 while the queue serves newest first (a standing queue formed), "
          "else 0.",
          {{label, name}}, st.lifo ? 1.0 : 0.0);
  w.Gauge("degrade_queue_overloaded",
          "1 while CoDel considers the queue overloaded, else 0.",
          {{label, name}}, st.overloaded ? 1.0 : 0.0);
  w.Counter("degrade_queue_pushed_total", "Items accepted into the queue.",
            {{label, name}}, static_cast<double>(st.pushed));
  w.Counter("degrade_queue_popped_total", "Items handed out for service.",
            {{label, name}}, static_cast<double>(st.popped));
  for (std::size_t i = 0; i < kNumDropReasons; ++i) {
    w.Counter(
        "degrade_queue_drops_total",
        "Items let go without service, by reason: capacity (full), "
        "codel (standing queue), deadline (could not be met), shed "
        "(below the admission threshold).",
        {{label, name},
         {"reason", std::string(DropReasonName(static_cast<DropReason>(i)))}},
        static_cast<double>(st.drops[i]));
  }
  w.Histogram("degrade_queue_sojourn_seconds",
              "Time the popped items waited in the queue.", {{label, name}},
              SojournBoundsSeconds(), st.sojourn_buckets,
              absl::ToDoubleSeconds(st.sojourn_sum));
}

// degrade_limiter_*.
inline void WriteLimiterMetrics(const LimiterStats& st, const std::string& name,
                                MetricWriter& w) {
  const std::string label = "limiter";
  w.Gauge("degrade_limiter_limit", "The concurrency limit now in force.",
          {{label, name}}, static_cast<double>(st.limit));
  w.Gauge("degrade_limiter_in_flight", "Permits held right now.",
          {{label, name}}, static_cast<double>(st.in_flight));
  WritePerCriticality(w, "degrade_limiter_acquired_total",
                      "Permits granted, by criticality.", label, name,
                      st.acquired);
  WritePerCriticality(w, "degrade_limiter_rejected_total",
                      "Permits refused at the limit (a ShedError), by "
                      "criticality.",
                      label, name, st.rejected);
  constexpr absl::string_view kOutcomesHelp =
      "How granted permits ended: success (with a latency), dropped "
      "(timeout or overload: the limit decreases), ignored (no signal).";
  const std::pair<const char*, uint64_t> outcomes[] = {
      {"success", st.succeeded},
      {"dropped", st.dropped},
      {"ignored", st.ignored}};
  for (const auto& [outcome, count] : outcomes) {
    w.Counter("degrade_limiter_outcomes_total", kOutcomesHelp,
              {{label, name}, {"outcome", outcome}},
              static_cast<double>(count));
  }
  w.Gauge("degrade_limiter_no_load_latency_seconds",
          "The limit algorithm's estimate of the latency without queueing; 0 "
          "for a fixed limit or before the first sample.",
          {{label, name}}, absl::ToDoubleSeconds(st.no_load_latency));
  // A limit pinned low for minutes reads very differently while the no-load
  // latency is being re-measured (admissions may be held on purpose).
  w.Gauge("degrade_limiter_re_measuring",
          "1 while the no-load latency is being re-measured, else 0.",
          {{label, name}}, st.re_measuring ? 1.0 : 0.0);
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_OVERLOAD_METRICS_HPP_
