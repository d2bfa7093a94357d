// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Starting a thread when the system may have none to give. std::thread's
// constructor throws std::system_error when it cannot start one (EAGAIN: the
// process is out of threads, or of address space for another stack, as under
// `ulimit -v`) and std::bad_alloc when it cannot allocate the thread's
// state. Left alone, either escapes the library's "nothing throws" promise,
// and a constructor that has started other threads already ends the process
// (a joinable std::thread destroyed during the unwinding calls
// std::terminate). `StartThread` turns the failure into RESOURCE_EXHAUSTED
// naming its owner, so a Start() can report it and be retried, and a
// constructor can stop and join what it started.
//
// With -fno-exceptions the standard library aborts instead of throwing;
// nothing can be done about that here.
//
// The test seam: `SetThreadStartHookForTesting(hook)` makes every
// StartThread call `hook()` first, on the calling thread, and a hook that
// throws is treated exactly as std::thread throwing. Tests use it to make
// the k-th thread creation of a component fail without `ulimit`. One hook
// per process; set it before the threads under test start, and clear it
// (nullptr) when done.
//
// Thread-safe.

#ifndef DEGRADE_DETAIL_THREAD_START_HPP_
#define DEGRADE_DETAIL_THREAD_START_HPP_

#include <atomic>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/invoke.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

using ThreadStartHook = void (*)();

inline std::atomic<ThreadStartHook>& ThreadStartHookSlot() {
  static std::atomic<ThreadStartHook> hook{nullptr};
  return hook;
}

// Installs `hook` (nullptr removes it); see the file comment.
inline void SetThreadStartHookForTesting(ThreadStartHook hook) {
  ThreadStartHookSlot().store(hook, std::memory_order_release);
}

// A thread running `body`, or RESOURCE_EXHAUSTED "<who>: cannot start a
// thread: <what the standard library said>". On failure `body` may have
// been moved from.
template <typename F>
absl::StatusOr<std::thread> StartThread(absl::string_view who, F&& body) {
  return InvokeOr(
      [&body]() -> absl::StatusOr<std::thread> {
        if (const ThreadStartHook hook =
                ThreadStartHookSlot().load(std::memory_order_acquire)) {
          hook();
        }
        return std::thread(std::forward<F>(body));
      },
      [who](absl::string_view what) -> absl::StatusOr<std::thread> {
        return absl::ResourceExhaustedError(
            absl::StrCat(who, ": cannot start a thread: ", what));
      });
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_THREAD_START_HPP_
