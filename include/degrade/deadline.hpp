// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: deadline.hpp
// -----------------------------------------------------------------------------
//
// Latency budgets for stages. Every stage of a request has a budget (100 ms
// in the article); a request must never wait past it for one sick stage.
//
// Two forms:
//
//  * Cooperative: the callable receives its deadline and passes it on to its
//    RPC client, which gives up in time. Use `Deadline` and
//    `Deadline::remaining()`; nothing runs on another thread.
//
//  * Hard timeout, for a callable that cannot honour a deadline (a blocking
//    client, a library call): `CallWithTimeout` runs it on an `Executor` (a
//    small built-in `ThreadPool`, or one you supply) and returns
//    DEADLINE_EXCEEDED when the budget runs out. The late result is
//    discarded safely: the waiting side and the task share their state
//    through a reference count, so whichever finishes last frees it.
//
//   degrade::ThreadPool pool(4);
//   absl::StatusOr<Ranked> r = degrade::CallWithTimeout(
//       pool, absl::Milliseconds(100),
//       [client, req] { return client->RankBlocking(req); });   // by value!
//   if (absl::IsDeadlineExceeded(r.status())) { /* order by recall score */ }
//
// The callable runs after the caller may have returned, so it must own what
// it uses: capture by value (or shared_ptr), never references to the
// caller's stack. The caller waits at most the budget plus the time the
// operating system takes to wake it (normally well under a millisecond; the
// tests allow 1 s on a loaded 2-core CI machine).
//
// Thread safety: ThreadPool and CallWithTimeout are thread-safe.

#ifndef DEGRADE_DEADLINE_HPP_
#define DEGRADE_DEADLINE_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/thread_start.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

template <typename T>
class CircuitBreaker;  // degrade/circuit_breaker.hpp

// Deadline
//
// A point in time by which a stage must have answered. A plain value.
class Deadline {
 public:
  // A deadline `budget` from now on `clock` (the real clock by default).
  // An infinite budget is no deadline (InfiniteFuture), whatever the clock
  // reads, even InfinitePast. A finite budget is always a deadline, never
  // "no deadline", by the library's time rule (saturating; a clock going
  // backwards is no time passing):
  //   * taken while the clock reads InfiniteFuture (no real clock does; a
  //     clock adapter may return it for an error), the budget is spent at
  //     once and stays spent (InfinitePast): at the end of time every
  //     finite budget has run out, and a clock that comes back from there
  //     went backwards, which gives the budget nothing back;
  //   * taken at InfinitePast, it is spent the same way (the sum stays
  //     InfinitePast);
  //   * a budget that takes a finite reading past absl::Time's range
  //     (about 2.9e11 years) saturates at the latest finite instant.
  static Deadline In(absl::Duration budget, const Clock* clock = nullptr) {
    const Clock* c = clock != nullptr ? clock : &RealClock::Instance();
    if (budget == absl::InfiniteDuration()) {
      return Deadline(absl::InfiniteFuture(), c);
    }
    const absl::Time now = c->Now();
    if (now == absl::InfiniteFuture()) {
      return Deadline(absl::InfinitePast(), c);
    }
    const absl::Time when = detail::SatAdd(now, budget);
    return Deadline(when == absl::InfiniteFuture() ? LatestFinite() : when, c);
  }
  static Deadline At(absl::Time when, const Clock* clock = nullptr) {
    return Deadline(when, clock != nullptr ? clock : &RealClock::Instance());
  }

  absl::Time when() const { return when_; }
  // Time left, never negative; InfiniteDuration for a deadline at
  // InfiniteFuture (In(InfiniteDuration()): no deadline), whatever the
  // clock reads.
  absl::Duration remaining() const {
    return detail::RemainingUntil(when_, clock_->Now());
  }
  // Whether the clock has reached the deadline: exactly when remaining() is
  // zero, so a deadline at InfiniteFuture never expires.
  // No deadline reads no clock, so a caller may check it on a hot path.
  bool expired() const {
    return when_ != absl::InfiniteFuture() &&
           detail::DeadlineReached(when_, clock_->Now());
  }

 private:
  Deadline(absl::Time when, const Clock* clock) : when_(when), clock_(clock) {}
  static absl::Time LatestFinite() {
    return absl::FromUnixSeconds(std::numeric_limits<int64_t>::max());
  }
  absl::Time when_;
  const Clock* clock_;
};

// CallWithDeadline(budget, f[, clock])
//
// The cooperative form: calls `f(deadline)` on this thread with a Deadline
// `budget` from now, for `f` to hand to its RPC client (`remaining()`). If
// `f` comes back after the deadline anyway, its result is discarded and
// DEADLINE_EXCEEDED returned, so a stage never serves an answer its request
// has given up on. A budget already spent (zero, negative,
// -InfiniteDuration, or a deadline Deadline::In() reads as spent) does not
// call `f` at all: DEADLINE_EXCEEDED at once, so an expired deadline is
// never handed to an RPC client. `f` returns T or absl::StatusOr<T>
// (absl::Status or void for a void result); an exception becomes a status
// recognised by IsCallableException. Thread-safe when `f` is.
template <typename F>
auto CallWithDeadline(absl::Duration budget, F f, const Clock* clock = nullptr);

// Executor
//
// Runs tasks on other threads. Implementations must be thread-safe.
class Executor {
 public:
  virtual ~Executor() = default;
  // Queues `task`. Returns false, without running it, when the executor is
  // full or shutting down; callers treat that as an immediate timeout.
  // Should not throw; degrade's callers take a throw as a refusal (the
  // task was not queued) and say so in their status, never passing it on.
  virtual bool Submit(std::function<void()> task) = 0;
};

// ThreadPool
//
// A small fixed pool with a bounded queue, enough for hard timeouts. A hung
// task holds its thread until it returns, so size the pool for the hangs you
// expect to outlive their budgets; when every thread is busy and the queue is
// full, Submit() refuses rather than queueing without bound. The destructor
// runs what is queued and joins the threads (so it waits for hung tasks).
// Thread-safe: Submit() may be called from any thread; a task may submit
// more tasks. A task must not throw (CallWithTimeout's never do).
//
// Starting threads can fail (the process is out of threads, or of address
// space for their stacks). Construction is all or nothing and never ends
// the process: if thread k cannot start, the k - 1 already running are
// stopped and joined, `status()` says RESOURCE_EXHAUSTED and why, and every
// Submit() is refused (so CallWithTimeout returns RESOURCE_EXHAUSTED, which
// a breaker counts and a fallback serves around). `Create()` returns that
// status instead of a pool; prefer it where the error can be handled. Not
// an exception: degrade never throws, and an uncaught one at start-up would
// end the process just as std::terminate did.
class ThreadPool final : public Executor {
 public:
  // REQUIRES: threads > 0 (0 means 1). See the class comment for a failure
  // to start them.
  explicit ThreadPool(std::size_t threads, std::size_t max_queue = 1024);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() override;

  // A running pool, or RESOURCE_EXHAUSTED naming the thread that could not
  // be started (none is left running).
  static absl::StatusOr<std::unique_ptr<ThreadPool>> Create(
      std::size_t threads, std::size_t max_queue = 1024);

  bool Submit(std::function<void()> task) override;

  // OK, or why the threads could not be started. Fixed at construction.
  const absl::Status& status() const { return status_; }
  // Threads running: as many as asked for, or 0 after a failed start.
  std::size_t threads() const { return workers_.size(); }

 private:
  void Work();
  void StopAndJoin();

  const std::size_t max_queue_;
  detail::Mutex mu_;
  detail::CondVar cv_;  // a task was queued, or the pool is stopping
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Started by the constructor and joined by the destructor (or by the
  // constructor itself when a start fails), touched by no one in between.
  std::vector<std::thread> workers_;
  absl::Status status_;  // set by the constructor only
};

// CallWithTimeout(executor, budget, f)
//
// Runs `f()` on `executor` and waits at most `budget` for it. `f` returns T
// or absl::StatusOr<T> (absl::Status or void for a `void` result). Returns
// f's result; DEADLINE_EXCEEDED when the budget ran out (the late result is
// discarded); RESOURCE_EXHAUSTED when the executor refused the task or its
// Submit() threw (the message names the exception; `f` is not run); a
// status recognised by IsCallableException if `f` threw. `f` is moved into
// the task: it must own everything it touches (see the file comment). Any
// budget is valid: a spent one (zero, negative, -InfiniteDuration) returns
// DEADLINE_EXCEEDED at once without submitting `f` (it would run after its
// caller gave up, for nothing), `absl::InfiniteDuration()` waits for it
// however long it takes. Thread-safe.
template <typename F>
auto CallWithTimeout(Executor& executor, absl::Duration budget, F f);

// ExecuteWithTimeout(breaker, executor, budget, f)
//
// CallWithTimeout behind a breaker: the call is admitted by `breaker` (or
// rejected at once), and its outcome is reported when it is known — a
// timeout is reported as a failure at the moment the budget runs out, so a
// hanging backend trips the breaker even though its calls never return.
// A budget already spent is the caller's, not the backend's: answered
// DEADLINE_EXCEEDED before the breaker, taking no permit and reporting no
// outcome (a caller out of budget must not open a healthy backend's
// breaker, nor hold a half-open trial).
template <typename T, typename F>
typename CircuitBreaker<T>::Result ExecuteWithTimeout(
    CircuitBreaker<T>& breaker, Executor& executor, absl::Duration budget, F f);

// ---- Implementation details -------------------------------------------------

namespace detail {

// What the waiting caller and the running task of a CallWithTimeout share.
// Whichever lets go last frees it (both hold a shared_ptr), so a late task
// never writes into freed memory. Thread-safe.
template <typename R>
class TimedCall {
 public:
  // The task's side: stores the result and wakes the caller, if it still
  // waits.
  void Deliver(R result) {
    MutexLock lock(&mu_);
    result_.emplace(std::move(result));
    cv_.SignalAll();
  }

  // The caller's side: the result, once it is there, or nullopt when
  // `budget` runs out first. CondVar::WaitFor takes any duration.
  std::optional<R> Await(absl::Duration budget) {
    MutexLock lock(&mu_);
    const bool done =
        cv_.WaitFor(&mu_, budget, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return result_.has_value();
        });
    if (!done) return std::nullopt;
    return std::move(result_);
  }

 private:
  Mutex mu_;
  CondVar cv_;  // the result arrived
  std::optional<R> result_ ABSL_GUARDED_BY(mu_);
};

}  // namespace detail

inline ThreadPool::ThreadPool(std::size_t threads, std::size_t max_queue)
    : max_queue_(max_queue == 0 ? 1 : max_queue) {
  if (threads == 0) threads = 1;
  // Reserved before any thread starts, so that keeping a started thread
  // never allocates (a failed push_back would destroy it joinable).
  status_ = detail::InvokeOr(
      [&] {
        workers_.reserve(threads);
        return absl::OkStatus();
      },
      [](absl::string_view what) {
        return absl::ResourceExhaustedError(
            absl::StrCat("ThreadPool: cannot allocate its threads: ", what));
      });
  for (std::size_t i = 0; status_.ok() && i < threads; ++i) {
    absl::StatusOr<std::thread> t = detail::StartThread(
        absl::StrCat("ThreadPool: thread ", i + 1, " of ", threads),
        [this] { Work(); });
    if (t.ok()) {
      workers_.push_back(*std::move(t));  // no reallocation: reserved
    } else {
      status_ = t.status();
    }
  }
  if (!status_.ok()) StopAndJoin();  // all or nothing; Submit now refuses
}

inline absl::StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(
    std::size_t threads, std::size_t max_queue) {
  auto pool = std::make_unique<ThreadPool>(threads, max_queue);
  if (!pool->status().ok()) return pool->status();
  return pool;
}

inline ThreadPool::~ThreadPool() { StopAndJoin(); }

inline void ThreadPool::StopAndJoin() {
  {
    detail::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

inline bool ThreadPool::Submit(std::function<void()> task) {
  {
    detail::MutexLock lock(&mu_);
    if (stopping_ || queue_.size() >= max_queue_) return false;
    // The queue's allocation may fail: a refusal, as a full queue, since
    // the Executor contract is a bool and degrade never throws. (The
    // analysis does not follow the lock into the lambda: hand it the
    // queue by pointer.)
    std::deque<std::function<void()>>* queue = &queue_;
    const bool queued = detail::InvokeOr(
        [queue, &task] {
          queue->push_back(std::move(task));
          return true;
        },
        [](absl::string_view) { return false; });
    if (!queued) return false;
  }
  cv_.Signal();
  return true;
}

inline void ThreadPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      detail::MutexLock lock(&mu_);
      cv_.Wait(&mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

template <typename F>
auto CallWithTimeout(Executor& executor, absl::Duration budget, F f) {
  using R = std::decay_t<std::invoke_result_t<F&>>;
  using T = typename detail::Unwrapped<R>::type;
  using Result = detail::ResultOf<T>;
  if (budget <= absl::ZeroDuration()) {
    return Result(absl::DeadlineExceededError(absl::StrCat(
        "CallWithTimeout: the budget of ", absl::FormatDuration(budget),
        " was spent before the call; it was not run")));
  }
  auto shared = std::make_shared<detail::TimedCall<Result>>();
  // A Submit() that throws (a user's executor, or the std::function's own
  // allocation) is a refusal with its cause: `f` is not run, not even on
  // this thread, since a hard timeout is the whole point of the call (a
  // callable that may hang, run inline, would hold the caller past its
  // budget). As a refused TimeLimiter task in resilience4j, or a gRPC call
  // that cannot be scheduled, it fails at once and the caller's fallback
  // takes over; unlike them, nothing is thrown.
  std::optional<std::string> thrown;
  const bool queued = detail::InvokeOr(
      [&] {
        return executor.Submit([shared, f = std::move(f)]() mutable {
          shared->Deliver(detail::InvokeCatching<T>(f, "CallWithTimeout"));
        });
      },
      [&thrown](absl::string_view what) {
        thrown.emplace(what);
        return false;
      });
  if (thrown.has_value()) {
    return Result(absl::ResourceExhaustedError(
        absl::StrCat("CallWithTimeout: the executor's Submit() threw (",
                     *thrown, "); the task was not run")));
  }
  if (!queued) {
    return Result(absl::ResourceExhaustedError(
        "CallWithTimeout: the executor refused the task (full, stopping, or "
        "without threads: see ThreadPool::status())"));
  }
  std::optional<Result> result = shared->Await(budget);
  if (!result.has_value()) {
    return Result(absl::DeadlineExceededError(absl::StrCat(
        "CallWithTimeout: no result within the budget of ",
        absl::FormatDuration(budget), "; the late result will be discarded")));
  }
  return *std::move(result);
}

template <typename F>
auto CallWithDeadline(absl::Duration budget, F f, const Clock* clock) {
  const Deadline deadline = Deadline::In(budget, clock);
  auto bound = [&f, &deadline] { return f(deadline); };
  using R = std::decay_t<std::invoke_result_t<decltype(bound)&>>;
  using T = typename detail::Unwrapped<R>::type;
  using Result = detail::ResultOf<T>;
  // Checked before the call, not only after it: work done under a spent
  // budget is always discarded, and `f` would pass the expired deadline on.
  if (deadline.expired()) {
    return Result(absl::DeadlineExceededError(absl::StrCat(
        "CallWithDeadline: the budget of ", absl::FormatDuration(budget),
        " was spent before the call; it was not made")));
  }
  Result result = detail::InvokeCatching<T>(bound, "CallWithDeadline");
  if (deadline.expired() && detail::StatusOf(result).ok()) {
    return Result(absl::DeadlineExceededError(
        absl::StrCat("CallWithDeadline: the answer came after the budget of ",
                     absl::FormatDuration(budget), " and was discarded")));
  }
  return result;
}

template <typename T, typename F>
typename CircuitBreaker<T>::Result ExecuteWithTimeout(
    CircuitBreaker<T>& breaker, Executor& executor, absl::Duration budget,
    F f) {
  // Everything below depends on T, so this header needs only the forward
  // declaration: a caller that has a breaker has included its header.
  if (budget <= absl::ZeroDuration()) {
    return typename CircuitBreaker<T>::Result(
        absl::DeadlineExceededError(absl::StrCat(
            "ExecuteWithTimeout: the budget of ", absl::FormatDuration(budget),
            " was spent before the call; it was not run and the "
            "breaker was not asked")));
  }
  auto permit = breaker.Allow();
  if (!permit.ok()) return typename CircuitBreaker<T>::Result(permit.status());
  auto result = CallWithTimeout(executor, budget, std::move(f));
  permit->Done(detail::StatusOf(result));
  return result;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEADLINE_HPP_
