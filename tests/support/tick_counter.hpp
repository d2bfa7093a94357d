// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A counter that threads bump and a test waits on, for the tests of
// components that call user code on a thread of their own (a worker's tick,
// a manager's source, a hot list's refresh, a pager): wait for the n-th call
// on a condition variable instead of sleeping. Thread-safe.

#ifndef DEGRADE_TESTS_SUPPORT_TICK_COUNTER_HPP_
#define DEGRADE_TESTS_SUPPORT_TICK_COUNTER_HPP_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"

namespace degrade_tests {

class TickCounter {
 public:
  void Tick() {
    degrade::detail::MutexLock lock(&mu_);
    ++count_;
    cv_.SignalAll();
  }
  // True once `n` ticks have happened; false after a minute, a safety net
  // that only a broken component reaches.
  bool WaitFor(uint64_t n) {
    degrade::detail::MutexLock lock(&mu_);
    return cv_.WaitFor(
        &mu_, absl::Seconds(60),
        [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ >= n; });
  }
  uint64_t count() {
    degrade::detail::MutexLock lock(&mu_);
    return count_;
  }

 private:
  degrade::detail::Mutex mu_;
  degrade::detail::CondVar cv_;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TICK_COUNTER_HPP_
