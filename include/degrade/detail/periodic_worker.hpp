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
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class PeriodicWorker {
 public:
  PeriodicWorker() = default;
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;
  ~PeriodicWorker() { Stop(); }

  // Stops a running thread, then starts one calling `tick`. The period is
  // clamped to [1 ms, 1 year] (a saturated wait would spin).
  // REQUIRES: not called from the worker thread.
  void Restart(absl::Duration period, std::function<void()> tick) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    StopLocked();
    Launch(period, std::move(tick));
  }

  // Starts a thread unless one is running (or was stopped from itself and
  // not joined yet); returns whether it started.
  // REQUIRES: not called from the worker thread.
  bool StartIfIdle(absl::Duration period, std::function<void()> tick) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    if (thread_.joinable()) return false;
    Launch(period, std::move(tick));
    return true;
  }

  // Stops the thread and waits for its current tick; a no-op when none is
  // running. From the worker thread: see the file comment.
  void Stop() {
    if (OnWorkerThread()) {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_ = true;
      return;
    }
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    StopLocked();
  }

  bool OnWorkerThread() const {
    std::lock_guard<std::mutex> lock(wake_mu_);
    return worker_id_ == std::this_thread::get_id();
  }

 private:
  void StopLocked() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    std::lock_guard<std::mutex> lock(wake_mu_);
    worker_id_ = std::thread::id();
  }

  void Launch(absl::Duration period, std::function<void()> tick) {
    period = std::clamp(period, absl::Milliseconds(1), absl::Hours(24 * 365));
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_ = false;
    }
    thread_ = std::thread([this, wait = absl::ToChronoNanoseconds(period),
                           tick = std::move(tick)] {
      std::unique_lock<std::mutex> lock(wake_mu_);
      worker_id_ = std::this_thread::get_id();
      while (!stop_) {
        lock.unlock();
        tick();
        lock.lock();
        // The predicate makes a Stop() between the tick and the wait count,
        // and absorbs spurious wakeups.
        wake_.wait_for(lock, wait, [this] { return stop_; });
      }
    });
  }

  std::mutex lifecycle_mu_;  // serialises Restart/StartIfIdle/Stop
  mutable std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stop_ = false;          // guarded by wake_mu_
  std::thread::id worker_id_;  // guarded by wake_mu_
  std::thread thread_;         // guarded by lifecycle_mu_
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_PERIODIC_WORKER_HPP_
