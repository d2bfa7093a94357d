// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: fleet_stats.hpp
// -----------------------------------------------------------------------------
//
// What the fleet-side components report, as plain values, and the views
// they offer a `Telemetry` (stats_view.hpp) so that an operator can see,
// on the dashboards they already have, whether an instance follows its
// fleet:
//
//   * `FleetControl` (fleet_control.hpp): the control document in force,
//     its version and end, and documents accepted or refused by reason;
//   * `ConfigFileWatcher` (config_watcher.hpp) and `ControlFileWatcher`
//     (control_watcher.hpp), one mechanism, one stats type: reloads,
//     errors and when a poll last succeeded;
//   * `etcd::EtcdPrefixWatcher` (etcd/watcher.hpp): its state, resyncs,
//     outages and the last revision seen. Its stats live here, not in the
//     adapter, so that a metrics writer reads them without cpp-httplib.
//
// A telemetry reads them through `Telemetry::AttachComponent`:
//
//   std::unique_ptr<degrade::TelemetryAttachment> AttachComponent(
//       const degrade::ComponentView& view) override {
//     if (const degrade::FleetControlView* f =
//             view.As<degrade::FleetControlStats>()) {
//       fleets_.push_back(f);  // read f->stats() until the attachment dies
//     }
//     return std::make_unique<Detach>(this, &view);
//   }
//
// Thread safety: the structs are plain values; the views are as thread-safe
// as StatsView says.

#ifndef DEGRADE_FLEET_STATS_HPP_
#define DEGRADE_FLEET_STATS_HPP_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ---- FleetControl -----------------------------------------------------------

// Why a FleetControl refused a document. Every refusal has one, so the
// refused counters sum to the refusals.
enum class ControlRefusal : uint8_t {
  kMalformed = 0,      // not a control document (parse, fields, expired)
  kStale = 1,          // version not above the floor (an old document, or
                       // the same version with other content)
  kUnknownTarget = 2,  // names a manager or breaker not registered here
  kInvalid = 3,        // a manager's or breaker's own rules refused it
  kInstallFailed = 4,  // refused while being put in force (a race), undone
};

inline constexpr int kNumControlRefusals = 5;

// "malformed", "stale", "unknown_target", "invalid", "install_failed":
// metric labels.
inline absl::string_view ControlRefusalName(ControlRefusal r) {
  switch (r) {
    case ControlRefusal::kMalformed:
      return "malformed";
    case ControlRefusal::kStale:
      return "stale";
    case ControlRefusal::kUnknownTarget:
      return "unknown_target";
    case ControlRefusal::kInvalid:
      return "invalid";
    case ControlRefusal::kInstallFailed:
      return "install_failed";
  }
  return "unknown";
}

struct FleetControlStats {
  // The highest version applied (the floor; 0 before the first).
  uint64_t version = 0;
  // The document in force (applied, not lifted, not expired): its version
  // and end. 0 and InfinitePast() when none is.
  uint64_t version_in_force = 0;
  absl::Time expires_at = absl::InfinitePast();
  bool in_force() const { return version_in_force != 0; }

  uint64_t accepted = 0;  // documents put in force
  uint64_t repeated = 0;  // the document in force again: a no-op
  uint64_t lifted = 0;    // documents ended by Lift()
  // Refusals by reason (ControlRefusal).
  uint64_t refused_malformed = 0;
  uint64_t refused_stale = 0;
  uint64_t refused_unknown_target = 0;
  uint64_t refused_invalid = 0;
  uint64_t refused_install_failed = 0;

  uint64_t refused(ControlRefusal r) const {
    switch (r) {
      case ControlRefusal::kMalformed:
        return refused_malformed;
      case ControlRefusal::kStale:
        return refused_stale;
      case ControlRefusal::kUnknownTarget:
        return refused_unknown_target;
      case ControlRefusal::kInvalid:
        return refused_invalid;
      case ControlRefusal::kInstallFailed:
        return refused_install_failed;
    }
    return 0;
  }
  uint64_t refused_total() const {
    uint64_t n = 0;
    for (int i = 0; i < kNumControlRefusals; ++i) {
      n += refused(static_cast<ControlRefusal>(i));
    }
    return n;
  }
};

using FleetControlView = StatsView<FleetControlStats>;

// ---- File watchers ----------------------------------------------------------

// Which document a file watcher follows: the `document` label, so that both
// watchers share one family of series.
enum class WatchedDocument : uint8_t {
  kConfig = 0,   // ConfigFileWatcher: a degradation config
  kControl = 1,  // ControlFileWatcher: a control document
};

// "config", "control".
inline absl::string_view WatchedDocumentName(WatchedDocument d) {
  return d == WatchedDocument::kConfig ? "config" : "control";
}

struct FileWatcherStats {
  WatchedDocument document = WatchedDocument::kConfig;
  uint64_t polls = 0;    // reads of the file (PollOnce and the thread's)
  uint64_t reloads = 0;  // contents put in force
  // Contents refused and changes of read error (a repeat of the same error
  // is not counted again).
  uint64_t errors = 0;
  bool last_poll_ok = true;  // the latest poll's outcome; true before one
  // The latest poll that succeeded, on the watcher's clock; InfinitePast()
  // before the first. Never moves back, even when the clock does.
  absl::Time last_success = absl::InfinitePast();
  // How long ago that was when the snapshot was taken: >= 0,
  // InfiniteDuration() before the first success.
  absl::Duration since_success = absl::InfiniteDuration();
};

using FileWatcherView = StatsView<FileWatcherStats>;

// ---- etcd watcher -----------------------------------------------------------

// What an etcd prefix watcher is doing; the value of its state gauge.
enum class EtcdWatcherState : uint8_t {
  kStarting = 0,   // before the first watch is established
  kWatching = 1,   // a watch stream is established: changes arrive live
  kResyncing = 2,  // re-reading the prefix after a stream ended
  kOutage = 3,     // etcd unreachable or answering nonsense (reported once)
  kStopped = 4,    // Stop() was called
};

// "starting", "watching", "resyncing", "outage", "stopped".
inline absl::string_view EtcdWatcherStateName(EtcdWatcherState s) {
  switch (s) {
    case EtcdWatcherState::kStarting:
      return "starting";
    case EtcdWatcherState::kWatching:
      return "watching";
    case EtcdWatcherState::kResyncing:
      return "resyncing";
    case EtcdWatcherState::kOutage:
      return "outage";
    case EtcdWatcherState::kStopped:
      return "stopped";
  }
  return "unknown";
}

struct EtcdWatcherStats {
  EtcdWatcherState state = EtcdWatcherState::kStarting;
  uint64_t reconnects = 0;        // watch streams opened after the first
  uint64_t resyncs = 0;           // reads of the prefix after the first
  uint64_t compactions = 0;       // watches cancelled by a compaction
  uint64_t cluster_changes = 0;   // streams showing etcd wiped or restored
  uint64_t outages = 0;           // outages begun (each reported once)
  uint64_t events_delivered = 0;  // on_put and on_delete calls
  uint64_t values_refused = 0;    // values over max_value_bytes
  uint64_t callback_errors = 0;   // callbacks that threw
  // The highest store revision seen (reads and events) of the cluster
  // followed now; 0 before the first read.
  int64_t last_revision = 0;
};

using EtcdWatcherView = StatsView<EtcdWatcherStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_FLEET_STATS_HPP_
