// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: breaker_settings.hpp
// -----------------------------------------------------------------------------
//
// How a circuit breaker is configured: `BreakerSettings`, gobreaker's fields
// (name, max_requests, interval, timeout, ready_to_trip, on_state_change,
// is_successful, clock) plus the extensions (sliding window, slow calls,
// backoff with jitter, a half-open wait, exclusions, telemetry), and
// `ValidateBreakerSettings()`.
//
// One rule table decides both what validation refuses and how the
// breaker's constructor (which cannot fail) repairs it: each rule names a
// field, says when its value is invalid and why, and resets that field. A
// setting that fails validation is therefore always repaired to one that
// passes; the table test checks it rule by rule.
//
//   degrade::BreakerSettings s;
//   s.name = "recall";
//   s.timeout = absl::Seconds(30);
//   s.backoff_multiplier = 2.0;
//   s.max_timeout = absl::Minutes(5);
//   absl::Status ok = degrade::ValidateBreakerSettings(s);  // OK
//   s.backoff_jitter = 1.5;
//   ok = degrade::ValidateBreakerSettings(s);
//   // INVALID_ARGUMENT: circuit breaker 'recall': setting 'backoff_jitter'
//   //   = 1.5 is invalid: must be in [0, 1]
//
// Thread safety: plain values and pure functions.

#ifndef DEGRADE_BREAKER_SETTINGS_HPP_
#define DEGRADE_BREAKER_SETTINGS_HPP_

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/trip.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

class Telemetry;  // telemetry.hpp

// How long a breaker stays open when `timeout` is 0, as in gobreaker.
inline constexpr absl::Duration kDefaultOpenTimeout = absl::Seconds(60);
// The trip rule when `ready_to_trip` is unset: gobreaker's "more than 5
// consecutive failures".
inline constexpr uint64_t kDefaultTripConsecutiveFailures = 6;
// The largest windows a breaker accepts. A failure scans its window under
// the breaker's lock, so a window must stay small enough to scan in well
// under a millisecond (resilience4j's default is a count window of 100).
inline constexpr uint32_t kMaxCountWindowCalls = 100000;
inline constexpr uint32_t kMaxTimeWindowBuckets = 10000;

// HalfOpenPolicy
//
// How a half-open breaker judges its trial calls.
enum class HalfOpenPolicy : uint8_t {
  // gobreaker: `max_requests` trials are admitted; as many consecutive
  // successes close the breaker, the first failure reopens it. A slow trial
  // that succeeds is a success.
  kFirstFailureReopens = 0,
  // resilience4j: `max_requests` trials (its
  // permittedNumberOfCallsInHalfOpenState) are admitted; once
  // min(ready_to_trip's minimum calls, max_requests) of them have reported
  // (every one, for a rule without a rate part), the breaker reopens if
  // their failure rate reaches `half_open_failure_rate` or their slow-call
  // rate reaches `half_open_slow_call_rate`, else it closes. Slow trials
  // count as slow whether they succeeded or failed.
  kRateBased = 1,
};

// When `half_open_max_wait` starts running.
enum class HalfOpenWaitFrom : uint8_t {
  // Per trial, from its own admission; a quiet half-open breaker with no
  // trial out never times out (this library's default).
  kEachTrial = 0,
  // From entering half-open, trials or not (resilience4j's
  // maxWaitDurationInHalfOpenState).
  kEnteringHalfOpen = 1,
};

// What an expired `half_open_max_wait` does.
enum class HalfOpenWaitExpiry : uint8_t {
  kReopen = 0,  // as if the trial had failed (the default)
  kClose = 1,   // resilience4j's transitionToStateAfterWaitDuration = CLOSED
};

// The state and mode a breaker starts in.
enum class InitialState : uint8_t {
  kClosed = 0,
  kOpen = 1,  // open for `timeout`, then half-open, as after a trip
  kForcedOpen = 2,
  kMetricsOnly = 3,
  kBypass = 4,
};

// CallVerdict
//
// What a result classifier (ClassifyResult) says of one call's result.
enum class CallVerdict : uint8_t {
  kDefault = 0,  // decide with is_excluded / is_successful, as without one
  kSuccess = 1,
  kFailure = 2,
  kExcluded = 3,
};

// ResultClassifier
//
// A type-erased hook that sees a call's whole result (status and value),
// so that, say, a recall route answering OK with zero candidates counts as
// a failure. Build it with ClassifyResult<T>(); a breaker of another T
// refuses it (Create) or ignores it (the constructor).
struct ResultClassifier {
  // Identifies the T it was built for.
  const void* type = nullptr;
  // Called with a pointer to the CircuitBreaker<T>::Result.
  std::function<CallVerdict(const void*)> classify;
  explicit operator bool() const { return static_cast<bool>(classify); }
};

namespace detail {
// One address per result type: tells classifiers of different T apart.
template <typename Result>
const void* ResultTypeTag() {
  static const char tag = 0;
  return &tag;
}
}  // namespace detail

// ClassifyResult<T>(f)
//
// `f(const R& result) -> CallVerdict`, where R is `absl::StatusOr<T>` (or
// `absl::Status` for T = void), runs on the calling thread after each
// Execute() of a CircuitBreaker<T>, before the outcome is counted. It must
// be thread-safe and quick; a throw counts the call as a failure.
//
//   s.classify_result = degrade::ClassifyResult<Candidates>(
//       [](const absl::StatusOr<Candidates>& r) {
//         return r.ok() && r->empty() ? degrade::CallVerdict::kFailure
//                                     : degrade::CallVerdict::kDefault;
//       });
template <typename T, typename F>
ResultClassifier ClassifyResult(F f);

// BreakerSettings
//
// Configuration of one breaker; copied into it at construction and immutable
// afterwards. Zero values mean what they mean in gobreaker. Invalid values
// (negative durations, a non-finite or < 1 multiplier, a jitter outside
// [0, 1], an impossible window) are reported by `ValidateBreakerSettings()`
// (and refused by `CircuitBreaker<T>::Create`); the constructor, which cannot
// fail, repairs each invalid field to its default instead. Both follow the
// same rule table, so whatever validation refuses, the constructor repairs.
struct BreakerSettings {
  // Names the breaker in statuses, logs and callbacks.
  std::string name;
  // Calls admitted in half-open, and consecutive successes needed there to
  // close. 0 means 1.
  uint32_t max_requests = 0;
  // Closed-state period after which `Counts` are cleared. 0 (or
  // InfiniteDuration()) means never.
  absl::Duration interval = absl::ZeroDuration();
  // How long the breaker stays open before trying half-open. 0 means
  // kDefaultOpenTimeout (60 s); `absl::InfiniteDuration()` keeps it open
  // until `Reset()`.
  absl::Duration timeout = absl::ZeroDuration();
  // When to open (trip.hpp). A rule with a rate part (trip::FailureRate,
  // trip::SlowCallRate, or an AnyOf holding one) is asked after every
  // recorded closed-state outcome, successes too, as in resilience4j; a
  // consecutive-failures or custom rule (any callable bool(const Counts&):
  // a lambda, a function, a std::function) is asked after each closed-state
  // failure (and slow call), as in gobreaker. Returning true opens the
  // breaker. Unset means gobreaker's "more than 5 consecutive failures",
  // trip::ConsecutiveFailures(6). The library's rules are validated: a rate
  // outside (0, 1] (50% is 0.5), minimum_calls of 0, ConsecutiveFailures(0)
  // or an AnyOf of nothing is refused by validation and replaced by the
  // default rule by the constructor. With a count window of N the effective
  // minimum of each rate part is min(minimum_calls, N), so "window 10,
  // minimum 100" trips after 10 calls (settings() reads back the capped
  // rule). Runs outside the breaker's lock, on the calling thread, one call
  // at a time (so a rule with state needs no lock of its own): it may read
  // or move this breaker (counts(), ForceOpen(), Reset(), ...), and the
  // trip then happens only if the generation it decided on is still
  // current. A call through this breaker made from inside it is counted but
  // does not ask the rule again. A throw means false.
  trip::Rule ready_to_trip;
  // Called once per state change, and once per manual call (ForceOpen(),
  // Reset(), ...) even when the state stays, then with from == to. Outside
  // the breaker's lock, in order and never concurrently, possibly on another
  // thread that is delivering events (see circuit_breaker.hpp). A throw is
  // swallowed.
  std::function<void(const std::string& name, State from, State to)>
      on_state_change;
  // The telemetry the breaker reports to (see telemetry.hpp): with a
  // MetricsRegistry, the degrade_breaker_* series and a rate-limited
  // `breaker_state_change` line per transition. nullptr means
  // DefaultTelemetry() (none unless SetDefaultTelemetry() was called);
  // NoTelemetry() means none even then. REQUIRES: outlives the breaker.
  Telemetry* metrics = nullptr;
  // Whether a callable's status is a success. Unset means `status.ok()`.
  // A throw means failure.
  std::function<bool(const absl::Status&)> is_successful;
  // Whether a status counts as neither success nor failure (a client-side
  // error such as INVALID_ARGUMENT, say). Checked first. Unset means never.
  // A throw means not excluded.
  std::function<bool(const absl::Status&)> is_excluded;
  // The time source; must outlive the breaker. nullptr means
  // `RealClock::Instance()`.
  const Clock* clock = nullptr;

  // Beyond gobreaker.

  // Where failure_rate()/slow_call_rate() are computed. Default: the whole
  // generation.
  SlidingWindow window;
  // A call (success or failure) that takes longer than this is slow.
  // 0 (or InfiniteDuration()) disables slow-call tracking (and its clock
  // reads).
  absl::Duration slow_call_duration = absl::ZeroDuration();
  // Each failed half-open trial multiplies the open duration by this factor;
  // a close resets it to `timeout`. 1 means no backoff.
  double backoff_multiplier = 1.0;
  // Cap on the backed-off open duration. 0 means no cap; otherwise at least
  // `timeout`.
  absl::Duration max_timeout = absl::ZeroDuration();
  // Each open duration is multiplied by a factor drawn uniformly from
  // [1 - jitter, 1 + jitter], so that many instances don't retry in step.
  // `max_timeout` is applied after the jitter: no open period exceeds it.
  double backoff_jitter = 0.0;
  // The longest one half-open trial may be out. Each trial's clock starts
  // when that trial is admitted and stops when it reports (success,
  // failure, exclusion or abandoned permit); once any trial has been out
  // longer than this, the breaker reopens as if that trial had failed, so a
  // hung trial cannot hold the breaker half-open forever. A trial admitted
  // later is never cut short by an earlier one's clock, and a quiet
  // half-open breaker with no trial out never times out. This is not
  // resilience4j's maxWaitDurationInHalfOpenState, which bounds the time in
  // the state itself. 0 (or InfiniteDuration()) means no limit.
  absl::Duration half_open_max_wait = absl::ZeroDuration();
  // When that wait starts and what its expiry does (see the enums).
  HalfOpenWaitFrom half_open_wait_from = HalfOpenWaitFrom::kEachTrial;
  HalfOpenWaitExpiry half_open_wait_expiry = HalfOpenWaitExpiry::kReopen;

  // Beyond gobreaker, from resilience4j.

  // How half-open trials are judged. Default: gobreaker's.
  HalfOpenPolicy half_open_policy = HalfOpenPolicy::kFirstFailureReopens;
  // kRateBased thresholds, in (0, 1]. 0 means: the lowest threshold of that
  // kind among ready_to_trip's rate rules, else resilience4j's defaults
  // (0.5 for failures, 1.0 for slow calls). Slow calls are judged only with
  // a slow_call_duration.
  double half_open_failure_rate = 0.0;
  double half_open_slow_call_rate = 0.0;
  // The state and mode the breaker starts in. Not reported as a change.
  InitialState initial_state = InitialState::kClosed;
  // Classification by value (see ClassifyResult); checked before
  // is_excluded / is_successful, which decide when it answers kDefault.
  ResultClassifier classify_result;
};

// ValidateBreakerSettings(settings)
//
// Returns OK, or INVALID_ARGUMENT naming the breaker, the first bad field,
// its value and the rule it breaks.
inline absl::Status ValidateBreakerSettings(const BreakerSettings& s);

namespace detail {

// The open duration `timeout` means: 0 is kDefaultOpenTimeout.
inline absl::Duration EffectiveOpenTimeout(const BreakerSettings& s) {
  return s.timeout == absl::ZeroDuration() ? kDefaultOpenTimeout : s.timeout;
}

// Settings a breaker can run with: every field that fails a rule is reset
// to its default, "forever" spellings of 0-means-off fields become 0, an
// unset ready_to_trip becomes the default rule, and with a count window the
// rule's rate parts are capped at the window's size. REQUIRES nothing;
// ValidateBreakerSettings(NormalizeBreakerSettings(s)) is always OK.
inline BreakerSettings NormalizeBreakerSettings(BreakerSettings s);

}  // namespace detail

// ---- Implementation details ----

template <typename T, typename F>
ResultClassifier ClassifyResult(F f) {
  using R = std::conditional_t<std::is_void<T>::value, absl::Status,
                               absl::StatusOr<T>>;
  ResultClassifier c;
  c.type = detail::ResultTypeTag<R>();
  c.classify = [f = std::move(f)](const void* result) -> CallVerdict {
    return f(*static_cast<const R*>(result));
  };
  return c;
}

namespace detail {

// One validation rule: when `broken(s)`, setting `field` (shown as
// `value(s)`) is invalid because `why`; `repair(s)` resets it.
struct BreakerSettingRule {
  absl::string_view field;
  absl::string_view why;
  bool (*broken)(const BreakerSettings&);
  std::string (*value)(const BreakerSettings&);
  void (*repair)(BreakerSettings&);
  // When set, says why in place of `why`: for a rule whose reason depends
  // on the value (which part of a trip rule, and what is wrong with it).
  std::string (*explain)(const BreakerSettings&) = nullptr;
};

inline bool NegativeDuration(absl::Duration d) {
  return d < absl::ZeroDuration();
}

// The breaker keeps its durations in whole nanoseconds, where 0 has a
// meaning of its own (default, off, no limit): a positive duration under
// 1 ns would silently take that meaning, so it is refused (and repaired to
// 1 ns, the shortest the breaker can honour).
inline bool SubNanosecond(absl::Duration d) {
  return d > absl::ZeroDuration() && d < absl::Nanoseconds(1);
}

// A half-open rate threshold: 0 (derive it) or a fraction in (0, 1].
inline constexpr absl::string_view kHalfOpenRateWhy =
    "must be 0 (derive it from ready_to_trip) or a fraction in (0, 1]; "
    "for 50% write 0.5";
inline bool BadHalfOpenRate(double r) {
  return !std::isfinite(r) || r < 0.0 || r > 1.0;
}

inline trip::Rule DefaultTripRule() {
  return trip::ConsecutiveFailures(kDefaultTripConsecutiveFailures);
}

inline bool IsTimeWindow(const SlidingWindow& w) {
  return w.kind == SlidingWindow::Kind::kTime;
}

// In the order ValidateBreakerSettings reports them.
inline const std::array<BreakerSettingRule, 27>& BreakerSettingRules() {
  using S = BreakerSettings;
  static const std::array<BreakerSettingRule, 27> kRules = {{
      {"interval", "must be >= 0 (0 means never clear)",
       [](const S& s) { return NegativeDuration(s.interval); },
       [](const S& s) { return absl::FormatDuration(s.interval); },
       [](S& s) { s.interval = absl::ZeroDuration(); }},
      {"interval", "must be 0 or at least 1ns (shorter reads as 0: never clear)",
       [](const S& s) { return SubNanosecond(s.interval); },
       [](const S& s) { return absl::FormatDuration(s.interval); },
       [](S& s) { s.interval = absl::Nanoseconds(1); }},
      {"timeout", "must be >= 0 (0 means 60s)",
       [](const S& s) { return NegativeDuration(s.timeout); },
       [](const S& s) { return absl::FormatDuration(s.timeout); },
       [](S& s) { s.timeout = absl::ZeroDuration(); }},
      {"timeout", "must be 0 or at least 1ns (shorter reads as 0: 60s)",
       [](const S& s) { return SubNanosecond(s.timeout); },
       [](const S& s) { return absl::FormatDuration(s.timeout); },
       [](S& s) { s.timeout = absl::Nanoseconds(1); }},
      {"slow_call_duration", "must be >= 0 (0 disables slow calls)",
       [](const S& s) { return NegativeDuration(s.slow_call_duration); },
       [](const S& s) { return absl::FormatDuration(s.slow_call_duration); },
       [](S& s) { s.slow_call_duration = absl::ZeroDuration(); }},
      {"slow_call_duration", "must be 0 or at least 1ns (shorter reads as 0: no slow calls)",
       [](const S& s) { return SubNanosecond(s.slow_call_duration); },
       [](const S& s) { return absl::FormatDuration(s.slow_call_duration); },
       [](S& s) { s.slow_call_duration = absl::Nanoseconds(1); }},
      {"max_timeout", "must be >= 0 (0 means no cap)",
       [](const S& s) { return NegativeDuration(s.max_timeout); },
       [](const S& s) { return absl::FormatDuration(s.max_timeout); },
       [](S& s) { s.max_timeout = absl::ZeroDuration(); }},
      {"max_timeout", "must be 0 or at least 1ns (shorter reads as 0: no cap)",
       [](const S& s) { return SubNanosecond(s.max_timeout); },
       [](const S& s) { return absl::FormatDuration(s.max_timeout); },
       [](S& s) { s.max_timeout = absl::Nanoseconds(1); }},
      // A cap below the base would shorten the backoff: raise it.
      {"max_timeout", "must be 0 (no cap) or at least the timeout",
       [](const S& s) {
         return s.max_timeout > absl::ZeroDuration() &&
                s.max_timeout < EffectiveOpenTimeout(s);
       },
       [](const S& s) { return absl::FormatDuration(s.max_timeout); },
       [](S& s) { s.max_timeout = EffectiveOpenTimeout(s); }},
      {"half_open_max_wait", "must be >= 0 (0 means no limit)",
       [](const S& s) { return NegativeDuration(s.half_open_max_wait); },
       [](const S& s) { return absl::FormatDuration(s.half_open_max_wait); },
       [](S& s) { s.half_open_max_wait = absl::ZeroDuration(); }},
      {"half_open_max_wait", "must be 0 or at least 1ns (shorter reads as 0: no limit)",
       [](const S& s) { return SubNanosecond(s.half_open_max_wait); },
       [](const S& s) { return absl::FormatDuration(s.half_open_max_wait); },
       [](S& s) { s.half_open_max_wait = absl::Nanoseconds(1); }},
      {"backoff_multiplier", "must be finite and >= 1",
       [](const S& s) {
         return !std::isfinite(s.backoff_multiplier) ||
                s.backoff_multiplier < 1.0;
       },
       [](const S& s) { return absl::StrCat(s.backoff_multiplier); },
       [](S& s) { s.backoff_multiplier = 1.0; }},
      {"backoff_jitter", "must be in [0, 1]",
       [](const S& s) {
         return !std::isfinite(s.backoff_jitter) || s.backoff_jitter < 0.0 ||
                s.backoff_jitter > 1.0;
       },
       [](const S& s) { return absl::StrCat(s.backoff_jitter); },
       [](S& s) { s.backoff_jitter = 0.0; }},
      // An impossible window is dropped whole: half a window means nothing.
      {"window.kind", "must be kNone, kCount or kTime",
       [](const S& s) {
         return s.window.kind != SlidingWindow::Kind::kNone &&
                s.window.kind != SlidingWindow::Kind::kCount &&
                s.window.kind != SlidingWindow::Kind::kTime;
       },
       [](const S& s) { return absl::StrCat(static_cast<int>(s.window.kind)); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.size", "a count window needs size > 0",
       [](const S& s) {
         return s.window.kind == SlidingWindow::Kind::kCount &&
                s.window.size == 0;
       },
       [](const S& s) { return absl::StrCat(s.window.size); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.size", "a count window keeps at most 100000 calls",
       [](const S& s) {
         return s.window.kind == SlidingWindow::Kind::kCount &&
                s.window.size > kMaxCountWindowCalls;
       },
       [](const S& s) { return absl::StrCat(s.window.size); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.size", "a time window needs at least one bucket",
       [](const S& s) { return IsTimeWindow(s.window) && s.window.size == 0; },
       [](const S& s) { return absl::StrCat(s.window.size); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.length", "a time window needs a finite length > 0",
       [](const S& s) {
         return IsTimeWindow(s.window) &&
                (s.window.length <= absl::ZeroDuration() ||
                 s.window.length == absl::InfiniteDuration());
       },
       [](const S& s) { return absl::FormatDuration(s.window.length); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.size", "a time window has at most 10000 buckets",
       [](const S& s) {
         return IsTimeWindow(s.window) && s.window.size > kMaxTimeWindowBuckets;
       },
       [](const S& s) { return absl::StrCat(s.window.size); },
       [](S& s) { s.window = SlidingWindow{}; }},
      {"window.size", "buckets would be shorter than 1ns",
       [](const S& s) {
         return IsTimeWindow(s.window) && s.window.size > 0 &&
                s.window.length / s.window.size < absl::Nanoseconds(1);
       },
       [](const S& s) { return absl::StrCat(s.window.size); },
       [](S& s) { s.window = SlidingWindow{}; }},
      // Unset is valid (the default rule); a library rule that cannot
      // decide what it says (FailureRate(50.0, 5) never trips) is not.
      {"ready_to_trip", "is not a valid trip rule",
       [](const S& s) {
         return s.ready_to_trip && !s.ready_to_trip.Validate().ok();
       },
       [](const S& s) { return s.ready_to_trip.Describe(); },
       [](S& s) { s.ready_to_trip = DefaultTripRule(); },
       [](const S& s) {
         return std::string(s.ready_to_trip.Validate().message());
       }},
      {"half_open_policy", "must be kFirstFailureReopens or kRateBased",
       [](const S& s) {
         return s.half_open_policy != HalfOpenPolicy::kFirstFailureReopens &&
                s.half_open_policy != HalfOpenPolicy::kRateBased;
       },
       [](const S& s) {
         return absl::StrCat(static_cast<int>(s.half_open_policy));
       },
       [](S& s) { s.half_open_policy = HalfOpenPolicy::kFirstFailureReopens; }},
      {"half_open_failure_rate", kHalfOpenRateWhy,
       [](const S& s) { return BadHalfOpenRate(s.half_open_failure_rate); },
       [](const S& s) { return absl::StrCat(s.half_open_failure_rate); },
       [](S& s) { s.half_open_failure_rate = 0.0; }},
      {"half_open_slow_call_rate", kHalfOpenRateWhy,
       [](const S& s) { return BadHalfOpenRate(s.half_open_slow_call_rate); },
       [](const S& s) { return absl::StrCat(s.half_open_slow_call_rate); },
       [](S& s) { s.half_open_slow_call_rate = 0.0; }},
      {"half_open_wait_from", "must be kEachTrial or kEnteringHalfOpen",
       [](const S& s) {
         return s.half_open_wait_from != HalfOpenWaitFrom::kEachTrial &&
                s.half_open_wait_from != HalfOpenWaitFrom::kEnteringHalfOpen;
       },
       [](const S& s) {
         return absl::StrCat(static_cast<int>(s.half_open_wait_from));
       },
       [](S& s) { s.half_open_wait_from = HalfOpenWaitFrom::kEachTrial; }},
      {"half_open_wait_expiry", "must be kReopen or kClose",
       [](const S& s) {
         return s.half_open_wait_expiry != HalfOpenWaitExpiry::kReopen &&
                s.half_open_wait_expiry != HalfOpenWaitExpiry::kClose;
       },
       [](const S& s) {
         return absl::StrCat(static_cast<int>(s.half_open_wait_expiry));
       },
       [](S& s) { s.half_open_wait_expiry = HalfOpenWaitExpiry::kReopen; }},
      {"initial_state",
       "must be kClosed, kOpen, kForcedOpen, kMetricsOnly or kBypass",
       [](const S& s) {
         return static_cast<int>(s.initial_state) >
                static_cast<int>(InitialState::kBypass);
       },
       [](const S& s) { return absl::StrCat(static_cast<int>(s.initial_state)); },
       [](S& s) { s.initial_state = InitialState::kClosed; }},
  }};
  return kRules;
}

inline BreakerSettings NormalizeBreakerSettings(BreakerSettings s) {
  for (const BreakerSettingRule& rule : BreakerSettingRules()) {
    if (rule.broken(s)) rule.repair(s);
  }
  // Valid spellings of "off" that the breaker would otherwise have to
  // treat as huge numbers.
  if (s.interval == absl::InfiniteDuration()) s.interval = absl::ZeroDuration();
  if (s.slow_call_duration == absl::InfiniteDuration()) {
    s.slow_call_duration = absl::ZeroDuration();
  }
  if (s.half_open_max_wait == absl::InfiniteDuration()) {
    s.half_open_max_wait = absl::ZeroDuration();
  }
  if (!s.ready_to_trip) s.ready_to_trip = DefaultTripRule();
  // A count window of N never holds more than N calls: a larger minimum
  // would never be reached (resilience4j uses min(minimum, window size)).
  if (s.window.kind == SlidingWindow::Kind::kCount) {
    s.ready_to_trip = s.ready_to_trip.CappedAt(s.window.size);
  }
  return s;
}

}  // namespace detail

inline absl::Status ValidateBreakerSettings(const BreakerSettings& s) {
  for (const detail::BreakerSettingRule& rule : detail::BreakerSettingRules()) {
    if (!rule.broken(s)) continue;
    return detail::SettingOwner("circuit breaker", s.name)
        .Invalid(
            rule.field, rule.value(s),
            rule.explain != nullptr ? rule.explain(s) : std::string(rule.why));
  }
  return absl::OkStatus();
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_BREAKER_SETTINGS_HPP_
