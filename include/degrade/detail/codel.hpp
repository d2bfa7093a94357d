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
// A pure value: no clock, no lock; the queue calls it under its mutex.

#ifndef DEGRADE_DETAIL_CODEL_HPP_
#define DEGRADE_DETAIL_CODEL_HPP_

#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class CodelState {
 public:
  // REQUIRES: 0 < target < interval, both finite (the queue validates).
  CodelState(absl::Duration target, absl::Duration interval)
      : target_(target), interval_(interval) {}

  // Records `head_age`, the age of the oldest queued item at `now`, and
  // closes the interval if it has ended: an interval whose minimum stayed
  // above the target makes the next one overloaded, any other clears it.
  // An interval ending with no observation clears it too (nothing waited).
  void Observe(absl::Time now, absl::Duration head_age) {
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
  void Drained(absl::Time now) {
    overloaded_ = false;
    has_min_ = false;
    interval_end_ = SaturatingAdd(now, interval_);
  }

  bool overloaded() const { return overloaded_; }

  // Whether an item that has waited `age` is to be dropped now.
  bool Slough(absl::Duration age) const {
    return overloaded_ && age > slough_timeout();
  }

  absl::Duration slough_timeout() const { return target_ * 2; }

 private:
  void RollInterval(absl::Time now) {
    if (started_ && now < interval_end_) return;
    overloaded_ = started_ && has_min_ && min_ > target_;
    started_ = true;
    has_min_ = false;
    interval_end_ = SaturatingAdd(now, interval_);
  }

  // A clock at InfiniteFuture stays there; an interval end of
  // InfiniteFuture simply never ends (no arithmetic leaves the range).
  static absl::Time SaturatingAdd(absl::Time t, absl::Duration d) {
    if (t == absl::InfiniteFuture() || t == absl::InfinitePast()) return t;
    return t + d;
  }

  const absl::Duration target_;
  const absl::Duration interval_;
  bool started_ = false;
  bool overloaded_ = false;
  bool has_min_ = false;
  absl::Duration min_ = absl::ZeroDuration();
  absl::Time interval_end_ = absl::InfinitePast();
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_CODEL_HPP_
