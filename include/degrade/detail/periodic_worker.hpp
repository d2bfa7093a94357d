// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A background thread that calls a function now and then every period, for
// the components that poll (the degradation manager's monitor, the config
// file watcher, the hot-list refresher). It sleeps on a condition variable,
// so Stop() wakes it at once; Start/Stop are serialised, including Stop's
// join, so a Start racing a Stop can't leave two threads running; and Stop()
// from the worker thread itself (a callback that stops its own poller) only
// asks it to stop after the current tick, because a thread can't join
// itself — the next Stop() or the destructor joins it.
//
// Thread-safe. The owner must declare it after everything the tick touches
// (members are destroyed in reverse order, so it stops first) or call Stop()
// in its own destructor.

#ifndef DEGRADE_DETAIL_PERIODIC_WORKER_HPP_
#define DEGRADE_DETAIL_PERIODIC_WORKER_HPP_

#include <algorithm>
#include <functional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/thread_start.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The periods a worker honours: shorter would spin, and a year is as good
// as never. `CheckPeriod` refuses the others with INVALID_ARGUMENT naming
// `who` and the period, for the owners that refuse rather than clamp.
inline absl::Duration MinWorkerPeriod() { return absl::Milliseconds(1); }
inline absl::Duration MaxWorkerPeriod() { return absl::Hours(24 * 365); }
inline absl::Status CheckPeriod(absl::string_view who, absl::Duration period) {
  if (period >= MinWorkerPeriod() && period <= MaxWorkerPeriod()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      who, ": Start(period = ", absl::FormatDuration(period),
      "): the period must be in [", absl::FormatDuration(MinWorkerPeriod()),
      ", ", absl::FormatDuration(MaxWorkerPeriod()),
      "] (for a single run, call it once instead)"));
}

class PeriodicWorker {
 public:
  PeriodicWorker() = default;
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;
  ~PeriodicWorker() { Stop(); }

  // Stops a running thread, then starts one calling `tick`. The period is
  // clamped to [1 ms, 1 year]: a shorter one would spin, and a year is as
  // good as never. RESOURCE_EXHAUSTED when no thread could be started
  // (thread_start.hpp); none is running then, and a later call may work.
  // REQUIRES: not called from the worker thread.
  absl::Status TryRestart(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_) {
    MutexLock lifecycle(&lifecycle_mu_);
    StopLocked();
    return Launch(period, std::move(tick));
  }
  // TryRestart for an owner that cannot report the failure yet: no thread
  // runs after one, and nothing is thrown.
  void Restart(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_) {
    TryRestart(period, std::move(tick)).IgnoreError();
  }

  // Starts a thread unless one is running (or was stopped from itself and
  // not joined yet): OK when it started, FAILED_PRECONDITION when one runs,
  // RESOURCE_EXHAUSTED as for Restart.
  // REQUIRES: not called from the worker thread.
  absl::Status StartIfIdle(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_) {
    MutexLock lifecycle(&lifecycle_mu_);
    if (thread_.joinable()) {
      return absl::FailedPreconditionError("the thread is already running");
    }
    return Launch(period, std::move(tick));
  }

  // Stops the thread and waits for its current tick; a no-op when none is
  // running. From the worker thread: see the file comment.
  void Stop() ABSL_LOCKS_EXCLUDED(lifecycle_mu_, wake_mu_) {
    if (OnWorkerThread()) {
      MutexLock lock(&wake_mu_);
      stop_ = true;
      return;
    }
    MutexLock lifecycle(&lifecycle_mu_);
    StopLocked();
  }

  bool OnWorkerThread() const ABSL_LOCKS_EXCLUDED(wake_mu_) {
    MutexLock lock(&wake_mu_);
    return worker_id_ == std::this_thread::get_id();
  }

 private:
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_) {
    if (!thread_.joinable()) return;
    {
      MutexLock lock(&wake_mu_);
      stop_ = true;
    }
    wake_.SignalAll();
    thread_.join();
    MutexLock lock(&wake_mu_);
    worker_id_ = std::thread::id();
  }

  absl::Status Launch(absl::Duration period, std::function<void()> tick)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_) {
    period = std::clamp(period, MinWorkerPeriod(), MaxWorkerPeriod());
    {
      MutexLock lock(&wake_mu_);
      stop_ = false;
    }
    absl::StatusOr<std::thread> t = StartThread(
        "background thread",
        [this, period, tick = std::move(tick)] { Run(period, tick); });
    if (!t.ok()) return t.status();
    thread_ = *std::move(t);
    return absl::OkStatus();
  }

  // The worker thread: tick, then sleep for the period or until stopped.
  void Run(absl::Duration period, const std::function<void()>& tick)
      ABSL_LOCKS_EXCLUDED(wake_mu_) {
    {
      MutexLock lock(&wake_mu_);
      worker_id_ = std::this_thread::get_id();
    }
    for (;;) {
      {
        MutexLock lock(&wake_mu_);
        if (stop_) return;
      }
      tick();
      MutexLock lock(&wake_mu_);
      // The predicate makes a Stop() between the tick and the wait count,
      // and absorbs spurious wakeups.
      if (wake_.WaitFor(&wake_mu_, period,
                        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(wake_mu_) {
                          return stop_;
                        })) {
        return;
      }
    }
  }

  // Serialises Restart/StartIfIdle/Stop, joins included.
  Mutex lifecycle_mu_;
  std::thread thread_ ABSL_GUARDED_BY(lifecycle_mu_);
  // Taken by the worker thread and by whoever stops it; never held while a
  // tick runs, nor while joining.
  mutable Mutex wake_mu_;
  CondVar wake_;  // stop_ was set
  bool stop_ ABSL_GUARDED_BY(wake_mu_) = false;
  std::thread::id worker_id_ ABSL_GUARDED_BY(wake_mu_);
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_PERIODIC_WORKER_HPP_
