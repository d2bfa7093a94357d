// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: queue_settings.hpp
// -----------------------------------------------------------------------------
//
// How an `AdmissionQueue<T>` (admission_queue.hpp) is configured:
// `QueueSettings`, its bounds, and `ValidateQueueSettings()`, which says
// what `AdmissionQueue<T>::Create()` refuses before anything is allocated.
// The capacity has no default on purpose: an unbounded queue in front of a
// batching server is the failure this queue exists to prevent, so a
// forgotten capacity is an error, not a guess. Everything else defaults to
// folly's and "Fail at Scale"'s CoDel (5 ms target over 100 ms), adaptive
// LIFO and deadline-aware dropping. Validate at startup, or when a config
// is loaded, to name the bad field before a queue is built from it.
//
//   degrade::QueueSettings s;
//   s.name = "gpu";
//   s.capacity = 256;
//   s.codel_target = absl::Milliseconds(20);
//   absl::Status ok = degrade::ValidateQueueSettings(s);  // OK
//   s.codel_target = absl::Milliseconds(200);             // >= the interval
//   ok = degrade::ValidateQueueSettings(s);
//   // INVALID_ARGUMENT: admission queue 'gpu': setting 'codel_target'
//   //   = 200ms is invalid: must be > 0 and < codel_interval (100ms)
//   auto q = degrade::AdmissionQueue<Request*>::Create(s, on_drop);
//   // the same status, from Create()
//
// Thread safety: QueueSettings is a plain value (thread-compatible);
// ValidateQueueSettings() is a pure function, safe from any thread.

#ifndef DEGRADE_QUEUE_SETTINGS_HPP_
#define DEGRADE_QUEUE_SETTINGS_HPP_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/overload/codel.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest capacity Create() accepts: a typo of a few digits should be an
// error, not an allocation failure. The slots are allocated as the queue
// fills (64 first, doubling), so an empty queue at this capacity commits a
// few KiB, not the 640 MB its full ring takes.
inline constexpr std::size_t kMaxQueueCapacity = std::size_t{1} << 24;

// QueueSettings
//
// Settings for `AdmissionQueue<T>`. ValidateQueueSettings() states the
// ranges; Create() refuses anything outside them. The pointers (admission,
// clock, metrics) are not owned.
//
// Thread-compatible: a plain value. The hooks are called from the queue's
// pushing and popping threads, so they must be thread-safe themselves.
struct QueueSettings {
  // Names the queue in errors, shed statuses and metrics. Not empty.
  std::string name = "queue";
  // The hard bound on queued items. Mandatory: in [1, kMaxQueueCapacity].
  std::size_t capacity = 0;
  // CoDel's target and interval (folly's and "Fail at Scale"'s defaults).
  // REQUIRES: 0 < target < interval < InfiniteDuration(). The slough
  // timeout is 2 x target.
  absl::Duration codel_target = absl::Milliseconds(5);
  absl::Duration codel_interval = absl::Milliseconds(100);
  // Serve newest first while CoDel says the queue stands.
  bool adaptive_lifo = true;
  // Refuse at push, and drop at pop, items whose deadline falls before now
  // plus the batch service time estimate (RecordServiceTime).
  bool deadline_aware = true;
  // The admission controller's hooks (admission.hpp), both optional and
  // called outside the queue's lock, from the pushing and popping threads
  // (so they must be thread-safe):
  //   admission_threshold: the rank threshold in force (Rank(), a threshold
  //     T admits exactly the ranks < T), read once per push and once per
  //     pop; items at or above it are refused at push and dropped at pop
  //     (kShed). Unset, or throwing, means kAdmitAllRank: the queue then
  //     fails open, its capacity and CoDel still bounding it.
  //     With an AdmissionController: `[ac] { return ac->threshold(); }`.
  //   on_sojourn: DAGOR's queuing-delay input, called once per item a pop
  //     lets go of. A served item, or one dropped for its deadline, reports
  //     the standing queue's delay: the larger of its own wait and the age of
  //     the oldest item at that pop (in adaptive LIFO the served item is the
  //     newest, whose wait says nothing about the backlog, and in FIFO the
  //     waits are capped by the slough timeout). An item CoDel sloughs
  //     reports InfiniteDuration(): it was never served, and a controller
  //     must see that window as overloaded whatever its target (CoDel's 10 ms
  //     cap is below DAGOR's 20 ms). With an AdmissionController:
  //     `[ac](absl::Duration d) { ac->RecordQueuingDelay(d); }`. A throw is
  //     swallowed.
  std::function<int()> admission_threshold;
  std::function<void(absl::Duration)> on_sojourn;
  // The usual pairing in one setting: Create() fills whichever of the two
  // hooks is unset from this controller (threshold(), which counts nothing,
  // and RecordQueuingDelay()). Must outlive the queue.
  AdmissionController* admission = nullptr;
  // The clock; null means RealClock::Instance(). Must outlive the queue.
  const Clock* clock = nullptr;
  // The telemetry the queue reports to (a QueueView); nullptr means
  // DefaultTelemetry(), NoTelemetry() none. Must outlive the queue.
  Telemetry* metrics = nullptr;
};

// ValidateQueueSettings(s)
//
// OK, or INVALID_ARGUMENT naming the queue, the first bad setting (in the
// order name, capacity, codel_interval, codel_target) and its value. No
// preconditions: any value of `s` may be passed. Thread-safe (a pure
// function).
absl::Status ValidateQueueSettings(const QueueSettings& s);

inline absl::Status ValidateQueueSettings(const QueueSettings& s) {
  return detail::ValidateQueueShape(s.name, s.capacity, kMaxQueueCapacity,
                                    s.codel_target, s.codel_interval);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_QUEUE_SETTINGS_HPP_
