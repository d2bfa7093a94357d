// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: limiter_settings.hpp
// -----------------------------------------------------------------------------
//
// How a `ConcurrencyLimiter` (concurrency_limiter.hpp) is configured:
// `LimitAlgorithm`, `LimiterSettings`, their bounds, and
// `ValidateLimiterSettings()`, which says what `ConcurrencyLimiter::Create()`
// refuses. The bounds are mandatory because the anchors' users were bitten
// by their absence (brpc #1334: an unbounded limit ran out of memory;
// brpc #1006: a limit computed below 1 admitted nothing, ever); the rest
// defaults to Netflix concurrency-limits' Gradient2, with the guards listed
// at each field. Validate when a config is loaded, to name the bad field
// before a limiter is built from it.
//
//   degrade::LimiterSettings s;
//   s.name = "inference";
//   s.algorithm = degrade::LimitAlgorithm::kAimd;
//   s.min_limit = 4;
//   s.max_limit = 256;
//   absl::Status ok = degrade::ValidateLimiterSettings(s);  // OK
//   s.aimd_backoff = 1.0;                                  // never decreases
//   ok = degrade::ValidateLimiterSettings(s);
//   // INVALID_ARGUMENT: concurrency limiter 'inference': setting
//   //   'aimd_backoff' = 1 is invalid: must be in [0.5, 1)
//   auto limiter = degrade::ConcurrencyLimiter::Create(s);  // the same status
//
// Thread safety: the types are plain values (thread-compatible); the
// functions are pure and safe from any thread.

#ifndef DEGRADE_LIMITER_SETTINGS_HPP_
#define DEGRADE_LIMITER_SETTINGS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/request_class.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// LimitAlgorithm
//
// How a ConcurrencyLimiter moves its limit; LimiterSettings::algorithm says
// what each one does. The values are stable (they are in metrics and logs).
enum class LimitAlgorithm : uint8_t {
  kFixed = 0,
  kAimd = 1,
  kGradient2 = 2,
  kVegas = 3
};

// "fixed", "aimd", "gradient2", "vegas": for logs and error messages;
// "unknown" for a value outside the enum. Thread-safe.
inline absl::string_view LimitAlgorithmName(LimitAlgorithm a) {
  switch (a) {
    case LimitAlgorithm::kFixed:
      return "fixed";
    case LimitAlgorithm::kAimd:
      return "aimd";
    case LimitAlgorithm::kGradient2:
      return "gradient2";
    case LimitAlgorithm::kVegas:
      return "vegas";
  }
  return "unknown";
}

// The largest max_limit: the packed in-flight word has 16 bits per
// criticality, and the total (limit plus the guarantees) must fit in 16.
inline constexpr int kMaxConcurrencyLimit = 32000;
// A sample's latency is recorded up to this (longer counts as this long):
// the bound under which a window's latency sum cannot overflow
// (detail/overload/sample_window.hpp asserts the two agree).
inline constexpr absl::Duration kLongestLimiterSample = absl::Seconds(256);

// LimiterSettings
//
// Defaults are the anchors' (Netflix concurrency-limits unless noted).
// Validate with ValidateLimiterSettings(); Create() refuses what it refuses.
// min_limit and max_limit have no usable default: they must be set.
//
// Thread-compatible: a plain value. `clock` and `metrics` are not owned and
// must outlive the limiter.
struct LimiterSettings {
  std::string name = "limiter";
  // kFixed: initial_limit, always. kAimd: x aimd_backoff on a drop, +1 per
  // success while at least half the limit is in use. kGradient2: the limit
  // follows the ratio of the no-load to the current latency, tolerating
  // rtt_tolerance x, plus a headroom of gradient_queue_size; it settles
  // near rtt_tolerance x the concurrency that starts queueing. kVegas: keeps
  // an estimated queue of alpha..beta = 3..6 x log10(limit) requests above
  // that concurrency.
  LimitAlgorithm algorithm = LimitAlgorithm::kGradient2;
  // Mandatory: 1 <= min_limit <= initial_limit <= max_limit <= 32000.
  int min_limit = 0, initial_limit = 20, max_limit = 0;
  // 0 = off. When set, a window whose average latency is above it only ever
  // decreases the limit, however long that lasts (failsafe-go #127: the
  // baseline caught up with a long incident and the limiter stopped
  // shedding). At most kLongestLimiterSample.
  absl::Duration max_healthy_latency = absl::ZeroDuration();
  // By Criticality: the fraction of the limit reserved for each class, each
  // in [0, 1], summing to at most 1. Reserved slots are ceil(share x limit),
  // at least 1 when the share is above 0. They matter only at the global
  // limit: below it anyone may take a free slot; at it, a class with fewer
  // than its reserved slots in flight still gets one (in flight may then
  // exceed the limit by the guarantees not in use), and any other class is
  // refused. So the part of in flight above the classes' reservations never
  // exceeds the limit, and in flight never exceeds limit + sum(reserved).
  std::array<double, kNumCriticalities> guaranteed_share{};

  // Samples are applied a window at a time, in [1, 512]
  // (concurrency-limits' WindowedLimit windowSize); for kGradient2 and
  // kVegas at most 32 x probe_limit (a held re-measurement lasts about
  // window_samples / probe_limit round trips).
  int window_samples = 10;
  // kAimd: the decrease factor, in [0.5, 1); a success slower than
  // aimd_timeout (> 0) counts as a drop.
  double aimd_backoff = 0.9;
  absl::Duration aimd_timeout = absl::Seconds(5);
  // kGradient2: smoothing in (0, 1]; queue headroom in [0, 1000];
  // rtt_tolerance in [1, 100]; the long RTT's EMA length, in windows, in
  // [1, 1e6]. The long RTT follows latency down; it goes up only through a
  // re-measurement (concurrency-limits #134: it crept up under load).
  double gradient_smoothing = 0.2;
  double gradient_queue_size = 4;
  double rtt_tolerance = 1.5;
  int long_window = 600;
  // kVegas: smoothing in (0, 1].
  double vegas_smoothing = 1.0;
  // kGradient2 and kVegas re-measure the no-load latency every
  // probe_multiplier x limit samples (in [1, 1e6]), times a jitter in
  // [0.5, 1) drawn from `seed` (Envoy #8337: re-measurements in step across
  // a fleet shed in bursts). Reports of permits taken before one began are
  // not used (Envoy #11579: they measured the loaded latency). By default
  // nothing is held back: the next full window becomes the no-load
  // latency unless something was refused meanwhile and it ran at more than
  // probe_limit (>= 1) in flight (it measured the queue: the estimate stays).
  int probe_multiplier = 30;
  int probe_limit = 3;
  // Opt-in, Envoy's min-RTT probe: admissions are held to probe_limit
  // (Envoy's min_concurrency, apart from the floor as Envoy #46532 asked)
  // until a window of samples at that concurrency arrives, or until
  // 10 x (1 + window_samples / probe_limit) x limit refusals have been spent
  // without one (enough to measure at 10x the capacity; the probe is then
  // abandoned, the estimate kept: permits out for longer can not stall the
  // limiter). The cost: every probe refuses all it can until in
  // flight drains below probe_limit, then all but probe_limit for a
  // window (9-14% of the traffic while it runs at 80% load at the defaults;
  // about 1% over ten minutes once holds that confirm back off). Its gain: the
  // no-load latency can rise while the server is saturated. A held
  // re-measurement that only confirms the estimate doubles the wait for
  // the next one (up to 16x), which also waits at least 2.5 x that factor
  // x (1 + window_samples / probe_limit) round trips.
  bool probe_holds_admissions = false;
  uint64_t seed = 1;
  // Not read today: the windows count samples, not time. Accepted so that
  // a time-based window can be added without changing callers.
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// ValidateLimiterSettings(s)
//
// OK, or INVALID_ARGUMENT naming the limiter, the first setting at fault
// (in declaration order) and its value. No preconditions: any value of `s`,
// NaN and infinities included, may be passed. Pure; thread-safe.
inline absl::Status ValidateLimiterSettings(const LimiterSettings& s) {
  const detail::SettingOwner who("concurrency limiter", s.name);
  auto in = [](double v, double lo, double hi) { return v >= lo && v <= hi; };
  const auto a = static_cast<uint8_t>(s.algorithm);
  if (a > static_cast<uint8_t>(LimitAlgorithm::kVegas)) {
    return who.Invalid("algorithm", static_cast<int>(a),
                       "not a LimitAlgorithm");
  }
  if (s.min_limit < 1) {
    return who.Invalid("min_limit", s.min_limit, "must be >= 1");
  }
  if (s.max_limit < s.min_limit) {
    return who.Invalid(
        "max_limit", s.max_limit,
        absl::StrCat("must be >= min_limit (", s.min_limit, ")"));
  }
  if (s.max_limit > kMaxConcurrencyLimit) {
    return who.Invalid("max_limit", s.max_limit,
                       absl::StrCat("must be <= ", kMaxConcurrencyLimit));
  }
  if (s.initial_limit < s.min_limit || s.initial_limit > s.max_limit) {
    return who.Invalid("initial_limit", s.initial_limit,
                       absl::StrCat("must be in [min_limit, max_limit] = [",
                                    s.min_limit, ", ", s.max_limit, "]"));
  }
  if (s.max_healthy_latency < absl::ZeroDuration() ||
      s.max_healthy_latency > kLongestLimiterSample) {
    return who.Invalid("max_healthy_latency",
                       absl::FormatDuration(s.max_healthy_latency),
                       "must be 0 (off) or positive and at most 256s");
  }
  double sum = 0;
  for (std::size_t i = 0; i < kNumCriticalities; ++i) {
    const double share = s.guaranteed_share[i];
    if (!in(share, 0, 1)) {
      return who.Invalid(
          absl::StrCat("guaranteed_share[",
                       CriticalityName(static_cast<Criticality>(i)), "]"),
          share, "must be a number in [0, 1]");
    }
    sum += share;
  }
  if (sum > 1 + 1e-9) {
    return who.Invalid("guaranteed_share", absl::StrCat("(sum ", sum, ")"),
                       "the shares must sum to at most 1");
  }
  if (s.window_samples < 1 || s.window_samples > 512) {
    return who.Invalid("window_samples", s.window_samples,
                       "must be in [1, 512]");
  }
  if (!(s.aimd_backoff >= 0.5 && s.aimd_backoff < 1)) {
    return who.Invalid("aimd_backoff", s.aimd_backoff, "must be in [0.5, 1)");
  }
  if (s.aimd_timeout <= absl::ZeroDuration() ||
      s.aimd_timeout == absl::InfiniteDuration()) {
    return who.Invalid("aimd_timeout", absl::FormatDuration(s.aimd_timeout),
                       "must be positive and finite");
  }
  if (!(s.gradient_smoothing > 0 && s.gradient_smoothing <= 1)) {
    return who.Invalid("gradient_smoothing", s.gradient_smoothing,
                       "must be in (0, 1]");
  }
  if (!in(s.gradient_queue_size, 0, 1000)) {
    return who.Invalid("gradient_queue_size", s.gradient_queue_size,
                       "must be in [0, 1000]");
  }
  if (!in(s.rtt_tolerance, 1, 100)) {
    return who.Invalid("rtt_tolerance", s.rtt_tolerance, "must be in [1, 100]");
  }
  if (s.long_window < 1 || s.long_window > 1'000'000) {
    return who.Invalid("long_window", s.long_window, "must be in [1, 1000000]");
  }
  if (!(s.vegas_smoothing > 0 && s.vegas_smoothing <= 1)) {
    return who.Invalid("vegas_smoothing", s.vegas_smoothing,
                       "must be in (0, 1]");
  }
  if (s.probe_multiplier < 1 || s.probe_multiplier > 1'000'000) {
    return who.Invalid("probe_multiplier", s.probe_multiplier,
                       "must be in [1, 1000000]");
  }
  if (s.probe_limit < 1) {
    return who.Invalid("probe_limit", s.probe_limit, "must be >= 1");
  }
  // A re-measurement that holds admissions (opted in, or after one that
  // found the limiter saturated) keeps them at probe_limit until its
  // window of samples is in: window_samples / probe_limit round trips.
  // Above 32 a hold lasts long enough to refuse a fifth of a minute's
  // traffic on its own, however far apart holds are spaced.
  if ((s.algorithm == LimitAlgorithm::kGradient2 ||
       s.algorithm == LimitAlgorithm::kVegas) &&
      s.window_samples > 32 * s.probe_limit) {
    return who.Invalid(
        "window_samples", s.window_samples,
        absl::StrCat("must be at most 32 x probe_limit (", s.probe_limit,
                     "): a re-measurement holds admissions to probe_limit "
                     "for about window_samples / probe_limit round trips"));
  }
  return absl::OkStatus();
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_LIMITER_SETTINGS_HPP_
