// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Thread creation that fails on demand, through the seam of
// degrade/detail/thread_start.hpp: while a `FailThreadStarts` lives, the
// n-th thread start (counting from 1 from its construction) and the
// `count - 1` after it throw std::system_error(EAGAIN), as std::thread does
// when the process is out of threads; every other start goes through.
//
//   FailThreadStarts fail(/*n=*/3);   // the third start fails
//   ThreadPool pool(5);               // two started, then stopped and joined
//
// One at a time per process (the seam is global). Thread-safe.

#ifndef DEGRADE_TESTS_SUPPORT_THREAD_START_FAILURE_HPP_
#define DEGRADE_TESTS_SUPPORT_THREAD_START_FAILURE_HPP_

#include <atomic>
#include <cerrno>
#include <system_error>

#include "degrade/detail/thread_start.hpp"

namespace degrade_tests {

class FailThreadStarts {
 public:
  explicit FailThreadStarts(int n, int count = 1)
      : saved_(degrade::detail::ThreadStartHookSlot().load()) {
    Attempts().store(0);
    First().store(n);
    Last().store(n + count - 1);
    degrade::detail::SetThreadStartHookForTesting(&Hook);
  }
  FailThreadStarts(const FailThreadStarts&) = delete;
  FailThreadStarts& operator=(const FailThreadStarts&) = delete;
  // Puts back the hook that was there before (normally none).
  ~FailThreadStarts() { degrade::detail::SetThreadStartHookForTesting(saved_); }

  // Thread starts attempted so far, failed ones included.
  int attempts() const { return Attempts().load(); }

 private:
  static void Hook() {
    const int k = Attempts().fetch_add(1) + 1;
    if (k >= First().load() && k <= Last().load()) {
      throw std::system_error(
          std::make_error_code(std::errc::resource_unavailable_try_again),
          "thread start failed by the test");
    }
  }
  const degrade::detail::ThreadStartHook saved_;

  static std::atomic<int>& Attempts() {
    static std::atomic<int> n{0};
    return n;
  }
  static std::atomic<int>& First() {
    static std::atomic<int> n{0};
    return n;
  }
  static std::atomic<int>& Last() {
    static std::atomic<int> n{0};
    return n;
  }
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_THREAD_START_FAILURE_HPP_
