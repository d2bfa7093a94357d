// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the fleet-side components, read through
// their views (fleet_stats.hpp): degrade_fleet_* for a FleetControl,
// degrade_file_watcher_* for both file watchers, degrade_etcd_watcher_* for
// an etcd prefix watcher (docs/metrics.md lists them). Free functions of a
// stats snapshot and the registered name, like overload_metrics.hpp, so they
// are tested with fake views, and the etcd writer needs no cpp-httplib.
//
//   detail::WriteFleetControlMetrics(view.stats(), w.component(), w);
//
// The two file watchers share one family: they are one mechanism
// (detail/file_follower.hpp) whose series mean the same, so one alert on
// degrade_file_watcher_last_success_age_seconds covers both; the
// `document` label ("config", "control") tells them apart.
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_FLEET_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_FLEET_METRICS_HPP_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/time/time.h"
#include "degrade/fleet_stats.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_fleet_*.
inline void WriteFleetControlMetrics(const FleetControlStats& st,
                                     const std::string& name, MetricWriter& w) {
  const std::string label = "fleet_control";
  w.Gauge("degrade_fleet_version",
          "The version of the control document in force; 0 when none is.",
          {{label, name}}, static_cast<double>(st.version_in_force));
  w.Gauge("degrade_fleet_version_floor",
          "The highest control document version applied: older ones are "
          "refused.",
          {{label, name}}, static_cast<double>(st.version));
  w.Gauge("degrade_fleet_in_force",
          "1 while a control document is in force (applied, not lifted, not "
          "expired), else 0.",
          {{label, name}}, st.in_force() ? 1.0 : 0.0);
  // Unix seconds, as degrade_control_expires_at_seconds: `- time()` is the
  // time left, and a dashboard needs no clock of ours.
  w.Gauge("degrade_fleet_expires_at_seconds",
          "When the control document in force ends, in Unix seconds; 0 when "
          "none is.",
          {{label, name}},
          st.in_force()
              // raw-time-ok: an instant as Unix seconds (absl saturates)
              ? absl::ToDoubleSeconds(st.expires_at - absl::UnixEpoch())
              : 0.0);
  w.Counter("degrade_fleet_documents_accepted_total",
            "Control documents put in force.", {{label, name}},
            static_cast<double>(st.accepted));
  w.Counter("degrade_fleet_documents_repeated_total",
            "The control document in force received again (a no-op).",
            {{label, name}}, static_cast<double>(st.repeated));
  for (int i = 0; i < kNumControlRefusals; ++i) {
    const auto why = static_cast<ControlRefusal>(i);
    w.Counter("degrade_fleet_documents_refused_total",
              "Control documents refused (nothing changed), by reason: "
              "malformed, stale, unknown_target, invalid, install_failed.",
              {{label, name}, {"reason", std::string(ControlRefusalName(why))}},
              static_cast<double>(st.refused(why)));
  }
  w.Counter("degrade_fleet_lifts_total",
            "Control documents ended by a lift (the document deleted).",
            {{label, name}}, static_cast<double>(st.lifted));
}

// degrade_file_watcher_*.
inline void WriteFileWatcherMetrics(const FileWatcherStats& st,
                                    const std::string& name, MetricWriter& w) {
  const MetricLabels labels = {
      {"watcher", name},
      {"document", std::string(WatchedDocumentName(st.document))}};
  w.Counter("degrade_file_watcher_polls_total", "Reads of the watched file.",
            labels, static_cast<double>(st.polls));
  w.Counter("degrade_file_watcher_reloads_total",
            "Contents of the watched file put in force.", labels,
            static_cast<double>(st.reloads));
  w.Counter("degrade_file_watcher_errors_total",
            "Contents refused and changes of read error (a repeated error is "
            "counted once).",
            labels, static_cast<double>(st.errors));
  w.Gauge("degrade_file_watcher_last_poll_ok",
          "1 when the latest poll succeeded (or none ran yet), else 0.", labels,
          st.last_poll_ok ? 1.0 : 0.0);
  const bool ever = st.last_success != absl::InfinitePast();
  w.Gauge(
      "degrade_file_watcher_last_success_timestamp_seconds",
      "When a poll last succeeded, in Unix seconds; 0 before the first.",
      labels,
      // raw-time-ok: an instant as Unix seconds (absl saturates)
      ever ? absl::ToDoubleSeconds(st.last_success - absl::UnixEpoch()) : 0.0);
  w.Gauge("degrade_file_watcher_last_success_age_seconds",
          "How long ago a poll last succeeded (never negative); +Inf before "
          "the first.",
          labels,
          ever ? absl::ToDoubleSeconds(st.since_success)
               : std::numeric_limits<double>::infinity());
}

// degrade_etcd_watcher_*.
inline void WriteEtcdWatcherMetrics(const EtcdWatcherStats& st,
                                    const std::string& name, MetricWriter& w) {
  const std::string label = "watcher";
  w.Gauge("degrade_etcd_watcher_state",
          "0 starting, 1 watching, 2 resyncing, 3 outage, 4 stopped.",
          {{label, name}}, static_cast<double>(st.state));
  w.Gauge("degrade_etcd_watcher_last_revision",
          "The highest etcd revision seen; 0 before the first read.",
          {{label, name}}, static_cast<double>(st.last_revision));
  struct Count {
    const char* metric;
    const char* help;
    uint64_t value;
  };
  const Count counts[] = {
      {"degrade_etcd_watcher_reconnects_total",
       "Watch streams opened after the first.", st.reconnects},
      {"degrade_etcd_watcher_resyncs_total",
       "Reads of the prefix after the first (after a stream ended).",
       st.resyncs},
      {"degrade_etcd_watcher_compactions_total",
       "Watches cancelled because their revision was compacted.",
       st.compactions},
      {"degrade_etcd_watcher_cluster_changes_total",
       "Watch streams whose header showed etcd wiped or restored after the "
       "read (another cluster_id, or a revision gone back); each followed "
       "by a resync.",
       st.cluster_changes},
      {"degrade_etcd_watcher_outages_total",
       "Outages begun: etcd unreachable or answering nonsense.", st.outages},
      {"degrade_etcd_watcher_events_total",
       "Changes delivered (on_put and on_delete calls).", st.events_delivered},
      {"degrade_etcd_watcher_values_refused_total",
       "Values not delivered for being over max_value_bytes.",
       st.values_refused},
      {"degrade_etcd_watcher_callback_errors_total", "Callbacks that threw.",
       st.callback_errors},
  };
  for (const Count& c : counts) {
    w.Counter(c.metric, c.help, {{label, name}}, static_cast<double>(c.value));
  }
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_FLEET_METRICS_HPP_
