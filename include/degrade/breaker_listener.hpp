// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: breaker_listener.hpp
// -----------------------------------------------------------------------------
//
// What a circuit breaker (circuit_breaker.hpp) tells its telemetry, as plain
// values, and the two interfaces between them. A breaker offers a
// `BreakerView` (its state, totals and transition counts, read by a scrape
// at any time) and pushes its events to the `BreakerListener` the telemetry
// hands back: a state change with its `TransitionCause` and the counts that
// caused it, a rate threshold reached, and (only to a listener that asks)
// every call's `CallOutcome`. The hub that connects them is telemetry.hpp;
// `MetricsRegistry` is the listener degrade ships.
//
//   class Pager : public degrade::Telemetry {
//     std::unique_ptr<degrade::BreakerListener> AttachBreaker(
//         const degrade::BreakerView& b) override {
//       struct L : degrade::BreakerListener {
//         void OnStateChange(const degrade::BreakerStateChange& c) override {
//           if (c.to == degrade::State::kOpen) Page(c.breaker, c.trip);
//         }
//       };
//       return std::make_unique<L>();
//     }
//   };
//
// Thread safety: the structs are plain values; the `absl::string_view`s in
// them are valid for the duration of the call that delivers them. A view's
// functions are thread-safe and never change the breaker. A listener's
// events other than `OnCall` arrive outside the breaker's lock, in order,
// never concurrently with each other; `OnCall` runs on each calling thread.

#ifndef DEGRADE_BREAKER_LISTENER_HPP_
#define DEGRADE_BREAKER_LISTENER_HPP_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// TransitionCause
//
// Why a breaker changed state.
enum class TransitionCause : uint8_t {
  kTripped,          // closed -> open: ready_to_trip returned true
  kOpenElapsed,      // open -> half-open: the open duration passed
  kTrialsSucceeded,  // half-open -> closed: max_requests trials succeeded
  kTrialFailed,      // half-open -> open: a trial failed
  kTrialTimedOut,    // half-open -> open: half_open_max_wait passed
  kForcedOpen,       // ForceOpen(), ForceOpenFor(), ForceOpenUntil()
  kDisabled,         // Disable(): to closed, metrics-only
  kReset,            // Reset() (to closed)
  // Appended, so that the values above keep their numbers.
  kTrialsFailed,       // half-open -> open: kRateBased trials' rates reached
  kForcedOpenElapsed,  // open -> half-open: ForceOpenFor/Until ran out
  kBypassed,           // Bypass(): to closed, recording nothing
  kTrialWaitElapsed,   // half-open -> closed: half_open_max_wait passed
                       // with half_open_wait_expiry = kClose
};

// "tripped", "open_elapsed", "trials_succeeded", "trial_failed",
// "trial_timed_out", "forced_open", "disabled", "reset", "trials_failed",
// "forced_open_elapsed", "bypassed" or "trial_wait_elapsed".
inline absl::string_view TransitionCauseName(TransitionCause c) {
  switch (c) {
    case TransitionCause::kTripped:
      return "tripped";
    case TransitionCause::kOpenElapsed:
      return "open_elapsed";
    case TransitionCause::kTrialsSucceeded:
      return "trials_succeeded";
    case TransitionCause::kTrialFailed:
      return "trial_failed";
    case TransitionCause::kTrialTimedOut:
      return "trial_timed_out";
    case TransitionCause::kForcedOpen:
      return "forced_open";
    case TransitionCause::kDisabled:
      return "disabled";
    case TransitionCause::kReset:
      return "reset";
    case TransitionCause::kTrialsFailed:
      return "trials_failed";
    case TransitionCause::kForcedOpenElapsed:
      return "forced_open_elapsed";
    case TransitionCause::kBypassed:
      return "bypassed";
    case TransitionCause::kTrialWaitElapsed:
      return "trial_wait_elapsed";
  }
  return "unknown";
}

// BreakerStateChange
//
// One change of state or of mode, as a listener receives it. A manual
// change that keeps the state (Disable() or Bypass() while closed, Reset()
// from metrics-only) is reported too, with from == to and the modes
// telling the change.
struct BreakerStateChange {
  // The breaker's name; valid for the duration of the call.
  absl::string_view breaker;
  State from = State::kClosed;
  State to = State::kClosed;
  BreakerMode from_mode = BreakerMode::kNormal;
  BreakerMode to_mode = BreakerMode::kNormal;
  TransitionCause cause = TransitionCause::kTripped;
  absl::Time time;
  // ForceOpenFor/ForceOpenUntil: when the forced open state ends (then
  // half-open). InfiniteFuture() otherwise.
  absl::Time forced_until = absl::InfiniteFuture();
  // The counts of the generation that just ended, read before they were
  // cleared: for kTripped, what ready_to_trip saw ("12 failures in 20
  // calls").
  Counts counts;
  // kTripped: the rule that decided and what it saw, e.g.
  // {"rule":"failure_rate","rate":0.62,"calls":50,"threshold":0.5}
  // (TripReason::ToJson). Rule kNone for every other cause.
  TripReason trip;
};

// BreakerThreshold
//
// A rate threshold of the breaker's trip rule (trip::FailureRate,
// trip::SlowCallRate).
enum class BreakerThreshold : uint8_t { kFailureRate, kSlowCallRate };

// "failure_rate" or "slow_call_rate".
inline absl::string_view BreakerThresholdName(BreakerThreshold t) {
  return t == BreakerThreshold::kFailureRate ? "failure_rate"
                                             : "slow_call_rate";
}

// BreakerThresholdEvent
//
// A closed breaker's window reached a rate threshold of its trip rule
// (resilience4j's FailureRateExceeded / SlowCallRateExceeded). Once per
// episode: reported when the rate first reaches the threshold with the
// minimum number of calls, and again only after it has fallen below it or a
// new generation has started. In normal mode a trip (kTripped) follows; in
// metrics-only mode (Disable()) the event is all that happens.
struct BreakerThresholdEvent {
  absl::string_view breaker;
  BreakerThreshold threshold = BreakerThreshold::kFailureRate;
  double rate = 0.0;   // what the window held
  double limit = 0.0;  // the rule's threshold
  uint64_t calls = 0;  // the window's calls
  absl::Time time;
};

// CallOutcome
//
// What became of one call, for listeners that ask for every call.
enum class CallOutcome : uint8_t {
  kSuccess,
  kFailure,
  kExcluded,         // is_excluded: neither success nor failure
  kRejectedOpen,     // not run: the breaker was open
  kRejectedTooMany,  // not run: half-open, trial slots all taken
  kAbandoned,        // a permit destroyed without a report
  kStale,            // reported after the generation had changed: ignored
};

// "success", "failure", "excluded", "rejected_open", "rejected_too_many",
// "abandoned" or "stale": the `outcome` label of degrade_breaker_calls_total.
inline absl::string_view CallOutcomeName(CallOutcome o) {
  switch (o) {
    case CallOutcome::kSuccess:
      return "success";
    case CallOutcome::kFailure:
      return "failure";
    case CallOutcome::kExcluded:
      return "excluded";
    case CallOutcome::kRejectedOpen:
      return "rejected_open";
    case CallOutcome::kRejectedTooMany:
      return "rejected_too_many";
    case CallOutcome::kAbandoned:
      return "abandoned";
    case CallOutcome::kStale:
      return "stale";
  }
  return "unknown";
}

// BreakerCall
//
// One call's outcome (see BreakerListener::OnCall).
struct BreakerCall {
  absl::string_view breaker;
  CallOutcome outcome = CallOutcome::kSuccess;
  // Slower than slow_call_duration (successes and failures only).
  bool slow = false;
  // How long the call took, on the breaker's clock, for the outcomes of
  // calls that ran (success, failure, excluded, abandoned, stale), when the
  // listener wants_durations() or the breaker tracks slow calls; zero
  // otherwise and for rejections.
  absl::Duration duration = absl::ZeroDuration();
};

// BreakerView
//
// A breaker as its telemetry may read it. Every function is thread-safe,
// takes no lock a call could wait on for long, and never changes the
// breaker (in particular, a due open -> half-open expiry is applied to
// `observed_state()`'s answer only: a scrape must not move a breaker or run
// its callbacks on the scraping thread).
class BreakerView {
 public:
  virtual const std::string& name() const = 0;
  virtual State observed_state() const = 0;
  // Lifetime counters; the outcome counts of degrade_breaker_calls_total.
  virtual BreakerTotals totals() const = 0;
  // State changes from `from` to `to` so far.
  virtual uint64_t transitions(State from, State to) const = 0;
  // When the breaker last left the closed state; InfiniteFuture() while it
  // is closed.
  virtual absl::Time degraded_since() const = 0;
  // The breaker's clock, so that durations are measured on it.
  virtual absl::Time now() const = 0;

 protected:
  ~BreakerView() = default;
};

// BreakerListener
//
// What a breaker reports to. Events other than OnCall arrive outside the
// breaker's lock, in transition order, never concurrently; they may query
// the breaker but should not call it. A listener that throws loses that
// event and nothing else.
class BreakerListener : public TelemetryAttachment {
 public:
  virtual void OnStateChange(const BreakerStateChange& change) { (void)change; }
  // A rate threshold reached, once per episode (see BreakerThresholdEvent);
  // delivered like OnStateChange, in order with it.
  virtual void OnThreshold(const BreakerThresholdEvent& event) { (void)event; }
  // Asked once, when the listener is attached: whether OnCall should be
  // called. It is the only per-call cost a listener can add to a breaker.
  virtual bool wants_calls() const { return false; }
  // Asked once, with wants_calls(): whether BreakerCall::duration should be
  // measured. It costs two reads of the precise clock per call (a breaker
  // with a slow_call_duration reads them anyway and always fills it in).
  virtual bool wants_durations() const { return false; }
  // Every call's outcome, on the calling thread, while the breaker may be
  // used by others: it must be quick, thread-safe, and must not call the
  // breaker.
  virtual void OnCall(const BreakerCall& call) { (void)call; }
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_BREAKER_LISTENER_HPP_
