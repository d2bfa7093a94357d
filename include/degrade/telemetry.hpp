// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: telemetry.hpp
// -----------------------------------------------------------------------------
//
// How the core reports what happens without knowing who listens. A breaker,
// a degradation manager or a hot list knows nothing of Prometheus, episodes
// or JSON log lines; it knows this small interface:
//
//   * at construction it offers a read-only *view* of itself (`BreakerView`,
//     `ManagerView`, `HotListView`) to a `Telemetry`, which may read it at
//     any time (a metrics scrape pulls counters the component keeps anyway,
//     so the hot path pays nothing for being observed);
//   * the telemetry hands back a *listener* (`BreakerListener`,
//     `ManagerListener`), to which the component pushes its events: a state
//     change with its cause and the counts that caused it, a level change,
//     a reload applied or refused, an override expiring, a source failing;
//     per-call outcomes and rejections only to a listener that asks for them;
//   * the component owns the listener and destroys it first, before anything
//     the view reads, so a telemetry never reads a dead component.
//
// `MetricsRegistry` (metrics_registry.hpp) is the telemetry degrade ships:
// Prometheus and JSON export, degradation episodes, rate-limited event
// lines. Anything else (a test spy, a bridge to the service's own logger or
// metrics library) implements `Telemetry` the same way.
//
// Which telemetry a component uses is explicit: the `metrics` field of its
// options, or else the process default set by one line at startup. With
// neither, it is not observed at all and costs nothing (a unit test's
// breakers write no lines and register nowhere).
//
//   degrade::MetricsRegistry& registry = degrade::MetricsRegistry::Default();
//   degrade::SetDefaultTelemetry(&registry);    // once, before building
//
//   degrade::BreakerSettings s;
//   s.name = "recall";                          // exported, by the default
//   degrade::CircuitBreaker<Items> recall(s);
//   s.name = "scratch";
//   s.metrics = degrade::NoTelemetry();         // this one is not
//   degrade::CircuitBreaker<Items> scratch(s);
//
// Thread safety: `SetDefaultTelemetry`/`DefaultTelemetry` are thread-safe.
// A view's functions are thread-safe and never change the component. A
// listener's events arrive outside the component's locks, in order, never
// concurrently with each other (the component's serial dispatcher), except
// `BreakerListener::OnCall`, which runs on the calling thread of each call.

#ifndef DEGRADE_TELEMETRY_HPP_
#define DEGRADE_TELEMETRY_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/hedge_stats.hpp"
#include "degrade/level_change.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// TelemetryAttachment
//
// What a telemetry keeps for one component; the component owns it and
// destroys it before itself. Destroying it must stop every use of the view
// (waiting for a read in progress, if need be).
class TelemetryAttachment {
 public:
  virtual ~TelemetryAttachment() = default;
};

// ---- Circuit breakers -------------------------------------------------------

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

// ---- Degradation managers ---------------------------------------------------

// ManagerStats
//
// A consistent snapshot of a manager, taken under its lock.
struct ManagerStats {
  // The manager's clock when the snapshot was taken.
  absl::Time now;
  int level = 0;
  int num_levels = 0;
  // (from, to) -> count, for the pairs that happened.
  std::vector<std::pair<std::pair<int, int>, uint64_t>> transitions;
  // Time at each level so far, the current stay included; levels
  // 0..max(num_levels, level).
  std::vector<absl::Duration> time_at_level;
  // Every feature asked for, and whether it is on.
  std::vector<std::pair<std::string, bool>> features;
  uint64_t reloads = 0;
  uint64_t rejected_reloads = 0;
  // The control document in force (DegradationManager::SetControl): its
  // version and end; 0 and InfinitePast() when none.
  uint64_t control_version = 0;
  absl::Time control_until = absl::InfinitePast();
  // at_or_above_since[k - 1]: since when the level has been >= k, for
  // k = 1..level.
  std::vector<absl::Time> at_or_above_since;
};

// ReloadEvent
struct ReloadEvent {
  absl::string_view manager;
  absl::Time time;
  // True: a new config was installed. False: refused, and `error` says why;
  // the previous config keeps serving.
  bool applied = false;
  int levels = 0;  // levels installed (applied only)
  int level = 0;   // the level after the reload (applied only)
  absl::Status error;
};

// OverrideExpiredEvent
struct OverrideExpiredEvent {
  absl::string_view manager;
  absl::Time time;
  // The level that had been forced; -1 for a control document that forced
  // only features off.
  int level = 0;
  // Empty for ForceLevel's override; a control document's note otherwise.
  std::string note;
};

// PollErrorEvent
//
// A signal source failed; reported when the error changes, not every poll.
struct PollErrorEvent {
  absl::string_view manager;
  absl::Time time;
  absl::Status error;
};

// ManagerView
//
// A manager as its telemetry may read it; thread-safe, read-only.
class ManagerView {
 public:
  virtual const std::string& name() const = 0;
  virtual ManagerStats stats() const = 0;
  // True when the manager writes its event lines to a sink of its own
  // (ManagerOptions::log_sink): the telemetry should not write them too.
  virtual bool has_own_log() const = 0;

 protected:
  ~ManagerView() = default;
};

// ManagerListener
//
// What a manager reports to: outside its lock, in order, never
// concurrently; a listener may call back into the manager.
class ManagerListener : public TelemetryAttachment {
 public:
  // Asked once, when the listener is attached: whether it writes the
  // manager's event lines itself. When it does not (the default), the
  // manager writes them to stderr unless it has a log_sink: every level
  // change is a log line whatever the telemetry does.
  virtual bool writes_lines() const { return false; }
  virtual void OnLevelChange(const LevelChange& change) { (void)change; }
  virtual void OnReload(const ReloadEvent& event) { (void)event; }
  virtual void OnOverrideExpired(const OverrideExpiredEvent& event) {
    (void)event;
  }
  virtual void OnPollError(const PollErrorEvent& event) { (void)event; }
};

// ---- Hot lists --------------------------------------------------------------

// HotListStats
struct HotListStats {
  // Age of the serving snapshot; InfiniteDuration() before the first one.
  absl::Duration age = absl::InfiniteDuration();
  std::size_t items = 0;
  // Snapshot updates published, and refused (the previous one kept).
  uint64_t refreshes = 0;
  uint64_t failures = 0;
};

// HotListView
class HotListView {
 public:
  virtual const std::string& name() const = 0;
  virtual HotListStats stats() const = 0;

 protected:
  ~HotListView() = default;
};

// ---- The telemetry ----------------------------------------------------------

// Telemetry
//
// Receives components as they are built. Each Attach* returns what the
// component reports to and keeps until it is destroyed, or nullptr for
// "not interested" (the default). Attach* run on the constructing thread,
// inside the component's constructor: they may read the view, but must not
// call the component. One that throws attaches nothing (the component is
// built unobserved; degrade never throws).
class Telemetry {
 public:
  virtual ~Telemetry() = default;

  virtual std::unique_ptr<BreakerListener> AttachBreaker(
      const BreakerView& breaker) {
    (void)breaker;
    return nullptr;
  }
  virtual std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& manager) {
    (void)manager;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachHotList(
      const HotListView& hot_list) {
    (void)hot_list;
    return nullptr;
  }
  // Overload control (overload_stats.hpp): views only; the components keep
  // their own counts, so a telemetry scrapes and is never on the hot path.
  virtual std::unique_ptr<TelemetryAttachment> AttachAdmission(
      const AdmissionView& admission) {
    (void)admission;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachQueue(
      const QueueView& queue) {
    (void)queue;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachLimiter(
      const LimiterView& limiter) {
    (void)limiter;
    return nullptr;
  }
  // Retries (retry_stats.hpp): views only, scraped like the above.
  virtual std::unique_ptr<TelemetryAttachment> AttachRetryBudget(
      const RetryBudgetView& budget) {
    (void)budget;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachRetrier(
      const RetrierView& retrier) {
    (void)retrier;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachThrottler(
      const ThrottleView& throttler) {
    (void)throttler;
    return nullptr;
  }
  // Hedging (hedge_stats.hpp): a view, as for overload control.
  virtual std::unique_ptr<TelemetryAttachment> AttachHedge(
      const HedgeView& hedge) {
    (void)hedge;
    return nullptr;
  }
};

namespace detail {

inline std::atomic<Telemetry*>& DefaultTelemetrySlot() {
  // Constant-initialised: no guard, no order-of-initialisation problem for
  // components with static storage duration.
  static std::atomic<Telemetry*> slot{nullptr};
  return slot;
}

}  // namespace detail

// SetDefaultTelemetry(telemetry)
//
// The telemetry of every component built from now on whose options leave
// `metrics` unset; nullptr (the initial value) means none. Components
// already built keep what they have. REQUIRES: `telemetry` outlives every
// component built while it is the default.
inline void SetDefaultTelemetry(Telemetry* telemetry) {
  detail::DefaultTelemetrySlot().store(telemetry, std::memory_order_release);
}

// DefaultTelemetry()
//
// The current default; nullptr if none has been set.
inline Telemetry* DefaultTelemetry() {
  return detail::DefaultTelemetrySlot().load(std::memory_order_acquire);
}

// NoTelemetry()
//
// A telemetry that attaches to nothing: put it in a component's `metrics`
// to keep that one component unobserved while a default is set.
inline Telemetry* NoTelemetry() {
  static Telemetry* const none = new Telemetry();
  return none;
}

namespace detail {

// The telemetry a component built with `chosen` (its options' `metrics`)
// reports to, or nullptr.
inline Telemetry* ResolveTelemetry(Telemetry* chosen) {
  Telemetry* t = chosen != nullptr ? chosen : DefaultTelemetry();
  return t == NoTelemetry() ? nullptr : t;
}

// Calls `attach()` (a Telemetry::Attach*), turning a throw into nullptr.
template <typename Attach>
auto AttachQuietly(Attach attach) -> decltype(attach()) {
  return InvokeOr(attach, [](absl::string_view) {
    return decltype(attach())(nullptr);
  });
}

}  // namespace detail

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TELEMETRY_HPP_
