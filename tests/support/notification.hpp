// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// absl::Notification's interface over degrade's own Mutex and CondVar
// (detail/mutex.hpp). Debian's Abseil keeps its ThreadSanitizer hooks in
// an uninstrumented shared library, so TSan does not see the order an
// absl::Notification makes and reports the data a test hands over through
// it as racing; this one it sees. Thread-safe.
//
//   degrade_tests::Notification release;
//   pool.Submit([&] { release.WaitForNotification(); ... });
//   release.Notify();

#ifndef DEGRADE_TESTS_SUPPORT_NOTIFICATION_HPP_
#define DEGRADE_TESTS_SUPPORT_NOTIFICATION_HPP_

#include "absl/base/thread_annotations.h"
#include "degrade/detail/mutex.hpp"

namespace degrade_tests {

class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  void Notify() {
    degrade::detail::MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  bool HasBeenNotified() {
    degrade::detail::MutexLock lock(&mu_);
    return notified_;
  }
  void WaitForNotification() {
    degrade::detail::MutexLock lock(&mu_);
    cv_.Wait(&mu_,
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return notified_; });
  }

 private:
  degrade::detail::Mutex mu_;
  degrade::detail::CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_NOTIFICATION_HPP_
