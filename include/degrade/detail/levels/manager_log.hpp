// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The JSON event lines of a degradation manager, as a ManagerListener: one
// object per line through an EventLog: level changes and override expiries
// are audit lines, never rate-limited; the other kinds (reloads, rejections,
// poll errors, which a bad file or a flapping source can repeat) are
// rate-limited per event kind. The
// manager attaches one over its own log (its `log_sink`, or stderr when no
// telemetry is attached: the seed wants every level change logged); a
// MetricsRegistry attaches one over its log, named with the manager's
// unique registered name. The line formats are part of the interface
// (docs/metrics.md): the keys, their order and the spelling of values.
//
//   {"time":"...","manager":"m","event":"level_change","from":0,"to":2,
//    "reason":"signal","signal":"gpu_util","value":0.93,"threshold":0.9}
//
// Thread-compatible, as listeners are used: the manager delivers events one
// at a time.

#ifndef DEGRADE_DETAIL_LEVELS_MANAGER_LOG_HPP_
#define DEGRADE_DETAIL_LEVELS_MANAGER_LOG_HPP_

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_line.hpp"
#include "degrade/event_log.hpp"
#include "degrade/level_change.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class ManagerLog final : public ManagerListener {
 public:
  // Writes to `log` (REQUIRES: outlives this) as manager `name`.
  ManagerLog(EventLog* log, std::string name)
      : log_(log), name_(std::move(name)) {
    for (std::size_t i = 0; i < kEvents.size(); ++i) {
      keys_[i] = log_->GetKey(absl::StrCat("manager/", name_, "/", kEvents[i]));
    }
  }

  void OnLevelChange(const LevelChange& c) override {
    JsonLine line = Head(c.time, kLevelChange);
    line.Int("from", c.from)
        .Int("to", c.to)
        .Str("reason", LevelChangeReasonName(c.reason));
    switch (c.reason) {
      case LevelChangeReason::kSignal:
        line.Str("signal", c.signal)
            .Num("value", c.value)
            .Num("threshold", c.threshold);
        break;
      case LevelChangeReason::kRecovered:
        line.Num("hold_seconds", absl::ToDoubleSeconds(c.hold));
        break;
      case LevelChangeReason::kOverride:
        if (c.until == absl::InfiniteFuture()) {
          line.Str("until", "never");
        } else {
          line.Time("until", c.until);
        }
        if (!c.note.empty()) line.Str("note", c.note);
        break;
      case LevelChangeReason::kReload:
        break;
    }
    log_->WriteAlways([&line] { return line.Done(); });
  }

  void OnReload(const ReloadEvent& e) override {
    if (e.applied) {
      Write(kReloaded, Head(e.time, kReloaded)
                           .Int("levels", e.levels)
                           .Int("level", e.level)
                           .Done());
    } else {
      Write(kRejected,
            Head(e.time, kRejected).Str("error", e.error.ToString()).Done());
    }
  }

  void OnOverrideExpired(const OverrideExpiredEvent& e) override {
    log_->WriteAlways([&] {
      JsonLine line = Head(e.time, kExpired);
      line.Int("level", e.level);
      if (!e.note.empty()) line.Str("note", e.note);
      return line.Done();
    });
  }

  void OnPollError(const PollErrorEvent& e) override {
    Write(kPollError,
          Head(e.time, kPollError).Str("error", e.error.ToString()).Done());
  }

 private:
  // Event names: the "event" member, and the rate-limit key's last part.
  static constexpr std::size_t kLevelChange = 0;
  static constexpr std::size_t kReloaded = 1;
  static constexpr std::size_t kRejected = 2;
  static constexpr std::size_t kExpired = 3;
  static constexpr std::size_t kPollError = 4;
  static constexpr std::array<absl::string_view, 5> kEvents = {
      "level_change", "config_reloaded", "config_rejected", "override_expired",
      "poll_error"};

  // The opening of every line, up to and including the event name.
  JsonLine Head(absl::Time t, std::size_t event) const {
    JsonLine line(t);
    line.Str("manager", name_).Str("event", kEvents[event]);
    return line;
  }

  void Write(std::size_t event, std::string line) {
    log_->Emit(keys_[event], [&line] { return std::move(line); });
  }

  EventLog* const log_;
  const std::string name_;
  std::array<EventLog::Key, kEvents.size()> keys_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_MANAGER_LOG_HPP_
