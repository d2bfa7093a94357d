// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Which owners' user callbacks the current thread is inside, so that a call
// back into an owner that cannot be re-entered there (a poll that holds its
// poll lock, a poll that would call the very source calling it) is refused
// with FAILED_PRECONDITION instead of deadlocking on its own lock or
// recursing until the stack runs out.
//
//   absl::Status Poll() {
//     if (detail::CallbackScope::Inside(this)) return Refused();
//     detail::CallbackScope scope(this);  // until the callbacks are done
//     ...call the user's sources...
//   }
//
// Per thread: a call from another thread is not re-entry and is not refused
// (it waits for the lock like any caller). Scopes nest, across owners too.
// Thread-safe (each thread sees only its own scopes).

#ifndef DEGRADE_DETAIL_REENTRY_HPP_
#define DEGRADE_DETAIL_REENTRY_HPP_

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class CallbackScope {
 public:
  // Marks the current thread as inside `owner`'s callbacks until the scope
  // ends. REQUIRES: destroyed on the thread that made it, in reverse order.
  explicit CallbackScope(const void* owner) : owner_(owner), outer_(Top()) {
    Top() = this;
  }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  ~CallbackScope() { Top() = outer_; }

  // Whether the current thread is inside a scope of `owner`.
  static bool Inside(const void* owner) {
    for (const CallbackScope* s = Top(); s != nullptr; s = s->outer_) {
      if (s->owner_ == owner) return true;
    }
    return false;
  }

 private:
  // A function-local thread_local in an inline function: one per thread for
  // the whole program, whatever the number of translation units.
  static const CallbackScope*& Top() {
    static thread_local const CallbackScope* top = nullptr;
    return top;
  }

  const void* const owner_;
  const CallbackScope* const outer_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_REENTRY_HPP_
