// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the GPU source (gpu_signal.hpp) and the
// default features (default_features.hpp), read through their views in
// source_stats.hpp: degrade_gpu_source_* and degrade_default_features_*
// (docs/metrics.md lists them).
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

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_SOURCE_METRICS_HPP_
