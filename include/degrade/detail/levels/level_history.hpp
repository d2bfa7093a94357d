// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Where a degradation manager's time went: how long it has spent at each
// level, how often each (from, to) change happened, and since when the level
// has been at or above each k (the start of the episode a dashboard shows).
// The manager records every level change here under its lock and reads it
// back for `time_at_level()` and for its telemetry's ManagerStats.
//
//   levels::LevelHistory h(start);
//   h.Record(/*from=*/0, /*to=*/2, t1);
//   h.TimeAt(0, /*current=*/2, now);  // t1 - start
//   h.AtOrAboveSince(1);              // t1
//
// A plain value: thread-compatible.

#ifndef DEGRADE_DETAIL_LEVELS_LEVEL_HISTORY_HPP_
#define DEGRADE_DETAIL_LEVELS_LEVEL_HISTORY_HPP_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace levels {

class LevelHistory {
 public:
  // At level 0 since `start`.
  explicit LevelHistory(absl::Time start) : level_since_(start) {
    time_at_.fill(absl::ZeroDuration());
    at_or_above_since_.fill(absl::InfiniteFuture());
  }

  // The level moved from `from` to `to` at `when`.
  // REQUIRES: both in [0, kMaxLevels], from != to. A `when` before the
  // previous change (a clock stepped back) adds no time rather than
  // negative time: a level's total never shrinks.
  void Record(int from, int to, absl::Time when) {
    time_at_[Index(from)] += ElapsedSince(when, level_since_);
    ++transitions_[{from, to}];
    for (int k = from + 1; k <= to; ++k) at_or_above_since_[Index(k)] = when;
    for (int k = to + 1; k <= from; ++k) {
      at_or_above_since_[Index(k)] = absl::InfiniteFuture();
    }
    level_since_ = when;
  }

  // Total time at `level` until `now`, counting the current stay when the
  // level is `current`; zero for a level outside [0, kMaxLevels].
  absl::Duration TimeAt(int level, int current, absl::Time now) const {
    if (level < 0 || level > kMaxLevels) return absl::ZeroDuration();
    absl::Duration d = time_at_[Index(level)];
    if (level == current) d += ElapsedSince(now, level_since_);
    return d;
  }

  // Since when the level has been >= k; InfiniteFuture while it is below.
  // REQUIRES: 1 <= k <= kMaxLevels.
  absl::Time AtOrAboveSince(int k) const {
    return at_or_above_since_[Index(k)];
  }

  // (from, to) -> how many times, for the pairs that happened.
  const std::map<std::pair<int, int>, uint64_t>& transitions() const {
    return transitions_;
  }

  // The history's part of a manager's stats at `now`, the level being
  // `st.level` out of `st.num_levels`: transitions, time at every level up
  // to the higher of the two, and the start of each level's episode.
  void Report(absl::Time now, ManagerStats& st) const {
    st.transitions.assign(transitions_.begin(), transitions_.end());
    for (int k = 0; k <= std::max(st.num_levels, st.level); ++k) {
      st.time_at_level.push_back(TimeAt(k, st.level, now));
    }
    for (int k = 1; k <= st.level; ++k) {
      st.at_or_above_since.push_back(AtOrAboveSince(k));
    }
  }

 private:
  static std::size_t Index(int level) {
    return static_cast<std::size_t>(level);
  }

  absl::Time level_since_;
  std::array<absl::Duration, kMaxLevels + 1> time_at_;
  std::map<std::pair<int, int>, uint64_t> transitions_;
  std::array<absl::Time, kMaxLevels + 1> at_or_above_since_;
};

}  // namespace levels
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_LEVEL_HISTORY_HPP_
