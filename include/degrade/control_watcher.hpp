// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: control_watcher.hpp
// -----------------------------------------------------------------------------
//
// Follows a control document (control_document.hpp) in a file, the way a
// Kubernetes ConfigMap or a config centre's sidecar delivers it, and feeds
// it to a `FleetControl`. The file's absence is the normal state, "no
// incident": while the file is missing nothing is forced, and a file that
// goes away lifts the document it carried (the version floor stays, so the
// old document cannot return). A file whose content the FleetControl
// refuses, or that cannot be read for another reason, is reported once,
// not every period, and what was in force stays in force.
//
//   degrade::FleetControl control;
//   control.AddManager(&manager).IgnoreError();
//   degrade::ControlFileWatcher watcher("/etc/svc/control.json", &control);
//   absl::Status first = watcher.PollOnce();  // apply it now, see the error
//   absl::Status started = watcher.Start(absl::Seconds(5));
//
// A file is re-applied only when its content changes, so a document that
// expired stays expired however often the file is read. Its stats()
// (reloads, errors, the last successful poll: a missing file is one) reach
// `ControlFileWatcherOptions::metrics`, as the degrade_file_watcher_*
// series of a MetricsRegistry (`document="control"`).
//
// Thread safety: every member is thread-safe; polls are serialised and
// apply in the order they read. The FleetControl must outlive the watcher.
// Stop() and Start() may be called from the FleetControl's callbacks (the
// managers' observers) on the watcher's thread; they take effect after the
// poll in progress.

#ifndef DEGRADE_CONTROL_WATCHER_HPP_
#define DEGRADE_CONTROL_WATCHER_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/control_document.hpp"
#include "degrade/detail/file_follower.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ControlFileWatcherOptions
struct ControlFileWatcherOptions {
  // The name its telemetry exports it under (the `watcher` label); empty:
  // the file's path.
  std::string name;
  // Times the last successful poll (stats().last_success). Null: real.
  const Clock* clock = nullptr;
  // Where its stats() are exported (fleet_stats.hpp; the
  // degrade_file_watcher_* series of a MetricsRegistry): null, the process
  // default (DefaultTelemetry()); NoTelemetry(), nowhere. Must outlive it.
  Telemetry* metrics = nullptr;
};

// ControlFileWatcher
//
// See the file comment. Thread-safe.
class ControlFileWatcher {
 public:
  // REQUIRES: `control` is not null and outlives the watcher.
  ControlFileWatcher(std::string path, FleetControl* control,
                     ControlFileWatcherOptions options = {})
      : follower_(std::move(path), Follow{control}, options.clock),
        name_(options.name.empty() ? follower_.path()
                                   : std::move(options.name)),
        // Last: the view must be complete before a telemetry may read it.
        telemetry_(detail::Attach(options.metrics, &Telemetry::AttachComponent,
                                  view_)) {}

  ControlFileWatcher(const ControlFileWatcher&) = delete;
  ControlFileWatcher& operator=(const ControlFileWatcher&) = delete;
  ~ControlFileWatcher() {
    telemetry_.reset();  // first: its view reads the follower
    Stop();
  }

  // Reads the file once. OK when its document is in force, when it is the
  // one already applied, and when the file is missing (nothing forced);
  // otherwise the read error or the FleetControl's refusal.
  // From a callback during this watcher's own poll, FAILED_PRECONDITION
  // (the poll in progress holds the poll lock).
  absl::Status PollOnce() { return follower_.PollOnce(); }

  // Polls at once and then every `period` on a background thread until
  // Stop(); again while running restarts with the new period.
  // INVALID_ARGUMENT naming the file for a period outside [1 ms, 1 year];
  // RESOURCE_EXHAUSTED when no thread can be started.
  absl::Status Start(absl::Duration period) { return follower_.Start(period); }

  // Stops the background thread and waits for it. No-op when not running.
  void Stop() { follower_.Stop(); }

  // Documents handed over and put in force, and distinct errors (refused
  // contents, changes of read error): repeats of one are not counted.
  uint64_t applied() const { return follower_.applied(); }
  uint64_t errors() const { return follower_.errors(); }
  // What the latest poll returned (OK before the first).
  absl::Status last_status() const { return follower_.last_status(); }
  const std::string& path() const { return follower_.path(); }
  const std::string& name() const { return name_; }
  // Polls, reloads, errors and the last success, for a telemetry.
  FileWatcherStats stats() const {
    return follower_.stats(WatchedDocument::kControl);
  }

 private:
  // What this watcher's file means: its absence is "no incident", and a
  // read error stays in last_status() and errors(), as it always has: no
  // document reached the FleetControl, so it has nothing to refuse.
  struct Follow {
    static constexpr absl::string_view kOwner = "control file watcher";
    static constexpr absl::string_view kFile = "control file";
    static constexpr std::size_t kMaxBytes = kMaxControlBytes;
    static constexpr absl::string_view kReentry =
        "PollOnce() called from a callback during this watcher's poll";

    absl::Status Apply(const std::string& path, const std::string& content) {
      uint64_t version = 0;
      absl::Status s = control->Apply(content, path, &version);
      // The version of this file's document, not control->version(): a
      // document from another source may land between the two.
      if (s.ok()) applied_version = version;
      return s;
    }

    std::optional<absl::Status> OnMissing(const std::string& path) {
      // No file, no incident: lift what the file carried, once.
      // Only the document this file put in force: one applied from
      // elsewhere since (an etcd watch) is not the file's to end.
      if (applied_version != 0) {
        control->Lift(absl::StrCat(path, " (removed)"), applied_version)
            .IgnoreError();
        applied_version = 0;
      }
      return absl::OkStatus();
    }

    void ReportReadError(const absl::Status& /*error*/) {}

    FleetControl* control;
    // The version this file last put in force; 0 for none.
    uint64_t applied_version = 0;
  };

  detail::FileFollower<Follow> follower_;
  const std::string name_;
  const detail::OwnerView<ControlFileWatcher, FileWatcherStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONTROL_WATCHER_HPP_
