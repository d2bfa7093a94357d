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
// Nothing here throws; the header compiles with -fno-exceptions.
//
// Thread safety: `ReloadJson()` is as thread-safe as
// `DegradationManager::Reload()`. `ConfigFileWatcher` is thread-safe; see its
// comment.

#ifndef DEGRADE_CONFIG_WATCHER_HPP_
#define DEGRADE_CONFIG_WATCHER_HPP_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/reentry.hpp"
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
  ConfigFileWatcher(std::string path, DegradationManager* manager)
      : path_(std::move(path)), manager_(manager) {}

  ConfigFileWatcher(const ConfigFileWatcher&) = delete;
  ConfigFileWatcher& operator=(const ConfigFileWatcher&) = delete;

  // Stops the background thread, if any.
  ~ConfigFileWatcher() { Stop(); }

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
  uint64_t reloads() const { return reloads_.load(std::memory_order_relaxed); }
  // Errors this watcher has reported to the manager: contents the manager
  // rejected, and changes of read error. Repeats are not counted (see above).
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // The outcome of the latest poll; OK before the first.
  absl::Status last_status() const {
    detail::MutexLock lock(&status_mu_);
    return last_status_;
  }
  const std::string& path() const { return path_; }

 private:
  absl::Status PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_);

  const std::string path_;
  DegradationManager* const manager_;

  // Serialises polls; guards what the last poll saw.
  detail::Mutex poll_mu_;
  // The content of the last successful read, and the status it got when it
  // was first seen (nullopt before the first successful read).
  std::optional<std::string> last_content_ ABSL_GUARDED_BY(poll_mu_);
  absl::Status last_content_status_ ABSL_GUARDED_BY(poll_mu_);
  // The previous poll's read error; OK when that read succeeded.
  absl::Status last_read_error_ ABSL_GUARDED_BY(poll_mu_);

  // Separate from poll_mu_ so `last_status()` never waits for a file read
  // or a reload.
  mutable detail::Mutex status_mu_;
  absl::Status last_status_ ABSL_GUARDED_BY(status_mu_);

  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> errors_{0};

  // Last, so that it stops before anything its polls touch is destroyed.
  detail::PeriodicWorker worker_;
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
  if (detail::CallbackScope::Inside(this)) {
    return absl::FailedPreconditionError(
        absl::StrCat("config file watcher '", detail::Printable(path_),
                     "': PollOnce() called from a manager callback during this "
                     "watcher's own poll"));
  }
  detail::MutexLock lock(&poll_mu_);
  return PollLocked();
}

inline absl::Status ConfigFileWatcher::PollLocked() {
  // The manager runs its log sink and observers on this thread.
  const detail::CallbackScope in_poll(this);
  absl::Status result;
  {
    absl::StatusOr<std::string> content =
        detail::ReadFileCapped(path_, kMaxConfigBytes, detail::kConfigFile);
    if (!content.ok()) {
      result = content.status();
      // Report a read error once, not every period: only when it is new.
      if (result != last_read_error_) {
        manager_->RejectReload(result).IgnoreError();
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
      last_read_error_ = result;
    } else {
      last_read_error_ = absl::OkStatus();
      if (last_content_.has_value() && *last_content_ == *content) {
        result = last_content_status_;
      } else {
        // As ReloadJson, with errors saying "config file".
        absl::StatusOr<DegradationConfig> config =
            detail::ParseDegradationConfigAs(*content, path_,
                                             detail::kConfigFile);
        result = config.ok() ? manager_->Reload(*std::move(config))
                             : manager_->RejectReload(config.status());
        (result.ok() ? reloads_ : errors_)
            .fetch_add(1, std::memory_order_relaxed);
        last_content_ = *std::move(content);
        last_content_status_ = result;
      }
    }
    // Still under poll_mu_, so overlapping polls publish in poll order.
    detail::MutexLock status_lock(&status_mu_);
    last_status_ = result;
  }
  return result;
}

inline absl::Status ConfigFileWatcher::Start(absl::Duration period) {
  // The result of each poll is kept in last_status() and reported through
  // the manager.
  return detail::StartPolling(
      worker_,
      absl::StrCat("config file watcher '", detail::Printable(path_), "'"),
      period, poll_mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        PollLocked().IgnoreError();
      });
}

inline void ConfigFileWatcher::Stop() { worker_.Stop(); }

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONFIG_WATCHER_HPP_
