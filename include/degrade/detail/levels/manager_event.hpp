// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a degradation manager queues under its lock and delivers after
// releasing it (through a SerialDispatcher): one of the four events a
// ManagerListener hears about. Rare, so a plain struct with one member used
// per kind rather than a variant.
//
//   events.Push(detail::ManagerEvent(change));       // under the lock
//   events.Drain([&](const detail::ManagerEvent& e) {
//     detail::Deliver(*listener, e);                  // after it
//   });
//
// Plain values: thread-compatible.

#ifndef DEGRADE_DETAIL_LEVELS_MANAGER_EVENT_HPP_
#define DEGRADE_DETAIL_LEVELS_MANAGER_EVENT_HPP_

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/level_change.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

struct ManagerEvent {
  enum class Kind { kLevelChange, kReload, kOverrideExpired, kPollError };
  explicit ManagerEvent(LevelChange c)
      : kind(Kind::kLevelChange), change(std::move(c)) {}
  explicit ManagerEvent(ReloadEvent e)
      : kind(Kind::kReload), reload(std::move(e)) {}
  explicit ManagerEvent(OverrideExpiredEvent e)
      : kind(Kind::kOverrideExpired), expired(e) {}
  explicit ManagerEvent(PollErrorEvent e)
      : kind(Kind::kPollError), poll_error(std::move(e)) {}

  // The events besides a level change, built from their fields.
  static ManagerEvent Reloaded(absl::string_view manager, absl::Time time,
                               int levels, int level) {
    ReloadEvent e;
    e.manager = manager;
    e.time = time;
    e.applied = true;
    e.levels = levels;
    e.level = level;
    return ManagerEvent(std::move(e));
  }
  static ManagerEvent Rejected(absl::string_view manager, absl::Time time,
                               absl::Status error) {
    ReloadEvent e;
    e.manager = manager;
    e.time = time;
    e.error = std::move(error);
    return ManagerEvent(std::move(e));
  }
  static ManagerEvent OverrideExpired(absl::string_view manager,
                                      absl::Time time, int level) {
    OverrideExpiredEvent e;
    e.manager = manager;
    e.time = time;
    e.level = level;
    return ManagerEvent(e);
  }
  static ManagerEvent PollError(absl::string_view manager, absl::Time time,
                                absl::Status error) {
    PollErrorEvent e;
    e.manager = manager;
    e.time = time;
    e.error = std::move(error);
    return ManagerEvent(std::move(e));
  }

  Kind kind;
  LevelChange change;
  ReloadEvent reload;
  OverrideExpiredEvent expired;
  PollErrorEvent poll_error;
};

// Calls the listener method for `e`'s kind.
inline void Deliver(ManagerListener& l, const ManagerEvent& e) {
  switch (e.kind) {
    case ManagerEvent::Kind::kLevelChange:
      l.OnLevelChange(e.change);
      break;
    case ManagerEvent::Kind::kReload:
      l.OnReload(e.reload);
      break;
    case ManagerEvent::Kind::kOverrideExpired:
      l.OnOverrideExpired(e.expired);
      break;
    case ManagerEvent::Kind::kPollError:
      l.OnPollError(e.poll_error);
      break;
  }
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_MANAGER_EVENT_HPP_
