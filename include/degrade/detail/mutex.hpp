// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An annotated lock over std::mutex. Why not absl::Mutex: Debian's prebuilt
// Abseil gives false data-race reports under ThreadSanitizer (its TSan hooks
// live in an uninstrumented shared library) and is built with deadlock
// detection, which makes every lock ~4x dearer. This wrapper keeps clang's
// -Wthread-safety analysis and stays clean under TSan in users' builds too.

#ifndef DEGRADE_DETAIL_MUTEX_HPP_
#define DEGRADE_DETAIL_MUTEX_HPP_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace degrade {
namespace detail {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* const mu_;
};

}  // namespace detail
}  // namespace degrade

#endif  // DEGRADE_DETAIL_MUTEX_HPP_
