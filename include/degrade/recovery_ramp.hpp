// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: recovery_ramp.hpp
// -----------------------------------------------------------------------------
//
// Recovery without a stampede. While a dependency's breaker is open, only
// its half-open trials reach it. The moment the breaker closes, every
// request of every instance calls it again at once, with every key missing
// or stale: the store that just came back meets more than its pre-outage
// load and may fall over again. A load balancer's slow start answers this
// for new hosts; `RecoveryRamp` answers it for a dependency coming back.
//
// It measures the rate of live calls while all is well (over
// `rate_window`), freezes that rate when the breaker leaves closed, and
// after the breaker closes again admits live calls at a rate rising
// linearly from `start_share` of it (never below `min_rate`) to the whole
// of it over `period`. It ends on evidence, not on the clock: once the
// period is over and half a period has passed without a refusal, everything
// goes again; while it still refuses (the demand is above the rate it
// measured, as for an instance started during the outage), the rate keeps
// rising, doubling each period, rather than stepping to everything at once. A
// call the ramp refuses is served down the fallback ladder (ladder.hpp: the
// key's own last-known-good value, else a segment's or the global default), so
// the users whose values are cached see no difference, and the store sees at
// most its pre-outage rate.
//
//   degrade::RecoveryRampSettings s;
//   s.name = "features";
//   s.period = absl::Seconds(10);      // 10% -> 100% of the old rate in 10 s
//   auto ramp = degrade::RecoveryRamp::Create(s);
//   if (!ramp.ok()) return ramp.status();
//
//   // Per request, before the live call:
//   const bool closed = breaker.state() == degrade::BreakerState::kClosed;
//   if (!(*ramp)->Admit(closed)) return ServeStale(user);   // not yet
//   auto f = breaker.Execute(fetch);
//
// The ramp decides with the generic cell rate algorithm of the rate
// limiters (detail/rate_limit/gcra.hpp) on the same time line, so a clock
// stepped back neither stretches the ramp nor refuses for the step, and its
// burst is `burst` of traffic at the ramp's rate now. The pre-outage rate
// is counted on a sliding window (detail/tick_window.hpp), one relaxed
// add per admitted call.
//
// Thread safety: `RecoveryRamp` is thread-safe. `Admit()` is lock-free but
// for the one call that moves the state (outage begins, ramp begins), which
// takes a mutex held for a few loads and stores. Nothing throws.

#ifndef DEGRADE_RECOVERY_RAMP_HPP_
#define DEGRADE_RECOVERY_RAMP_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/rate_limit/gcra.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/tick_window.hpp"
#include "degrade/ladder_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// RecoveryRampSettings
//
// Validated by `RecoveryRamp::Create`; a bad field is INVALID_ARGUMENT
// naming the ramp, the field and the rule.
struct RecoveryRampSettings {
  // The name in metrics and errors.
  std::string name = "recovery_ramp";
  // How long the ramp takes from `start_share` to the whole pre-outage
  // rate. In [1ms, 1h].
  absl::Duration period = absl::Seconds(10);
  // The share of the pre-outage rate admitted the moment the breaker
  // closes. In (0, 1].
  double start_share = 0.1;
  // The least pre-outage rate the ramp assumes, in calls per second: a
  // store that saw little traffic before the outage still gets this much.
  // In [1/3600, 1e9].
  double min_rate = 10;
  // The window over which the pre-outage rate is measured. In [100ms, 1h].
  absl::Duration rate_window = absl::Seconds(10);
  // The ramp's burst, as time at its current rate (at least one call). In
  // [1ms, 10s].
  absl::Duration burst = absl::Milliseconds(50);
  // Time source; null means `RealClock`. Must outlive the ramp.
  const Clock* clock = nullptr;
  // Where it reports (`degrade_recovery_ramp_*`); null means the process
  // default. Must outlive the ramp.
  Telemetry* metrics = nullptr;
};

// Returns OK, or INVALID_ARGUMENT naming the first bad field.
inline absl::Status ValidateRecoveryRampSettings(const RecoveryRampSettings& s);

// RecoveryRamp
//
// See the file comment. Thread-safe.
class RecoveryRamp {
 public:
  // INVALID_ARGUMENT for bad settings; FAILED_PRECONDITION when the clock
  // reads an infinite time.
  static absl::StatusOr<std::unique_ptr<RecoveryRamp>> Create(
      RecoveryRampSettings settings);

  RecoveryRamp(const RecoveryRamp&) = delete;
  RecoveryRamp& operator=(const RecoveryRamp&) = delete;
  ~RecoveryRamp() { telemetry_.reset(); }

  // Whether a live call may go now. `breaker_closed`: the dependency's
  // breaker reads closed (the caller's one load of its state). While it is
  // not, every call is passed on (the breaker decides: its trials must be
  // able to go) and the pre-outage rate stays frozen; once it is closed
  // again, calls are admitted at the ramp's rate until `period` has passed.
  bool Admit(bool breaker_closed);
  // The same, with the breaker's `generation()` read before its state: a
  // reading of "not closed" from a generation older than one the ramp has
  // seen closed is stale (a thread descheduled between reading the breaker
  // and asking) and is taken as closed, so it cannot start a new outage
  // after the ramp.
  bool Admit(bool breaker_closed, uint64_t generation);

  // Admits a call the ramp just refused, because the caller has nothing
  // else to serve (no last-known-good value for the key): the call is
  // charged to the ramp, so the calls it admits next wait the longer, and
  // counted as forced. What reaches the store stays at most the larger of
  // the ramp's rate and the rate of such calls, which were calls before the
  // outage too. REQUIRES: `Admit()` just returned false for this call.
  void Force();

  RampState state() const { return state_.load(std::memory_order_acquire); }
  // The rate admitted now, in calls per second: the ramp's rate while
  // ramping, +infinity otherwise.
  double allowed_rate() const;
  // The pre-outage rate the current or last ramp is measured against
  // (0 before the first outage).
  double base_rate() const {
    return base_rate_.load(std::memory_order_relaxed);
  }

  const std::string& name() const { return name_; }
  RecoveryRampStats stats() const;

 private:
  explicit RecoveryRamp(RecoveryRampSettings s);

  // The line's time. Its floor, the lowest time the state allows, is the
  // TAT less a burst (and never before the ramp began): a clock stepped back
  // stands still there, so the ramp neither restarts nor refuses for the
  // step.
  int64_t Now() const {
    // Never ahead of the clock: the TAT is at most the longest tolerance
    // (the ramp's lowest rate's interval, or its burst) past now.
    const int64_t floor = detail::SatSubNanos(
        tat_.load(std::memory_order_relaxed),
        std::max(burst_, max_interval_.load(std::memory_order_relaxed)));
    return line_.Now(
        std::max(floor, ramp_start_.load(std::memory_order_relaxed)));
  }
  // The ramp's rate `elapsed` ticks after it began.
  double RateAt(int64_t elapsed) const;
  double MeasuredRate(absl::Time now) const;
  void EnterOutage();
  void StartRamp(int64_t now);
  bool AdmitRamping();
  void CountSteady() {
    window_.Add(0, window_.CoarseTick(settings_.clock, real_));
    steady_count_.fetch_add(1, std::memory_order_relaxed);
    admitted_.fetch_add(1, std::memory_order_relaxed);
  }

  const std::string name_;
  const RecoveryRampSettings settings_;
  const RealClock* const real_;
  const int64_t period_;  // ticks
  const int64_t burst_;   // ticks
  detail::GcraLine line_;
  detail::TickWindow<1> window_;

  std::atomic<RampState> state_{RampState::kSteady};
  std::atomic<int64_t> ramp_start_{std::numeric_limits<int64_t>::min()};
  std::atomic<int64_t> tat_{0};
  // The current ramp's longest interval (its lowest rate), and when it
  // last refused a call: it ends only after half a period without one.
  std::atomic<int64_t> max_interval_{0};
  std::atomic<int64_t> last_refused_{0};
  std::atomic<double> base_rate_{0};
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> passed_{0};
  std::atomic<uint64_t> forced_{0};
  // The newest breaker generation seen with the breaker closed.
  std::atomic<uint64_t> closed_generation_{0};
  std::atomic<uint64_t> outages_{0};
  std::atomic<uint64_t> ramps_{0};
  // When steady state last began and the calls counted since: until the
  // window has passed, it still holds calls from before the last outage.
  std::atomic<int64_t> steady_since_nanos_;
  std::atomic<uint64_t> steady_count_{0};
  detail::Mutex transition_mu_;

  const detail::OwnerView<RecoveryRamp, RecoveryRampStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation --------------------------------------------------------

inline absl::Status ValidateRecoveryRampSettings(
    const RecoveryRampSettings& s) {
  const detail::SettingOwner who("recovery ramp", s.name);
  const auto in = [](absl::Duration d, absl::Duration lo, absl::Duration hi) {
    return d >= lo && d <= hi;
  };
  if (!in(s.period, absl::Milliseconds(1), absl::Hours(1))) {
    return who.Invalid("period", absl::FormatDuration(s.period),
                       "must be in [1ms, 1h]");
  }
  if (!(s.start_share > 0 && s.start_share <= 1)) {
    return who.Invalid("start_share", s.start_share, "must be in (0, 1]");
  }
  if (!(s.min_rate >= 1.0 / 3600.0 && s.min_rate <= 1e9)) {
    return who.Invalid("min_rate", s.min_rate, "must be in [1/3600, 1e9]");
  }
  if (!in(s.rate_window, absl::Milliseconds(100), absl::Hours(1))) {
    return who.Invalid("rate_window", absl::FormatDuration(s.rate_window),
                       "must be in [100ms, 1h]");
  }
  if (!in(s.burst, absl::Milliseconds(1), absl::Seconds(10))) {
    return who.Invalid("burst", absl::FormatDuration(s.burst),
                       "must be in [1ms, 10s]");
  }
  return absl::OkStatus();
}

inline absl::StatusOr<std::unique_ptr<RecoveryRamp>> RecoveryRamp::Create(
    RecoveryRampSettings s) {
  if (absl::Status v = ValidateRecoveryRampSettings(s); !v.ok()) return v;
  const Clock* clock = s.clock != nullptr ? s.clock : &RealClock::Instance();
  if (detail::SteadyTime::AtAnInfinity(clock->Now())) {
    return absl::FailedPreconditionError(
        absl::StrCat("recovery ramp '", detail::Printable(s.name),
                     "': the clock reads an infinite time"));
  }
  s.clock = clock;
  return std::unique_ptr<RecoveryRamp>(new RecoveryRamp(std::move(s)));
}

inline RecoveryRamp::RecoveryRamp(RecoveryRampSettings s)
    : name_(detail::Printable(s.name)),
      settings_(std::move(s)),
      real_(settings_.clock == &RealClock::Instance() ? &RealClock::Instance()
                                                      : nullptr),
      period_(detail::GcraTicks(settings_.period)),
      burst_(detail::GcraTicks(settings_.burst)),
      line_(settings_.clock, /*coarse=*/false),
      window_(settings_.rate_window, settings_.clock->CoarseNow()),
      steady_since_nanos_(absl::ToUnixNanos(settings_.clock->CoarseNow())) {
  telemetry_ =
      detail::Attach(settings_.metrics, &Telemetry::AttachComponent, view_);
}

inline double RecoveryRamp::RateAt(int64_t elapsed) const {
  const double base = base_rate_.load(std::memory_order_relaxed);
  const double periods =
      static_cast<double>(elapsed) / static_cast<double>(period_);
  if (periods <= 1) {
    // raw-time-ok: a share of the rate, not a time.
    const double rise = 1.0 - settings_.start_share;
    return base * (settings_.start_share + rise * periods);
  }
  // Past the period and still refusing: the demand is above the rate the
  // ramp was measured against (an instance that started during the
  // outage measured little), so the rate keeps rising, doubling each
  // period, instead of stepping to everything at once.
  return base * std::exp2(std::min(periods - 1.0, 40.0));
}

inline double RecoveryRamp::MeasuredRate(absl::Time now) const {
  const double window = absl::ToDoubleSeconds(settings_.rate_window);
  const double since = absl::ToDoubleSeconds(detail::ElapsedSince(
      now, absl::FromUnixNanos(
               steady_since_nanos_.load(std::memory_order_relaxed))));
  if (since < window) {
    // Steady state began less than a window ago (after a ramp): the window
    // still holds older calls, so count only those since, over at least a
    // tenth of the window (a blip is not a rate).
    return static_cast<double>(steady_count_.load(std::memory_order_relaxed)) /
           std::max(window / 10, since);
  }
  // The window covers between 0.9 and 1 of `rate_window`.
  const uint64_t count = window_.Sum(window_.TickOf(now))[0];
  return static_cast<double>(count) / (0.95 * window);
}

inline void RecoveryRamp::EnterOutage() {
  detail::MutexLock l(&transition_mu_);
  const RampState s = state_.load(std::memory_order_relaxed);
  if (s == RampState::kOutage) return;
  if (s == RampState::kSteady) {
    // A breaker reopening during a ramp keeps the rate it was measured
    // against: the ramp's own admissions are not the demand. Soon after a
    // ramp the window has not refilled: the old rate is kept if higher.
    const absl::Time now = settings_.clock->CoarseNow();
    double measured = MeasuredRate(now);
    const double since = absl::ToDoubleSeconds(detail::ElapsedSince(
        now, absl::FromUnixNanos(
                 steady_since_nanos_.load(std::memory_order_relaxed))));
    if (since < absl::ToDoubleSeconds(settings_.rate_window)) {
      measured = std::max(measured, base_rate_.load(std::memory_order_relaxed));
    }
    base_rate_.store(std::max(settings_.min_rate, measured),
                     std::memory_order_relaxed);
  }
  outages_.fetch_add(1, std::memory_order_relaxed);
  state_.store(RampState::kOutage, std::memory_order_release);
}

inline void RecoveryRamp::StartRamp(int64_t now) {
  detail::MutexLock l(&transition_mu_);
  if (state_.load(std::memory_order_relaxed) != RampState::kOutage) return;
  ramp_start_.store(now, std::memory_order_relaxed);
  max_interval_.store(detail::GcraInterval(RateAt(0)),
                      std::memory_order_relaxed);
  last_refused_.store(now, std::memory_order_relaxed);
  // An empty bucket: the first call goes, the next wait their interval.
  tat_.store(now, std::memory_order_relaxed);
  ramps_.fetch_add(1, std::memory_order_relaxed);
  state_.store(RampState::kRamping, std::memory_order_release);
}

inline bool RecoveryRamp::AdmitRamping() {
  const int64_t start = ramp_start_.load(std::memory_order_relaxed);
  const int64_t now = Now();
  const int64_t elapsed = detail::ElapsedNanosSince(now, start);
  if (elapsed >= period_ &&
      detail::ElapsedNanosSince(
          now, last_refused_.load(std::memory_order_relaxed)) >= period_ / 2) {
    detail::MutexLock l(&transition_mu_);
    if (state_.load(std::memory_order_relaxed) == RampState::kRamping) {
      steady_since_nanos_.store(absl::ToUnixNanos(settings_.clock->CoarseNow()),
                                std::memory_order_relaxed);
      steady_count_.store(0, std::memory_order_relaxed);
      state_.store(RampState::kSteady, std::memory_order_release);
    }
    return true;
  }
  const int64_t interval = detail::GcraInterval(RateAt(elapsed));
  const int64_t tolerance = std::max(interval, burst_);
  int64_t tat = tat_.load(std::memory_order_relaxed);
  for (;;) {
    const detail::GcraStep step =
        detail::GcraDecide(tat, now, interval, interval, tolerance, 0);
    if (!step.admit) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      int64_t last = last_refused_.load(std::memory_order_relaxed);
      while (last < now && !last_refused_.compare_exchange_weak(
                               last, now, std::memory_order_relaxed)) {
      }
      return false;
    }
    if (tat_.compare_exchange_weak(tat, step.next, std::memory_order_relaxed)) {
      admitted_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    detail::CpuRelax(1);
  }
}

inline bool RecoveryRamp::Admit(bool breaker_closed, uint64_t generation) {
  if (breaker_closed) {
    uint64_t seen = closed_generation_.load(std::memory_order_relaxed);
    while (seen < generation &&
           !closed_generation_.compare_exchange_weak(
               seen, generation, std::memory_order_relaxed)) {
    }
  } else if (generation < closed_generation_.load(std::memory_order_relaxed)) {
    breaker_closed = true;  // a stale reading: it has closed since
  }
  return Admit(breaker_closed);
}

inline bool RecoveryRamp::Admit(bool breaker_closed) {
  RampState s = state_.load(std::memory_order_acquire);
  if (!breaker_closed) {
    if (s != RampState::kOutage) EnterOutage();
    passed_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (s == RampState::kSteady) {
    CountSteady();
    return true;
  }
  if (s == RampState::kOutage) {
    StartRamp(Now());
    s = state_.load(std::memory_order_acquire);
    if (s == RampState::kSteady) {
      CountSteady();
      return true;
    }
    if (s == RampState::kOutage) {  // another thread saw it open again
      passed_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return AdmitRamping();
}

inline void RecoveryRamp::Force() {
  refused_.fetch_sub(1, std::memory_order_relaxed);  // it goes after all
  forced_.fetch_add(1, std::memory_order_relaxed);
  if (state() != RampState::kRamping) return;
  const int64_t start = ramp_start_.load(std::memory_order_relaxed);
  const int64_t now = Now();
  const int64_t interval =
      detail::GcraInterval(RateAt(detail::ElapsedNanosSince(now, start)));
  // The debt is bounded: never more than one burst beyond now, so a flood
  // of keys with nothing cached cannot hold the cached ones back past the
  // ramp's end.
  const int64_t cap = detail::SatAddNanos(now, std::max(interval, burst_));
  int64_t tat = tat_.load(std::memory_order_relaxed);
  for (;;) {
    int64_t next = detail::SatAddNanos(tat > now ? tat : now, interval);
    if (next > cap) next = cap;
    if (next <= tat ||
        tat_.compare_exchange_weak(tat, next, std::memory_order_relaxed)) {
      break;
    }
    detail::CpuRelax(1);
  }
}

inline double RecoveryRamp::allowed_rate() const {
  if (state() != RampState::kRamping) {
    return std::numeric_limits<double>::infinity();
  }
  const int64_t start = ramp_start_.load(std::memory_order_relaxed);
  return RateAt(detail::ElapsedNanosSince(line_.Peek(), start));
}

inline RecoveryRampStats RecoveryRamp::stats() const {
  RecoveryRampStats st;
  st.state = state();
  st.base_rate = base_rate();
  st.allowed_rate = st.state == RampState::kRamping ? allowed_rate() : 0;
  st.admitted = admitted_.load(std::memory_order_relaxed);
  st.refused = refused_.load(std::memory_order_relaxed);
  st.passed_while_open = passed_.load(std::memory_order_relaxed);
  st.forced = forced_.load(std::memory_order_relaxed);
  st.outages = outages_.load(std::memory_order_relaxed);
  st.ramps = ramps_.load(std::memory_order_relaxed);
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RECOVERY_RAMP_HPP_
