// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The call paths of a circuit breaker, on top of its locked state machine
// (breaker_machine.hpp): admission and completion. A closed breaker's
// success path is lock-free: one acquire load of the state word, the
// caller's own counter shard, and one predictable test for a listener that
// wants every call. Failures, slow calls, half-open trials, and the rare
// success that may make a rate rule trip take the machine's lock; a user's
// trip rule runs outside it (AskRuleAndMaybeTrip).
//
// Thread-safe; see circuit_breaker.hpp for the contract. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_CORE_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_CORE_HPP_

#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/breaker/breaker_machine.hpp"
#include "degrade/detail/breaker/windows.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// BreakerCore
//
// What CircuitBreaker<T> and Permit call. See BreakerMachine for the state.
class BreakerCore final : public BreakerMachine {
 public:
  explicit BreakerCore(BreakerSettings settings)
      : BreakerMachine(std::move(settings)) {
    AttachTelemetry();  // last: the object is complete, its vtable final
  }
  BreakerCore(const BreakerCore&) = delete;
  BreakerCore& operator=(const BreakerCore&) = delete;
  // The listener goes first, while the vtable its view calls is this one.
  ~BreakerCore() { DetachTelemetry(); }

  // Admits a call (fills `t`, returns nullptr) or returns the rejection.
  // The plain closed path (closed, normal mode, nothing but counting) is
  // inlined into the caller; everything else is a call.
  DEGRADE_ALWAYS_INLINE const absl::Status* Acquire(Ticket* t) {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_LIKELY(plain_ && (w & kClosedNormalBits) == 0)) {
      LocalShard().admitted.Add(1);
      t->generation = GenOf(w);
      t->start_nanos = 0;
      t->state = State::kClosed;
      t->closed_word = w;
      return nullptr;
    }
    return AcquireGeneral(t, w);
  }

  // Counts one outcome; `verdict` is a result classifier's answer (kDefault:
  // decide with is_excluded / is_successful). The plain closed success
  // (the word unchanged since admission) is inlined; it reports to a
  // per-call listener like every other path.
  DEGRADE_ALWAYS_INLINE void Complete(
      const Ticket& t, const absl::Status& outcome,
      CallVerdict verdict = CallVerdict::kDefault) {
    if (DEGRADE_LIKELY(
            plain_ && verdict == CallVerdict::kDefault && outcome.ok() &&
            word_.load(std::memory_order_acquire) == t.closed_word)) {
      LocalShard().successes.Add(1);
      // Read before writing: in a healthy breaker the line stays shared.
      if (DEGRADE_UNLIKELY(
              consecutive_failures_.load(std::memory_order_relaxed) != 0)) {
        consecutive_failures_.store(0, std::memory_order_relaxed);
      }
      return Report(CallOutcome::kSuccess, false, 0);
    }
    CompleteGeneral(t, outcome, verdict);
  }

  void Abandon(const Ticket& t) {
    if (t.bypass) return;
    const CallOutcome o = RecordAbandon(t);
    events_.Dispatch();  // an abandoned trial may find the wait over
    Report(o, false,
           times_outcomes_ ? ElapsedNanosSince(NowNanos(), t.start_nanos) : 0);
  }

 private:
  // State closed and mode normal: the low four bits of the word are zero.
  static constexpr uint64_t kClosedNormalBits =
      BreakerWord::kStateMask |
      (BreakerWord::kModeMask << BreakerWord::kModeShift);

  DEGRADE_NOINLINE const absl::Status* AcquireGeneral(Ticket* t, uint64_t w) {
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      if (DEGRADE_UNLIKELY(ModeOf(w) == kBypass)) {
        t->bypass = true;
        return nullptr;
      }
      int64_t now = 0;
      if (needs_clock_) {
        now = NowNanos();
        if (DEGRADE_UNLIKELY(
                Line(now) > interval_expiry_.load(std::memory_order_acquire))) {
          return AcquireSlow(t);
        }
      }
      LocalShard().admitted.Add(1);
      window_.RecordAdmission(now);
      t->generation = GenOf(w);
      t->start_nanos = now;
      t->state = State::kClosed;
      return nullptr;
    }
    if (StateOf(w) == State::kOpen) {
      // kNever (forced open without an end, an infinite timeout) needs no
      // clock read.
      const int64_t expiry = open_expiry_.load(std::memory_order_acquire);
      if (expiry == kNever || Line(NowNanos()) <= expiry) {
        BreakerShard& shard = LocalShard();
        shard.rejected_open.Add(1);
        if (DEGRADE_UNLIKELY(events_.wants_calls())) {
          events_.NotifyCall(CallOutcome::kRejectedOpen);
        }
        return &shard.open_status;
      }
    }
    return AcquireSlow(t);
  }

  // Each return reports the outcome to a listener that asked for every
  // call (one predictable test otherwise).
  DEGRADE_NOINLINE void CompleteGeneral(const Ticket& t,
                                        const absl::Status& outcome,
                                        CallVerdict verdict) {
    if (DEGRADE_UNLIKELY(t.bypass)) return;
    bool excluded;
    bool success;
    if (DEGRADE_LIKELY(verdict == CallVerdict::kDefault)) {
      excluded = has_is_excluded_ &&
                 SafePredicate(settings_.is_excluded, false, outcome);
      success = !excluded &&
                (has_is_successful_
                     ? SafePredicate(settings_.is_successful, false, outcome)
                     : outcome.ok());
    } else {
      excluded = verdict == CallVerdict::kExcluded;
      success = verdict == CallVerdict::kSuccess;
    }
    // A time window needs the report's time too: it tells whether a bucket
    // left since the last ask.
    const int64_t now = times_outcomes_ || window_.timed() ? NowNanos() : 0;
    const int64_t elapsed =
        times_outcomes_ ? ElapsedNanosSince(now, t.start_nanos) : 0;
    const bool slow = slow_nanos_ > 0 && elapsed > slow_nanos_;
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_UNLIKELY(GenOf(w) != t.generation)) {
      LocalShard().stale.Add(1);
      return Report(CallOutcome::kStale, false, elapsed);
    }
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      if (excluded) {
        LocalShard().exclusions.Add(1);
        window_.Record(t.start_nanos, now, kOutcomeExcluded);
        return Report(CallOutcome::kExcluded, false, elapsed);
      }
      if (DEGRADE_LIKELY(success && !slow)) {
        LocalShard().successes.Add(1);
        // Read before writing: in a healthy breaker the line stays shared.
        if (consecutive_failures_.load(std::memory_order_relaxed) != 0) {
          consecutive_failures_.store(0, std::memory_order_relaxed);
        }
        const bool ask = window_.Record(t.start_nanos, now, kOutcomeRecorded);
        // A rate rule decides after successes too, but a fast success can
        // only change its answer when the calls reach one of its minimums
        // (ReachedMinimum), when a time window lost old calls (`ask`), or
        // while a threshold episode is on (so that the fall below is seen
        // and the next crossing reported): only those take the lock.
        if (DEGRADE_UNLIKELY(plan_.every_outcome &&
                             (ask || (!window_.timed() && ReachedMinimum()) ||
                              in_episode_.load(std::memory_order_relaxed)))) {
          DecideAfterSuccess(t.generation);
        }
        return Report(CallOutcome::kSuccess, false, elapsed);
      }
    }
    const CallOutcome o = CompleteSlow(t, success, excluded, slow);
    // Slow is counted for successes and failures only, as in totals().
    Report(o,
           slow && (o == CallOutcome::kSuccess || o == CallOutcome::kFailure),
           elapsed);
  }

  void Report(CallOutcome o, bool slow, int64_t elapsed_nanos) {
    if (DEGRADE_UNLIKELY(events_.wants_calls())) {
      events_.NotifyCall(o, slow, absl::Nanoseconds(elapsed_nanos));
    }
  }

  CallOutcome RecordAbandon(const Ticket& t) {
    if (t.state == State::kHalfOpen) return AbandonTrial(t);
    const uint64_t w = word_.load(std::memory_order_acquire);
    BreakerShard& s = LocalShard();
    if (GenOf(w) != t.generation) {
      s.stale.Add(1);
      return CallOutcome::kStale;
    }
    s.abandoned.Add(1);
    window_.RecordAbandon(t.start_nanos);
    return CallOutcome::kAbandoned;
  }

  // Counts this fast success toward the generation's calls, until they
  // reach the largest minimum of the rule's rate parts; true for a call
  // that brings them to or past the smallest. Past the largest, a fast
  // success can never raise a rate over the whole generation or a count
  // window (it adds a non-failing call, or replaces an older outcome), so
  // it takes no lock and writes nothing shared.
  bool ReachedMinimum() {
    if (calls_seen_.load(std::memory_order_relaxed) >= plan_.largest_minimum) {
      return false;
    }
    return calls_seen_.fetch_add(1, std::memory_order_relaxed) + 1 >=
           plan_.calls_to_decide;
  }

  const absl::Status* AcquireSlow(Ticket* t) {
    const absl::Status* rejection = nullptr;
    CallOutcome rejected = CallOutcome::kRejectedOpen;
    {
      MutexLock lock(&mu_);
      const int64_t now = NowNanos();
      AdvanceLocked(now);
      const uint64_t w = word_.load(std::memory_order_relaxed);
      BreakerShard& shard = LocalShard();
      switch (StateOf(w)) {
        case State::kOpen:
          shard.rejected_open.Add(1);
          rejection = &shard.open_status;
          break;
        case State::kHalfOpen: {
          // As gobreaker: excluded trials give their slot back; successful
          // ones keep it (only max_requests trials per half-open period).
          if (trials_.slots_used() >= max_requests_) {
            shard.rejected_too_many.Add(1);
            rejection = &shard.too_many_status;
            rejected = CallOutcome::kRejectedTooMany;
            break;
          }
          trials_.Admit(now);
          SetHalfOpenDeadlineLocked();
          [[fallthrough]];
        }
        case State::kClosed:
          if (ModeOf(w) == kBypass) {
            t->bypass = true;
            break;
          }
          shard.admitted.Add(1);
          if (StateOf(w) == State::kClosed) window_.RecordAdmission(now);
          t->generation = GenOf(w);
          t->start_nanos = now;
          t->state = StateOf(w);
          break;
      }
    }
    events_.Dispatch();
    if (rejection != nullptr && events_.wants_calls()) {
      events_.NotifyCall(rejected);
    }
    return rejection;
  }

  // A half-open trial's slot is given back under the lock, and only to the
  // generation that issued it. Expiries due by now happen first, as for a
  // report: a trial dropped after the half-open wait has already reopened
  // the breaker, whether or not anyone looked in between.
  CallOutcome AbandonTrial(const Ticket& t) {
    MutexLock lock(&mu_);
    AdvanceLocked(NowNanos());
    const uint64_t w = word_.load(std::memory_order_relaxed);
    BreakerShard& shard = LocalShard();
    if (GenOf(w) != t.generation) {
      shard.stale.Add(1);
      return CallOutcome::kStale;
    }
    shard.abandoned.Add(1);
    trials_.Abandon(t.start_nanos);
    SetHalfOpenDeadlineLocked();
    return CallOutcome::kAbandoned;
  }

  CallOutcome CompleteSlow(const Ticket& t, bool success, bool excluded,
                           bool slow) {
    CallOutcome counted =
        success ? CallOutcome::kSuccess : CallOutcome::kFailure;
    // Set when the closed-state rule must be asked outside the lock: the
    // counts it decides on and the generation they belong to.
    bool ask_rule = false;
    Counts decide_on;
    uint64_t decide_gen = 0;
    {
      MutexLock lock(&mu_);
      const int64_t now = NowNanos();
      // As gobreaker's afterRequest: expiries due by now happen first, so a
      // trial reporting after the half-open wait, or a failure reporting
      // after its interval ended, belongs to a generation that is over.
      AdvanceLocked(now);
      const uint64_t w = word_.load(std::memory_order_relaxed);
      BreakerShard& shard = LocalShard();
      if (GenOf(w) != t.generation || StateOf(w) == State::kOpen) {
        shard.stale.Add(1);
        counted = CallOutcome::kStale;
      } else if (excluded) {
        shard.exclusions.Add(1);
        counted = CallOutcome::kExcluded;
        // A trial goes to the ledger, the half-open generation's own
        // window (breaker_counts.hpp), not to the closed state's.
        if (StateOf(w) == State::kHalfOpen) {
          trials_.Exclude(t.start_nanos);
          SetHalfOpenDeadlineLocked();
        } else {
          window_.Record(t.start_nanos, now, kOutcomeExcluded);
        }
      } else {
        if (slow) shard.slow_calls.Add(1);
        if (StateOf(w) == State::kClosed) {
          window_.Record(t.start_nanos, now,
                         static_cast<uint8_t>(kOutcomeRecorded |
                                              (success ? 0 : kOutcomeFailed) |
                                              (slow ? kOutcomeSlow : 0)));
          calls_seen_.fetch_add(1, std::memory_order_relaxed);
        }
        if (success) {
          shard.successes.Add(1);
          consecutive_failures_.store(0, std::memory_order_relaxed);
        } else {
          shard.failures.Add(1);
          consecutive_failures_.fetch_add(1, std::memory_order_relaxed);
          successes_at_last_failure_ = SumShards().successes;
        }
        if (StateOf(w) == State::kHalfOpen) {
          JudgeTrialLocked(t, success, slow, now);
        } else {
          decide_on = CountsLocked(now);
          decide_gen = GenOf(w);
          ask_rule = DecideLocked(decide_on, w, now);
        }
      }
    }
    if (ask_rule) AskRuleAndMaybeTrip(decide_on, decide_gen);
    events_.Dispatch();
    return counted;
  }

  // A fast success that may have made a rate rule trip (ReachedMinimum, or
  // the window dropped old calls): decide as after a failure.
  void DecideAfterSuccess(uint64_t generation) {
    bool ask_rule = false;
    Counts c;
    {
      MutexLock lock(&mu_);
      const int64_t now = NowNanos();
      AdvanceLocked(now);
      const uint64_t w = word_.load(std::memory_order_relaxed);
      if (GenOf(w) != generation || StateOf(w) != State::kClosed) return;
      c = CountsLocked(now);
      ask_rule = DecideLocked(c, w, now);
    }
    if (ask_rule) AskRuleAndMaybeTrip(c, generation);
    events_.Dispatch();
  }

  // After a closed-state outcome was recorded: reports the thresholds
  // reached, and decides a library rule here, under the lock (it runs no
  // user code). Returns whether a rule with user code must still be asked,
  // outside the lock. Metrics-only breakers never trip.
  bool DecideLocked(const Counts& c, uint64_t w, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RecordThresholdsLocked(c, now);
    if (ModeOf(w) != kNormal) return false;
    if (!plan_.library) return true;
    TripReason why;
    if (settings_.ready_to_trip.Check(c, &why)) {
      why.counts = c;
      TripLocked(why, GenOf(w));
    }
    return false;
  }

  // Asks ready_to_trip outside the breaker's lock, so that the rule may
  // call its own breaker (counts(), state(), ForceOpen(), Reset(), ...)
  // without deadlocking, then trips only if the generation the counts
  // belong to is still the current one (a concurrent trip or a manual move
  // wins; an interval ending while the rule ran does not undo a decision
  // taken inside it). Calls are serialised by their own mutex, so a rule
  // with state needs no synchronisation, as when it ran under the lock. A
  // call through the breaker made from inside the rule is counted but does
  // not ask the rule again: that would recurse without end (and, on this
  // thread, wait for the rule's own mutex).
  void AskRuleAndMaybeTrip(const Counts& c, uint64_t generation) {
    if (CallbackScope::Inside(this)) return;
    bool trip;
    TripReason why;
    {
      MutexLock one_at_a_time(&rule_mu_);
      CallbackScope scope(this);
      // ready_to_trip is always set: NormalizeBreakerSettings gives the
      // default rule. A throw means false.
      trip = InvokeOr([&] { return settings_.ready_to_trip.Check(c, &why); },
                      [](absl::string_view) { return false; });
    }
    if (!trip) return;
    why.counts = c;
    MutexLock lock(&mu_);
    TripLocked(why, generation);
  }
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_CORE_HPP_
