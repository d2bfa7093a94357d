// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// One hedged call: the attempts racing for it and the decision. Shared
// (shared_ptr) by the caller's HedgedCall and every attempt's task, so an
// attempt that finishes after the caller has gone still has somewhere to
// report, and whichever lets go last frees it.
//
// The rules, all decided under one lock:
//
//   * the first attempt to succeed wins: its result is the call's, the
//     cancel flag is raised (every CancelToken of the call reads it), and
//     the attempts still running become losers;
//   * a failure with another attempt still running waits for that one; a
//     failure that leaves none running ends the call with that failure, and
//     no more hedges are sent (hedging cuts latency; errors are a retry
//     policy's business);
//   * at a breaker, an attempt that reports before the decision counts as
//     it would unhedged (success or failure); a loser's outcome, and a task
//     that never ran because the call was already decided, count as
//     excluded: neither success nor failure, since they say nothing about
//     the backend beyond "slower than another copy";
//   * the winner's outcome reaches its breaker before the caller is woken,
//     so a caller that reads the breaker after Take() sees it.
//
// Latencies for the delay quantile: each attempt that succeeds before the
// decision, from its own start; and each loser still running at the
// decision, as the time it had run by then (a lower bound). Losers are the
// slow tail the quantile must keep seeing: leaving them out would pull the
// p95 down until hedging chased its own shadow.
//
// Thread safety: every member may be called from any thread.

#ifndef DEGRADE_DETAIL_RETRY_HEDGE_RACE_HPP_
#define DEGRADE_DETAIL_RETRY_HEDGE_RACE_HPP_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/retry/hedge_book.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/hedge_settings.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {

// A copy of `s` that shares nothing with it: its own representation and
// its own payload bytes (see HedgeRace::DecideLocked for why).
inline absl::Status Detached(const absl::Status& s) {
  if (s.ok()) return absl::OkStatus();
  absl::Status out(s.code(), std::string(s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& p) {
    out.SetPayload(url, absl::Cord(std::string(p)));
  });
  return out;
}

template <typename T>
class HedgeRace : public std::enable_shared_from_this<HedgeRace<T>> {
 public:
  using Result = ResultOf<T>;
  using Call = std::function<Result(const CancelToken&)>;

  // REQUIRES: book, executor (and breaker, if not null) outlive every
  // attempt's task.
  HedgeRace(HedgeBook* book, Executor* executor, CircuitBreaker<T>* breaker,
            Call call)
      : book_(book),
        executor_(executor),
        breaker_(breaker),
        call_(std::move(call)),
        max_attempts_(1 + book->settings().max_hedges) {}

  // Counts the call and sends the first attempt. Once, right after
  // construction (it needs shared_from_this).
  void Start() {
    const absl::Time now = book_->clock().Now();
    const absl::Duration delay = book_->StartCall(now);
    {
      MutexLock lock(&mu_);
      start_ = now;
      delay_ = delay;
      launched_ = 1;
      slots_[0].start = now;
    }
    switch (Launch(0)) {
      case Launched::kQueued:
        break;
      case Launched::kRefused:  // the executor: the caller runs it itself
      {
        MutexLock lock(&mu_);
        closed_ = true;  // its thread is busy: nobody can send a hedge
      }
        Run(this->shared_from_this(), 0);
        break;
      case Launched::kRejected:
      case Launched::kTooLate:
        break;  // decided by Launch
    }
  }

  // Sends the next attempt now, if the call is undecided, has attempts
  // left, and the extra-load cap, the breaker and the executor allow it.
  // A hedge that is refused ends hedging for this call.
  bool SendHedge() {
    const absl::Time now = book_->clock().Now();
    int i;
    {
      MutexLock lock(&mu_);
      if (decided_ || closed_ || launched_ >= max_attempts_) return false;
      i = launched_++;
      slots_[i].start = now;
    }
    if (!book_->TryHedge(now)) {
      Unlaunch(i, /*close=*/true);
      return false;
    }
    switch (Launch(i)) {
      case Launched::kQueued:
        book_->Sent();
        return true;
      case Launched::kRefused:
      case Launched::kRejected:
        book_->Refund(now);
        book_->Refused();
        Unlaunch(i, /*close=*/true);
        return false;
      case Launched::kTooLate:
        book_->Refund(now);
        return false;
    }
    return false;
  }

  // When the next hedge is due on the policy's clock; InfiniteFuture()
  // when none will be sent.
  absl::Time next_hedge_at() const {
    MutexLock lock(&mu_);
    if (decided_ || closed_ || launched_ >= max_attempts_ ||
        delay_ == absl::InfiniteDuration()) {
      return absl::InfiniteFuture();
    }
    return start_ + delay_ * launched_;
  }

  // The delay between hedges (InfiniteDuration() before it is known).
  absl::Duration delay() const {
    MutexLock lock(&mu_);
    return delay_;
  }

  bool done() const {
    MutexLock lock(&mu_);
    return ready_;
  }

  // Waits up to `timeout` of real time for the decision. True if decided.
  bool WaitFor(absl::Duration timeout) {
    MutexLock lock(&mu_);
    return cv_.WaitFor(
        &mu_, timeout,
        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_; });
  }

  // Waits for the decision and hands over the result. Once.
  Result Take() {
    MutexLock lock(&mu_);
    cv_.Wait(&mu_,
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_; });
    return std::move(*result_);
  }

  // The caller no longer wants the answer: an undecided call is decided as
  // CANCELLED and its attempts told to stop.
  void Abandon() {
    {
      MutexLock lock(&mu_);
      if (decided_) return;
      DecideLocked(-1,
                   Result(absl::CancelledError(
                       "hedged call: the caller gave up before any answer")),
                   book_->clock().Now());
      ready_ = true;
    }
    cv_.SignalAll();
  }

  int attempts() const {
    MutexLock lock(&mu_);
    return launched_;
  }
  int winner() const {
    MutexLock lock(&mu_);
    return winner_;
  }

 private:
  enum class Launched { kQueued, kRefused, kRejected, kTooLate };

  struct Slot {
    absl::Time start;
    std::optional<Permit> permit;
    bool done = false;
  };

  // Admits attempt `i` at its breaker and queues it. kRejected: the breaker
  // refused (for the first attempt the call is then decided with the
  // rejection); kTooLate: decided meanwhile (the slot is closed); kRefused:
  // the executor refused (the slot stays open for the caller to handle).
  Launched Launch(int i) {
    std::optional<Permit> permit;
    if (breaker_ != nullptr) {
      absl::StatusOr<Permit> p = breaker_->Allow();
      if (!p.ok()) {
        if (i == 0) Finish(i, Result(p.status()), /*counted=*/false);
        return Launched::kRejected;
      }
      permit.emplace(*std::move(p));
    }
    bool too_late = false;
    {
      MutexLock lock(&mu_);
      if (decided_) {
        too_late = true;  // decided while we were admitting it
      } else {
        slots_[i].permit = std::move(permit);
      }
    }
    if (too_late) {
      Unlaunch(i, false);
      if (permit.has_value()) {
        permit->Done(absl::CancelledError("hedge not sent: already answered"),
                     CallVerdict::kExcluded);
      }
      return Launched::kTooLate;
    }
    auto self = this->shared_from_this();
    // A Submit() that throws is a refusal: Hedge() promises not to throw,
    // and a hedged call's first job is to answer. As with a refusal, the
    // first attempt then runs on the caller's thread (what an unhedged call
    // would have done: hedging only ever adds copies, so losing the
    // executor must not lose the call) and a hedge is not sent (counted
    // refused). The executor is taken at its word that a throw queued
    // nothing.
    const bool queued = InvokeOr(
        [&] { return executor_->Submit([self, i] { self->Run(self, i); }); },
        [](absl::string_view) { return false; });
    if (queued) return Launched::kQueued;
    return Launched::kRefused;
  }

  static void Run(const std::shared_ptr<HedgeRace>& self, int i) {
    if (self->cancel_.load(std::memory_order_acquire)) {
      self->Finish(i, std::nullopt, true);  // decided before it started
      return;
    }
    const CancelToken token(
        std::shared_ptr<const std::atomic<bool>>(self, &self->cancel_), i);
    auto bound = [&]() -> Result { return self->call_(token); };
    self->Finish(
        i,
        InvokeCatching<T>(bound, "hedged call", self->book_->settings().name),
        true);
  }

  // Attempt `i` ended without an outcome (never sent, or sent too late):
  // its slot closes, which may leave only failures behind.
  void Unlaunch(int i, bool close) {
    std::optional<Permit> permit;
    {
      MutexLock lock(&mu_);
      permit = std::move(slots_[i].permit);
      slots_[i].done = true;
      ++finished_;
      if (close) closed_ = true;
      if (!decided_ && finished_ == launched_) {
        // Every attempt that ran failed: the last failure is the answer.
        DecideLocked(
            -1,
            Result(last_error_.ok()
                       ? absl::UnknownError("hedged call: no attempt ran")
                       : last_error_),
            book_->clock().Now());
      }
    }
    if (permit.has_value()) {
      permit->Done(absl::CancelledError("hedge not sent"),
                   CallVerdict::kExcluded);
    }
    MarkReadyIfDecided();
  }

  // Attempt `i` ended: `r` is its result, nullopt if it never ran.
  // `counted`: false for a first attempt the breaker rejected (no attempt
  // ran; the rejection is the answer).
  void Finish(int i, std::optional<Result> r, bool counted) {
    std::optional<Permit> permit;
    absl::Status outcome;
    CallVerdict verdict = CallVerdict::kExcluded;
    {
      MutexLock lock(&mu_);
      Slot& s = slots_[i];
      permit = std::move(s.permit);
      s.done = true;
      ++finished_;
      const absl::Time now = book_->clock().Now();
      if (!r.has_value()) {
        outcome = absl::CancelledError(
            "hedged attempt not started: another attempt answered first");
      } else if (decided_) {
        outcome = StatusOf(*r);  // a loser: excluded
      } else if (!counted) {
        DecideLocked(-1, std::move(*r), now);
      } else {
        outcome = StatusOf(*r);
        verdict = CallVerdict::kDefault;
        if (outcome.ok()) {
          book_->RecordLatency(now, ElapsedSince(now, s.start));
          DecideLocked(i, std::move(*r), now);
        } else {
          last_error_ = outcome;
          if (finished_ == launched_) DecideLocked(-1, std::move(*r), now);
        }
      }
    }
    // Before waking the caller: the winner's outcome is at its breaker by
    // the time Take() returns.
    if (permit.has_value()) permit->Done(outcome, verdict);
    MarkReadyIfDecided();
  }

  void DecideLocked(int winner, Result result, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    decided_ = true;
    winner_ = winner;
    // The caller's error gets a status of its own, payload bytes included:
    // copies of a status (and of its payload Cords) share storage that is
    // reference-counted inside libabsl, and the copies kept here
    // (last_error_, a permit's outcome) die on other threads. Shared, the
    // last release on an attempt's thread frees what the caller may still
    // be reading, ordered only by a count ThreadSanitizer cannot see in
    // Debian's prebuilt Abseil, which it reports as a race.
    if (!StatusOf(result).ok()) result = Result(Detached(StatusOf(result)));
    result_.emplace(std::move(result));
    cancel_.store(true, std::memory_order_release);
    uint64_t losers = 0;
    for (int k = 0; k < launched_; ++k) {
      if (k == winner || slots_[k].done) continue;
      ++losers;
      const absl::Duration ran = ElapsedSince(now, slots_[k].start);
      if (ran > absl::ZeroDuration()) book_->RecordLatency(now, ran);
    }
    if (losers > 0) book_->Cancelled(losers);
    if (winner > 0) book_->Won();
  }

  void MarkReadyIfDecided() {
    {
      MutexLock lock(&mu_);
      if (!decided_ || ready_) return;
      ready_ = true;
    }
    cv_.SignalAll();
  }

  HedgeBook* const book_;
  Executor* const executor_;
  CircuitBreaker<T>* const breaker_;
  const Call call_;
  const int max_attempts_;
  // Raised at the decision; read by every token without the lock.
  std::atomic<bool> cancel_{false};

  mutable Mutex mu_;
  CondVar cv_;  // ready_ became true
  absl::Time start_ ABSL_GUARDED_BY(mu_);
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  std::array<Slot, 1 + kMaxHedges> slots_ ABSL_GUARDED_BY(mu_);
  int launched_ ABSL_GUARDED_BY(mu_) = 0;     // slots taken, sent or not
  int finished_ ABSL_GUARDED_BY(mu_) = 0;     // slots closed
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // no more hedges
  bool decided_ ABSL_GUARDED_BY(mu_) = false;
  // Decided and the winner's outcome reported: the caller may go.
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  int winner_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RETRY_HEDGE_RACE_HPP_
