// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Where a DegradationManager's events go once its lock is released: its own
// JSON lines, its telemetry's listener and, for a level change, its
// observers, in that order, each on its own (one that throws silences no
// other). The manager queues under its lock, so queue order is transition
// order, and calls Dispatch() after releasing it (serial_dispatcher.hpp says
// who delivers when two threads dispatch at once).
//
// Its own lines go to the `log_sink` it was given, or, without one, to
// stderr unless the telemetry writes lines of its own: every level change
// must be logged somewhere, once.
//
// Thread-safe. Observers may be added from inside an observer; they hear
// the next level change, not the current one.

#ifndef DEGRADE_DETAIL_LEVELS_MANAGER_NOTIFIER_HPP_
#define DEGRADE_DETAIL_LEVELS_MANAGER_NOTIFIER_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "degrade/clock.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/levels/manager_event.hpp"
#include "degrade/detail/levels/manager_log.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/event_log.hpp"
#include "degrade/level_change.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace levels {

class ManagerNotifier {
 public:
  using Observer = std::function<void(const LevelChange&)>;

  ManagerNotifier() = default;

  // Offers `view` to `metrics` (resolved as detail::Attach does) and opens
  // the own log of manager `name` where it is needed, `max_lines_per_second`
  // by `clock` for the rate-limited kinds. Once, before any event: apart
  // from construction so that the owner can call it last in its own, when
  // everything `view` reads exists. REQUIRES: `view` and `clock` outlive
  // this.
  void Open(Telemetry* metrics, const ManagerView& view,
            const std::string& name,
            std::function<void(absl::string_view)> log_sink, const Clock* clock,
            uint32_t max_lines_per_second) {
    const bool own_sink = static_cast<bool>(log_sink);
    listener_ = Attach(metrics, &Telemetry::AttachManager, view);
    const bool telemetry_writes =
        listener_ != nullptr &&
        SafePredicate([this] { return listener_->writes_lines(); }, false);
    if (own_sink || !telemetry_writes) {
      EventLogOptions o;
      o.sink = std::move(log_sink);  // empty: stderr
      o.clock = clock;
      o.max_lines_per_key = max_lines_per_second;
      own_log_ = std::make_unique<EventLog>(std::move(o));
      own_lines_ = std::make_unique<ManagerLog>(own_log_.get(), name);
    }
  }

  ManagerNotifier(const ManagerNotifier&) = delete;
  ManagerNotifier& operator=(const ManagerNotifier&) = delete;

  // Queues `e` for the next Dispatch().
  void Push(ManagerEvent e) { events_.Push(std::move(e)); }

  void AddObserver(Observer observer) {
    MutexLock lock(&mu_);
    observers_.push_back(std::move(observer));
  }

  // Delivers what is queued. REQUIRES: the caller holds none of the locks
  // its listeners and observers may take.
  void Dispatch() {
    events_.Drain([this](const ManagerEvent& e) {
      for (ManagerListener* l : {own_lines_.get(), listener_.get()}) {
        if (l != nullptr) CallQuietly([l, &e] { Deliver(*l, e); });
      }
      if (e.kind != ManagerEvent::Kind::kLevelChange) return;
      // A copy, so that an observer may add observers.
      std::vector<Observer> observers;
      {
        MutexLock lock(&mu_);
        observers = observers_;
      }
      for (const Observer& o : observers) CallQuietly(o, e.change);
    });
  }

 private:
  Mutex mu_;
  std::vector<Observer> observers_ ABSL_GUARDED_BY(mu_);
  SerialDispatcher<ManagerEvent> events_;
  // The own lines (log_sink, or stderr without a telemetry that writes).
  std::unique_ptr<EventLog> own_log_;
  std::unique_ptr<ManagerListener> own_lines_;
  // What the telemetry attached.
  std::unique_ptr<ManagerListener> listener_;
};

}  // namespace levels
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_MANAGER_NOTIFIER_HPP_
