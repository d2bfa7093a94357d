// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The type-independent state machine behind CircuitBreaker<T>: admission,
// completion, the half-open trial ledger, the timed expiries, and the
// dispatch of events to the telemetry and the user's callback. The parts it
// is made of live beside it: the packed state word and its legal
// transitions (breaker_word.hpp), per-thread counter shards
// (thread_shard.hpp), the window (windows.hpp), the open-period backoff
// (backoff.hpp), the settings rules (breaker_settings.hpp).
//
// Memory ordering: the word is published with release and read with
// acquire. Everything the thread that changes the state wrote before the
// store (the new generation's base snapshot, the expiry deadlines, the
// cleared window) is visible to a caller whose acquire load sees the new
// word; a caller that sees the old word is counted in the old generation
// and its outcome, reported later, is recognised as stale by the
// generation. Counters are relaxed: they are sums, read exactly only at
// quiescent points (totals()).
//
// Thread-safe; see circuit_breaker.hpp for the contract.

#ifndef DEGRADE_DETAIL_BREAKER_CORE_HPP_
#define DEGRADE_DETAIL_BREAKER_CORE_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/breaker_types.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/backoff.hpp"
#include "degrade/detail/breaker_events.hpp"
#include "degrade/detail/breaker_shards.hpp"
#include "degrade/detail/breaker_word.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/detail/trial_ledger.hpp"
#include "degrade/detail/windows.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// What a permit remembers about its admission.
struct Ticket {
  uint64_t generation = 0;
  int64_t start_nanos = 0;
  State state = State::kClosed;
};

// BreakerCore
//
// The state, mode and generation live in one atomic word, so the fast paths
// decide with one load. Outcome counters are cumulative and sharded per
// thread (each shard on its own cache lines), so concurrent successes never
// write a shared line; a generation's `Counts` are the shard sums minus a
// base snapshot taken at the generation's start. Everything else is guarded
// by `mu_`.
class BreakerCore final : private BreakerView {
 public:
  explicit BreakerCore(BreakerSettings settings)
      : settings_(NormalizeBreakerSettings(std::move(settings))),
        clock_(settings_.clock != nullptr ? settings_.clock
                                          : &RealClock::Instance()),
        real_clock_(clock_ == &RealClock::Instance() ? &RealClock::Instance()
                                                     : nullptr),
        max_requests_(settings_.max_requests == 0 ? 1 : settings_.max_requests),
        interval_nanos_(absl::ToInt64Nanoseconds(settings_.interval)),
        timeout_(EffectiveOpenTimeout(settings_)),
        slow_nanos_(absl::ToInt64Nanoseconds(settings_.slow_call_duration)),
        half_open_wait_nanos_(
            absl::ToInt64Nanoseconds(settings_.half_open_max_wait)),
        window_(settings_.window),
        needs_clock_(interval_nanos_ > 0 || slow_nanos_ > 0 || window_.timed()),
        precise_clock_(slow_nanos_ > 0),
        has_is_successful_(static_cast<bool>(settings_.is_successful)),
        has_is_excluded_(static_cast<bool>(settings_.is_excluded)),
        shards_(settings_.name),
        backoff_(timeout_, settings_.backoff_multiplier, settings_.max_timeout,
                 settings_.backoff_jitter, StableHash(settings_.name)) {
    {
      MutexLock lock(&mu_);
      StartGenerationLocked(State::kClosed, NowNanos());
    }
    // Last: the view must be complete before a telemetry may read it.
    events_.Attach(ResolveTelemetry(settings_.metrics), *this);
  }

  BreakerCore(const BreakerCore&) = delete;
  BreakerCore& operator=(const BreakerCore&) = delete;
  // The listener goes first, while everything its view reads still exists.
  ~BreakerCore() { events_.Detach(); }

  const std::string& name() const override { return settings_.name; }
  const BreakerSettings& settings() const { return settings_; }

  // Admits a call (fills `t`, returns nullptr) or returns the rejection.
  const absl::Status* Acquire(Ticket* t) {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      int64_t now = 0;
      if (needs_clock_) {
        now = NowNanos();
        if (DEGRADE_UNLIKELY(
                now > interval_expiry_.load(std::memory_order_acquire))) {
          return AcquireSlow(t);
        }
      }
      LocalShard().admitted.Add(1);
      t->generation = GenOf(w);
      t->start_nanos = now;
      t->state = State::kClosed;
      return nullptr;
    }
    if (StateOf(w) == State::kOpen) {
      if (ModeOf(w) == kForcedOpen ||
          NowNanos() <= open_expiry_.load(std::memory_order_acquire)) {
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

  // Counts one outcome; each return reports it to a listener that asked
  // for every call (one predictable test otherwise).
  void Complete(const Ticket& t, const absl::Status& outcome) {
    const bool excluded = has_is_excluded_ &&
                          SafePredicate(settings_.is_excluded, false, outcome);
    const bool success =
        !excluded &&
        (has_is_successful_
             ? SafePredicate(settings_.is_successful, false, outcome)
             : outcome.ok());
    const bool slow = slow_nanos_ > 0 &&
                      ElapsedNanosSince(NowNanos(), t.start_nanos) >
                          slow_nanos_;
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_UNLIKELY(GenOf(w) != t.generation)) {
      LocalShard().stale.Add(1);
      return Report(CallOutcome::kStale);
    }
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      if (excluded) {
        LocalShard().exclusions.Add(1);
        return Report(CallOutcome::kExcluded);
      }
      if (DEGRADE_LIKELY(success && !slow)) {
        LocalShard().successes.Add(1);
        // Read before writing: in a healthy breaker the line stays shared.
        if (consecutive_failures_.load(std::memory_order_relaxed) != 0) {
          consecutive_failures_.store(0, std::memory_order_relaxed);
        }
        window_.Record(t.start_nanos, kOutcomeRecorded);
        return Report(CallOutcome::kSuccess);
      }
    }
    const CallOutcome o = CompleteSlow(t, success, excluded, slow);
    // Slow is counted for successes and failures only, as in totals().
    Report(o, slow && (o == CallOutcome::kSuccess || o == CallOutcome::kFailure));
  }

  void Abandon(const Ticket& t) {
    const CallOutcome o = RecordAbandon(t);
    events_.Dispatch();  // an abandoned trial may find the wait over
    Report(o);
  }

  BreakerTotals totals() const override { return SumShards(); }

  State state() {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (TimeMayHaveMoved(w)) {
      {
        MutexLock lock(&mu_);
        AdvanceLocked(NowNanos());
      }
      events_.Dispatch();
      return StateOf(word_.load(std::memory_order_acquire));
    }
    return StateOf(w);
  }

  uint64_t generation() const {
    return GenOf(word_.load(std::memory_order_acquire));
  }

  Counts counts() {
    MutexLock lock(&mu_);
    return CountsLocked(window_.timed() ? NowNanos() : 0);
  }

  void ForceOpen() {
    ManualTransition(State::kOpen, kForcedOpen, TransitionCause::kForcedOpen);
  }
  void Disable() {
    ManualTransition(State::kClosed, kDisabled, TransitionCause::kDisabled);
  }
  void Reset() {
    ManualTransition(State::kClosed, kNormal, TransitionCause::kReset);
  }

  bool forced_open() const {
    return ModeOf(word_.load(std::memory_order_acquire)) == kForcedOpen;
  }
  bool disabled() const {
    return ModeOf(word_.load(std::memory_order_acquire)) == kDisabled;
  }

  // The open duration the next trip will use, before jitter.
  absl::Duration current_open_duration() {
    MutexLock lock(&mu_);
    return backoff_.current();
  }

 private:
  using Mode = BreakerMode;
  static constexpr Mode kNormal = BreakerMode::kNormal;
  static constexpr Mode kForcedOpen = BreakerMode::kForcedOpen;
  static constexpr Mode kDisabled = BreakerMode::kDisabled;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  static State StateOf(uint64_t w) { return BreakerWord::StateOf(w); }
  static Mode ModeOf(uint64_t w) { return BreakerWord::ModeOf(w); }
  static uint64_t GenOf(uint64_t w) { return BreakerWord::GenOf(w); }


  // One time source per breaker, so expiries set and checked never mix
  // resolutions: the coarse clock, unless slow calls need precise durations.
  int64_t NowNanos() const {
    if (real_clock_ != nullptr) {
      return precise_clock_ ? real_clock_->UnixNanos()
                            : real_clock_->CoarseUnixNanos();
    }
    return absl::ToUnixNanos(precise_clock_ ? clock_->Now()
                                            : clock_->CoarseNow());
  }

  void Report(CallOutcome o, bool slow = false) {
    if (DEGRADE_UNLIKELY(events_.wants_calls())) events_.NotifyCall(o, slow);
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
    return CallOutcome::kAbandoned;
  }

  BreakerShard& LocalShard() { return shards_.Local(); }
  BreakerTotals SumShards() const { return shards_.Sum(); }

  // True when reading the clock might change the state (a timed expiry).
  bool TimeMayHaveMoved(uint64_t w) const {
    switch (StateOf(w)) {
      case State::kClosed:
        return interval_nanos_ > 0 &&
               NowNanos() > interval_expiry_.load(std::memory_order_acquire);
      case State::kOpen:
        return ModeOf(w) != kForcedOpen &&
               NowNanos() > open_expiry_.load(std::memory_order_acquire);
      case State::kHalfOpen:
        return half_open_wait_nanos_ > 0 &&
               NowNanos() > half_open_deadline_.load(std::memory_order_acquire);
    }
    return false;
  }

  Counts CountsLocked(int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The shards are summed field by field while other threads add to them,
    // so a difference can momentarily come out negative: clamp at zero.
    const auto diff = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    const BreakerTotals t = SumShards();
    Counts c;
    c.requests = diff(diff(t.admitted, base_.admitted),
                      diff(t.abandoned, base_.abandoned));
    c.total_successes = diff(t.successes, base_.successes);
    c.total_failures = diff(t.failures, base_.failures);
    c.total_exclusions = diff(t.exclusions, base_.exclusions);
    c.consecutive_failures =
        consecutive_failures_.load(std::memory_order_relaxed);
    c.consecutive_successes = diff(
        t.successes, std::max(successes_at_last_failure_, base_.successes));
    if (StateOf(word_.load(std::memory_order_relaxed)) == State::kHalfOpen) {
      // Half-open figures come from the exact per-generation trial ledger,
      // which a straggling call from an earlier generation cannot touch.
      c.requests = trials_.admitted - trials_.abandoned;
      c.total_successes = trials_.succeeded;
      c.consecutive_successes = trials_.failed > 0 ? 0 : trials_.succeeded;
      c.total_failures = trials_.failed;
      c.consecutive_failures = trials_.failed;
      c.total_exclusions = trials_.excluded;
    }
    if (window_.active()) {
      const WindowStats ws = window_.Read(now);
      c.window_calls = ws.calls;
      c.window_failures = ws.failures;
      c.window_slow_calls = ws.slow;
    } else {
      c.window_calls = c.total_successes + c.total_failures;
      c.window_failures = c.total_failures;
      c.window_slow_calls = diff(t.slow_calls, base_.slow_calls);
    }
    return c;
  }

  // Begins a new generation in `to`: the base snapshot is taken before the
  // new word is published, so a call that sees the new generation is always
  // counted in it.
  void StartGenerationLocked(State to, int64_t now, Mode mode = kNormal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    base_ = SumShards();
    trials_ = TrialLedger(half_open_wait_nanos_);
    successes_at_last_failure_ = base_.successes;
    consecutive_failures_.store(0, std::memory_order_relaxed);
    window_.Reset();
    interval_expiry_.store(to == State::kClosed && interval_nanos_ > 0
                               ? SatAddNanos(now, interval_nanos_)
                               : kNever,
                           std::memory_order_release);
    if (to == State::kOpen) {
      open_expiry_.store(
          mode == kForcedOpen
              ? kNever
              : SatAddNanos(
                    now, absl::ToInt64Nanoseconds(backoff_.NextOpenPeriod())),
          std::memory_order_release);
    }
    // Armed by the first trial admitted (see TrialLedger::deadline).
    half_open_deadline_.store(kNever, std::memory_order_release);
    const uint64_t old = word_.load(std::memory_order_relaxed);
    assert(IsLegalTransition(StateOf(old), to, mode));
    word_.store(BreakerWord::Pack(to, mode, GenOf(old) + 1),
                std::memory_order_release);
  }

  // `decided_on`: the counts the decision was taken on (a trip's), so the
  // event reports exactly those; else they are read now, before the new
  // generation clears them.
  void TransitionLocked(State to, int64_t now, TransitionCause cause,
                        Mode mode = kNormal,
                        const Counts* decided_on = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const State from = StateOf(word_.load(std::memory_order_relaxed));
    if (from == to) {
      StartGenerationLocked(to, now, mode);
      return;
    }
    const Counts ended = decided_on != nullptr ? *decided_on : CountsLocked(now);
    StartGenerationLocked(to, now, mode);
    events_.RecordTransition(from, to, cause, now, ended);
  }

  // A half-open trial failed (or timed out): back off, then reopen.
  void ReopenLocked(int64_t now, TransitionCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    backoff_.Grow();
    TransitionLocked(State::kOpen, now, cause);
  }

  // Applies the transitions that the passage of time alone causes.
  void AdvanceLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t w = word_.load(std::memory_order_relaxed);
    switch (StateOf(w)) {
      case State::kClosed:
        if (now > interval_expiry_.load(std::memory_order_relaxed)) {
          StartGenerationLocked(State::kClosed, now, ModeOf(w));
        }
        break;
      case State::kOpen:
        if (ModeOf(w) != kForcedOpen &&
            now > open_expiry_.load(std::memory_order_relaxed)) {
          TransitionLocked(State::kHalfOpen, now,
                           TransitionCause::kOpenElapsed);
        }
        break;
      case State::kHalfOpen:
        if (now > half_open_deadline_.load(std::memory_order_relaxed) &&
            trials_.outstanding() > 0) {
          ReopenLocked(now, TransitionCause::kTrialTimedOut);
        }
        break;
    }
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
          shard.admitted.Add(1);
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

  void SetHalfOpenDeadlineLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    half_open_deadline_.store(trials_.deadline(), std::memory_order_release);
  }

  CallOutcome CompleteSlow(const Ticket& t, bool success, bool excluded,
                           bool slow) {
    CallOutcome counted =
        success ? CallOutcome::kSuccess : CallOutcome::kFailure;
    // Set when the closed-state rule must be asked: the counts it decides
    // on and the generation they belong to.
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
        if (StateOf(w) == State::kHalfOpen) {
          trials_.Exclude(t.start_nanos);
          SetHalfOpenDeadlineLocked();
        }
      } else {
        if (slow) shard.slow_calls.Add(1);
        window_.Record(t.start_nanos,
                       static_cast<uint8_t>(kOutcomeRecorded |
                                            (success ? 0 : kOutcomeFailed) |
                                            (slow ? kOutcomeSlow : 0)));
        if (success) {
          shard.successes.Add(1);
          consecutive_failures_.store(0, std::memory_order_relaxed);
        } else {
          shard.failures.Add(1);
          consecutive_failures_.fetch_add(1, std::memory_order_relaxed);
          successes_at_last_failure_ = SumShards().successes;
        }
        if (StateOf(w) == State::kHalfOpen) {
          if (!success) {
            trials_.Fail();  // so that the event's counts show it
            ReopenLocked(now, TransitionCause::kTrialFailed);
          } else {
            trials_.Succeed(t.start_nanos);
            if (trials_.succeeded >= max_requests_) {
              backoff_.Reset();
              TransitionLocked(State::kClosed, now,
                               TransitionCause::kTrialsSucceeded);
            } else {
              SetHalfOpenDeadlineLocked();
            }
          }
        } else if (ModeOf(w) != kDisabled) {
          decide_on = CountsLocked(now);
          decide_gen = GenOf(w);
          ask_rule = true;
        }
      }
    }
    if (ask_rule) AskRuleAndMaybeTrip(decide_on, decide_gen);
    events_.Dispatch();
    return counted;
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
    {
      MutexLock one_at_a_time(&rule_mu_);
      CallbackScope scope(this);
      // ready_to_trip is always set: NormalizeBreakerSettings gives the
      // default rule.
      trip = SafePredicate(settings_.ready_to_trip, false, c);
    }
    if (!trip) return;
    MutexLock lock(&mu_);
    const uint64_t w = word_.load(std::memory_order_relaxed);
    if (GenOf(w) == generation && StateOf(w) == State::kClosed &&
        ModeOf(w) != kDisabled) {
      TransitionLocked(State::kOpen, NowNanos(), TransitionCause::kTripped,
                       kNormal, &c);
    }
  }

  void ManualTransition(State to, Mode mode, TransitionCause cause) {
    {
      MutexLock lock(&mu_);
      backoff_.Reset();
      TransitionLocked(to, NowNanos(), cause, mode);
    }
    events_.Dispatch();
  }

  // ---- BreakerView (for telemetry; read-only, thread-safe) ----

  State observed_state() const override {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (StateOf(w) == State::kOpen && ModeOf(w) != kForcedOpen &&
        NowNanos() > open_expiry_.load(std::memory_order_acquire)) {
      return State::kHalfOpen;
    }
    return StateOf(w);
  }
  uint64_t transitions(State from, State to) const override {
    return events_.transitions(from, to);
  }
  absl::Time degraded_since() const override {
    return events_.degraded_since();
  }
  absl::Time now() const override { return absl::FromUnixNanos(NowNanos()); }

  const BreakerSettings settings_;
  const Clock* const clock_;
  // Set when `clock_` is the default clock, to read it without a virtual
  // call or absl::Time arithmetic (a third of an open rejection's cost).
  const RealClock* const real_clock_;
  const uint64_t max_requests_;
  const int64_t interval_nanos_;
  const absl::Duration timeout_;
  const int64_t slow_nanos_;
  const int64_t half_open_wait_nanos_;
  Window window_;
  const bool needs_clock_;
  const bool precise_clock_;
  const bool has_is_successful_;
  const bool has_is_excluded_;
  BreakerShards shards_;

  // Read on every call: kept apart from the counters the slow path writes.
  alignas(kCacheLine) std::atomic<uint64_t> word_{0};
  std::atomic<int64_t> interval_expiry_{kNever};
  std::atomic<int64_t> open_expiry_{kNever};
  std::atomic<int64_t> half_open_deadline_{kNever};
  // Written by successes only when non-zero, so healthy traffic only reads it.
  std::atomic<uint64_t> consecutive_failures_{0};

  alignas(kCacheLine) Mutex mu_;
  // Serialises ready_to_trip calls (taken without mu_ held).
  Mutex rule_mu_;
  BreakerTotals base_ ABSL_GUARDED_BY(mu_);
  TrialLedger trials_ ABSL_GUARDED_BY(mu_) = TrialLedger(half_open_wait_nanos_);
  uint64_t successes_at_last_failure_ ABSL_GUARDED_BY(mu_) = 0;
  OpenBackoff backoff_ ABSL_GUARDED_BY(mu_);
  // Transition counts, the queue of events and the telemetry's listener.
  BreakerEvents events_{&settings_.name, &settings_.on_state_change};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_CORE_HPP_
