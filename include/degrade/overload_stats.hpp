// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: overload_stats.hpp
// -----------------------------------------------------------------------------
//
// What the three overload-control components report, as plain values, and
// the read-only views they offer a `Telemetry` (telemetry.hpp) so that a
// metrics registry can scrape them without knowing their types:
//
//   * `AdmissionController` (admission.hpp): admitted and shed requests per
//     criticality, and the threshold;
//   * `AdmissionQueue<T>` (admission_queue.hpp): depth, drops by reason, and
//     a histogram of the queueing delay (sojourn) of what it handed out;
//   * `ConcurrencyLimiter` (concurrency_limiter.hpp): the limit, what is in
//     flight, and the permits' outcomes.
//
//   class MyTelemetry : public degrade::Telemetry {
//     std::unique_ptr<degrade::TelemetryAttachment> AttachQueue(
//         const degrade::QueueView& q) override {
//       views_.push_back(&q);  // scrape q.stats() until the attachment dies
//       return std::make_unique<Detach>(this, &q);
//     }
//   };
//
// Thread safety: the structs are plain values. A view's methods may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_OVERLOAD_STATS_HPP_
#define DEGRADE_OVERLOAD_STATS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/request_class.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// DropReason
//
// Why a disciplined queue let go of an item without serving it. Every drop
// is reported with one.
enum class DropReason : uint8_t {
  kCapacity = 0,  // the queue was at its hard capacity
  kCodel = 1,     // a standing queue: waited past CoDel's slough timeout
  kDeadline = 2,  // its deadline could not be met given the service time
  kShed = 3,      // its class was below the admission threshold
};

inline constexpr std::size_t kNumDropReasons = 4;

// "capacity", "codel", "deadline", "shed": metric labels and log fields.
inline absl::string_view DropReasonName(DropReason r) {
  switch (r) {
    case DropReason::kCapacity:
      return "capacity";
    case DropReason::kCodel:
      return "codel";
    case DropReason::kDeadline:
      return "deadline";
    case DropReason::kShed:
      return "shed";
  }
  return "unknown";
}

using PerCriticality = std::array<uint64_t, kNumCriticalities>;

// ---- Admission --------------------------------------------------------------

struct AdmissionStats {
  // The threshold now in force: ranks below it are admitted (Rank(),
  // request_class.hpp); kAdmitAllRank admits everything.
  int threshold = kAdmitAllRank;
  // Totals since construction, indexed by Criticality.
  PerCriticality admitted{};
  PerCriticality shed{};
};

using AdmissionView = StatsView<AdmissionStats>;

// ---- Disciplined queue ------------------------------------------------------

// Upper bounds of the sojourn histogram's buckets, in milliseconds; a last,
// implicit bucket holds everything longer. Chosen around CoDel's 5 ms target
// and a 1 s deadline.
inline constexpr std::array<double, 12> kSojournBucketsMs = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};

struct QueueStats {
  std::size_t depth = 0;
  std::size_t capacity = 0;
  // True while the queue serves newest first (a standing queue formed).
  bool lifo = false;
  // True while CoDel considers the queue overloaded.
  bool overloaded = false;
  uint64_t pushed = 0;  // accepted into the queue
  uint64_t popped = 0;  // handed out for service
  std::array<uint64_t, kNumDropReasons> drops{};
  // Sojourn of the popped items: non-cumulative counts per bucket of
  // kSojournBucketsMs, plus the overflow bucket, and their sum.
  std::array<uint64_t, kSojournBucketsMs.size() + 1> sojourn_buckets{};
  absl::Duration sojourn_sum = absl::ZeroDuration();
};

using QueueView = StatsView<QueueStats>;

// ---- Concurrency limiter ----------------------------------------------------

struct LimiterStats {
  int limit = 0;
  int in_flight = 0;
  // Permits granted and refused, per criticality.
  PerCriticality acquired{};
  PerCriticality rejected{};
  // How granted permits ended: success with a latency, dropped (timeout,
  // overload: the limit decreases), ignored (no signal, e.g. a client
  // cancel or a permit destroyed unreported).
  uint64_t succeeded = 0;
  uint64_t dropped = 0;
  uint64_t ignored = 0;
  // The algorithm's no-load latency estimate; ZeroDuration() for kFixed or
  // before the first sample.
  absl::Duration no_load_latency = absl::ZeroDuration();
  // A re-measurement of the no-load latency is running (with
  // probe_holds_admissions, refusals now are the probe's, not overload's).
  bool re_measuring = false;
};

using LimiterView = StatsView<LimiterStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_OVERLOAD_STATS_HPP_
