// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The holds of a DegradationManager as pure functions: a ForceLevel
// override, which pins the level until its deadline, and a fleet control,
// which puts a floor under the level (the signals still move it above,
// never below) and switches features off until its deadline. Apart from
// the manager's lock, events and clock, so that each rule can be read and
// tested by table, as the level decision is in hysteresis.hpp.
//
// The rules:
//
//   1. A hold ends at the first evaluation at or after its deadline: a
//      deadline equal to now has passed. Time only orders, so a clock at
//      InfinitePast, at InfiniteFuture or stepping back ends a hold exactly
//      when now is not before its deadline.
//   2. While an override remains the signals do not move the level; with
//      both holds the level is the higher of the override's and the floor,
//      so neither can lower what the other raised.
//   3. Without an override, a level below the floor is raised to it, and a
//      step down of the signals stops at the floor (its recovery hold
//      restarts when the floor ends).
//   4. A feature the config calls critical is never forced off.
//
//   const levels::HoldDecision h =
//       levels::DecideHolds(now, override_hold, control_hold, level);
//   if (h.override_ended) ReportExpiry();
//   if (h.held) MoveTo(h.held->level);
//
// Plain values and functions of them: thread-compatible.
//
// Thread safety: pure functions of their arguments; the manager calls them
// under its own lock and applies what they return.

#ifndef DEGRADE_DETAIL_LEVELS_HOLDS_HPP_
#define DEGRADE_DETAIL_LEVELS_HOLDS_HPP_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/levels/hysteresis.hpp"
#include "degrade/detail/levels/level_compiler.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail::levels {

// A ForceLevel override. `until` is its deadline on the time line the
// holds are decided on (the manager's SteadyTime, saturating.hpp), so that a
// clock stepped back does not stretch it; `shown_until` is the same
// deadline on the clock, for the LevelChange that reports it.
struct OverrideHold {
  int level = 0;
  absl::Time until = absl::InfiniteFuture();
  absl::Time shown_until = absl::InfiniteFuture();
};

// What of a fleet control bears on the level: its floor (none for a control
// that only switches features off) and its deadline.
struct ControlHold {
  std::optional<int> floor;
  absl::Time until = absl::InfiniteFuture();
};

// The level the holds put the manager at.
struct Held {
  int level = 0;
  // The floor raised it, not the override: the change carries the
  // control's deadline and note.
  bool by_control = false;
};

// What the holds decide at one evaluation.
struct HoldDecision {
  // Each ended now: the caller reports the expiry, drops the hold and
  // restarts the recovery hold (for a control, only if it had a floor).
  bool override_ended = false;
  bool control_ended = false;
  // An override remains: the signals do not move the level.
  bool pinned = false;
  // The remaining control's floor; 0 without one.
  int floor = 0;
  // Where the remaining holds move the level; nullopt when they leave it
  // where it is, or to the signals.
  std::optional<Held> held;
};

// Rule 1. A deadline at InfiniteFuture never comes, not even on a clock
// at InfiniteFuture.
inline bool HoldEnded(absl::Time until, absl::Time now) {
  return DeadlineReached(until, now);
}

// Rules 2 and 3 for holds in force at `level`, ignoring their deadlines.
inline std::optional<Held> HeldLevel(std::optional<OverrideHold> override_hold,
                                     std::optional<ControlHold> control,
                                     int level) {
  const int floor = control ? control->floor.value_or(0) : 0;
  int to = level;
  if (override_hold) {
    to = std::max(override_hold->level, floor);
  } else if (level < floor) {
    to = floor;
  }
  if (to == level) return std::nullopt;
  return Held{to,
              floor == to && !(override_hold && override_hold->level == to)};
}

// Ends the holds whose deadline has come, then applies the others to `level`.
// `now` is the clock's reading (a control's deadline is an instant on it);
// `steady`, the time the override's deadline is on (`now` when not given).
inline HoldDecision DecideHolds(
    absl::Time now, std::optional<OverrideHold> override_hold,
    std::optional<ControlHold> control, int level,
    std::optional<absl::Time> steady = std::nullopt) {
  HoldDecision d;
  if (override_hold && HoldEnded(override_hold->until, steady.value_or(now))) {
    d.override_ended = true;
    override_hold.reset();
  }
  if (control && HoldEnded(control->until, now)) {
    d.control_ended = true;
    control.reset();
  }
  d.pinned = override_hold.has_value();
  d.floor = control ? control->floor.value_or(0) : 0;
  d.held = HeldLevel(override_hold, control, level);
  return d;
}

// Step (hysteresis.hpp) above `floor` (rule 3): a step down below it is
// undone, timers included, but the triggers are tracked as if the level
// were pinned, so that `enter_after` keeps measuring.
inline Decision StepAbove(int floor, const std::vector<CompiledLevel>& levels,
                          const std::vector<std::optional<double>>& values,
                          HysteresisState& state, absl::Time now,
                          absl::Duration cooldown) {
  if (floor <= 0) return Step(levels, values, state, now, cooldown);
  HysteresisState before = state;
  Decision d = Step(levels, values, state, now, cooldown);
  if (d.changed() && d.to < floor) {
    state = std::move(before);
    (void)TrackTriggers(levels, values, state, now);
    d.to = d.from;
  }
  return d;
}

// The override ForceLevel(level, ttl) puts in force at `now`, or why not
// (INVALID_ARGUMENT, after `who`): a level outside [0, num_levels], or a
// ttl not above zero. An infinite ttl holds until cleared. The deadline is
// `ttl` after `steady` (after `now` when not given), shown as `ttl` after
// `now`.
inline absl::StatusOr<OverrideHold> MakeOverride(
    absl::string_view who, int num_levels, int level, absl::Duration ttl,
    absl::Time now, std::optional<absl::Time> steady = std::nullopt) {
  if (level < 0 || level > num_levels) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": ForceLevel(", level,
                     "): the level must be in [0, ", num_levels, "]"));
  }
  if (ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": ForceLevel(", level, ", ",
                     absl::FormatDuration(ttl), "): the ttl must be > 0"));
  }
  if (ttl == absl::InfiniteDuration()) {
    return OverrideHold{level, absl::InfiniteFuture(), absl::InfiniteFuture()};
  }
  return OverrideHold{level, steady.value_or(now) + ttl, now + ttl};
}

// Rule 4. `features_off` is the control's list; nullptr without a control.
inline bool ForcedOff(const CompiledConfig& compiled,
                      const std::vector<std::string>* features_off,
                      const std::string& feature) {
  return features_off != nullptr && compiled.critical.count(feature) == 0 &&
         std::find(features_off->begin(), features_off->end(), feature) !=
             features_off->end();
}

// Why a control may not be put in force, as an INVALID_ARGUMENT status
// starting with `who`: a version of 0, a floor outside [1, levels], a
// deadline not after `now`, or a critical feature to switch off.
inline absl::Status CheckControl(absl::string_view who,
                                 const CompiledConfig& compiled,
                                 uint64_t version, ControlHold hold,
                                 const std::vector<std::string>& features_off,
                                 absl::Time now) {
  const auto error = [who](const auto&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": ", parts...));
  };
  const int n = static_cast<int>(compiled.levels.size());
  if (version == 0) return error("control: the version must be >= 1");
  if (hold.floor && (*hold.floor < 1 || *hold.floor > n)) {
    return error("control v", version, ": level ", *hold.floor,
                 " is outside [1, ", n, "]");
  }
  if (!(hold.until > now)) {
    return error("control v", version, ": until ", absl::FormatTime(hold.until),
                 " is not after now (", absl::FormatTime(now), ")");
  }
  for (const std::string& f : features_off) {
    if (compiled.critical.count(f) != 0) {
      return error("control v", version, ": feature '", Printable(f),
                   "' is critical in the config and cannot be switched off");
    }
  }
  return absl::OkStatus();
}

}  // namespace detail::levels
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_HOLDS_HPP_
