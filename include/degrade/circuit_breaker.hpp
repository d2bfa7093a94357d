// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: circuit_breaker.hpp
// -----------------------------------------------------------------------------
//
// A circuit breaker stops calling a dependency that keeps failing, so that a
// sick feature/recall/rank service costs the caller a fast rejection (and a
// fallback) instead of a timeout, and gets room to recover.
//
// By default the semantics are gobreaker's, so a gobreaker user finds no
// surprise:
//
//            ready_to_trip(counts) is true after a failure
//   closed --------------------------------------------------> open
//     ^                                                        |  ^
//     |                                   `timeout` passed,    |  |
//     |                                   seen by the next     |  | any trial
//     |                                   call or state()      v  | fails
//     +------------- max_requests trials succeed ---------- half-open
//
// Every transition starts a new generation and clears `Counts`; in the closed
// state `Counts` is also cleared every `interval`. The outcome of a call that
// was admitted in an earlier generation is ignored. Expiry is strict, as in
// gobreaker: at exactly `timeout` after opening the breaker is still open.
//
// Beyond gobreaker: count- and time-based sliding windows feeding a failure
// rate and a slow-call rate, composable trip rules (`trip::`), exponential
// backoff of the open duration, a maximum wait in half-open, manual control,
// and exceptions thrown by the callable counted as failures and returned as
// a status.
//
// The resilience4j half, each part off until a setting or call asks for it,
// so that a resilience4j user's config has somewhere to go: rate rules
// (`trip::FailureRate`, `trip::SlowCallRate`, rates as fractions) decide after
// every outcome, successes too, with a count window capping their minimum
// at its size; `HalfOpenPolicy::kRateBased` judges `max_requests` permitted
// trials by their failure and slow-call rates; the half-open wait may run
// from entering half-open and may close instead of reopening;
// `ForceOpenFor()`/`ForceOpenUntil()` expire on the breaker's clock;
// `Disable()` (= `MetricsOnly()`, resilience4j METRICS_ONLY) keeps counting
// and never trips, while `Bypass()` (resilience4j DISABLED) records nothing;
// `classify_result` sees the returned value; listeners get per-call and
// once-per-episode threshold events, and `last_trip()` says why the breaker
// opened. There is no timer thread: open -> half-open, like every expiry,
// happens on the next call or `state()`. docs/circuit-breaker.md maps each
// setting to gobreaker's and resilience4j's.
//
//   degrade::BreakerSettings settings;
//   settings.name = "feature-service";
//   settings.timeout = absl::Seconds(10);
//   settings.ready_to_trip = degrade::trip::ConsecutiveFailures(5);
//   degrade::CircuitBreaker<Features> breaker(settings);
//
//   absl::StatusOr<Features> f = breaker.Execute([&] { return client.Get(); });
//   if (degrade::IsBreakerOpen(f.status())) { /* serve the default vector */ }
//
// Thread safety: every member of `CircuitBreaker` is thread-safe. A closed
// breaker's success path takes no lock, allocates nothing and, with default
// settings, reads no clock; failures, transitions and half-open calls take an
// internal lock. `on_state_change` (and the telemetry's listener) runs after
// that lock is released, in transition order, never concurrently with
// itself, so it may query or even call the breaker. It runs on the thread
// that caused the transition, unless another thread is delivering events at
// that moment: then that thread delivers this one too, and the call that
// caused it may return before its callback has run.
//
// Under concurrency a call that races a transition may be attributed to
// either closed generation's `requests`; its outcome is counted only if it
// reports in the generation that admitted it. Half-open decisions use an
// exact per-generation ledger kept under the lock. Lifetime totals
// (`totals()`) are exact.

#ifndef DEGRADE_CIRCUIT_BREAKER_HPP_
#define DEGRADE_CIRCUIT_BREAKER_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"  // IWYU pragma: export
#include "degrade/breaker_types.hpp"     // IWYU pragma: export
#include "degrade/detail/breaker/breaker_core.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/status.hpp"     // IWYU pragma: export
#include "degrade/telemetry.hpp"  // IWYU pragma: export
#include "degrade/trip.hpp"       // IWYU pragma: export
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {
struct GatedExecute;
}  // namespace detail

// Permit
//
// The two-step form of a call: `Allow()` admits, the caller runs the call
// however it likes (async, batched), and the permit reports the outcome once
// with `Done()`. A permit destroyed without `Done()` gives its slot back
// without counting an outcome (counted in `totals().abandoned`), so a
// forgotten report can never hold a half-open slot forever.
//
// Movable, not copyable. Not thread-safe itself: one permit belongs to one
// call. REQUIRES: the breaker outlives its permits.
class [[nodiscard]] Permit {
 public:
  Permit(Permit&& other) noexcept
      : core_(std::exchange(other.core_, nullptr)), ticket_(other.ticket_) {}
  Permit& operator=(Permit&& other) noexcept {
    if (this != &other) {
      Release();
      core_ = std::exchange(other.core_, nullptr);
      ticket_ = other.ticket_;
    }
    return *this;
  }
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;
  ~Permit() { Release(); }

  // Reports the call's outcome, classified by the breaker's `is_excluded` and
  // `is_successful`. A second `Done()` (or one on a moved-from permit) does
  // nothing.
  void Done(const absl::Status& outcome);
  // Reports the outcome as `verdict` says (kDefault: as Done(outcome)); the
  // two-step form's classification by value, since a permit does not see
  // the result.
  void Done(const absl::Status& outcome, CallVerdict verdict);

  // The generation the call was admitted in.
  uint64_t generation() const { return ticket_.generation; }
  // The state the call was admitted in (closed, or half-open for a trial).
  State admitted_state() const { return ticket_.state; }
  // Whether this permit still owes a report.
  bool pending() const { return core_ != nullptr; }

 private:
  template <typename T>
  friend class CircuitBreaker;
  Permit(detail::BreakerCore* core, const detail::Ticket& ticket)
      : core_(core), ticket_(ticket) {}
  void Release();

  detail::BreakerCore* core_;
  detail::Ticket ticket_;
};

// CircuitBreaker<T>
//
// A breaker in front of calls producing `T` (`void` for calls producing only
// a status). Thread-safe; neither copyable nor movable (permits and callers
// hold its address). See the file comment for semantics.
template <typename T>
class CircuitBreaker {
 public:
  // `absl::StatusOr<T>`, or `absl::Status` for `CircuitBreaker<void>`.
  using Result = detail::ResultOf<T>;

  explicit CircuitBreaker(BreakerSettings settings = {})
      : core_(WithoutForeignClassifier(std::move(settings))),
        classify_(core_.settings().classify_result.classify
                      ? &core_.settings().classify_result.classify
                      : nullptr) {}

  // Like the constructor, but refuses invalid settings with the status from
  // `ValidateBreakerSettings()` instead of replacing them with defaults.
  // A `classify_result` built for another result type is refused here and
  // ignored by the constructor.
  static absl::StatusOr<std::unique_ptr<CircuitBreaker>> Create(
      BreakerSettings settings) {
    absl::Status valid = ValidateBreakerSettings(settings);
    if (!valid.ok()) return valid;
    if (settings.classify_result && !ClassifierFits(settings.classify_result)) {
      return detail::SettingOwner("circuit breaker", settings.name)
          .Invalid("classify_result",
                   "it was built for another result type (use "
                   "ClassifyResult<T> with this breaker's T)");
    }
    return std::make_unique<CircuitBreaker>(std::move(settings));
  }

  CircuitBreaker(const CircuitBreaker&) = delete;
  CircuitBreaker& operator=(const CircuitBreaker&) = delete;

  // Runs `f` if the breaker admits the call and records its outcome.
  // `f` takes no arguments and returns `T` or `absl::StatusOr<T>` (for
  // `CircuitBreaker<void>`: `void` or `absl::Status`). Returns the breaker's
  // rejection (see `IsBreakerOpen`, `IsTooManyRequests`) without running `f`,
  // or `f`'s result. If `f` throws, the call counts as a failure and the
  // result is a status recognised by `IsCallableException`.
  template <typename F>
  Result Execute(F&& f) {
    detail::Ticket ticket;
    if (const absl::Status* rejected = core_.Acquire(&ticket)) {
      return Result(*rejected);
    }
    return Run(ticket, f);
  }

  // The two-step form: admits a call or returns the rejection. The permit
  // must report with `Done()`; see `Permit`.
  absl::StatusOr<Permit> Allow() {
    detail::Ticket ticket;
    if (const absl::Status* rejected = core_.Acquire(&ticket)) {
      return *rejected;
    }
    return Permit(&core_, ticket);
  }

  // The current state, applying any expiry that is due (open -> half-open
  // after `timeout`, the closed `interval`, the half-open maximum wait).
  State state() { return core_.state(); }
  // A snapshot of the current generation's counts.
  Counts counts() { return core_.counts(); }
  // Lifetime counters.
  BreakerTotals totals() const { return core_.totals(); }
  const std::string& name() const { return core_.name(); }
  // Changes on every transition and closed-state interval.
  uint64_t generation() const { return core_.generation(); }
  const BreakerSettings& settings() const { return core_.settings(); }

  // Manual control. Each call starts a new generation, puts the open
  // duration back at `timeout`, and is reported to `on_state_change` and
  // the listener (with from == to when the state stays; the listener's
  // event carries the modes), whether or not anything changed. The next
  // manual call replaces the mode. See BreakerMode for how these map to
  // resilience4j's states.
  //
  // Opens the breaker until `Reset()` (or another manual call); every call
  // is rejected as open.
  void ForceOpen() { core_.ForceOpen(); }
  // Opens the breaker for `d` (until `t`), on the breaker's clock; then it
  // goes half-open, as after a trip. `InfiniteDuration()` /
  // `InfiniteFuture()` mean ForceOpen(). INVALID_ARGUMENT (and no change)
  // for a duration under 1 ns or a time not after the clock's now.
  absl::Status ForceOpenFor(absl::Duration d) { return core_.ForceOpenFor(d); }
  absl::Status ForceOpenUntil(absl::Time t) { return core_.ForceOpenUntil(t); }
  // Metrics-only (resilience4j METRICS_ONLY): admits every call and keeps
  // counting (Counts, windows, totals, per-call and threshold events), but
  // never trips.
  void Disable() { core_.Disable(); }
  // The same as Disable(), under resilience4j's name.
  void MetricsOnly() { core_.Disable(); }
  // Bypass (resilience4j DISABLED): admits every call and records nothing;
  // Counts, totals and per-call events stand still until another manual
  // call.
  void Bypass() { core_.Bypass(); }
  // Back to closed and normal operation.
  void Reset() { core_.Reset(); }
  BreakerMode mode() const { return core_.mode(); }
  bool forced_open() const { return mode() == BreakerMode::kForcedOpen; }
  // Metrics-only (Disable()).
  bool disabled() const { return mode() == BreakerMode::kMetricsOnly; }
  bool bypassed() const { return mode() == BreakerMode::kBypass; }
  // When ForceOpenFor/ForceOpenUntil's open state ends; InfiniteFuture()
  // when the breaker is not in a timed forced-open state.
  absl::Time forced_open_until() { return core_.forced_open_until(); }
  // Why the breaker last opened by its rule: the rule and the snapshot it
  // decided on (`ToString()`: "failure rate 62% of 50 calls >= 50%").
  // Rule kNone until it first trips; manual opens do not change it.
  TripReason last_trip() { return core_.last_trip(); }
  // The open duration the next trip will use, before jitter: `timeout`, grown
  // by `backoff_multiplier` for each failed half-open trial since the last
  // close.
  absl::Duration current_open_duration() {
    return core_.current_open_duration();
  }

 private:
  friend struct detail::GatedExecute;

  // Runs an admitted call and records its outcome.
  template <typename F>
  DEGRADE_ALWAYS_INLINE Result Run(const detail::Ticket& ticket, F& f) {
    Result result =
        detail::InvokeCatching<T>(f, "circuit breaker", core_.name());
    if (DEGRADE_UNLIKELY(classify_ != nullptr)) {
      core_.Complete(ticket, detail::StatusOf(result), Classify(result));
    } else {
      core_.Complete(ticket, detail::StatusOf(result));
    }
    return result;
  }

  static bool ClassifierFits(const ResultClassifier& c) {
    return c.type == detail::ResultTypeTag<Result>();
  }
  static BreakerSettings WithoutForeignClassifier(BreakerSettings s) {
    if (s.classify_result && !ClassifierFits(s.classify_result)) {
      s.classify_result = ResultClassifier{};
    }
    return s;
  }
  // A throwing classifier counts the call as a failure.
  CallVerdict Classify(const Result& result) const {
    return detail::InvokeOr([&] { return (*classify_)(&result); },
                            [](absl::string_view) {
                              return CallVerdict::kFailure;
                            });
  }

  detail::BreakerCore core_;
  // The settings' classifier, when one fits T.
  const std::function<CallVerdict(const void*)>* const classify_;
};

// ---- Implementation details ----

inline void Permit::Done(const absl::Status& outcome) {
  if (core_ == nullptr) return;
  detail::BreakerCore* core = std::exchange(core_, nullptr);
  core->Complete(ticket_, outcome);
}

inline void Permit::Done(const absl::Status& outcome, CallVerdict verdict) {
  if (core_ == nullptr) return;
  detail::BreakerCore* core = std::exchange(core_, nullptr);
  core->Complete(ticket_, outcome, verdict);
}

inline void Permit::Release() {
  if (core_ == nullptr) return;
  detail::BreakerCore* core = std::exchange(core_, nullptr);
  core->Abandon(ticket_);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CIRCUIT_BREAKER_HPP_
