// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degrade.hpp
// -----------------------------------------------------------------------------
//
// The umbrella header: includes every public header of degrade. Prefer the
// specific header in code that cares about compile time.

#ifndef DEGRADE_DEGRADE_HPP_
#define DEGRADE_DEGRADE_HPP_

#include "degrade/admission.hpp"            // IWYU pragma: export
#include "degrade/admission_queue.hpp"      // IWYU pragma: export
#include "degrade/breaker_family.hpp"       // IWYU pragma: export
#include "degrade/breaker_listener.hpp"     // IWYU pragma: export
#include "degrade/breaker_settings.hpp"     // IWYU pragma: export
#include "degrade/breaker_types.hpp"        // IWYU pragma: export
#include "degrade/circuit_breaker.hpp"      // IWYU pragma: export
#include "degrade/clock.hpp"                // IWYU pragma: export
#include "degrade/coalesce.hpp"             // IWYU pragma: export
#include "degrade/coalesce_stats.hpp"       // IWYU pragma: export
#include "degrade/concurrency_limiter.hpp"  // IWYU pragma: export
#include "degrade/config.hpp"               // IWYU pragma: export
#include "degrade/config_parse.hpp"         // IWYU pragma: export
#include "degrade/config_watcher.hpp"       // IWYU pragma: export
#include "degrade/control_document.hpp"     // IWYU pragma: export
#include "degrade/control_watcher.hpp"      // IWYU pragma: export
#include "degrade/deadline.hpp"             // IWYU pragma: export
#include "degrade/default_features.hpp"     // IWYU pragma: export
#include "degrade/degradation_config.hpp"   // IWYU pragma: export
#include "degrade/degradation_episode.hpp"  // IWYU pragma: export
#include "degrade/degradation_manager.hpp"  // IWYU pragma: export
#include "degrade/degradation_trace.hpp"    // IWYU pragma: export
#include "degrade/degrade_reason.hpp"       // IWYU pragma: export
#include "degrade/escalation.hpp"           // IWYU pragma: export
#include "degrade/event_log.hpp"            // IWYU pragma: export
#include "degrade/fallback.hpp"             // IWYU pragma: export
#include "degrade/fan_out.hpp"              // IWYU pragma: export
#include "degrade/feature_gate.hpp"         // IWYU pragma: export
#include "degrade/fleet_control.hpp"        // IWYU pragma: export
#include "degrade/fleet_stats.hpp"          // IWYU pragma: export
#include "degrade/gpu_signal.hpp"           // IWYU pragma: export
#include "degrade/hedge.hpp"                // IWYU pragma: export
#include "degrade/hedge_settings.hpp"       // IWYU pragma: export
#include "degrade/hedge_stats.hpp"          // IWYU pragma: export
#include "degrade/hot_list.hpp"             // IWYU pragma: export
#include "degrade/hot_list_stats.hpp"       // IWYU pragma: export
#include "degrade/keyed_rate_limit.hpp"     // IWYU pragma: export
#include "degrade/ladder.hpp"               // IWYU pragma: export
#include "degrade/ladder_stats.hpp"         // IWYU pragma: export
#include "degrade/level_change.hpp"         // IWYU pragma: export
#include "degrade/limiter_settings.hpp"     // IWYU pragma: export
#include "degrade/manager_listener.hpp"     // IWYU pragma: export
#include "degrade/metric_writer.hpp"        // IWYU pragma: export
#include "degrade/metrics.hpp"              // IWYU pragma: export
#include "degrade/metrics_registry.hpp"     // IWYU pragma: export
#include "degrade/overload_stats.hpp"       // IWYU pragma: export
#include "degrade/queue_settings.hpp"       // IWYU pragma: export
#include "degrade/quota_stats.hpp"          // IWYU pragma: export
#include "degrade/rate_limit.hpp"           // IWYU pragma: export
#include "degrade/rate_limit_stats.hpp"     // IWYU pragma: export
#include "degrade/recovery_ramp.hpp"        // IWYU pragma: export
#include "degrade/request_class.hpp"        // IWYU pragma: export
#include "degrade/retry.hpp"                // IWYU pragma: export
#include "degrade/retry_budget.hpp"         // IWYU pragma: export
#include "degrade/retry_stats.hpp"          // IWYU pragma: export
#include "degrade/rpc_stats.hpp"            // IWYU pragma: export
#include "degrade/segment_defaults.hpp"     // IWYU pragma: export
#include "degrade/signals.hpp"              // IWYU pragma: export
#include "degrade/source_stats.hpp"         // IWYU pragma: export
#include "degrade/stage_metrics.hpp"        // IWYU pragma: export
#include "degrade/stage_result.hpp"         // IWYU pragma: export
#include "degrade/stale_cache.hpp"          // IWYU pragma: export
#include "degrade/stale_cache_stats.hpp"    // IWYU pragma: export
#include "degrade/stats_view.hpp"           // IWYU pragma: export
#include "degrade/status.hpp"               // IWYU pragma: export
#include "degrade/telemetry.hpp"            // IWYU pragma: export
#include "degrade/throttle.hpp"             // IWYU pragma: export
#include "degrade/trip.hpp"                 // IWYU pragma: export
#include "degrade/trust_policy.hpp"         // IWYU pragma: export
#include "degrade/version.hpp"              // IWYU pragma: export
#include "degrade/with_fallback.hpp"        // IWYU pragma: export

#endif  // DEGRADE_DEGRADE_HPP_
