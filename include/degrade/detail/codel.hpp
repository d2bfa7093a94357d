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

#ifndef DEGRADE_DETAIL_CODEL_HPP_
#define DEGRADE_DETAIL_CODEL_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class CodelState {
 public:
  // REQUIRES: 0 < target < interval, both finite (the queue validates).
  CodelState(absl::Duration target, absl::Duration interval)
      : target_(absl::ToInt64Nanoseconds(target)),
        interval_(absl::ToInt64Nanoseconds(interval)) {}

  // Records `head_age`, the age of the oldest queued item at `now` (both in
  // nanoseconds), and closes the interval if it has ended: an interval whose
  // minimum stayed above the target makes the next one overloaded, any
  // other clears it, and so does one that ended with no observation.
  void Observe(int64_t now, int64_t head_age) {
    RollInterval(now);
    if (!has_min_ || head_age < min_) {
      min_ = head_age;
      has_min_ = true;
    }
  }

  // The queue is empty at `now`: there is no standing queue, whatever the
  // interval said. Clears the overload and starts a fresh interval, so that
  // a queue must again stay above target for a full interval to be called
  // overloaded.
  void Drained(int64_t now) {
    overloaded_ = false;
    has_min_ = false;
    interval_end_ = SatAddNanos(now, interval_);
  }

  bool overloaded() const { return overloaded_; }

  // Whether an item that has waited `age` ns is to be dropped now.
  bool Slough(int64_t age) const { return overloaded_ && age > 2 * target_; }

 private:
  // Saturating: a clock at InfiniteFuture gets an interval that never ends.
  void RollInterval(int64_t now) {
    if (started_ && now < interval_end_) return;
    overloaded_ = started_ && has_min_ && min_ > target_;
    started_ = true;
    has_min_ = false;
    interval_end_ = SatAddNanos(now, interval_);
  }

  const int64_t target_;
  const int64_t interval_;
  bool started_ = false;
  bool overloaded_ = false;
  bool has_min_ = false;
  int64_t min_ = 0;
  int64_t interval_end_ = 0;
};

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
  const auto bad = [&name](absl::string_view setting, const auto& value,
                           absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("admission queue '", name, "': setting '", setting,
                     "' = ", value, " is invalid: ", rule));
  };
  const auto d = [](absl::Duration v) { return absl::FormatDuration(v); };
  if (name.empty()) return bad("name", "\"\"", "must not be empty");
  if (capacity == 0 || capacity > max_capacity) {
    return bad("capacity", capacity,
               absl::StrCat("must be in [1, ", max_capacity,
                            "] (a hard bound is mandatory)"));
  }
  if (interval <= absl::ZeroDuration() || interval == absl::InfiniteDuration()) {
    return bad("codel_interval", d(interval), "must be > 0 and finite");
  }
  if (target <= absl::ZeroDuration() || target >= interval) {
    return bad("codel_target", d(target),
               absl::StrCat("must be > 0 and < codel_interval (", d(interval),
                            ")"));
  }
  return absl::OkStatus();
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_CODEL_HPP_
