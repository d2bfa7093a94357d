// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The controlled-delay decision of a disciplined queue, as Meta's "Fail at
// Scale" and folly's Codel make it rather than as the networking CoDel does:
// the minimum queueing delay is tracked over each interval, and if that
// minimum stayed above the target for a whole interval the queue has a
// standing backlog (it never emptied, not even for a moment) and is
// "overloaded" for the next interval. While overloaded, whatever has waited
// longer than the slough timeout (twice the target) is dropped at once
// instead of dropping ever more often as the networking CoDel would: a
// request server's callers have deadlines, so an old request is worth little.
//
// The observed delay is the age of the oldest item at each pop (the head),
// not the delay of the item served. In FIFO order those are the same; in
// adaptive LIFO the served item is the newest, whose short wait says nothing
// about the backlog, and measuring it would switch LIFO off the moment it
// started working.
//
// Also the queue's settings checks and its wait arithmetic.
//
// A pure value on nanosecond integers (Debian's Abseil keeps Duration
// arithmetic out of line, which cost more than the rest of a pop): no clock,
// no lock; the queue calls it under its mutex.

#ifndef DEGRADE_DETAIL_OVERLOAD_CODEL_HPP_
#define DEGRADE_DETAIL_OVERLOAD_CODEL_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class CodelState {
 public:
  // REQUIRES: 0 < target < interval, both finite (the queue validates).
  CodelState(absl::Duration target, absl::Duration interval)
      : target_(absl::ToInt64Nanoseconds(target)),
        interval_(absl::ToInt64Nanoseconds(interval)),
        slough_(SatAddNanos(target_, target_)),
        stall_(SatAddNanos(target_, interval_)) {}

  // Records `head_age`, the age of the oldest queued item at `now` (both in
  // nanoseconds), and closes the interval if it has ended: an interval whose
  // minimum stayed above the target makes the next one overloaded, any
  // other clears it, and so does one that ended with no observation.
  // A head older than target + interval proves a standing queue by itself
  // (the queue cannot have emptied since that item came): a consumer that
  // stalled is overloaded at once instead of after one more interval of
  // serving its oldest items first.
  void Observe(int64_t now, int64_t head_age) {
    RollInterval(now);
    if (!has_min_ || head_age < min_) {
      min_ = head_age;
      has_min_ = true;
    }
    if (head_age > stall_) overloaded_ = true;
  }

  // The queue is empty at `now`: there is no standing queue, whatever the
  // interval said. Clears the overload and starts a fresh interval, so that
  // a queue must again stay above target for a full interval to be called
  // overloaded.
  void Drained(int64_t now) {
    overloaded_ = false;
    has_min_ = false;
    Restart(now);
  }

  bool overloaded() const { return overloaded_; }

  // Whether an item that has waited `age` ns is to be dropped now. The
  // slough timeout (2 x target) saturates, a target of centuries being
  // legal; an age that saturated too (over 292 years) counts as past it.
  bool Slough(int64_t age) const {
    return overloaded_ && (age > slough_ || age == kSatMaxNanos);
  }

 private:
  // A clock set back (or one that visited InfiniteFuture, whose interval
  // never ends) starts the interval again rather than waiting for time to
  // come back to it, as AdmissionController's window does.
  void RollInterval(int64_t now) {
    if (started_ && now >= interval_start_ && now < interval_end_) return;
    overloaded_ =
        started_ && now >= interval_start_ && has_min_ && min_ > target_;
    started_ = true;
    has_min_ = false;
    Restart(now);
  }
  void Restart(int64_t now) {
    interval_start_ = now;
    interval_end_ = SatAddNanos(now, interval_);
  }

  const int64_t target_;
  const int64_t interval_;
  const int64_t slough_;
  const int64_t stall_;
  bool started_ = false;
  bool overloaded_ = false;
  bool has_min_ = false;
  int64_t min_ = 0;
  int64_t interval_start_ = 0;
  int64_t interval_end_ = 0;
};

// The batch service time estimate of a deadline-aware queue: an EWMA
// (weight 1/4 for the newest sample; the first, and the first after a
// probe, are taken as is) of the recorded batch times, in ns.
//
// An estimate only changes when a batch is served, and a too-high one
// (a GPU's first batch takes seconds) would refuse every deadline, so no
// batch would ever be served again. Hence the probe: once nothing has been
// handed out for twice the estimate (longer than a batch takes, so a busy
// server is never probed), the estimate is unconfirmed and one item is let
// through regardless of its deadline; the batch it makes brings a fresh
// sample. The wait for a probe is capped at kMaxProbeWait (a minute): one
// absurd sample (a batch timed across a suspend, a clock stepped, 400
// years) would otherwise make the probe wait twice as long, refusing every
// push with a finite deadline for good; with the cap the next probe, at
// most a minute away, replaces it. A batch longer than half a minute may
// then see a probe while it runs: one item through per minute. A pure
// value; the queue calls it under its lock.
class ServiceEstimate {
 public:
  // The longest a probe waits, in ns: one minute.
  static constexpr int64_t kMaxProbeWait = int64_t{60} * 1'000'000'000;

  // A batch took `ns`, reported at `now`.
  void Record(int64_t ns, int64_t now) {
    if (!has_) since_ = now;  // the probe clock starts with the estimate
    if (!has_ || probed_) {
      estimate_ = ns;
      has_ = true;
      probed_ = false;
    } else {
      // Two durations, not instants; both are in [0, INT64_MAX], so the
      // difference and the sum cannot wrap.
      // raw-time-ok: durations in [0, INT64_MAX] (see above)
      estimate_ += (ns - estimate_) / 4;
    }
  }
  int64_t estimate() const { return estimate_; }

  // Whether an item due at `deadline` can be served by it from `now`;
  // kSatMaxNanos is no deadline.
  bool CanMeet(int64_t deadline, int64_t now) const {
    return deadline == kSatMaxNanos || SatAddNanos(now, estimate_) < deadline;
  }
  // Whether the next item goes through whatever its deadline (see above).
  bool ProbeDue(int64_t now) const {
    const int64_t wait =
        std::min(SatAddNanos(estimate_, estimate_), kMaxProbeWait);
    return has_ && (now < since_ || ElapsedNanosSince(now, since_) >= wait);
  }
  void HandedOut(int64_t now) { since_ = now; }
  // A probe went out: the next sample is the server as it is now, taken as
  // is (averaging it with the estimate it disproves would take several
  // more probes, each one estimate apart, to recover).
  void Probed() { probed_ = true; }

 private:
  int64_t estimate_ = 0;
  bool has_ = false;
  bool probed_ = false;
  int64_t since_ = 0;  // the last hand-out, or the first sample
};

// The histogram bucket (kSojournBucketsMs, upper bounds in ms; the last
// bucket is the overflow) of a wait of `ns`.
template <typename Bounds>
std::size_t SojournBucket(const Bounds& bounds_ms, int64_t ns) {
  std::size_t b = 0;
  while (b < bounds_ms.size() && static_cast<double>(ns) > bounds_ms[b] * 1e6) {
    ++b;
  }
  return b;
}

// How long from `since` to `now`, in ns; 0 when either end is at an
// infinity (a clock set to InfinitePast or InfiniteFuture measures no waits)
// or they are reversed.
constexpr int64_t WaitNanos(int64_t now, int64_t since) {
  if (now == kSatMaxNanos || now == kSatMinNanos || since == kSatMaxNanos ||
      since == kSatMinNanos) {
    return 0;
  }
  return ElapsedNanosSince(now, since);
}

// The checks of a disciplined queue's shape (ValidateQueueSettings):
// INVALID_ARGUMENT naming the queue, the setting and its value.
inline absl::Status ValidateQueueShape(const std::string& name,
                                       std::size_t capacity,
                                       std::size_t max_capacity,
                                       absl::Duration target,
                                       absl::Duration interval) {
  const SettingOwner who("admission queue", name);
  const auto d = [](absl::Duration v) { return absl::FormatDuration(v); };
  if (name.empty()) return who.Invalid("name", "\"\"", "must not be empty");
  if (capacity == 0 || capacity > max_capacity) {
    return who.Invalid("capacity", capacity,
                       absl::StrCat("must be in [1, ", max_capacity,
                                    "] (a hard bound is mandatory)"));
  }
  if (interval <= absl::ZeroDuration() ||
      interval == absl::InfiniteDuration()) {
    return who.Invalid("codel_interval", d(interval), "must be > 0 and finite");
  }
  if (target <= absl::ZeroDuration() || target >= interval) {
    return who.Invalid(
        "codel_target", d(target),
        absl::StrCat("must be > 0 and < codel_interval (", d(interval), ")"));
  }
  return absl::OkStatus();
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_OVERLOAD_CODEL_HPP_
