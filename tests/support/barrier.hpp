// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A one-shot barrier (C++17 has no std::latch): holds each thread that
// arrives until `n` have, for tests that need threads alive at the same
// time (holding their shard slots at once) rather than hoping they overlap.
// Thread-safe.

#ifndef DEGRADE_TESTS_SUPPORT_BARRIER_HPP_
#define DEGRADE_TESTS_SUPPORT_BARRIER_HPP_

#include "absl/base/thread_annotations.h"
#include "degrade/detail/mutex.hpp"

namespace degrade_tests {

class Barrier {
 public:
  explicit Barrier(int n) : left_(n) {}
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  void ArriveAndWait() {
    degrade::detail::MutexLock lock(&mu_);
    if (--left_ == 0) {
      cv_.SignalAll();
      return;
    }
    cv_.Wait(&mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return left_ == 0;
    });
  }

 private:
  degrade::detail::Mutex mu_;
  degrade::detail::CondVar cv_;
  int left_ ABSL_GUARDED_BY(mu_);
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_BARRIER_HPP_
