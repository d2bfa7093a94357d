// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: hedge_stats.hpp
// -----------------------------------------------------------------------------
//
// What a hedging policy (hedge.hpp) reports, as a plain value, and the
// read-only view it offers a `Telemetry` (telemetry.hpp), so that a metrics
// registry can scrape it without knowing the policy's type. Split from
// hedge.hpp so that telemetry.hpp (layer 1) can name the view without
// including the policy (layer 2).
//
//   class MyTelemetry : public degrade::Telemetry {
//     std::unique_ptr<degrade::TelemetryAttachment> AttachHedge(
//         const degrade::HedgeView& h) override {
//       views_.push_back(&h);  // scrape h.stats() until the attachment dies
//       return std::make_unique<Detach>(this, &h);
//     }
//   };
//
// The counters answer the questions an operator asks of hedging: how many
// extra calls it costs (hedges_sent / calls, capped by max_extra_load), how
// often it pays (hedges_won), what it throws away (attempts_cancelled), and
// whether the cap or the executor is holding it back.
//
// Thread safety: the struct is a plain value. A view's methods may be called
// from any thread while its attachment lives.

#ifndef DEGRADE_HEDGE_STATS_HPP_
#define DEGRADE_HEDGE_STATS_HPP_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// HedgeStats
//
// Totals since the policy was built, plus two readings of now.
struct HedgeStats {
  uint64_t calls = 0;            // hedged calls started
  uint64_t hedges_sent = 0;      // extra attempts launched
  uint64_t hedges_won = 0;       // calls answered by an extra attempt
  // Attempts that lost the race: still running (or not yet started) when
  // another answered, and told to stop. Never successes or failures at a
  // breaker (see hedge.hpp).
  uint64_t attempts_cancelled = 0;
  uint64_t hedges_over_budget = 0;  // not sent: the max_extra_load cap
  // Not sent: the executor refused the task or the breaker rejected it.
  uint64_t hedges_refused = 0;
  // The delay in force: the fixed one, the latency quantile, or
  // InfiniteDuration() while too few latencies are known to hedge.
  absl::Duration delay = absl::InfiniteDuration();
  // Hedges per call over the sliding window, as a fraction (0.05 = 5%).
  double extra_load = 0;
};

// HedgeView
//
// What a Telemetry may read of a policy while attached.
using HedgeView = StatsView<HedgeStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_HEDGE_STATS_HPP_
