// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The locked half of a circuit breaker: its state word, generations and
// their transitions, the timed expiries (open duration, closed interval,
// half-open wait), the half-open policies' judgement of trials, the manual
// modes, and what telemetry may read. BreakerCore (breaker_core.hpp) adds
// the call paths on top: admission and completion, lock-free while closed.
// The parts both are made of live beside them: the packed state word and
// its legal transitions (breaker_word.hpp), per-thread counter shards
// (breaker_shards.hpp), the window (windows.hpp), how Counts are assembled
// (breaker_counts.hpp), the trial ledger (trial_ledger.hpp), the
// open-period backoff (backoff.hpp), the settings rules
// (breaker_settings.hpp), events (breaker_events.hpp).
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
// Thread-safe; see circuit_breaker.hpp for the contract. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
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
#include "degrade/detail/breaker/breaker_counts.hpp"
#include "degrade/detail/breaker/breaker_events.hpp"
#include "degrade/detail/breaker/breaker_shards.hpp"
#include "degrade/detail/breaker/breaker_word.hpp"
#include "degrade/detail/breaker/rule_plan.hpp"
#include "degrade/detail/breaker/step_line.hpp"
#include "degrade/detail/breaker/trial_ledger.hpp"
#include "degrade/detail/breaker/windows.hpp"
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
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// What a permit remembers about its admission.
struct Ticket {
  uint64_t generation = 0;
  int64_t start_nanos = 0;
  State state = State::kClosed;
  // Admitted by a bypassed breaker: nothing is recorded for it.
  bool bypass = false;
  // The state word, when admitted on the plain closed path: a report that
  // finds the same word needs no other check.
  uint64_t closed_word = ~uint64_t{0};
};

// BreakerMachine
//
// The state, mode and generation live in one atomic word, so the fast paths
// decide with one load. Outcome counters are cumulative and sharded per
// thread (each shard on its own cache lines), so concurrent successes never
// write a shared line; a generation's `Counts` are the shard sums minus a
// base snapshot taken at the generation's start. Everything else is guarded
// by `mu_`. Only BreakerCore derives from it.
class BreakerMachine : private BreakerView {
 public:
  explicit BreakerMachine(BreakerSettings settings)
      : BreakerMachine(settings.ready_to_trip.calls_to_decide(),
                       std::move(settings)) {}

 private:
  // `uncapped_minimum`: the rule's calls_to_decide() before normalising
  // caps it at a count window's size; the half-open window is its own.
  BreakerMachine(uint64_t uncapped_minimum, BreakerSettings settings)
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
        wait_from_entering_(settings_.half_open_wait_from ==
                            HalfOpenWaitFrom::kEnteringHalfOpen),
        rated_half_open_(settings_.half_open_policy ==
                         HalfOpenPolicy::kRateBased),
        plan_(PlanRule(settings_)),
        half_open_decide_at_(
            HalfOpenDecideAt(plan_, uncapped_minimum, max_requests_)),
        // A time window decides when a fast success must ask (a bucket
        // left, or the largest minimum not yet reached in the current
        // bucket). Otherwise the core counts the generation's calls itself
        // (BreakerCore::ReachedMinimum), with no read-modify-write once the
        // largest minimum is reached.
        window_(settings_.window, 0,
                settings_.window.kind == SlidingWindow::Kind::kTime
                    ? std::max<uint64_t>(plan_.largest_minimum, 1)
                    : kNeverDecides),
        needs_clock_(interval_nanos_ > 0 || slow_nanos_ > 0 || window_.timed()),
        precise_clock_(slow_nanos_ > 0),
        times_outcomes_(slow_nanos_ > 0),
        has_is_successful_(static_cast<bool>(settings_.is_successful)),
        has_is_excluded_(static_cast<bool>(settings_.is_excluded)),
        shards_(settings_.name),
        backoff_(timeout_, settings_.backoff_multiplier, settings_.max_timeout,
                 settings_.backoff_jitter, StableHash(settings_.name)) {
    MutexLock lock(&mu_);
    StartInitialLocked(NowNanos());
  }

 public:
  BreakerMachine(const BreakerMachine&) = delete;
  BreakerMachine& operator=(const BreakerMachine&) = delete;
  // The listener goes first, while everything its view reads still exists.
  ~BreakerMachine() { events_.Detach(); }

  const std::string& name() const override { return settings_.name; }
  const BreakerSettings& settings() const { return settings_; }

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
  // The state as last written, no expiry applied: one load, for a caller
  // choosing its order of checks (a stale answer costs it only that).
  State last_state() const {
    return StateOf(word_.load(std::memory_order_acquire));
  }

  Counts counts() {
    MutexLock lock(&mu_);
    return CountsLocked(window_.timed() ? NowNanos() : 0);
  }

  void ForceOpen() {
    Manual(State::kOpen, kForcedOpen, TransitionCause::kForcedOpen);
  }
  absl::Status ForceOpenFor(absl::Duration d) {
    if (d == absl::InfiniteDuration()) return ForceOpen(), absl::OkStatus();
    if (!(d >= absl::Nanoseconds(1))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "circuit breaker '", settings_.name, "': ForceOpenFor(",
          absl::FormatDuration(d),
          ") is invalid: the duration must be at least 1ns (Reset() closes "
          "the breaker; ForceOpen() opens it until then)"));
    }
    return ForceOpenUntilNanos(SatAddNanos(Line(NowNanos()), DurationNanos(d)),
                               "ForceOpenFor");
  }
  absl::Status ForceOpenUntil(absl::Time until) {
    if (until == absl::InfiniteFuture()) return ForceOpen(), absl::OkStatus();
    return ForceOpenUntilNanos(ClockToLine(absl::ToUnixNanos(until)),
                               "ForceOpenUntil");
  }
  void Disable() {
    Manual(State::kClosed, kMetricsOnly, TransitionCause::kDisabled);
  }
  void Bypass() { Manual(State::kClosed, kBypass, TransitionCause::kBypassed); }
  void Reset() { Manual(State::kClosed, kNormal, TransitionCause::kReset); }

  // A timed forced-open state whose end has passed reads as normal even
  // before anyone applies the expiry, as observed_state() reads half-open.
  BreakerMode mode() const {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (ModeOf(w) == kForcedOpen) {
      const int64_t expiry = open_expiry_.load(std::memory_order_acquire);
      if (expiry != kNever && Line(NowNanos()) > expiry) return kNormal;
    }
    return ModeOf(w);
  }
  // When a timed forced-open state ends; InfiniteFuture() otherwise.
  absl::Time forced_open_until() {
    MutexLock lock(&mu_);
    return ModeOf(word_.load(std::memory_order_relaxed)) == kForcedOpen &&
                   forced_until_ != kNever
               ? absl::FromUnixNanos(LineToClock(forced_until_))
               : absl::InfiniteFuture();
  }

  // Why the breaker last tripped (rule kNone: it never has).
  TripReason last_trip() {
    MutexLock lock(&mu_);
    return last_trip_;
  }

  // The open duration the next trip will use, before jitter.
  absl::Duration current_open_duration() {
    MutexLock lock(&mu_);
    return backoff_.current();
  }

 protected:
  // Offers the view to the telemetry. Called last in the constructor of the
  // final class, never here: a listener may read the view from another
  // thread at once (a scrape), and until the most derived constructor runs
  // the object's vtable is still being rewritten. DetachTelemetry() first
  // in that class's destructor, for the same reason.
  void AttachTelemetry() {
    events_.Attach(settings_.metrics, *this);
    if (events_.wants_calls() && events_.wants_durations()) {
      // Per-call events carry durations: every admission reads the clock,
      // the precise one. Set before the breaker is shared.
      needs_clock_ = precise_clock_ = times_outcomes_ = true;
    }
    plain_ = !has_is_successful_ && !has_is_excluded_ && slow_nanos_ == 0 &&
             !window_.active() && !needs_clock_ && !plan_.every_outcome;
  }
  void DetachTelemetry() { events_.Detach(); }

  using Mode = BreakerMode;
  static constexpr Mode kNormal = BreakerMode::kNormal;
  static constexpr Mode kForcedOpen = BreakerMode::kForcedOpen;
  static constexpr Mode kMetricsOnly = BreakerMode::kMetricsOnly;
  static constexpr Mode kBypass = BreakerMode::kBypass;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  static State StateOf(uint64_t w) { return BreakerWord::StateOf(w); }
  static Mode ModeOf(uint64_t w) { return BreakerWord::ModeOf(w); }
  static uint64_t GenOf(uint64_t w) { return BreakerWord::GenOf(w); }
  static int64_t DurationNanos(absl::Duration d) {
    return absl::ToInt64Nanoseconds(d);  // saturates
  }

  // Reports each rate threshold the window just reached (once per
  // episode: again only after it fell below, or in a new generation).
  void RecordThresholdsLocked(const Counts& c, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!plan_.has_rates) return;
    const uint8_t over = settings_.ready_to_trip.RatesExceeded(c);
    const uint8_t fresh = static_cast<uint8_t>(over & ~rates_reported_);
    rates_reported_ = over;
    // While over, a fast success may end the episode: it must be asked.
    in_episode_.store(over != 0, std::memory_order_relaxed);
    if (fresh & 1) {
      events_.RecordThreshold(
          BreakerThreshold::kFailureRate, c.failure_rate(),
          settings_.ready_to_trip.failure_rate_threshold().value_or(0),
          c.window_calls, now);
    }
    if (fresh & 2) {
      events_.RecordThreshold(
          BreakerThreshold::kSlowCallRate, c.slow_call_rate(),
          settings_.ready_to_trip.slow_call_rate_threshold().value_or(0),
          c.window_calls, now);
    }
  }

  // One time source per breaker, so expiries set and checked never mix
  // resolutions: the coarse clock, unless slow calls or per-call durations
  // need precise ones. Windows, call durations and half-open trials use
  // these readings as they are; the open period, a forced-open end and the
  // closed interval compare them on the timers' line (Line()).
  int64_t NowNanos() const {
    if (real_clock_ != nullptr) {
      return precise_clock_ ? real_clock_->UnixNanos()
                            : real_clock_->CoarseUnixNanos();
    }
    return absl::ToUnixNanos(precise_clock_ ? clock_->Now()
                                            : clock_->CoarseNow());
  }

  // A reading of NowNanos() on the timers' line: RealClock's as it is (it
  // is monotonic: no cost on the default clock), any other clock's on a
  // StepLine (step_line.hpp), where a step back counts as no time passing.
  int64_t Line(int64_t now) const {
    return real_clock_ != nullptr ? now : line_.Read(now);
  }
  // A timer is armed at `line`.
  void ArmedAtLocked(int64_t line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (real_clock_ == nullptr) line_.ArmedAt(line);
  }
  // An instant of the clock's on the timers' line, and back.
  int64_t ClockToLine(int64_t t) const {
    return real_clock_ != nullptr ? t : line_.FromClock(t);
  }
  int64_t LineToClock(int64_t t) const {
    return real_clock_ != nullptr ? t : line_.ToClock(t);
  }

  BreakerShard& LocalShard() { return shards_.Local(); }
  BreakerTotals SumShards() const { return shards_.Sum(); }

  // True when reading the clock might change the state (a timed expiry).
  bool TimeMayHaveMoved(uint64_t w) const {
    switch (StateOf(w)) {
      case State::kClosed:
        return interval_nanos_ > 0 &&
               Line(NowNanos()) >
                   interval_expiry_.load(std::memory_order_acquire);
      case State::kOpen: {
        const int64_t expiry = open_expiry_.load(std::memory_order_acquire);
        return expiry != kNever && Line(NowNanos()) > expiry;
      }
      case State::kHalfOpen:
        return half_open_wait_nanos_ > 0 &&
               NowNanos() > half_open_deadline_.load(std::memory_order_acquire);
    }
    return false;
  }

  Counts CountsLocked(int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CountsParts p;
    p.totals = SumShards();
    p.base = base_;
    p.consecutive_failures =
        consecutive_failures_.load(std::memory_order_relaxed);
    p.successes_at_last_failure = successes_at_last_failure_;
    if (StateOf(word_.load(std::memory_order_relaxed)) == State::kHalfOpen) {
      p.trials = &trials_;
    }
    WindowStats ws;
    if (window_.active()) {
      ws = window_.Read(now);
      p.window = &ws;
      p.time_window = window_.timed();
    }
    return AssembleCounts(p);
  }

  void StartInitialLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Begins a new generation in `to`: the base snapshot is taken before the
  // new word is published, so a call that sees the new generation is always
  // counted in it. `until`: when a forced open state ends, on the timers'
  // line (kNever: never).
  void StartGenerationLocked(State to, int64_t now, Mode mode = kNormal,
                             int64_t until = kNever)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t line = Line(now);
    ArmedAtLocked(line);
    base_ = SumShards();
    trials_ = TrialLedger(wait_from_entering_ ? 0 : half_open_wait_nanos_);
    successes_at_last_failure_ = base_.successes;
    consecutive_failures_.store(0, std::memory_order_relaxed);
    calls_seen_.store(0, std::memory_order_relaxed);
    rates_reported_ = 0;
    in_episode_.store(false, std::memory_order_relaxed);
    window_.Reset(now);
    interval_expiry_.store(to == State::kClosed && interval_nanos_ > 0
                               ? SatAddNanos(line, interval_nanos_)
                               : kNever,
                           std::memory_order_release);
    forced_until_ = mode == kForcedOpen ? until : kNever;
    if (to == State::kOpen) {
      open_expiry_.store(
          mode == kForcedOpen
              ? until
              : SatAddNanos(line, DurationNanos(backoff_.NextOpenPeriod())),
          std::memory_order_release);
    }
    // Per trial: armed by the first trial admitted (TrialLedger::deadline);
    // from entering: armed now.
    half_open_deadline_.store(to == State::kHalfOpen && wait_from_entering_ &&
                                      half_open_wait_nanos_ > 0
                                  ? SatAddNanos(now, half_open_wait_nanos_)
                                  : kNever,
                              std::memory_order_release);
    const uint64_t old = word_.load(std::memory_order_relaxed);
    assert(IsLegalTransition(StateOf(old), to, mode));
    word_.store(BreakerWord::Pack(to, mode, GenOf(old) + 1),
                std::memory_order_release);
  }

  // `decided_on`: the counts the decision was taken on (a trip's), so the
  // event reports exactly those; else they are read now, before the new
  // generation clears them. A change that keeps the state is reported only
  // when `manual` (a closed interval is not a change).
  void TransitionLocked(State to, int64_t now, TransitionCause cause,
                        Mode mode = kNormal, const Counts* decided_on = nullptr,
                        bool manual = false, int64_t until = kNever,
                        const TripReason* why = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t old = word_.load(std::memory_order_relaxed);
    const State from = StateOf(old);
    if (from == to && !manual) {
      StartGenerationLocked(to, now, mode, until);
      return;
    }
    const Counts ended =
        decided_on != nullptr ? *decided_on : CountsLocked(now);
    StartGenerationLocked(to, now, mode, until);
    BreakerTransition e;
    e.from = from;
    e.to = to;
    e.from_mode = ModeOf(old);
    e.to_mode = mode;
    e.cause = cause;
    e.at = now;
    e.until = LineToClock(until);  // reported on the clock
    e.counts = ended;
    if (why != nullptr) e.trip = *why;
    events_.RecordTransition(e);
  }

  // A half-open trial failed (or timed out): back off, then reopen.
  void ReopenLocked(int64_t now, TransitionCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    backoff_.Grow();
    TransitionLocked(State::kOpen, now, cause);
  }

  void CloseLocked(int64_t now, TransitionCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    backoff_.Reset();
    TransitionLocked(State::kClosed, now, cause);
  }

  // Applies the transitions that the passage of time alone causes.
  void AdvanceLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void SetHalfOpenDeadlineLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A half-open trial reported (success or failure, not excluded).
  void JudgeTrialLocked(const Ticket& t, bool success, bool slow, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (slow) trials_.Slow();
    success ? trials_.Succeed(t.start_nanos) : trials_.Fail(t.start_nanos);
    switch (JudgeTrials(trials_, rated_half_open_, max_requests_,
                        half_open_decide_at_, plan_.half_open_failure_rate,
                        plan_.half_open_slow_rate, slow_nanos_ > 0)) {
      case TrialVerdict::kReopen:
        return ReopenLocked(now, rated_half_open_
                                     ? TransitionCause::kTrialsFailed
                                     : TransitionCause::kTrialFailed);
      case TrialVerdict::kClose:
        return CloseLocked(now, TransitionCause::kTrialsSucceeded);
      case TrialVerdict::kWait:
        break;
    }
    SetHalfOpenDeadlineLocked();
  }

  // Opens, if the generation `why` was decided in is still current and
  // closed in normal mode.
  void TripLocked(const TripReason& why, uint64_t generation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t w = word_.load(std::memory_order_relaxed);
    if (GenOf(w) == generation && StateOf(w) == State::kClosed &&
        ModeOf(w) == kNormal) {
      last_trip_ = why;
      TransitionLocked(State::kOpen, NowNanos(), TransitionCause::kTripped,
                       kNormal, &why.counts, false, kNever, &why);
    }
  }

  void Manual(State to, Mode mode, TransitionCause cause,
              int64_t until = kNever) {
    {
      MutexLock lock(&mu_);
      backoff_.Reset();
      TransitionLocked(to, NowNanos(), cause, mode, nullptr, /*manual=*/true,
                       until);
    }
    events_.Dispatch();
  }

  // `until` on the timers' line.
  absl::Status ForceOpenUntilNanos(int64_t until, absl::string_view what) {
    const int64_t now = Line(NowNanos());
    if (until <= now) {
      return absl::InvalidArgumentError(absl::StrCat(
          "circuit breaker '", settings_.name, "': ", what, " ends at ",
          absl::FormatTime(absl::FromUnixNanos(LineToClock(until))),
          ", which is not after the breaker's clock (",
          absl::FormatTime(absl::FromUnixNanos(LineToClock(now))),
          "): the breaker was left as it was"));
    }
    Manual(State::kOpen, kForcedOpen, TransitionCause::kForcedOpen, until);
    return absl::OkStatus();
  }

 private:
  // ---- BreakerView (for telemetry; read-only, thread-safe) ----

  State observed_state() const override {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (StateOf(w) == State::kOpen) {
      const int64_t expiry = open_expiry_.load(std::memory_order_acquire);
      if (expiry != kNever && Line(NowNanos()) > expiry) {
        return State::kHalfOpen;
      }
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

 protected:
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
  const bool wait_from_entering_;
  const bool rated_half_open_;
  const RulePlan plan_;
  // The rate-based half-open decides once this many trials have reported.
  const uint64_t half_open_decide_at_;
  Window window_;
  // Set in the constructor only (a call listener turns them on).
  bool needs_clock_;
  bool precise_clock_;
  bool times_outcomes_;
  // Nothing but counting on the closed path (no clock, no window, no
  // predicates, no rate rule): BreakerCore inlines that path whole.
  bool plain_ = false;
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
  // Calls recorded in this generation, counted only up to the rule's
  // minimum (then only read).
  std::atomic<uint64_t> calls_seen_{0};
  // A rate threshold is reported and not yet seen to fall below.
  std::atomic<bool> in_episode_{false};
  // The timers' line of a clock other than RealClock.
  StepLine line_;

  alignas(kCacheLine) Mutex mu_;
  // Serialises ready_to_trip calls (taken without mu_ held).
  Mutex rule_mu_;
  BreakerTotals base_ ABSL_GUARDED_BY(mu_);
  TrialLedger trials_ ABSL_GUARDED_BY(mu_) = TrialLedger(half_open_wait_nanos_);
  uint64_t successes_at_last_failure_ ABSL_GUARDED_BY(mu_) = 0;
  OpenBackoff backoff_ ABSL_GUARDED_BY(mu_);
  // When a timed forced-open state ends (kNever: not timed, or not forced),
  // on the timers' line (Line()).
  int64_t forced_until_ ABSL_GUARDED_BY(mu_) = kNever;
  TripReason last_trip_ ABSL_GUARDED_BY(mu_);
  // The rate thresholds reported in this episode (bits of RatesExceeded).
  uint8_t rates_reported_ ABSL_GUARDED_BY(mu_) = 0;
  // Transition counts, the queue of events and the telemetry's listener.
  BreakerEvents events_{&settings_.name, &settings_.on_state_change};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

// The larger transition members, apart so that this header stays short.
#include "degrade/detail/breaker/breaker_machine_inl.hpp"  // IWYU pragma: export

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_HPP_
