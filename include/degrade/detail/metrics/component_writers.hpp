// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The registry's side of the generic telemetry seam: which stats types
// `MetricsRegistry::AttachComponent` recognises, the registration kind each
// is exported under and the writer of its series. Wiring a new component to
// the registry is one line here plus its writer (HACKING.md, "Adding a
// component"); the component itself attaches through
// `Telemetry::AttachComponent` and the hub does not change.
//
// Thread safety: called by the registry when a component attaches, from
// the attaching thread; it only reads the view's stats type.

#ifndef DEGRADE_DETAIL_METRICS_COMPONENT_WRITERS_HPP_
#define DEGRADE_DETAIL_METRICS_COMPONENT_WRITERS_HPP_

#include <memory>

#include "absl/strings/string_view.h"
#include "degrade/coalesce_stats.hpp"
#include "degrade/detail/metrics/coalesce_metrics.hpp"
#include "degrade/detail/metrics/fleet_metrics.hpp"
#include "degrade/detail/metrics/ladder_metrics.hpp"
#include "degrade/detail/metrics/rate_limit_metrics.hpp"
#include "degrade/detail/metrics/registry_attachments.hpp"
#include "degrade/detail/metrics/rpc_metrics.hpp"
#include "degrade/detail/metrics/source_metrics.hpp"
#include "degrade/detail/metrics/stale_cache_metrics.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/ladder_stats.hpp"
#include "degrade/quota_stats.hpp"
#include "degrade/rate_limit_stats.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/source_stats.hpp"
#include "degrade/stale_cache_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// One row of the table below: a stats type, the registration kind it is
// exported under and the writer of its series.
template <class S, typename Write>
struct KnownComponent {
  absl::string_view kind;
  Write write;
};
template <class S, typename Write>
KnownComponent<S, Write> Known(absl::string_view kind, Write write) {
  return {kind, write};
}

// Attaches `view` to `registry` with the first row whose stats type is the
// view's; null when none is.
template <typename Registry, class... S, typename... Write>
std::unique_ptr<TelemetryAttachment> AttachFirstKnown(
    Registry& registry, const ComponentView& view,
    KnownComponent<S, Write>... rows) {
  std::unique_ptr<TelemetryAttachment> out;
  auto try_row = [&](const auto* typed, absl::string_view kind, auto write) {
    if (out == nullptr && typed != nullptr) {
      out = AttachView(registry, kind, *typed, write);
    }
  };
  (try_row(view.As<S>(), rows.kind, rows.write), ...);
  return out;
}

// The attachment of a component the registry knows, or null: a component
// whose stats type is not listed here is not exported by the registry
// (another telemetry may still know it).
template <typename Registry>
std::unique_ptr<TelemetryAttachment> AttachKnownComponent(
    Registry& registry, const ComponentView& view) {
  return AttachFirstKnown(
      registry, view,
      Known<FleetControlStats>("fleet_control", WriteFleetControlMetrics),
      Known<FileWatcherStats>("file_watcher", WriteFileWatcherMetrics),
      Known<EtcdWatcherStats>("etcd_watcher", WriteEtcdWatcherMetrics),
      Known<GrpcClientStats>("grpc_client", WriteGrpcClientMetrics),
      Known<GrpcServerStats>("grpc_server", WriteGrpcServerMetrics),
      Known<GpuSourceStats>("gpu_source", WriteGpuSourceMetrics),
      Known<DefaultFeaturesStats>("default_features",
                                  WriteDefaultFeaturesMetrics),
      Known<SegmentDefaultsStats>("segment_defaults",
                                  WriteSegmentDefaultsMetrics),
      Known<RateLimitStats>("rate_limit", WriteRateLimitMetrics),
      Known<KeyedRateLimitStats>("keyed_rate_limit",
                                 WriteKeyedRateLimitMetrics),
      Known<ClusterQuotaStats>("quota", WriteClusterQuotaMetrics),
      Known<LadderStats>("ladder", WriteLadderMetrics),
      Known<RecoveryRampStats>("recovery_ramp", WriteRecoveryRampMetrics),
      Known<LastGoodCacheStats>("last_good_cache", WriteLastGoodCacheMetrics),
      Known<CoalesceStats>("coalesce", WriteCoalesceMetrics));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_COMPONENT_WRITERS_HPP_
