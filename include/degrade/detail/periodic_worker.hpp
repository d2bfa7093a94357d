// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A background thread that calls a function now and then every period, for
// the components that poll (the degradation manager's monitor, the config
// file watcher, the hot-list refresher, the escalation watch). It sleeps on
// a condition variable, so Stop() wakes it at once; Start/Stop are
// serialised, including Stop's join, so a Start racing a Stop can't leave
// two threads running.
//
// The tick runs user code (a signal source, an observer, a refresh source,
// a pager), and that code may call its owner's Start or Stop, which land
// here on the worker thread itself. A thread can't join itself (std::thread
// throws EDEADLK, or aborts without exceptions), so from the worker thread:
//
//   * Stop() asks the loop to end after the current tick;
//   * Restart() / StartIfIdle() change the period and the tick in place:
//     they take effect when the current tick returns, the next tick comes a
//     (new) period later, and they cancel a Stop() made earlier in the same
//     tick. StartIfIdle() does so only after such a Stop() (otherwise the
//     worker is running: false). Neither overrides another thread that is
//     stopping the worker at that moment: that Stop or Restart wins.
//
// A worker that stopped itself is joined by the next Stop(), Restart(),
// StartIfIdle() (which then starts a fresh one) or the destructor.
//
// Starting a thread can fail (out of threads or address space): the thread
// is started through StartThread (thread_start.hpp), so TryRestart and
// StartIfIdle return RESOURCE_EXHAUSTED instead of throwing, and nothing is
// left running.
//
// Thread-safe. The owner must declare it after everything the tick touches
// (members are destroyed in reverse order, so it stops first) or call Stop()
// in its own destructor. REQUIRES: not destroyed from the worker thread.

#ifndef DEGRADE_DETAIL_PERIODIC_WORKER_HPP_
#define DEGRADE_DETAIL_PERIODIC_WORKER_HPP_

#include <algorithm>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/invoke.hpp"
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

  // Stops a running thread, then starts one calling `tick` at once and then
  // every period. The period is clamped to [1 ms, 1 year]: a shorter one
  // would spin, and a year is as good as never. RESOURCE_EXHAUSTED when no
  // thread could be started; none is running then, and a later call may
  // work. From the worker thread: see the file comment (in place, nothing
  // joined; FAILED_PRECONDITION while another thread is stopping it).
  absl::Status TryRestart(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_, wake_mu_) {
    if (OnWorkerThread()) {
      if (Reschedule(period, std::move(tick), /*only_if_stopping=*/false)) {
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError("the thread is being stopped");
    }
    MutexLock lifecycle(&lifecycle_mu_);
    StopLocked();
    return Launch(period, std::move(tick));
  }
  // TryRestart for an owner that cannot report the failure: no thread runs
  // after one, and nothing is thrown.
  void Restart(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_, wake_mu_) {
    TryRestart(period, std::move(tick)).IgnoreError();
  }

  // Starts a thread unless one is running: OK when it started,
  // FAILED_PRECONDITION when one runs, RESOURCE_EXHAUSTED as for
  // TryRestart. A thread that stopped itself is not running: it is joined
  // first. From the worker thread: see the file comment.
  absl::Status StartIfIdle(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(lifecycle_mu_, wake_mu_) {
    if (OnWorkerThread()) {
      if (Reschedule(period, std::move(tick), /*only_if_stopping=*/true)) {
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError("the thread is already running");
    }
    MutexLock lifecycle(&lifecycle_mu_);
    if (thread_.joinable() && !JoinIfStoppedItselfLocked()) {
      return absl::FailedPreconditionError("the thread is already running");
    }
    return Launch(period, std::move(tick));
  }

  // Stops the thread and waits for its current tick; a no-op when none is
  // running. From the worker thread it only asks (see the file comment).
  void Stop() ABSL_LOCKS_EXCLUDED(lifecycle_mu_, wake_mu_) {
    {
      MutexLock lock(&wake_mu_);
      if (worker_id_ == std::this_thread::get_id()) {
        if (stopping_ == Stopping::kNo) stopping_ = Stopping::kAfterTick;
        pending_.reset();  // a Restart earlier in this tick is undone too
        return;
      }
    }
    MutexLock lifecycle(&lifecycle_mu_);
    StopLocked();
  }

  bool OnWorkerThread() const ABSL_LOCKS_EXCLUDED(wake_mu_) {
    MutexLock lock(&wake_mu_);
    return worker_id_ == std::this_thread::get_id();
  }

 private:
  // Why the loop is ending. kAfterTick was asked for by the tick itself and
  // may be taken back by it; kJoining is another thread's Stop, which waits
  // for the loop to end and so must not be taken back.
  enum class Stopping { kNo, kAfterTick, kJoining };

  struct Plan {
    absl::Duration period;
    std::function<void()> tick;
  };

  static absl::Duration Clamp(absl::Duration period) {
    return std::clamp(period, MinWorkerPeriod(), MaxWorkerPeriod());
  }

  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_)
      ABSL_LOCKS_EXCLUDED(wake_mu_) {
    if (!thread_.joinable()) return;
    {
      MutexLock lock(&wake_mu_);
      stopping_ = Stopping::kJoining;
    }
    Join();
  }

  // Joins a thread that stopped itself; false (nothing done) if it is
  // running. Checked and claimed in one step, so that the tick cannot take
  // its Stop back in between and leave us waiting for a live loop.
  bool JoinIfStoppedItselfLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_)
      ABSL_LOCKS_EXCLUDED(wake_mu_) {
    {
      MutexLock lock(&wake_mu_);
      if (stopping_ != Stopping::kAfterTick && !loop_ended_) return false;
      stopping_ = Stopping::kJoining;
    }
    Join();
    return true;
  }

  void Join() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_)
      ABSL_LOCKS_EXCLUDED(wake_mu_) {
    wake_.SignalAll();
    thread_.join();
    MutexLock lock(&wake_mu_);
    worker_id_ = std::thread::id();
    pending_.reset();
  }

  absl::Status Launch(absl::Duration period, std::function<void()> tick)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_) {
    {
      MutexLock lock(&wake_mu_);
      stopping_ = Stopping::kNo;
      loop_ended_ = false;
    }
    absl::StatusOr<std::thread> t = StartThread(
        "background thread",
        [this, period = Clamp(period), tick = std::move(tick)]() mutable {
          Run(period, std::move(tick));
        });
    if (!t.ok()) return t.status();
    thread_ = *std::move(t);
    return absl::OkStatus();
  }

  // From the worker thread: adopt `tick` and `period` after this tick.
  // Refused while another thread is joining, and, with `only_if_stopping`,
  // unless this tick asked to stop.
  bool Reschedule(absl::Duration period, std::function<void()> tick,
                  bool only_if_stopping) ABSL_LOCKS_EXCLUDED(wake_mu_) {
    MutexLock lock(&wake_mu_);
    // After the loop has ended (a tick's captures calling back as they are
    // destroyed) no loop would ever run the plan: refuse, so the owner's
    // next Start from another thread starts a fresh worker.
    if (stopping_ == Stopping::kJoining || loop_ended_) return false;
    if (only_if_stopping && stopping_ != Stopping::kAfterTick) return false;
    stopping_ = Stopping::kNo;
    pending_ = Plan{Clamp(period), std::move(tick)};
    return true;
  }

  // The worker thread: tick, then sleep for the period or until stopped.
  void Run(absl::Duration period, std::function<void()> tick)
      ABSL_LOCKS_EXCLUDED(wake_mu_) {
    {
      MutexLock lock(&wake_mu_);
      worker_id_ = std::this_thread::get_id();
    }
    for (;;) {
      {
        MutexLock lock(&wake_mu_);
        if (stopping_ != Stopping::kNo) {
          loop_ended_ = true;
          return;
        }
      }
      // A tick that throws (an allocation failing inside a refresh, say)
      // must not end the process from a background thread: the exception
      // is swallowed and the next tick comes as planned. Owners report
      // their own errors from inside the tick.
      CallQuietly(tick);
      // Declared before the lock, so that the replaced tick is destroyed
      // after it is released: its captures are the owner's business.
      std::function<void()> replaced;
      MutexLock lock(&wake_mu_);
      if (pending_.has_value()) {
        period = pending_->period;
        replaced = std::exchange(tick, std::move(pending_->tick));
        pending_.reset();
      }
      // The predicate makes a Stop() between the tick and the wait count,
      // and absorbs spurious wakeups.
      if (wake_.WaitFor(&wake_mu_, period,
                        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(wake_mu_) {
                          return stopping_ != Stopping::kNo;
                        })) {
        loop_ended_ = true;
        return;
      }
    }
  }

  // Serialises Restart/StartIfIdle/Stop from other threads, joins included.
  // Never taken on the worker thread, so a tick can't wait for itself.
  Mutex lifecycle_mu_;
  std::thread thread_ ABSL_GUARDED_BY(lifecycle_mu_);
  // Taken by the worker thread and by whoever stops it; never held while a
  // tick runs, nor while joining.
  mutable Mutex wake_mu_;
  CondVar wake_;  // stopping_ was set
  Stopping stopping_ ABSL_GUARDED_BY(wake_mu_) = Stopping::kNo;
  // What a tick asked to run next (Restart from the worker thread).
  std::optional<Plan> pending_ ABSL_GUARDED_BY(wake_mu_);
  std::thread::id worker_id_ ABSL_GUARDED_BY(wake_mu_);
  // Set by the worker thread as its loop returns (before the tick is
  // destroyed), cleared by Launch.
  bool loop_ended_ ABSL_GUARDED_BY(wake_mu_) = false;
};

// StartPolling()
//
// The Start() of a file watcher: checks `period`, then (re)starts `worker`
// calling `poll` under `poll_mu` every period. A turn whose lock is held by
// another poll is skipped rather than waited for: that poll reads the file
// anyway, and if the thread waited, a callback of that poll calling Stop()
// or Start() would wait for the thread, which waits for the poll. Errors
// start with `who`.
inline absl::Status StartPolling(PeriodicWorker& worker, absl::string_view who,
                                 absl::Duration period, Mutex& poll_mu,
                                 std::function<void()> poll) {
  if (absl::Status s = CheckPeriod(who, period); !s.ok()) return s;
  absl::Status started =
      worker.TryRestart(period, [&poll_mu, poll = std::move(poll)] {
        if (!poll_mu.TryLock()) return;
        poll();
        poll_mu.Unlock();
      });
  if (started.ok()) return started;
  return absl::Status(started.code(),
                      absl::StrCat(who, ": ", started.message()));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_PERIODIC_WORKER_HPP_
