// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Annotated locks over the standard ones: `Mutex` (std::mutex), `SharedMutex`
// (std::shared_mutex) and `CondVar` (a condition variable over `Mutex`), with
// their scoped holders. Every mutex-guarded member in degrade is declared
// ABSL_GUARDED_BY one of these, so clang's -Wthread-safety checks the lock
// discipline at compile time (the clang presets turn it on).
//
// Why not absl::Mutex: Debian's prebuilt Abseil gives false data-race reports
// under ThreadSanitizer (its TSan hooks live in an uninstrumented shared
// library) and is built with deadlock detection, which makes every lock ~4x
// dearer. These wrappers stay clean under TSan in users' builds too. The
// spelling of a scoped lock (`MutexLock lock(&mu_);`) is kept in this one
// place, so a move to a newer Abseil touches only this file.

#ifndef DEGRADE_DETAIL_MUTEX_HPP_
#define DEGRADE_DETAIL_MUTEX_HPP_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Takes the lock if it is free; for a background job that would rather
  // skip its turn than wait behind a caller.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return mu_.try_lock();
  }
  // For std::unique_lock-style users (CondVar); not for direct use.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

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

// CondVar
//
// A condition variable for `Mutex`. Waits take the mutex the caller holds
// (ABSL_EXCLUSIVE_LOCKS_REQUIRED), release it while blocked and hold it
// again when they return, as absl::CondVar does; the predicate runs with
// the mutex held. Thread-safe.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Blocks until `pred()` is true.
  template <typename Pred>
  void Wait(Mutex* mu, Pred pred) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<Mutex> lock(*mu, std::adopt_lock);
    cv_.wait(lock, pred);
    lock.release();  // the caller's scope still owns the mutex
  }

  // Blocks until `pred()` is true or `timeout` has passed; returns `pred()`.
  // Any duration is safe: a negative one waits not at all, one too long for
  // the steady clock to add (InfiniteDuration, centuries) waits in bounded
  // slices until `pred()` holds.
  template <typename Pred>
  bool WaitFor(Mutex* mu, absl::Duration timeout, Pred pred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<Mutex> lock(*mu, std::adopt_lock);
    bool done = Evaluate(pred);
    // A deadline past about a year is treated as "no deadline" and waited
    // for a year at a time: steady_clock::now() + a few centuries overflows.
    constexpr absl::Duration kSlice = absl::Hours(24 * 365);
    while (!done && timeout > absl::ZeroDuration()) {
      const absl::Duration step = timeout > kSlice ? kSlice : timeout;
      done = cv_.wait_for(lock, absl::ToChronoNanoseconds(step), pred);
      if (timeout != absl::InfiniteDuration()) timeout -= step;
    }
    lock.release();
    return done;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // Calls a predicate annotated with the lock it reads under, as in
  // `[this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_; }`. It runs
  // with `mu` held, but the analysis cannot tell that `mu` is the mutex the
  // predicate names, so this one call is exempt from it.
  template <typename Pred>
  static bool Evaluate(Pred& pred) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return pred();
  }

  std::condition_variable_any cv_;
};

// SharedMutex
//
// A reader/writer lock: many `ReaderLock`s or one `WriterLock` at a time.
class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class ABSL_SCOPED_LOCKABLE ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;
  ~ReaderLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }

 private:
  SharedMutex* const mu_;
};

class ABSL_SCOPED_LOCKABLE WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  SharedMutex* const mu_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_MUTEX_HPP_
