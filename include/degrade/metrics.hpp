// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: metrics.hpp
// -----------------------------------------------------------------------------
//
// The observability umbrella: everything operators see, in one include.
//
//   * metrics_registry.hpp: MetricsRegistry (the Telemetry degrade ships:
//     Prometheus text and JSON export, degradation episodes, event lines)
//     and MetricWriter (metric_writer.hpp) for custom collectors;
//   * stage_metrics.hpp: StageMetrics, per-request fallbacks by stage and
//     reason, and how many stages each request lost;
//   * escalation.hpp: EscalationWatch, which pages a human when a
//     degradation has lasted too long;
//   * event_log.hpp: the rate-limited JSON event lines.
//
//   degrade::SetDefaultTelemetry(&degrade::MetricsRegistry::Default());
//   // ... build breakers, managers, hot lists: they are exported.
//   std::string body = degrade::MetricsRegistry::Default().RenderPrometheus();
//
// No library header includes this one; include it, or the one header you
// use, in your own code.

#ifndef DEGRADE_METRICS_HPP_
#define DEGRADE_METRICS_HPP_

#include "degrade/escalation.hpp"        // IWYU pragma: export
#include "degrade/event_log.hpp"         // IWYU pragma: export
#include "degrade/metric_writer.hpp"     // IWYU pragma: export
#include "degrade/metrics_registry.hpp"  // IWYU pragma: export
#include "degrade/stage_metrics.hpp"     // IWYU pragma: export
#include "degrade/telemetry.hpp"         // IWYU pragma: export

#endif  // DEGRADE_METRICS_HPP_
