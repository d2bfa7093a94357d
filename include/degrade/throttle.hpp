// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: throttle.hpp
// -----------------------------------------------------------------------------
//
// Client-side adaptive throttling (Google SRE book, chapter 21): a client
// that keeps sending what the server refuses spends the server's capacity
// on refusals. Each client keeps, over a sliding window (two minutes),
// how many requests it was asked to make and how many the server
// accepted, and refuses a new request itself with probability
//
//     max(0, (requests - k * accepts) / (requests + 1)),   k = 2,
//
// so it sends about k times what the server accepts, and nothing changes
// while the server accepts at least 1/k of what is asked. Requests refused
// here count as requests too: that is what lets the probability rise when
// the server keeps refusing, and fall once it accepts again. A cap on the
// probability (`max_rejection_probability`, 0.9) keeps probes going out
// during a full outage, so the client notices the server heal.
//
//   degrade::ThrottleSettings s;
//   s.name = "ranker";
//   auto throttler = degrade::AdaptiveThrottler::Create(s).value();
//   if (absl::Status a = throttler->Admit(); !a.ok()) return a;  // IsThrottled
//   absl::StatusOr<Ranked> r = breaker.Execute(call);
//   throttler->RecordStatus(r.status());  // RESOURCE_EXHAUSTED: not accepted
//
// A local refusal is a ThrottledError (status.hpp): RESOURCE_EXHAUSTED,
// IsShed() and IsThrottled(), with no retry-after hint, so a Retrier does
// not resend it. It never reached the server: throttle outside the breaker,
// or the breaker would count the client's own refusals as the server's
// failures (docs/retries-and-hedging.md, "Composition").
//
// Cost: Admit() reads the coarse clock, adds to the window (one relaxed
// fetch_add) and reads its ten ticks; when the probability is above zero,
// one relaxed fetch_add more draws the random number. No lock, no
// allocation except the refusal's status.
//
// Thread safety: `AdaptiveThrottler` is thread-safe.

#ifndef DEGRADE_THROTTLE_HPP_
#define DEGRADE_THROTTLE_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/tick_window.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The smallest k ValidateThrottleSettings() accepts (ThrottleSettings::k).
inline constexpr double kMinThrottleK = 1.1;

// ThrottleSettings
//
// Defaults are the SRE book's. AdaptiveThrottler::Create() refuses a value
// out of range (ValidateThrottleSettings).
struct ThrottleSettings {
  // Names the throttler in refusals, errors and metrics. Non-empty.
  std::string name = "throttle";
  // The multiplier of accepts: the client sends up to k times what the
  // server accepts. Finite, in [1.1, 100] (kMinThrottleK); 1.1 throttles
  // hard, 2 (the book's default) leaves room for the server to recover
  // into. After an outage at the cap, the share the client sends grows
  // about k-fold per stretch of window it measures on, so recovery slows
  // as k nears 1 and stops at 1: with fast_recovery, a client at 100
  // requests/s sends 90% again 40 s after the server heals at k = 2, 120 s
  // at 1.1, 250 s at 1.05 and 730 s at 1; without it 200 s, 25 minutes,
  // 44 minutes, and never (the window then only ever sees the client's
  // own throttled traffic: requests - accepts keeps its share).
  double k = 2.0;
  // The sliding window (ten ticks of window/10), in [1 s, 1 h].
  absl::Duration window = absl::Minutes(2);
  // The probability never goes above this, so some requests probe the
  // server even while it refuses everything. Finite, in [0, 1].
  double max_rejection_probability = 0.9;
  // Also compute the probability over the newest fifth of the window (its
  // last two ticks) and use the lower of the two. The window alone forgets
  // an outage slowly: after the server heals, each tick's accepts are only
  // what the still-throttling client sent, so at k = 1.2 the client needs
  // about two windows to send everything again; the recent fifth sees that
  // every request sent is accepted and lets the client back within about
  // half a window. In a steady overload both agree.
  bool fast_recovery = true;
  // Seeds the random draws: a fixed seed makes a single-threaded run
  // repeat exactly.
  uint64_t seed = 1;
  // nullptr means RealClock::Instance(). REQUIRES: outlives the throttler.
  const Clock* clock = nullptr;
  // Where it reports (a ThrottleView through Telemetry::AttachThrottler).
  // nullptr means DefaultTelemetry(); NoTelemetry() means none.
  Telemetry* metrics = nullptr;
};

// ValidateThrottleSettings(s)
//
// OK, or INVALID_ARGUMENT naming the throttler, the first bad setting (in
// declaration order) and its value. Pure; thread-safe.
inline absl::Status ValidateThrottleSettings(const ThrottleSettings& s);

// AdaptiveThrottler
//
// Thread-safe and lock-free (relaxed atomics: the window is an estimate).
// Neither copyable nor movable (the telemetry holds its address).
class AdaptiveThrottler final {
 public:
  static absl::StatusOr<std::unique_ptr<AdaptiveThrottler>> Create(
      ThrottleSettings settings);

  AdaptiveThrottler(const AdaptiveThrottler&) = delete;
  AdaptiveThrottler& operator=(const AdaptiveThrottler&) = delete;
  ~AdaptiveThrottler() { telemetry_.reset(); }

  // Counts a request and decides whether it may be sent: OK, or a
  // ThrottledError with probability rejection_probability(). A refused
  // request needs no Record().
  absl::Status Admit() {
    const uint64_t tick = Tick();
    const double p = ProbabilityAt(tick);
    ring_.Add(kRequests, tick);
    if (p > 0.0 && draws_.NextUnit() < p) {
      throttled_.fetch_add(1, std::memory_order_relaxed);
      return Refusal(p);
    }
    admitted_.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }

  // Reports the server's answer to an admitted request: `accepted` unless
  // the server refused it for overload.
  void Record(bool accepted) {
    if (accepted) ring_.Add(kAccepts, Tick());
  }

  // Record() from the status of the call: RESOURCE_EXHAUSTED (a shed reply,
  // a pushback) and a breaker's rejection (the request never got there) are
  // not accepted; success and every other error are (the server did the
  // work of answering).
  void RecordStatus(const absl::Status& status) {
    Record(status.code() != absl::StatusCode::kResourceExhausted &&
           !IsRejected(status));
  }

  // The probability Admit() refuses now.
  double rejection_probability() const {
    return ProbabilityAt(Tick());
  }

  ThrottleStats stats() const;

  const std::string& name() const { return name_; }

 private:
  using Window = detail::TickWindow<2>;
  static constexpr std::size_t kRequests = 0;
  static constexpr std::size_t kAccepts = 1;

  AdaptiveThrottler(const ThrottleSettings& s, const Clock* clock);

  uint64_t Tick() const { return ring_.CoarseTick(clock_, real_clock_); }

  static double Formula(double k, uint64_t requests, uint64_t accepts) {
    const double r = static_cast<double>(requests);
    return (r - k * static_cast<double>(accepts)) / (r + 1.0);
  }

  // `recent`: the newest two ticks (ThrottleSettings::fast_recovery).
  double ProbabilityOf(const Window::Sums& s, const Window::Sums& recent) const {
    double p = Formula(k_, s[kRequests], s[kAccepts]);
    if (fast_recovery_) {
      p = std::min(p, Formula(k_, recent[kRequests], recent[kAccepts]));
    }
    return std::clamp(p, 0.0, max_p_);
  }

  double ProbabilityAt(uint64_t tick) const {
    Window::Sums recent;
    const Window::Sums s = ring_.Sum(tick, &recent);
    return ProbabilityOf(s, recent);
  }

  DEGRADE_NOINLINE absl::Status Refusal(double p) const {
    return ThrottledError(
        absl::StrCat("throttle '", name_, "'"),
        absl::StrCat("refused locally with probability ", p,
                     ": the server has been refusing requests"));
  }

  const std::string name_;
  const double k_;
  const double max_p_;
  const bool fast_recovery_;
  const Clock* const clock_;
  const RealClock* const real_clock_;
  Window ring_;
  alignas(detail::kCacheLine) detail::CounterStream draws_;
  alignas(detail::kCacheLine) std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> throttled_{0};
  const detail::OwnerView<AdaptiveThrottler, ThrottleStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation details ----

inline absl::Status ValidateThrottleSettings(const ThrottleSettings& s) {
  const detail::SettingOwner who("throttle", s.name);
  if (s.name.empty()) return who.Invalid("name", "\"\"", "must not be empty");
  if (!(std::isfinite(s.k) && s.k >= kMinThrottleK && s.k <= 100.0)) {
    return who.Invalid("k", s.k,
                       "must be a finite number in [1.1, 100]: at k = 1 the "
                       "client never sends more than the server accepted, "
                       "so it takes many windows to send everything again "
                       "after the server heals (the SRE book uses 2)");
  }
  if (s.window < absl::Seconds(1) || s.window > absl::Hours(1)) {
    return who.Invalid("window", absl::FormatDuration(s.window),
                       "must be in [1s, 1h]");
  }
  if (!(std::isfinite(s.max_rejection_probability) &&
        s.max_rejection_probability >= 0.0 &&
        s.max_rejection_probability <= 1.0)) {
    return who.Invalid("max_rejection_probability", s.max_rejection_probability,
                       "must be a finite number in [0, 1]");
  }
  return absl::OkStatus();
}

inline absl::StatusOr<std::unique_ptr<AdaptiveThrottler>>
AdaptiveThrottler::Create(ThrottleSettings s) {
  if (absl::Status v = ValidateThrottleSettings(s); !v.ok()) return v;
  const Clock* clock = s.clock != nullptr ? s.clock : &RealClock::Instance();
  return std::unique_ptr<AdaptiveThrottler>(new AdaptiveThrottler(s, clock));
}

inline AdaptiveThrottler::AdaptiveThrottler(const ThrottleSettings& s,
                                            const Clock* clock)
    : name_(detail::Printable(s.name)),
      k_(s.k),
      max_p_(s.max_rejection_probability),
      fast_recovery_(s.fast_recovery),
      clock_(clock),
      real_clock_(clock == &RealClock::Instance() ? &RealClock::Instance()
                                                  : nullptr),
      ring_(s.window, clock->CoarseNow()),
      draws_(s.seed) {
  telemetry_ = detail::Attach(s.metrics, &Telemetry::AttachThrottler, view_);
}

inline ThrottleStats AdaptiveThrottler::stats() const {
  Window::Sums recent;
  const Window::Sums sums = ring_.Sum(Tick(), &recent);
  ThrottleStats st;
  st.window_requests = sums[kRequests];
  st.window_accepts = sums[kAccepts];
  st.rejection_probability = ProbabilityOf(sums, recent);
  st.admitted = admitted_.load(std::memory_order_relaxed);
  st.throttled = throttled_.load(std::memory_order_relaxed);
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_THROTTLE_HPP_
