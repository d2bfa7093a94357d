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
#include "degrade/detail/metrics/fleet_metrics.hpp"
#include "degrade/detail/metrics/registry_attachments.hpp"
#include "degrade/detail/metrics/rpc_metrics.hpp"
#include "degrade/detail/metrics/source_metrics.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/source_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Attaches `view` to `registry` when `S` is its stats type; otherwise
// leaves `out` as it was. One call per known component below.
template <class S, typename Registry, typename Write>
void AttachIfStats(Registry& registry, const ComponentView& view,
                   absl::string_view kind, Write write,
                   std::unique_ptr<TelemetryAttachment>& out) {
  if (out != nullptr) return;
  if (const StatsView<S>* typed = view.As<S>()) {
    out = AttachView(registry, kind, *typed, write);
  }
}

// The attachment of a component the registry knows, or null: a component
// whose stats type is not listed here is not exported by the registry
// (another telemetry may still know it).
template <typename Registry>
std::unique_ptr<TelemetryAttachment> AttachKnownComponent(
    Registry& registry, const ComponentView& view) {
  std::unique_ptr<TelemetryAttachment> out;
  // fleet
  AttachIfStats<FleetControlStats>(registry, view, "fleet_control",
                                   WriteFleetControlMetrics, out);
  AttachIfStats<FileWatcherStats>(registry, view, "file_watcher",
                                  WriteFileWatcherMetrics, out);
  AttachIfStats<EtcdWatcherStats>(registry, view, "etcd_watcher",
                                  WriteEtcdWatcherMetrics, out);
  // rpc, gpu, features
  AttachIfStats<GrpcClientStats>(registry, view, "grpc_client",
                                 WriteGrpcClientMetrics, out);
  AttachIfStats<GrpcServerStats>(registry, view, "grpc_server",
                                 WriteGrpcServerMetrics, out);
  AttachIfStats<GpuSourceStats>(registry, view, "gpu_source",
                                WriteGpuSourceMetrics, out);
  AttachIfStats<DefaultFeaturesStats>(registry, view, "default_features",
                                      WriteDefaultFeaturesMetrics, out);
  return out;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_COMPONENT_WRITERS_HPP_
