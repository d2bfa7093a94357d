// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: manager_listener.hpp
// -----------------------------------------------------------------------------
//
// What a degradation manager (degradation_manager.hpp) tells its telemetry,
// as plain values, and the two interfaces between them. A manager offers a
// `ManagerView` (a `StatsView<ManagerStats>`: its level, time at each level,
// transitions, features and control document, read by a scrape at any time)
// and pushes its events to the `ManagerListener` the telemetry hands back: a
// `LevelChange` (level_change.hpp), a reload applied or refused, an override
// expiring, a signal source failing. The hub that connects them is
// telemetry.hpp; `MetricsRegistry` is the listener degrade ships.
//
//   class Audit : public degrade::Telemetry {
//     std::unique_ptr<degrade::ManagerListener> AttachManager(
//         const degrade::ManagerView& m) override {
//       struct L : degrade::ManagerListener {
//         void OnReload(const degrade::ReloadEvent& e) override {
//           if (!e.applied) Alert(e.manager, e.error);
//         }
//       };
//       return std::make_unique<L>();
//     }
//   };
//
// Thread safety: the structs are plain values; the `absl::string_view`s in
// them are valid for the duration of the call that delivers them. A view's
// functions are thread-safe and never change the manager. A listener's
// events arrive outside the manager's lock, in order, never concurrently
// with each other.

#ifndef DEGRADE_MANAGER_LISTENER_HPP_
#define DEGRADE_MANAGER_LISTENER_HPP_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/level_change.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ManagerStats
//
// A consistent snapshot of a manager, taken under its lock.
struct ManagerStats {
  // The manager's clock when the snapshot was taken.
  absl::Time now;
  int level = 0;
  int num_levels = 0;
  // (from, to) -> count, for the pairs that happened.
  std::vector<std::pair<std::pair<int, int>, uint64_t>> transitions;
  // Time at each level so far, the current stay included; levels
  // 0..max(num_levels, level).
  std::vector<absl::Duration> time_at_level;
  // Every feature asked for, and whether it is on.
  std::vector<std::pair<std::string, bool>> features;
  uint64_t reloads = 0;
  uint64_t rejected_reloads = 0;
  // The control document in force (DegradationManager::SetControl): its
  // version and end; 0 and InfinitePast() when none.
  uint64_t control_version = 0;
  absl::Time control_until = absl::InfinitePast();
  // at_or_above_since[k - 1]: since when the level has been >= k, for
  // k = 1..level.
  std::vector<absl::Time> at_or_above_since;
};

// ReloadEvent
struct ReloadEvent {
  absl::string_view manager;
  absl::Time time;
  // True: a new config was installed. False: refused, and `error` says why;
  // the previous config keeps serving.
  bool applied = false;
  int levels = 0;  // levels installed (applied only)
  int level = 0;   // the level after the reload (applied only)
  absl::Status error;
};

// OverrideExpiredEvent
struct OverrideExpiredEvent {
  absl::string_view manager;
  absl::Time time;
  // The level that had been forced; -1 for a control document that forced
  // only features off.
  int level = 0;
  // Empty for ForceLevel's override; a control document's note otherwise.
  std::string note;
};

// PollErrorEvent
//
// A signal source failed; reported when the error changes, not every poll.
struct PollErrorEvent {
  absl::string_view manager;
  absl::Time time;
  absl::Status error;
};

// ManagerView
//
// A manager as its telemetry may read it: `name()` and `stats()` (a
// snapshot taken under the manager's lock) from `StatsView`, and one flag.
// Thread-safe, read-only; REQUIRES: read only while the listener the
// telemetry returned for it lives.
class ManagerView : public StatsView<ManagerStats> {
 public:
  // True when the manager writes its event lines to a sink of its own
  // (ManagerOptions::log_sink): the telemetry should not write them too.
  virtual bool has_own_log() const = 0;

 protected:
  ~ManagerView() = default;
};

// ManagerListener
//
// What a manager reports to: outside its lock, in order, never
// concurrently; a listener may call back into the manager. Owned by the
// manager, which destroys it first in its destructor.
class ManagerListener : public TelemetryAttachment {
 public:
  // Asked once, when the listener is attached: whether it writes the
  // manager's event lines itself. When it does not (the default), the
  // manager writes them to stderr unless it has a log_sink: every level
  // change is a log line whatever the telemetry does.
  virtual bool writes_lines() const { return false; }
  virtual void OnLevelChange(const LevelChange& change) { (void)change; }
  virtual void OnReload(const ReloadEvent& event) { (void)event; }
  virtual void OnOverrideExpired(const OverrideExpiredEvent& event) {
    (void)event;
  }
  virtual void OnPollError(const PollErrorEvent& event) { (void)event; }
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_MANAGER_LISTENER_HPP_
