// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: level_change.hpp
// -----------------------------------------------------------------------------
//
// What a degradation manager says when its level moves: a `LevelChange`,
// with the `LevelChangeReason` as an enum rather than a string, so that an
// observer, the event log and the metrics layer cannot disagree about the
// spelling. `LevelChangeReasonName()` gives the wire form used in log lines
// ("signal", "recovered", "override", "reload").
//
//   manager.AddObserver([](const degrade::LevelChange& c) {
//     if (c.reason == degrade::LevelChangeReason::kSignal) {
//       Page(c.manager, c.signal, c.value, c.threshold);
//     }
//     std::printf("%d -> %d (%s)\n", c.from, c.to,
//                 std::string(degrade::LevelChangeReasonName(c.reason)).c_str());
//   });
//
// Thread safety: plain values.

#ifndef DEGRADE_LEVEL_CHANGE_HPP_
#define DEGRADE_LEVEL_CHANGE_HPP_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// LevelChangeReason
//
// Why the level moved.
enum class LevelChangeReason : uint8_t {
  // A signal reached a higher level's enter threshold.
  kSignal,
  // Every signal of the level stayed below its recover threshold for the
  // level's hold: one step down.
  kRecovered,
  // ForceLevel() (or a control document forcing a level).
  kOverride,
  // A reload installed fewer levels than the current one.
  kReload,
};

// "signal", "recovered", "override" or "reload": the form in log lines.
inline absl::string_view LevelChangeReasonName(LevelChangeReason r) {
  switch (r) {
    case LevelChangeReason::kSignal:
      return "signal";
    case LevelChangeReason::kRecovered:
      return "recovered";
    case LevelChangeReason::kOverride:
      return "override";
    case LevelChangeReason::kReload:
      return "reload";
  }
  return "unknown";
}

// For code written when the reason was a string (`c.reason == "signal"`),
// and so that test failures print the name.
inline bool operator==(LevelChangeReason r, absl::string_view name) {
  return LevelChangeReasonName(r) == name;
}
inline bool operator!=(LevelChangeReason r, absl::string_view name) {
  return !(r == name);
}
inline std::ostream& operator<<(std::ostream& os, LevelChangeReason r) {
  return os << LevelChangeReasonName(r);
}

// LevelChange
//
// What observers receive for every level change.
struct LevelChange {
  absl::Time time;
  std::string manager;
  int from = 0;
  int to = 0;
  LevelChangeReason reason = LevelChangeReason::kSignal;
  // For kSignal: the signal that wanted the new level, its value and its
  // enter threshold. For kRecovered: the hold that completed is in `hold`.
  // For kOverride: when the override ends (InfiniteFuture: when cleared).
  std::string signal;
  double value = 0.0;
  double threshold = 0.0;
  absl::Duration hold = absl::ZeroDuration();
  absl::Time until = absl::InfiniteFuture();
  // For kOverride by a control document: its note ("control v42: why").
  std::string note;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_LEVEL_CHANGE_HPP_
