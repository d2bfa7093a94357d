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
// expired stays expired however often the file is read.
//
// Thread safety: every member is thread-safe; polls are serialised and
// apply in the order they read. The FleetControl must outlive the watcher.
// Stop() and Start() may be called from the FleetControl's callbacks (the
// managers' observers) on the watcher's thread; they take effect after the
// poll in progress.

#ifndef DEGRADE_CONTROL_WATCHER_HPP_
#define DEGRADE_CONTROL_WATCHER_HPP_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/control_document.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ControlFileWatcher
//
// See the file comment. Thread-safe.
class ControlFileWatcher {
 public:
  // REQUIRES: `control` is not null and outlives the watcher.
  ControlFileWatcher(std::string path, FleetControl* control)
      : path_(std::move(path)), control_(control) {}

  ControlFileWatcher(const ControlFileWatcher&) = delete;
  ControlFileWatcher& operator=(const ControlFileWatcher&) = delete;
  ~ControlFileWatcher() { Stop(); }

  // Reads the file once. OK when its document is in force, when it is the
  // one already applied, and when the file is missing (nothing forced);
  // otherwise the read error or the FleetControl's refusal.
  // From a callback during this watcher's own poll, FAILED_PRECONDITION
  // (the poll in progress holds the poll lock).
  absl::Status PollOnce() {
    if (detail::CallbackScope::Inside(this)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "control file watcher '", detail::Printable(path_),
          "': PollOnce() called from a callback during this watcher's poll"));
    }
    detail::MutexLock lock(&poll_mu_);
    return PollLocked();
  }

  // Polls at once and then every `period` on a background thread until
  // Stop(); again while running restarts with the new period.
  // INVALID_ARGUMENT naming the file for a period outside [1 ms, 1 year];
  // RESOURCE_EXHAUSTED when no thread can be started.
  absl::Status Start(absl::Duration period) {
    return detail::StartPolling(
        worker_,
        absl::StrCat("control file watcher '", detail::Printable(path_), "'"),
        period, poll_mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          PollLocked().IgnoreError();
        });
  }

  // Stops the background thread and waits for it. No-op when not running.
  void Stop() { worker_.Stop(); }

  // Documents handed over and put in force, and distinct errors (refused
  // contents, changes of read error): repeats of one are not counted.
  uint64_t applied() const { return applied_.load(std::memory_order_relaxed); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // What the latest poll returned (OK before the first).
  absl::Status last_status() const {
    detail::MutexLock lock(&status_mu_);
    return last_status_;
  }
  const std::string& path() const { return path_; }

 private:
  absl::Status PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_) {
    const detail::CallbackScope in_poll(this);
    absl::Status result = Read();
    detail::MutexLock status_lock(&status_mu_);
    last_status_ = result;
    return result;
  }

  absl::Status Read() ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_) {
    absl::StatusOr<std::string> content =
        detail::ReadFileCapped(path_, kMaxControlBytes, "control file");
    if (!content.ok() && absl::IsNotFound(content.status())) {
      // No file, no incident: lift what the file carried, once.
      // Only the document this file put in force: one applied from
      // elsewhere since (an etcd watch) is not the file's to end.
      seen_.reset();
      if (applied_version_ != 0) {
        control_->Lift(absl::StrCat(path_, " (removed)"), applied_version_)
            .IgnoreError();
        applied_version_ = 0;
      }
      last_read_error_ = absl::OkStatus();
      return absl::OkStatus();
    }
    if (!content.ok()) {
      if (content.status() != last_read_error_) {
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
      last_read_error_ = content.status();
      return content.status();
    }
    last_read_error_ = absl::OkStatus();
    if (seen_.has_value() && seen_->first == *content) return seen_->second;
    uint64_t version = 0;
    absl::Status s = control_->Apply(*content, path_, &version);
    (s.ok() ? applied_ : errors_).fetch_add(1, std::memory_order_relaxed);
    // The version of this file's document, not control_->version(): a
    // document from another source may land between the two.
    if (s.ok()) applied_version_ = version;
    seen_.emplace(*std::move(content), s);
    return s;
  }

  const std::string path_;
  FleetControl* const control_;

  detail::Mutex poll_mu_;
  // The last content read and what applying it returned.
  std::optional<std::pair<std::string, absl::Status>> seen_
      ABSL_GUARDED_BY(poll_mu_);
  absl::Status last_read_error_ ABSL_GUARDED_BY(poll_mu_);
  // The version this file last put in force; 0 for none.
  uint64_t applied_version_ ABSL_GUARDED_BY(poll_mu_) = 0;

  mutable detail::Mutex status_mu_;
  absl::Status last_status_ ABSL_GUARDED_BY(status_mu_);

  std::atomic<uint64_t> applied_{0};
  std::atomic<uint64_t> errors_{0};

  // Last, so that it stops before anything its polls touch is destroyed.
  detail::PeriodicWorker worker_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONTROL_WATCHER_HPP_
