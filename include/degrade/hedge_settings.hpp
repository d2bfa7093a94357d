// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: hedge_settings.hpp
// -----------------------------------------------------------------------------
//
// What a user of hedging (hedge.hpp) names besides the policy itself:
// `HedgeSettings` and `ValidateHedgeSettings()`, which say how one route
// hedges and what `HedgePolicy::Create()` refuses, and `CancelToken`, the
// argument every hedged callable takes. A hedge is a second copy of a slow
// call sent to another replica; it trims the tail only while it is rare, so
// the settings bound both when a hedge goes out (a fixed delay, or a
// quantile of the route's own recent latency) and how many may go out (a
// share of calls over a sliding window). The token is how the copies that
// lost the race learn it and stop early.
//
//   degrade::HedgeSettings s;
//   s.name = "recall";
//   s.delay_quantile = 0.9;        // hedge at the route's p90
//   s.max_extra_load = 0.02;       // at most 2% extra calls
//   absl::Status ok = degrade::ValidateHedgeSettings(s);  // OK
//   auto policy = *degrade::HedgePolicy::Create(s);
//   absl::StatusOr<Items> items = degrade::Hedge(
//       breaker, *policy, pool,
//       [client, req](const degrade::CancelToken& cancel) {  // by value
//         // attempt() 0 is the first try; stop once cancelled() turns true
//         return client->Search(req, cancel.attempt(), cancel);
//       });
//
// Thread safety: HedgeSettings is a plain value (thread-compatible);
// ValidateHedgeSettings() is pure; CancelToken is thread-safe.

#ifndef DEGRADE_HEDGE_SETTINGS_HPP_
#define DEGRADE_HEDGE_SETTINGS_HPP_

#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The most extra attempts one call may send (Polly's limit).
inline constexpr int kMaxHedges = 9;

// HedgeSettings
//
// One route's hedging. Defaults follow the anchors: one hedge (Polly
// MaxHedgedAttempts 1), at the route's p95 (brpc #2695), at most 5% extra
// calls (Finagle maxExtraLoad, brpc max_backup_ratio) over a sliding 10 s
// window (brpc #3228). Validate with ValidateHedgeSettings(); Create()
// refuses what it refuses. Every default passes validation; still set
// `name`, or the policy's metrics and messages name nothing.
//
// Thread-compatible: a plain value. `clock` and `metrics` are not owned.
struct HedgeSettings {
  // Names the policy in metrics ({hedge="<name>"}) and in messages.
  std::string name;
  // A fixed delay before each extra attempt: > 0 and finite. Unset (the
  // default): the delay follows `delay_quantile` of the route's recent
  // latency, and no hedge goes out until `min_samples` latencies are known.
  std::optional<absl::Duration> delay;
  // The quantile of recent attempt latency to hedge at, in (0, 1).
  double delay_quantile = 0.95;
  // Latencies needed in the window before a quantile delay is trusted.
  // >= 1.
  int min_samples = 100;
  // Extra attempts per call, 1 to kMaxHedges. The k-th goes out k delays
  // after the first attempt, if no attempt has answered.
  int max_hedges = 1;
  // The most hedges as a fraction of calls over `window`, in (0, 1]: a
  // hedge that would exceed it is not sent.
  double max_extra_load = 0.05;
  // The sliding window of the load cap and of the latency quantile: 1 s to
  // 10 min. It forgets a tenth of itself at a time.
  absl::Duration window = absl::Seconds(10);
  // The clock for latencies, delays and the window; nullptr is the real
  // clock. It must outlive the policy.
  const Clock* clock = nullptr;
  // Where the policy reports (hedge_stats.hpp); nullptr is the default
  // telemetry (SetDefaultTelemetry), NoTelemetry() none.
  Telemetry* metrics = nullptr;
};

// ValidateHedgeSettings()
//
// OK, or INVALID_ARGUMENT naming the policy, the first bad setting (in
// declaration order) and its value. No preconditions: any value of `s`,
// NaN included, may be passed. Thread-safe (a pure function).
inline absl::Status ValidateHedgeSettings(const HedgeSettings& s) {
  const detail::SettingOwner who("hedge policy", s.name);
  if (s.delay.has_value() && (*s.delay <= absl::ZeroDuration() ||
                              *s.delay == absl::InfiniteDuration())) {
    return who.Invalid(
        "delay", absl::FormatDuration(*s.delay),
        "a fixed delay must be > 0 and finite (leave it unset to follow "
        "the latency quantile)");
  }
  if (!(s.delay_quantile > 0 && s.delay_quantile < 1)) {
    return who.Invalid("delay_quantile", s.delay_quantile, "must be in (0, 1)");
  }
  if (s.min_samples < 1) {
    return who.Invalid("min_samples", s.min_samples, "must be >= 1");
  }
  if (s.max_hedges < 1 || s.max_hedges > kMaxHedges) {
    return who.Invalid("max_hedges", s.max_hedges,
                       absl::StrCat("must be in [1, ", kMaxHedges, "]"));
  }
  if (!(s.max_extra_load > 0 && s.max_extra_load <= 1)) {
    return who.Invalid("max_extra_load", s.max_extra_load, "must be in (0, 1]");
  }
  if (s.window < absl::Seconds(1) || s.window > absl::Minutes(10)) {
    return who.Invalid("window", absl::FormatDuration(s.window),
                       "must be in [1s, 10m]");
  }
  return absl::OkStatus();
}

namespace detail {
template <typename T>
class HedgeRace;
}  // namespace detail

// CancelToken
//
// What each attempt of a hedged call receives: `cancelled()` turns true
// once another attempt has answered (or the caller gave up), so the attempt
// can stop early, e.g. by cancelling its RPC. Cooperative: nothing is
// interrupted, and an attempt that ignores it simply runs to the end and
// is counted as a loser. `attempt()` is 0 for the first attempt, k for the
// k-th hedge (worth sending to the server, like gRPC's
// grpc-previous-rpc-attempts). A default-constructed token is never
// cancelled.
//
// Only the hedging machinery makes a live token; users receive it, copy it
// and read it. Copyable; copies share the flag and keep it alive, so an
// attempt may hand a copy to its RPC's cancellation callback. Thread-safe.
class CancelToken {
 public:
  CancelToken() = default;
  bool cancelled() const {
    return flag_ != nullptr && flag_->load(std::memory_order_acquire);
  }
  int attempt() const { return attempt_; }

 private:
  template <typename T>
  friend class detail::HedgeRace;
  CancelToken(std::shared_ptr<const std::atomic<bool>> flag, int attempt)
      : flag_(std::move(flag)), attempt_(attempt) {}

  std::shared_ptr<const std::atomic<bool>> flag_;
  int attempt_ = 0;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_HEDGE_SETTINGS_HPP_
