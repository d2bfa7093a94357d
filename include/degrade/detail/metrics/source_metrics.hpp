// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the GPU source (gpu_signal.hpp), the
// default features (default_features.hpp) and the segment defaults
// (segment_defaults.hpp), read through their views in source_stats.hpp, and
// the fleet quota (redis/quota.hpp, quota_stats.hpp): degrade_gpu_source_*,
// degrade_default_features_*, degrade_segment_defaults_* and
// degrade_quota_* (docs/metrics.md lists them).
//
//   detail::WriteGpuSourceMetrics(view.stats(), w.component(), w);
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_SOURCE_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_SOURCE_METRICS_HPP_

#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/metric_writer.hpp"
#include "degrade/quota_stats.hpp"
#include "degrade/source_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_gpu_source_*.
inline void WriteGpuSourceMetrics(const GpuSourceStats& st,
                                  const std::string& name, MetricWriter& w) {
  const std::string label = "gpu_source";
  w.Gauge("degrade_gpu_source_available",
          "1 while the GPU source's latest read succeeded (the last poll was "
          "OK), else 0: a manager keeps the last value of a failing GPU.",
          {{label, name}}, st.available ? 1.0 : 0.0);
  w.Gauge("degrade_gpu_source_utilization",
          "The latest successful GPU utilisation reading, 0..1.",
          {{label, name}}, st.utilization);
  w.Counter("degrade_gpu_source_reads_total",
            "GPU utilisation reads, failed ones included.", {{label, name}},
            static_cast<double>(st.reads));
  // Both codes from the start: a rate() over a failure that has not
  // happened yet is 0, not absent.
  constexpr absl::string_view kErrorsHelp =
      "Failed GPU reads by status code: UNAVAILABLE (an NVML call failed) "
      "or OUT_OF_RANGE (NVML reported more than 100%).";
  w.Counter("degrade_gpu_source_errors_total", kErrorsHelp,
            {{label, name}, {"code", "UNAVAILABLE"}},
            static_cast<double>(st.errors_unavailable));
  w.Counter("degrade_gpu_source_errors_total", kErrorsHelp,
            {{label, name}, {"code", "OUT_OF_RANGE"}},
            static_cast<double>(st.errors_out_of_range));
  w.Gauge("degrade_gpu_source_last_nvml_error",
          "NVML's return code of the latest failed NVML call (15: GPU is "
          "lost), kept after recovery; 0 if none failed.",
          {{label, name}}, static_cast<double>(st.last_nvml_error));
}

// degrade_default_features_*.
inline void WriteDefaultFeaturesMetrics(const DefaultFeaturesStats& st,
                                        const std::string& name,
                                        MetricWriter& w) {
  const std::string label = "default_features";
  w.Gauge("degrade_default_features_age_seconds",
          "Age of the serving default-feature vector; +Inf before the first. "
          "A rising age means reloads stopped or are refused.",
          {{label, name}},
          st.age == absl::InfiniteDuration()
              ? std::numeric_limits<double>::infinity()
              : absl::ToDoubleSeconds(st.age));
  w.Gauge("degrade_default_features_dimension",
          "Dimension of the serving default-feature vector; 0 before the "
          "first.",
          {{label, name}}, static_cast<double>(st.dimension));
  constexpr absl::string_view kReloadsHelp =
      "Default-feature loads by result: accepted (swapped in) or refused "
      "(the previous vector kept serving).";
  w.Counter("degrade_default_features_reloads_total", kReloadsHelp,
            {{label, name}, {"result", "accepted"}},
            static_cast<double>(st.accepted));
  w.Counter("degrade_default_features_reloads_total", kReloadsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Gauge("degrade_default_features_last_reload_ok",
          "1 if the latest load was accepted (or none was tried), else 0.",
          {{label, name}}, st.last_ok ? 1.0 : 0.0);
}

// degrade_segment_defaults_*.
inline void WriteSegmentDefaultsMetrics(const SegmentDefaultsStats& st,
                                        const std::string& name,
                                        MetricWriter& w) {
  const std::string label = "segment_defaults";
  w.Gauge("degrade_segment_defaults_age_seconds",
          "Age of the serving set of segment-average vectors; +Inf before "
          "the first. A rising age means reloads stopped or are refused.",
          {{label, name}},
          st.age == absl::InfiniteDuration()
              ? std::numeric_limits<double>::infinity()
              : absl::ToDoubleSeconds(st.age));
  w.Gauge("degrade_segment_defaults_dimension",
          "Dimension of every serving segment vector; 0 before the first.",
          {{label, name}}, static_cast<double>(st.dimension));
  w.Gauge("degrade_segment_defaults_segments",
          "Segments in the serving set; 0 before the first.", {{label, name}},
          static_cast<double>(st.segments));
  constexpr absl::string_view kReloadsHelp =
      "Segment-default loads by result: accepted (swapped in) or refused "
      "(the previous set kept serving).";
  w.Counter("degrade_segment_defaults_reloads_total", kReloadsHelp,
            {{label, name}, {"result", "accepted"}},
            static_cast<double>(st.accepted));
  w.Counter("degrade_segment_defaults_reloads_total", kReloadsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Gauge("degrade_segment_defaults_last_reload_ok",
          "1 if the latest load was accepted (or none was tried), else 0.",
          {{label, name}}, st.last_ok ? 1.0 : 0.0);
  constexpr absl::string_view kLookupsHelp =
      "Segment lookups by result: hit (the segment's vector) or unknown (no "
      "such segment, or nothing loaded: the caller fell to the global "
      "average).";
  w.Counter("degrade_segment_defaults_lookups_total", kLookupsHelp,
            {{label, name}, {"result", "hit"}},
            static_cast<double>(st.lookups_hit));
  w.Counter("degrade_segment_defaults_lookups_total", kLookupsHelp,
            {{label, name}, {"result", "unknown"}},
            static_cast<double>(st.lookups_unknown));
}

// degrade_quota_*.
inline void WriteClusterQuotaMetrics(const ClusterQuotaStats& st,
                                     const std::string& name, MetricWriter& w) {
  const std::string label = "quota";
  constexpr absl::string_view kModeHelp =
      "1 for the fleet quota's mode now, 0 for the others: leasing (spending "
      "Redis leases), grace (Redis not answering; spending what is held and "
      "the last share), fair_share (limit / last known instances, locally).";
  for (QuotaMode m :
       {QuotaMode::kLeasing, QuotaMode::kGrace, QuotaMode::kFairShare}) {
    w.Gauge("degrade_quota_mode", kModeHelp,
            {{label, name}, {"mode", std::string(QuotaModeName(m))}},
            st.mode == m ? 1.0 : 0.0);
  }
  w.Gauge("degrade_quota_limit", "The fleet-wide limit, tokens per second.",
          {{label, name}}, st.limit_per_second);
  w.Gauge("degrade_quota_share",
          "This instance's rate now, tokens per second: its leased share, or "
          "the fair share.",
          {{label, name}}, st.share_per_second);
  w.Gauge("degrade_quota_members",
          "Instances the latest lease counted (the configured expectation "
          "before any).",
          {{label, name}}, static_cast<double>(st.members));
  w.Gauge("degrade_quota_held_tokens",
          "Leased tokens this instance holds and has not spent.",
          {{label, name}}, static_cast<double>(st.held));
  w.Counter("degrade_quota_leased_tokens_total",
            "Tokens Redis granted this instance from the fleet's bucket.",
            {{label, name}}, static_cast<double>(st.leased));
  constexpr absl::string_view kDecisionsHelp =
      "Tokens requests asked for, by result: admitted or refused.";
  w.Counter("degrade_quota_decisions_total", kDecisionsHelp,
            {{label, name}, {"result", "admitted"}},
            static_cast<double>(st.admitted));
  w.Counter("degrade_quota_decisions_total", kDecisionsHelp,
            {{label, name}, {"result", "refused"}},
            static_cast<double>(st.refused));
  w.Counter("degrade_quota_round_trips_total",
            "Lease calls sent to Redis (one script run each).", {{label, name}},
            static_cast<double>(st.round_trips));
  w.Counter("degrade_quota_errors_total",
            "Refreshes that failed: transport errors, a reply that made no "
            "sense, the breaker refusing.",
            {{label, name}}, static_cast<double>(st.errors));
  w.Counter("degrade_quota_limit_conflicts_total",
            "Leases that found the fleet running below this instance's limit "
            "(another live instance is configured with a lower one).",
            {{label, name}}, static_cast<double>(st.limit_conflicts));
  w.Gauge("degrade_quota_fleet_limit",
          "The limit the fleet's bucket ran at in the latest lease, tokens "
          "per second: the lowest among the live instances.",
          {{label, name}}, st.fleet_limit_per_second);
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_SOURCE_METRICS_HPP_
