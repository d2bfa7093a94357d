// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: config_watcher.hpp
// -----------------------------------------------------------------------------
//
// Applies JSON configs (config_parse.hpp) to a running `DegradationManager`,
// and keeps a manager in step with a file on disk, so thresholds can change
// without a redeploy. A config that fails to parse or validate never reaches
// the manager: it is reported to `DegradationManager::RejectReload()`
// (counted and logged like any refused reload) and the manager keeps
// serving its last good config.
//
//   degrade::DegradationManager manager;
//   // From a config centre's push callback:
//   absl::Status pushed = degrade::ReloadJson(manager, text, "cc:
//   svc/degrade");
//
//   // Or from a file, followed in the background:
//   degrade::ConfigFileWatcher watcher("/etc/svc/degrade.json", &manager);
//   absl::Status first = watcher.PollOnce();   // apply it now, see the error
//   absl::Status started = watcher.Start(absl::Seconds(10));  // then follow it
//
// A watcher's stats() (reloads, errors, the last successful poll) reach
// `ConfigFileWatcherOptions::metrics`, as the degrade_file_watcher_*
// series of a MetricsRegistry (`document="config"`).
//
// Nothing here throws; the header compiles with -fno-exceptions.
//
// Thread safety: `ReloadJson()` is as thread-safe as
// `DegradationManager::Reload()`. `ConfigFileWatcher` is thread-safe; see its
// comment.

#ifndef DEGRADE_CONFIG_WATCHER_HPP_
#define DEGRADE_CONFIG_WATCHER_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/file_follower.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ReloadJson()
//
// Parses `json_text` and hands the result to `manager.Reload()`. A parse or
// validation error goes to `manager.RejectReload()` instead, so it is counted
// and logged exactly like a config the manager refused, and the manager keeps
// serving its last good config. Returns OK or that error.
//
// Thread-safe (as `DegradationManager::Reload()`).
absl::Status ReloadJson(DegradationManager& manager,
                        absl::string_view json_text,
                        absl::string_view source = "<json>");

// ConfigFileWatcherOptions
struct ConfigFileWatcherOptions {
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

// ConfigFileWatcher
//
// Keeps `manager` on the config in the file at `path`. Each poll re-opens the
// file BY PATH and compares its whole content with the content of the
// previous successful read; only changed content is parsed and applied. That
// covers every way config files get updated:
//
//   * rewritten in place;
//   * replaced by rename (write a temp file, rename it over the path): the
//     path now names a new inode, which a re-open sees;
//   * behind a swapped symlink, as Kubernetes mounts a ConfigMap:
//     `path` -> `..data/config.json`, where `..data` -> `..2026_01_01_xx`
//     is replaced atomically by a new timestamped directory.
//
// Comparing content (not mtime or inode) makes it immune to coarse
// timestamps, to clocks set back, and to touches that change nothing. Not
// re-applying unchanged content matters: `Reload()` restarts the recovery
// holds, so a watcher that reloaded every period would keep a manager with
// a 60 s hold and a 10 s poll from ever stepping down.
// A rewrite in place is not atomic: a poll can see it half written, reject
// it, and pick up the whole file on the next poll. Prefer rename.
//
// Errors never disturb the manager's config:
//   * unchanged content: nothing happens; the poll returns the status that
//     content got when it was first seen (OK if it was applied);
//   * content that fails to parse or validate: rejected through
//     `ReloadJson()` (counted and logged by the manager once, not on every
//     poll, since unchanged content is not re-applied);
//   * the file missing or unreadable: the old config stays, the poll returns
//     the error, and the error is reported to `manager->RejectReload()` only
//     when it differs from the previous poll's, so a deleted file is logged
//     once, not every period. When the file comes back with content other
//     than the applied one, it is applied.
//
// The watcher only knows about its own file: a `Reload()` from elsewhere
// (a config centre) is not undone, and is replaced only when the file's
// content next changes.
//
// Thread safety: every member is thread-safe. Polls (`PollOnce()` and the
// background thread's) are serialised, so configs are applied in the order
// they were read; the background thread skips its turn when another poll
// is in progress (that poll reads the file anyway), so it never waits
// behind one. A poll calls the manager, which runs its log sink and
// observers on the polling thread. From there, `Start()` and `Stop()` work
// (on the watcher's own thread: see PeriodicWorker, they take effect after
// this poll), and `PollOnce()` is refused with FAILED_PRECONDITION (the poll
// in progress holds the poll lock). The manager must outlive the watcher.
class ConfigFileWatcher {
 public:
  // REQUIRES: `manager` is not null and outlives the watcher.
  ConfigFileWatcher(std::string path, DegradationManager* manager,
                    ConfigFileWatcherOptions options = {})
      : follower_(std::move(path), Follow{manager}, options.clock),
        name_(options.name.empty() ? follower_.path()
                                   : std::move(options.name)),
        // Last: the view must be complete before a telemetry may read it.
        telemetry_(detail::Attach(options.metrics, &Telemetry::AttachComponent,
                                  view_)) {}

  ConfigFileWatcher(const ConfigFileWatcher&) = delete;
  ConfigFileWatcher& operator=(const ConfigFileWatcher&) = delete;

  // Stops the background thread, if any (after detaching its telemetry,
  // whose view reads the follower).
  ~ConfigFileWatcher() {
    telemetry_.reset();
    Stop();
  }

  // Reads the file once and applies it if its content changed (see the class
  // comment for what happens on each kind of error). Returns the outcome,
  // which is also stored for `last_status()`. From the manager's callbacks
  // during one of this watcher's polls, FAILED_PRECONDITION (nothing read,
  // nothing stored).
  absl::Status PollOnce();

  // Starts a background thread that polls at once and then every `period`
  // until `Stop()`. Calling it while running restarts the thread with the
  // new period. INVALID_ARGUMENT naming the file for a period outside
  // [1 ms, 1 year] (polling a configuration file faster than a millisecond
  // is never the intent; for one poll call PollOnce()), leaving a running
  // thread as it was. RESOURCE_EXHAUSTED when the thread cannot be started
  // (out of threads or memory): none runs then (a running one was stopped
  // first), the manager keeps its config, and Start may be called again.
  // From a manager callback on the watcher's own thread, the new period
  // applies after this poll.
  absl::Status Start(absl::Duration period);

  // Stops the background thread and waits for it (at most for the poll in
  // progress); a sleeping thread wakes at once. No-op when not running.
  // From a manager callback on the watcher's own thread, it stops after
  // this poll instead (the next Start() works).
  void Stop();

  // Configs this watcher has applied (`Reload()` returned OK).
  uint64_t reloads() const { return follower_.applied(); }
  // Errors this watcher has reported to the manager: contents the manager
  // rejected, and changes of read error. Repeats are not counted (see above).
  uint64_t errors() const { return follower_.errors(); }
  // The outcome of the latest poll; OK before the first.
  absl::Status last_status() const { return follower_.last_status(); }
  const std::string& path() const { return follower_.path(); }
  const std::string& name() const { return name_; }
  // Polls, reloads, errors and the last success, for a telemetry.
  FileWatcherStats stats() const {
    return follower_.stats(WatchedDocument::kConfig);
  }

 private:
  // What this watcher's file means: every read error (a missing file
  // included) and every refused content goes to the manager's
  // RejectReload(), which counts and logs it.
  struct Follow {
    static constexpr absl::string_view kOwner = "config file watcher";
    static constexpr absl::string_view kFile = detail::kConfigFile;
    static constexpr std::size_t kMaxBytes = kMaxConfigBytes;
    static constexpr absl::string_view kReentry =
        "PollOnce() called from a manager callback during this watcher's own "
        "poll";

    absl::Status Apply(const std::string& path, const std::string& content);
    std::optional<absl::Status> OnMissing(const std::string& /*path*/) {
      return std::nullopt;
    }
    void ReportReadError(const absl::Status& error) {
      manager->RejectReload(error).IgnoreError();
    }

    DegradationManager* manager;
  };

  detail::FileFollower<Follow> follower_;
  const std::string name_;
  const detail::OwnerView<ConfigFileWatcher, FileWatcherStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details -------------------------------------------------

inline absl::Status ReloadJson(DegradationManager& manager,
                               absl::string_view json_text,
                               absl::string_view source) {
  absl::StatusOr<DegradationConfig> config =
      ParseDegradationConfig(json_text, source);
  if (!config.ok()) return manager.RejectReload(config.status());
  return manager.Reload(*std::move(config));
}

inline absl::Status ConfigFileWatcher::PollOnce() {
  return follower_.PollOnce();
}

inline absl::Status ConfigFileWatcher::Follow::Apply(
    const std::string& path, const std::string& content) {
  // As ReloadJson, with errors saying "config file".
  absl::StatusOr<DegradationConfig> config =
      detail::ParseDegradationConfigAs(content, path, detail::kConfigFile);
  return config.ok() ? manager->Reload(*std::move(config))
                     : manager->RejectReload(config.status());
}

inline absl::Status ConfigFileWatcher::Start(absl::Duration period) {
  // The result of each poll is kept in last_status() and reported through
  // the manager.
  return follower_.Start(period);
}

inline void ConfigFileWatcher::Stop() { follower_.Stop(); }

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONFIG_WATCHER_HPP_
