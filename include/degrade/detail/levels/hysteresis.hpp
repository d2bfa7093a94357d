// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The level decision of a DegradationManager as a pure function: given the
// compiled levels (level_compiler.hpp), the last value of every signal and
// the time, `Step` says whether the level moves, and keeps the few timers it
// needs in a `HysteresisState` the caller owns. No lock, no clock, no
// override, no logging: the manager calls it under its lock, skips it while
// a forced level is in force (calling only `TrackTriggers`, so that
// `enter_after` keeps measuring), and turns a `Decision` into a LevelChange.
//
// The rules, in the order Step applies them:
//
//   1. Escalation. Level k's trigger holds while any of its signals is at or
//      above its enter threshold; a signal never observed does not trigger.
//      Level k is wanted once its trigger has held for its `enter_after`
//      (0: on the first such sample); a sample below restarts that timer.
//      The level goes straight to the highest wanted level above it,
//      naming the signal furthest above its threshold (by ratio).
//   2. Staged recovery. Otherwise, at level k > 0, when every level-k signal
//      is below its recover threshold (a signal never observed counts as
//      below: no evidence of load), a hold starts; a sample at or above a
//      recover threshold cancels it. When it has lasted the level's `hold`,
//      and `cooldown` has passed since the last level change of any kind,
//      the level steps down to k-1, and only one level per step.
//   3. Each step down needs a fresh hold. It starts at once if level k-1's
//      signals are already below their recover thresholds, otherwise at
//      the first step that finds them there. Escalation cancels a running
//      hold. Cooldown never delays escalation.
//
// So a signal oscillating around one threshold moves the level at most once
// each way: around an enter threshold (and above the recover one) it enters
// once and stays; around a recover threshold (and below the enter one) it
// leaves once, when some run below lasts a hold, and does not come back.
//
//   levels::HysteresisState state;
//   const levels::Decision d =
//       levels::Step(compiled.levels, values, state, now, cooldown);
//   if (d.changed()) Announce(d.from, d.to, d.reason);
//
// Every "how long since" is ElapsedSince (saturating.hpp): a `now` before a
// timer's start counts as no time passed. The manager hands Step the time of
// a SteadyTime, not its clock's reading, so a clock stepped back neither
// stretches a hold nor, stepped to InfiniteFuture, skips one.
//
// Plain values and a function of them: thread-compatible.

#ifndef DEGRADE_DETAIL_LEVELS_HYSTERESIS_HPP_
#define DEGRADE_DETAIL_LEVELS_HYSTERESIS_HPP_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "degrade/detail/levels/level_compiler.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/level_change.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace levels {

// What the decision remembers between steps.
struct HysteresisState {
  // The current level, 0 to levels.size(). Step moves it; the caller sets it
  // for changes of its own (a forced level, a reload that clamps).
  int level = 0;
  // When the level last changed, for whatever reason (cooldown counts from
  // it), on the time line `now` is on (the manager's SteadyTime). Step
  // sets it; so must the caller when it sets `level`.
  absl::Time last_change = absl::InfinitePast();
  // enter_since[k-1]: since when level k's trigger has held without a
  // break; nullopt while it does not hold.
  std::vector<std::optional<absl::Time>> enter_since;
  // Since when every signal of `level` has been below its recover
  // threshold; nullopt when no hold is running.
  std::optional<absl::Time> recover_since;
};

// What one step decided. Nothing changed when `to == from`.
struct Decision {
  int from = 0;
  int to = 0;
  // kSignal (escalation) or kRecovered (one step down); meaningful only
  // when changed().
  LevelChangeReason reason = LevelChangeReason::kSignal;
  // kSignal: the signal (an index into the values) that wanted `to`, its
  // value and its enter threshold.
  std::size_t signal = 0;
  double value = 0.0;
  double threshold = 0.0;
  // kRecovered: the hold that completed.
  absl::Duration hold = absl::ZeroDuration();

  bool changed() const { return to != from; }
};

// The highest level whose trigger has held for its enter_after, and the
// threshold that makes it wanted (nullptr when none is wanted; else it
// points into `levels`).
struct Wanted {
  int level = 0;
  const Threshold* why = nullptr;
};

// Updates the enter_after timers for `now` and returns the wanted level.
// Step calls it; call it alone while the level is held by other means.
// `state.enter_since` is resized to levels.size().
Wanted TrackTriggers(const std::vector<CompiledLevel>& levels,
                     const std::vector<std::optional<double>>& values,
                     HysteresisState& state, absl::Time now);

// Whether every signal of level k (1-based) is below its recover threshold;
// a signal never observed counts as below.
// REQUIRES: 1 <= k <= levels.size().
bool BelowRecover(const std::vector<CompiledLevel>& levels,
                  const std::vector<std::optional<double>>& values, int k);

// One evaluation at `now` (see the file comment); moves `state.level` and
// returns what changed. Nothing happens without levels.
// REQUIRES: values has an entry for every signal index of `levels`; `now`
// never goes back; 0 <= state.level <= levels.size().
Decision Step(const std::vector<CompiledLevel>& levels,
              const std::vector<std::optional<double>>& values,
              HysteresisState& state, absl::Time now, absl::Duration cooldown);

// What a reload does to the timers: holds and enter_after restart; the
// level and the time of the last change stay.
void RestartTimers(HysteresisState& state, std::size_t num_levels);

// ---- Implementation details ----

inline Wanted TrackTriggers(const std::vector<CompiledLevel>& levels,
                            const std::vector<std::optional<double>>& values,
                            HysteresisState& state, absl::Time now) {
  state.enter_since.resize(levels.size());
  Wanted wanted;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const Threshold* hit = nullptr;
    double worst = 0.0;
    for (const Threshold& t : levels[i].enter) {
      const std::optional<double>& v = values[t.signal];
      if (!v || *v < t.value) continue;
      const double ratio = t.value > 0.0 ? *v / t.value : 1e300;
      if (hit == nullptr || ratio > worst) {
        hit = &t;
        worst = ratio;
      }
    }
    std::optional<absl::Time>& since = state.enter_since[i];
    if (hit == nullptr) {
      since.reset();
      continue;
    }
    if (!since) since = now;
    if (ElapsedSince(now, *since) >= levels[i].enter_after) {
      wanted.level = static_cast<int>(i) + 1;
      wanted.why = hit;
    }
  }
  return wanted;
}

inline bool BelowRecover(const std::vector<CompiledLevel>& levels,
                         const std::vector<std::optional<double>>& values,
                         int k) {
  for (const Threshold& t : levels[static_cast<std::size_t>(k) - 1].recover) {
    const std::optional<double>& v = values[t.signal];
    if (v && *v >= t.value) return false;
  }
  return true;
}

inline Decision Step(const std::vector<CompiledLevel>& levels,
                     const std::vector<std::optional<double>>& values,
                     HysteresisState& state, absl::Time now,
                     absl::Duration cooldown) {
  Decision d;
  d.from = d.to = state.level;
  if (levels.empty()) return d;
  const Wanted wanted = TrackTriggers(levels, values, state, now);
  const int current = state.level;
  if (wanted.level > current) {
    d.to = wanted.level;
    d.reason = LevelChangeReason::kSignal;
    d.signal = wanted.why->signal;
    d.value = *values[d.signal];
    d.threshold = wanted.why->value;
    state.level = d.to;
    state.last_change = now;
    state.recover_since.reset();
    return d;
  }
  if (current == 0) return d;
  if (!BelowRecover(levels, values, current)) {
    state.recover_since.reset();
    return d;
  }
  if (!state.recover_since) state.recover_since = now;
  const absl::Duration hold =
      levels[static_cast<std::size_t>(current) - 1].hold;
  if (ElapsedSince(now, *state.recover_since) < hold ||
      ElapsedSince(now, state.last_change) < cooldown) {
    return d;
  }
  d.to = current - 1;
  d.reason = LevelChangeReason::kRecovered;
  d.hold = hold;
  state.level = d.to;
  state.last_change = now;
  // Each step needs a fresh hold, starting now if the next level's signals
  // are already below their recover thresholds.
  state.recover_since.reset();
  if (d.to > 0 && BelowRecover(levels, values, d.to)) {
    state.recover_since = now;
  }
  return d;
}

inline void RestartTimers(HysteresisState& state, std::size_t num_levels) {
  state.enter_since.assign(num_levels, std::nullopt);
  state.recover_since.reset();
}

}  // namespace levels
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_HYSTERESIS_HPP_
