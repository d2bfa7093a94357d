// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/file_follower.hpp
// -----------------------------------------------------------------------------
//
// What the file watchers (config_watcher.hpp, control_watcher.hpp) share:
// follow one file by path, hand over its content only when it changed, and
// report a read error once rather than every period. A watcher is this
// skeleton plus a policy that says what its file means:
//
//   struct Policy {
//     static constexpr absl::string_view kOwner = "config file watcher";
//     static constexpr absl::string_view kFile = "config file";  // read errors
//     static constexpr std::size_t kMaxBytes = kMaxConfigBytes;
//     // Why PollOnce() inside a poll is refused (after "<owner> '<path>': ").
//     static constexpr absl::string_view kReentry = "PollOnce() called ...";
//
//     // Content unlike the last content read: put it in force.
//     absl::Status Apply(const std::string& path, const std::string& content);
//     // The file is missing. nullopt: an error like any other read error.
//     // A status: absence is a state of the file (the poll returns it, and
//     // the content read before is forgotten, so the same content coming
//     // back is applied again).
//     std::optional<absl::Status> OnMissing(const std::string& path);
//     // A read error unlike the previous poll's, to report where the owner
//     // reports refusals (the manager's RejectReload), or nowhere.
//     void ReportReadError(const absl::Status& error);
//   };
//
// Content is compared whole, not by mtime or inode: that survives coarse
// timestamps, clocks set back and touches that change nothing, and covers
// the three ways such files are replaced (in place, by rename, behind a
// swapped symlink). Unchanged content is not applied again because applying
// has effects (a manager's Reload() restarts its recovery holds; an expired
// control document must stay expired).
//
// What an operator sees of it is `stats()` (fleet_stats.hpp): polls,
// contents applied, errors, and when a poll last succeeded, on the clock
// given. That time only moves forward: a clock stepped back does not make
// a watcher look fresher than it was, or its age negative.
//
// Thread safety: every member is thread-safe. Polls (PollOnce() and the
// background thread's) are serialised under one lock, so contents are
// applied in the order they were read, and the policy's hooks run under it,
// one at a time: the policy's own state needs no lock of its own. The hooks
// run the owner's callbacks on the polling thread; from there Start() and
// Stop() work (on the background thread they take effect after the poll),
// and PollOnce() is refused with FAILED_PRECONDITION, since the poll in
// progress holds the lock it would wait for.

#ifndef DEGRADE_DETAIL_FILE_FOLLOWER_HPP_
#define DEGRADE_DETAIL_FILE_FOLLOWER_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

template <class Policy>
class FileFollower {
 public:
  // `clock` (null: the real one) times the successes stats() reports.
  FileFollower(std::string path, Policy policy, const Clock* clock = nullptr)
      : path_(std::move(path)),
        clock_(clock != nullptr ? clock : &RealClock::Instance()),
        policy_(std::move(policy)) {}

  FileFollower(const FileFollower&) = delete;
  FileFollower& operator=(const FileFollower&) = delete;

  // Reads the file once and applies it if its content changed. Returns the
  // outcome, also kept for last_status(); from a hook during this
  // follower's own poll, FAILED_PRECONDITION (nothing read, nothing kept).
  absl::Status PollOnce() ABSL_LOCKS_EXCLUDED(poll_mu_) {
    if (CallbackScope::Inside(this)) {
      return absl::FailedPreconditionError(absl::StrCat(
          Policy::kOwner, " '", Printable(path_), "': ", Policy::kReentry));
    }
    MutexLock lock(&poll_mu_);
    return PollLocked();
  }

  // Polls at once and then every `period` on a background thread until
  // Stop(); again while running restarts with the new period.
  // INVALID_ARGUMENT for a period outside [1 ms, 1 year] (a running thread
  // is left as it was); RESOURCE_EXHAUSTED when no thread can be started.
  // Errors start with "<owner> '<path>'".
  absl::Status Start(absl::Duration period) {
    return StartPolling(
        worker_, absl::StrCat(Policy::kOwner, " '", Printable(path_), "'"),
        period, poll_mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          PollLocked().IgnoreError();
        });
  }

  // Stops the background thread and waits for it (at most for the poll in
  // progress). No-op when not running.
  void Stop() { worker_.Stop(); }

  // Contents the policy applied, and errors reported: contents it refused,
  // and read errors unlike the previous poll's (repeats are not counted).
  uint64_t applied() const { return applied_.load(std::memory_order_relaxed); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // The outcome of the latest poll; OK before the first.
  absl::Status last_status() const ABSL_LOCKS_EXCLUDED(status_mu_) {
    MutexLock lock(&status_mu_);
    return last_status_;
  }
  const std::string& path() const { return path_; }

  // The counters above, the latest outcome and the last success, for a
  // watcher following a `document`.
  FileWatcherStats stats(WatchedDocument document) const
      ABSL_LOCKS_EXCLUDED(status_mu_) {
    FileWatcherStats s;
    s.document = document;
    s.reloads = applied();
    s.errors = errors();
    MutexLock lock(&status_mu_);
    s.polls = polls_;
    s.last_poll_ok = last_status_.ok();
    s.last_success = last_success_;
    if (last_success_ != absl::InfinitePast()) {
      s.since_success = ElapsedSince(clock_->Now(), last_success_);
    }
    return s;
  }

 private:
  absl::Status PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_) {
    // The hooks run the owner's callbacks on this thread.
    const CallbackScope in_poll(this);
    absl::Status result = Read();
    // Still under poll_mu_, so overlapping polls publish in poll order.
    MutexLock status_lock(&status_mu_);
    last_status_ = result;
    ++polls_;
    if (result.ok()) last_success_ = std::max(last_success_, clock_->Now());
    return result;
  }

  absl::Status Read() ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_) {
    absl::StatusOr<std::string> content =
        ReadFileCapped(path_, Policy::kMaxBytes, Policy::kFile);
    if (!content.ok() && absl::IsNotFound(content.status())) {
      if (std::optional<absl::Status> absent = policy_.OnMissing(path_)) {
        seen_.reset();
        last_read_error_ = absl::OkStatus();
        return *std::move(absent);
      }
    }
    if (!content.ok()) {
      // Once, not every period: only when it differs from the last poll's.
      if (content.status() != last_read_error_) {
        policy_.ReportReadError(content.status());
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
      last_read_error_ = content.status();
      return content.status();
    }
    last_read_error_ = absl::OkStatus();
    if (seen_.has_value() && seen_->first == *content) return seen_->second;
    absl::Status applied = policy_.Apply(path_, *content);
    (applied.ok() ? applied_ : errors_).fetch_add(1, std::memory_order_relaxed);
    seen_.emplace(*std::move(content), applied);
    return applied;
  }

  const std::string path_;
  const Clock* const clock_;

  // Serialises polls; guards what the last poll saw, and the policy.
  Mutex poll_mu_;
  Policy policy_ ABSL_GUARDED_BY(poll_mu_);
  // The content of the last successful read and what applying it returned
  // (nullopt before the first, and after the file went missing when absence
  // is a state).
  std::optional<std::pair<std::string, absl::Status>> seen_
      ABSL_GUARDED_BY(poll_mu_);
  // The previous poll's read error; OK when that read succeeded.
  absl::Status last_read_error_ ABSL_GUARDED_BY(poll_mu_);

  // Apart from poll_mu_ so that last_status() never waits for a file read
  // or for an apply.
  mutable Mutex status_mu_;
  absl::Status last_status_ ABSL_GUARDED_BY(status_mu_);
  uint64_t polls_ ABSL_GUARDED_BY(status_mu_) = 0;
  absl::Time last_success_ ABSL_GUARDED_BY(status_mu_) = absl::InfinitePast();

  std::atomic<uint64_t> applied_{0};
  std::atomic<uint64_t> errors_{0};

  // Last, so that it stops before anything its polls touch is destroyed.
  PeriodicWorker worker_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_FILE_FOLLOWER_HPP_
