// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: telemetry.hpp
// -----------------------------------------------------------------------------
//
// How the core reports what happens without knowing who listens. This is the
// hub only: the `Telemetry` interface, the process default, `NoTelemetry()`
// and the one attach helper components use. What each component reports
// lives with the component:
//
//   * at construction a component offers a read-only *view* of itself to a
//     `Telemetry`, which may read it at any time (a metrics scrape pulls
//     counters the component keeps anyway, so the hot path pays nothing for
//     being observed). Most views are a `StatsView<S>` (stats_view.hpp): a
//     name and a snapshot, `S` declared beside the component
//     (overload_stats.hpp, retry_stats.hpp, hedge_stats.hpp,
//     hot_list_stats.hpp);
//   * the telemetry hands back what the component keeps: a
//     `TelemetryAttachment`, or a *listener* to which the component pushes
//     its events (breaker_listener.hpp: state changes with their cause and
//     counts, thresholds, per-call outcomes to a listener that asks;
//     manager_listener.hpp: level changes, reloads, expiring overrides,
//     failing sources);
//   * the component owns what it got and destroys it first, before anything
//     the view reads, so a telemetry never reads a dead component.
//
// `Telemetry` has one virtual per kind of component that came before the
// seam opened (a visitor), and one generic `AttachComponent` that every
// newer component uses: a telemetry overrides what it cares about, the
// component's hot path never sees it, and this header knows no metrics
// format. `MetricsRegistry` (metrics_registry.hpp) is the telemetry degrade
// ships: Prometheus and JSON export, degradation episodes, rate-limited
// event lines. Anything else (a
// test spy, a bridge to the service's own logger or metrics library)
// implements `Telemetry` the same way.
//
// Which telemetry a component uses is explicit: the `metrics` field of its
// options, or else the process default set by one line at startup. With
// neither, it is not observed at all and costs nothing (a unit test's
// breakers write no lines and register nowhere).
//
//   degrade::MetricsRegistry& registry = degrade::MetricsRegistry::Default();
//   degrade::SetDefaultTelemetry(&registry);    // once, before building
//
//   degrade::BreakerSettings s;
//   s.name = "recall";                          // exported, by the default
//   degrade::CircuitBreaker<Items> recall(s);
//   s.name = "scratch";
//   s.metrics = degrade::NoTelemetry();         // this one is not
//   degrade::CircuitBreaker<Items> scratch(s);
//
// Thread safety: `SetDefaultTelemetry`/`DefaultTelemetry` are thread-safe.
// A view's functions are thread-safe and never change the component. A
// listener's events arrive outside the component's locks, in order, never
// concurrently with each other (the component's serial dispatcher), except
// `BreakerListener::OnCall`, which runs on the calling thread of each call.

#ifndef DEGRADE_TELEMETRY_HPP_
#define DEGRADE_TELEMETRY_HPP_

#include <atomic>
#include <memory>

#include "absl/strings/string_view.h"
// The vocabulary of every component kind below. Kept here too so that this
// header still brings everything it did before the split.
#include "degrade/breaker_listener.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/hedge_stats.hpp"
#include "degrade/hot_list_stats.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

class MetricsRegistry;  // metrics_registry.hpp; named, never used, here

// Telemetry
//
// Receives components as they are built. Each Attach* returns what the
// component reports to and keeps until it is destroyed, or nullptr for
// "not interested" (the default). Attach* run on the constructing thread,
// inside the component's constructor: they may read the view, but must not
// call the component. One that throws attaches nothing (the component is
// built unobserved; degrade never throws).
//
// Thread safety: Attach* may be called from several threads at once (as
// many as build components); an implementation synchronises itself.
// REQUIRES: a telemetry outlives what it returned.
class Telemetry {
 public:
  virtual ~Telemetry() = default;

  virtual std::unique_ptr<BreakerListener> AttachBreaker(
      const BreakerView& breaker) {
    (void)breaker;
    return nullptr;
  }
  virtual std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& manager) {
    (void)manager;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachHotList(
      const HotListView& hot_list) {
    (void)hot_list;
    return nullptr;
  }
  // Overload control (overload_stats.hpp): views only; the components keep
  // their own counts, so a telemetry scrapes and is never on the hot path.
  virtual std::unique_ptr<TelemetryAttachment> AttachAdmission(
      const AdmissionView& admission) {
    (void)admission;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachQueue(
      const QueueView& queue) {
    (void)queue;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachLimiter(
      const LimiterView& limiter) {
    (void)limiter;
    return nullptr;
  }
  // Retries (retry_stats.hpp): views only, scraped like the above.
  virtual std::unique_ptr<TelemetryAttachment> AttachRetryBudget(
      const RetryBudgetView& budget) {
    (void)budget;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachRetrier(
      const RetrierView& retrier) {
    (void)retrier;
    return nullptr;
  }
  virtual std::unique_ptr<TelemetryAttachment> AttachThrottler(
      const ThrottleView& throttler) {
    (void)throttler;
    return nullptr;
  }
  // Hedging (hedge_stats.hpp): a view, as for overload control.
  virtual std::unique_ptr<TelemetryAttachment> AttachHedge(
      const HedgeView& hedge) {
    (void)hedge;
    return nullptr;
  }

  // Not a kind of component: the registry this telemetry writes into, for
  // the add-ons that write their own series and lines rather than offer a
  // view (StageMetrics, stage_metrics.hpp). A MetricsRegistry answers
  // itself; a telemetry that wraps one may answer it; nullptr (the default)
  // leaves those add-ons unexported.
  // Every other component: fleet control, the file and etcd watchers, the
  // gRPC client and server, the GPU source, default features, and whatever
  // is added next. A telemetry narrows `view` to the stats types it knows
  // (`view.As<FleetControlStats>()`) and returns null for the rest. This is
  // the entry new components use, so that adding one adds no virtual here.
  virtual std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& view) {
    (void)view;
    return nullptr;
  }

  virtual MetricsRegistry* AsMetricsRegistry() { return nullptr; }
};

namespace detail {

inline std::atomic<Telemetry*>& DefaultTelemetrySlot() {
  // Constant-initialised: no guard, no order-of-initialisation problem for
  // components with static storage duration.
  static std::atomic<Telemetry*> slot{nullptr};
  return slot;
}

}  // namespace detail

// SetDefaultTelemetry(telemetry)
//
// The telemetry of every component built from now on whose options leave
// `metrics` unset; nullptr (the initial value) means none. Components
// already built keep what they have. REQUIRES: `telemetry` outlives every
// component built while it is the default.
inline void SetDefaultTelemetry(Telemetry* telemetry) {
  detail::DefaultTelemetrySlot().store(telemetry, std::memory_order_release);
}

// DefaultTelemetry()
//
// The current default; nullptr if none has been set.
inline Telemetry* DefaultTelemetry() {
  return detail::DefaultTelemetrySlot().load(std::memory_order_acquire);
}

// ScopedDefaultTelemetry
//
// Sets the process default for its lifetime and puts back the one it found:
// for tests, and for a service's main() that wants the default to end with
// it. Not thread-safe with respect to other changes of the default: two
// overlapping scopes on different threads restore in whatever order they
// end. REQUIRES: as SetDefaultTelemetry. Neither copyable nor movable.
class ScopedDefaultTelemetry {
 public:
  explicit ScopedDefaultTelemetry(Telemetry* telemetry)
      : saved_(DefaultTelemetry()) {
    SetDefaultTelemetry(telemetry);
  }
  ScopedDefaultTelemetry(const ScopedDefaultTelemetry&) = delete;
  ScopedDefaultTelemetry& operator=(const ScopedDefaultTelemetry&) = delete;
  ~ScopedDefaultTelemetry() { SetDefaultTelemetry(saved_); }

  // The default this scope found, and restores.
  Telemetry* saved() const { return saved_; }

 private:
  Telemetry* const saved_;
};

// NoTelemetry()
//
// A telemetry that attaches to nothing: put it in a component's `metrics`
// to keep that one component unobserved while a default is set.
inline Telemetry* NoTelemetry() {
  static Telemetry* const none = new Telemetry();
  return none;
}

namespace detail {

// The telemetry a component built with `chosen` (its options' `metrics`)
// reports to, or nullptr.
inline Telemetry* ResolveTelemetry(Telemetry* chosen) {
  Telemetry* t = chosen != nullptr ? chosen : DefaultTelemetry();
  return t == NoTelemetry() ? nullptr : t;
}

// Calls `attach()` (a Telemetry::Attach*), turning a throw into nullptr.
template <typename Attach>
auto AttachQuietly(Attach attach) -> decltype(attach()) {
  return InvokeOr(attach, [](absl::string_view) {
    return decltype(attach())(nullptr);
  });
}

template <class T>
struct NoDeduce {
  using type = T;
};

// Attach(chosen, &Telemetry::AttachX, view)
//
// How every component attaches, last in its constructor:
//
//   telemetry_ = detail::Attach(options.metrics, &Telemetry::AttachQueue,
//                               view_);
//
// Resolves `chosen` (the options' `metrics`: nullptr means the process
// default, NoTelemetry() none), offers `view` through `attach`, and returns
// what the telemetry handed back, or nullptr (no telemetry, not interested,
// or the Attach* threw). Runs at construction only; nothing on a hot path.
// REQUIRES: `view` is complete and outlives the result.
template <class Attachment, class View>
std::unique_ptr<Attachment> Attach(
    Telemetry* chosen,
    std::unique_ptr<Attachment> (Telemetry::*attach)(const View&),
    const typename NoDeduce<View>::type& view) {
  Telemetry* const t = ResolveTelemetry(chosen);
  if (t == nullptr) return nullptr;
  return AttachQuietly([&] { return (t->*attach)(view); });
}

}  // namespace detail

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TELEMETRY_HPP_
