// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Delivers events to user callbacks outside the owner's lock, in the order
// they were queued, never concurrently. The owner queues under its own lock
// (so queue order is transition order) and drains after releasing it. One
// thread drains at a time; a thread that finds another draining leaves its
// events to that thread, and an event queued from inside a callback is
// delivered by the same drain loop rather than recursively, so callbacks may
// call back into the owner without deadlock.

#ifndef DEGRADE_DETAIL_SERIAL_DISPATCHER_HPP_
#define DEGRADE_DETAIL_SERIAL_DISPATCHER_HPP_

#include <atomic>
#include <utility>
#include <vector>

#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

template <typename Event>
class SerialDispatcher {
 public:
  void Push(Event e) {
    MutexLock lock(&mu_);
    pending_.push_back(std::move(e));
  }

  // Calls `deliver(event)` for every queued event; see CallQuietly.
  template <typename F>
  void Drain(const F& deliver) {
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (pending_.empty()) return;
      }
      if (draining_.exchange(true, std::memory_order_acq_rel)) return;
      std::vector<Event> batch;
      {
        MutexLock lock(&mu_);
        batch.swap(pending_);
      }
      for (const Event& e : batch) CallQuietly(deliver, e);
      draining_.store(false, std::memory_order_release);
    }
  }

 private:
  Mutex mu_;
  std::vector<Event> pending_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> draining_{false};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SERIAL_DISPATCHER_HPP_
