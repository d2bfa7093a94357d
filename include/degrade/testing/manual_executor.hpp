// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: testing/manual_executor.hpp
// -----------------------------------------------------------------------------
//
// An `Executor` (deadline.hpp) that runs nothing until told to, so code that
// hands work to other threads (hedged calls, hard timeouts) can be tested
// on one thread, deterministically, together with a FakeClock: the test
// decides when each queued task runs, and what time it is then.
//
//   degrade::FakeClock clock;
//   degrade::testing::ManualExecutor executor;
//   auto call = degrade::StartHedge(*policy, executor, attempt);
//   clock.Advance(absl::Milliseconds(30));   // the hedge delay passes
//   call.SendHedge();                        // queued: 2 tasks pending
//   executor.RunLast();                      // the hedge answers first
//   executor.RunAll();                       // the loser sees cancelled()
//
// `set_refusing(true)` makes Submit() refuse, as a full pool would.
// `Take()` hands a task out instead of running it, for simulations that
// run each task at a time of their choosing.
//
// Thread safety: every member is thread-safe. Tasks run on the thread that
// calls Run*(), outside the executor's lock, so a task may submit more.

#ifndef DEGRADE_TESTING_MANUAL_EXECUTOR_HPP_
#define DEGRADE_TESTING_MANUAL_EXECUTOR_HPP_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "degrade/deadline.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace testing {

class ManualExecutor final : public Executor {
 public:
  // Queues `task`, or refuses it (false) while refusing.
  bool Submit(std::function<void()> task) override {
    detail::MutexLock lock(&mu_);
    if (refusing_) {
      ++refused_;
      return false;
    }
    queue_.push_back(std::move(task));
    ++submitted_;
    return true;
  }

  void set_refusing(bool refusing) {
    detail::MutexLock lock(&mu_);
    refusing_ = refusing;
  }

  std::size_t pending() const {
    detail::MutexLock lock(&mu_);
    return queue_.size();
  }
  uint64_t submitted() const {
    detail::MutexLock lock(&mu_);
    return submitted_;
  }
  uint64_t refused() const {
    detail::MutexLock lock(&mu_);
    return refused_;
  }

  // Runs the oldest queued task. False if none was queued.
  bool RunNext() { return Run(Take(/*newest=*/false)); }
  // Runs the newest queued task. False if none was queued.
  bool RunLast() { return Run(Take(/*newest=*/true)); }
  // Runs tasks, oldest first, until none is queued (tasks they submit
  // included). Returns how many ran.
  std::size_t RunAll() {
    std::size_t n = 0;
    while (RunNext()) ++n;
    return n;
  }

  // Removes the oldest (or newest) queued task and returns it unrun; an
  // empty function if none was queued.
  std::function<void()> Take(bool newest = false) {
    detail::MutexLock lock(&mu_);
    if (queue_.empty()) return {};
    std::function<void()> task;
    if (newest) {
      task = std::move(queue_.back());
      queue_.pop_back();
    } else {
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    return task;
  }

 private:
  static bool Run(std::function<void()> task) {
    if (!task) return false;
    task();
    return true;
  }

  mutable detail::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool refusing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace testing
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TESTING_MANUAL_EXECUTOR_HPP_
