// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degradation_manager.hpp
// -----------------------------------------------------------------------------
//
// A tiered degradation manager: under load, a service switches off non-core
// work level by level (cache refresh, debug logs, A/B tagging,
// personalisation, ...) and switches it back on when the load is gone,
// without flapping.
//
// The manager holds a level, 0 (normal) to N (N <= 8), driven by named load
// signals (`gpu_util`, `queue_length`, `avg_latency_ms`, ...):
//
//   * Escalation: level k is wanted when any of its signals reaches its enter
//     threshold (for `enter_after`, if set); the manager goes straight to the
//     highest wanted level.
//   * Staged recovery with hysteresis: it steps down one level at a time, from
//     k to k-1 only after every level-k signal has stayed below its recover
//     threshold (lower than the enter threshold) for `hold`; each further step
//     needs a fresh hold, and a sample back above the recover threshold
//     restarts it. A signal oscillating around one threshold therefore moves
//     the level at most once each way (given a gap between the thresholds
//     or a hold: with recover equal to enter and a zero hold there is no
//     hysteresis left, and validation allows that on purpose).
//   * Levels are cumulative: level k switches off its own `disable` list and
//     those of every lower level.
//
// Request code asks a `FeatureGate` (feature_gate.hpp), whose `enabled()` is
// one relaxed atomic load:
//
//   degrade::DegradationManager manager({"inference"});
//   absl::Status s = manager.Reload(config);   // or ReloadJson(), config.hpp
//   degrade::FeatureGate cache = manager.Feature("semantic_cache");
//   manager.AddSource("queue_length", [&] { return queue.size(); });
//   manager.Start(absl::Seconds(1));            // polls the sources
//   ...
//   if (cache.enabled()) cache_client.Write(key, value);
//
//   // The article's `when` decorator:
//   auto personalise = degrade::When(manager, /*level=*/2, Personalise,
//                                    /*fallback=*/Generic());
//
// Every level change is one structured JSON log line (through a pluggable
// sink; stderr by default), a call to each observer, and a report to the
// manager's telemetry (telemetry.hpp).
//
// Where the pieces live: `FeatureGate` and `WhenEnabled` in feature_gate.hpp,
// the ready-made sources `LatencyTracker` and `InFlightGauge` in signals.hpp
// (both included here), `LevelChange` in level_change.hpp. This class is
// the contract and polls the sources; the lock and the state under it are
// detail/levels/level_machine.hpp, which applies pure rules kept beside it:
// the level decision (hysteresis.hpp), the override and control holds
// (holds.hpp), the config's tables (level_compiler.hpp); the event fan-out
// is manager_notifier.hpp.
//
// Thread safety: every member of DegradationManager is thread-safe.
// `level()`, `FeatureGate::enabled()` and `When` wrappers take no lock and
// allocate nothing; what they return may be stale the moment they return.
// Observations, reloads and overrides take an internal lock. Log sinks,
// listeners and observers run after that lock is released, in order, never
// concurrently, so they may call back into the manager. They run on the
// thread whose call caused the event, unless another thread is delivering
// events at that moment: then that thread delivers this one too, and the
// call (Reload, Observe, ForceLevel, ...) may return before they have run.

#ifndef DEGRADE_DEGRADATION_MANAGER_HPP_
#define DEGRADE_DEGRADATION_MANAGER_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/levels/level_machine.hpp"
#include "degrade/detail/levels/source_monitor.hpp"
#include "degrade/event_log.hpp"
#include "degrade/feature_gate.hpp"
#include "degrade/level_change.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/signals.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// ManagerOptions
//
// How a DegradationManager names itself, tells time and logs.
struct ManagerOptions {
  // Names the manager in logs and statuses; empty means kDefaultManagerName.
  std::string name = std::string(kDefaultManagerName);
  // The time source; must outlive the manager. nullptr means the real clock.
  const Clock* clock = nullptr;
  // Receives one JSON object per line-worthy event: every level change and
  // override expiry (never rate-limited: they are the audit trail), and
  // config reloads, rejections and source poll errors, rate-limited per
  // event kind (`max_log_lines_per_second` by this manager's clock). Unset
  // means the telemetry's log (a MetricsRegistry's: stderr by default, with
  // its limits), or stderr when there is no telemetry.
  std::function<void(absl::string_view json_line)> log_sink;
  // With `log_sink`: lines of each rate-limited event kind per second of
  // this manager's clock; later ones are suppressed and counted in the next
  // line's "suppressed" member. 0 silences the sink, level changes included.
  uint32_t max_log_lines_per_second = 5;
  // The telemetry the manager reports to (see telemetry.hpp): with a
  // MetricsRegistry, the degrade_level* series, its episodes and (unless
  // `log_sink` is set) its event lines. nullptr means DefaultTelemetry()
  // (none unless SetDefaultTelemetry() was called); NoTelemetry() means none
  // even then. With no telemetry and no `log_sink`, lines go to stderr.
  // REQUIRES: outlives the manager.
  Telemetry* metrics = nullptr;
};

// DegradationManager
//
// See the file comment. Neither copyable nor movable: gates point into it.
// Thread-safe; every accessor (level(), transitions(), signal_value(),
// time_at_level(), config(), ...) reports a moment that may have passed by
// the time it returns.
class DegradationManager {
 public:
  using Options = ManagerOptions;
  using Observer = std::function<void(const LevelChange&)>;

  // Starts with no configuration: level 0, every feature enabled, every
  // signal unknown. `Reload()` installs one.
  explicit DegradationManager(Options options = {})
      : has_own_log_(static_cast<bool>(options.log_sink)),
        machine_(
            options.name.empty() ? std::string(kDefaultManagerName)
                                 : std::move(options.name),
            options.clock != nullptr ? options.clock : &RealClock::Instance()) {
    // Last: the view must be complete before a telemetry may read it.
    machine_.Open(options.metrics, view_, std::move(options.log_sink),
                  options.max_log_lines_per_second);
  }

  // A manager with `config` installed, or the config's validation error.
  static absl::StatusOr<std::unique_ptr<DegradationManager>> Create(
      DegradationConfig config, Options options = {}) {
    auto m = std::make_unique<DegradationManager>(std::move(options));
    absl::Status s = m->Reload(std::move(config));
    if (!s.ok()) return s;
    return m;
  }

  DegradationManager(const DegradationManager&) = delete;
  DegradationManager& operator=(const DegradationManager&) = delete;

  // Stops the monitor thread, if running.
  ~DegradationManager() { Stop(); }

  const std::string& name() const { return machine_.name(); }

  // ---- Configuration ----

  // Validates `config` and, if it is valid, swaps it in atomically: readers
  // see the old or the new one, never a mixture. The current level carries
  // over, clamped to the new number of levels; holds and `enter_after`
  // timers restart. A config equal to the installed one changes nothing (a
  // config centre that re-pushes the same config every few seconds must not
  // keep restarting the holds). On error the old config keeps serving, the
  // rejection is counted and logged, and the error is returned.
  absl::Status Reload(DegradationConfig config) {
    return machine_.Reload(std::move(config));
  }

  // Records a reload that failed before reaching `Reload()` (a file that
  // could not be read or parsed): counts it, logs it, returns `error`.
  absl::Status RejectReload(absl::Status error) {
    return machine_.RejectReload(std::move(error));
  }

  // The installed config; nullptr before the first successful Reload().
  std::shared_ptr<const DegradationConfig> config() const {
    return machine_.config();
  }
  uint64_t reloads() const { return machine_.reloads(); }
  uint64_t rejected_reloads() const { return machine_.rejected_reloads(); }

  // ---- Signals ----

  // Records a signal sample and re-evaluates the level. A non-finite value
  // or a signal that no level uses is rejected (INVALID_ARGUMENT naming it)
  // and changes nothing; before any config, FAILED_PRECONDITION, and an
  // override or control whose deadline has passed still ends (nothing
  // else could end it on a manager that only ever sees Observe()).
  absl::Status Observe(absl::string_view signal, double value) {
    return ObserveBatch({{std::string(signal), value}});
  }

  // Records several samples, all or nothing: if any is rejected, none is
  // recorded. Then re-evaluates once.
  absl::Status ObserveBatch(
      const std::vector<std::pair<std::string, double>>& samples) {
    return machine_.Record(samples, /*all_or_nothing=*/true);
  }

  // Re-evaluates with the clock's current time: a hold can complete, or an
  // override expire, without a new sample. The monitor calls it every poll.
  void Evaluate() { machine_.Evaluate(); }

  // The last recorded value of `signal`, if any.
  std::optional<double> signal_value(absl::string_view signal) const {
    return machine_.signal_value(signal);
  }

  // Registers a source polled by the monitor (or `PollOnce()`): `source()`
  // returns the signal's current value (any number type), or an
  // absl::StatusOr<double> whose error says why there is none: nothing is
  // recorded and that status, naming the manager and signal, is the poll's
  // error. Sources run outside the manager's lock. A throwing source is
  // reported as an error for that poll. REQUIRES: whatever `source` refers
  // to outlives the manager, or the monitor is stopped first.
  void AddSource(std::string signal,
                 std::function<absl::StatusOr<double>()> source) {
    monitor_.Add(std::move(signal), std::move(source));
  }

  // Polls every source once, records what they return (skipping rejected
  // values), and re-evaluates. Returns the first error. From inside one of
  // this manager's sources, FAILED_PRECONDITION (it would call that source
  // again); from an observer or log sink it works.
  absl::Status PollOnce() {
    if (monitor_.InSource()) {
      return absl::FailedPreconditionError(absl::StrCat(
          machine_.who(),
          ": PollOnce() called from one of its own sources (it would call "
          "that source again, without end)"));
    }
    // The sources run outside the lock.
    auto [samples, first_error] = monitor_.CallAll();
    absl::Status s = machine_.Record(samples, /*all_or_nothing=*/false);
    return first_error.ok() ? s : first_error;
  }

  // Starts a background thread that calls `PollOnce()` every `period` (real
  // time, whatever the clock). FAILED_PRECONDITION if already running;
  // INVALID_ARGUMENT for a period under 1 ms or over 24 hours. From the
  // monitor thread (a source, observer or log sink) after a Stop() made
  // there, it takes that Stop back and the monitor keeps polling with the
  // new period.
  absl::Status Start(absl::Duration period) {
    return monitor_.Start(
        period, [this] { return PollOnce(); },
        [this](const absl::Status& s) { machine_.LogPollError(s); });
  }

  // Stops the monitor and waits for it; a no-op when it isn't running.
  // Called from the monitor thread itself (a source, observer or log sink
  // running on it), it only asks the thread to stop after this poll; the
  // next Start() (from any thread), Stop() or the destructor joins it.
  void Stop() { monitor_.Stop(); }

  // ---- Level and features ----

  // The current level, 0 (normal) to num_levels(). One atomic load; the
  // level may change the moment it returns.
  int level() const { return machine_.level(); }

  // The admission threshold of the current level (request_class.hpp: ranks
  // below it are admitted), from the config's `admit` floors; kAdmitAllRank
  // at level 0 or when no level names a floor. One relaxed atomic load, for
  // an AdmissionController (admission.hpp) to read on every request. Follows
  // the level (staged recovery loosens it one level at a time) and reloads.
  int admission_threshold() const { return machine_.admission_threshold(); }

  int num_levels() const { return machine_.num_levels(); }

  // The gate of feature `name`, registered on first use. Call it once and
  // keep the gate; this call takes the lock.
  FeatureGate Feature(absl::string_view name) { return machine_.Feature(name); }

  // Whether feature `name` is enabled at the current level. Takes the lock:
  // prefer a FeatureGate on hot paths. Like a gate's answer, it may be stale
  // the moment it returns.
  bool Enabled(absl::string_view name) const { return machine_.Enabled(name); }

  // ---- Manual override ----

  // Holds the level at `level` for `ttl` (InfiniteDuration: until cleared);
  // signals are still recorded but do not move the level. When the override
  // ends, the signals take over again from the forced level: a higher
  // wanted level applies at once, lower levels through staged recovery.
  // INVALID_ARGUMENT for a level outside [0, num_levels()] or ttl <= 0.
  absl::Status ForceLevel(int level, absl::Duration ttl) {
    return machine_.ForceLevel(level, ttl);
  }

  // Ends an override now; the signals take over (see ForceLevel).
  void ClearOverride() { machine_.ClearOverride(); }

  // The forced level while an override is in force, else nullopt. Not a
  // plain read: it first evaluates at the clock's current time, so that an
  // override whose ttl has passed ends (and its expiry, and any level
  // change that follows, is reported to observers) before the answer.
  std::optional<int> ForcedLevel() { return machine_.ForcedLevel(); }
  // Deprecated: the accessor spelling hides that it evaluates and may call
  // observers; use ForcedLevel(). Same behaviour.
  std::optional<int> forced_level() { return ForcedLevel(); }

  // ---- Fleet control (control_document.hpp applies these) ----

  // What a control document holds this manager to until `until`: a floor
  // under the level (`level`, when set: the signals still move the level
  // above it, never below) and each of `features_off` switched off whatever
  // the level (a feature the config calls critical excepted, even one made
  // critical by a later reload). It sits beside ForceLevel's override, which
  // pins the level exactly: while both are in force the level is the
  // higher of the two, so neither a local ForceLevel nor a control document
  // can lower what the other raised. `note` ("control v42: INC-1234 ...")
  // is carried by every log line the control causes. The control ends at
  // the first evaluation at or after `until`: an Observe(), a poll of the
  // manager's sources (Start()), Evaluate(), CurrentControl() or ForcedLevel().
  struct Control {
    std::optional<int> level;
    std::vector<std::string> features_off;
    absl::Time until = absl::InfiniteFuture();
    uint64_t version = 0;
    std::string note;
  };
  // Puts `control` in force, replacing any previous one. INVALID_ARGUMENT
  // (and no change) when CheckControl() refuses it.
  absl::Status SetControl(Control control) {
    return machine_.SetControl(State(std::move(control)));
  }
  // What SetControl would refuse, changing nothing: a version of 0, a level
  // outside [1, num_levels()], `until` not after the clock's now, or a
  // feature off that the config calls critical.
  absl::Status CheckControl(const Control& control) const {
    return machine_.CheckControl(State(control));
  }
  // Ends the control now (no-op without one); the level follows the
  // override or the signals as after an expiry.
  void ClearControl() { machine_.ClearControl(); }
  // Whether this manager has heard of feature `name`: a gate was issued
  // for it or its config names it. Takes the lock.
  bool KnowsFeature(absl::string_view name) const {
    return machine_.KnowsFeature(name);
  }
  // The control in force, if any; evaluates first (see ForcedLevel).
  std::optional<Control> CurrentControl() {
    std::optional<detail::levels::ControlState> s = machine_.CurrentControl();
    if (!s) return std::nullopt;
    return Control{s->hold.floor, std::move(s->features_off), s->hold.until,
                   s->version, std::move(s->note)};
  }
  // Deprecated: the accessor spelling hides that it evaluates and may call
  // observers; use CurrentControl(). Same behaviour.
  std::optional<Control> control() { return CurrentControl(); }

  // ---- Observation ----

  // Called once per level change, in order, outside the lock.
  void AddObserver(Observer observer) {
    machine_.AddObserver(std::move(observer));
  }

  // Level changes since construction.
  uint64_t transitions() const { return machine_.transitions(); }

  // Total time spent at `level` so far, including the current stay.
  absl::Duration time_at_level(int level) const {
    return machine_.time_at_level(level);
  }

 private:
  // What the telemetry reads: a member rather than a base class, so the
  // manager itself has no virtual functions.
  // name() and stats() come from OwnerView; the manager adds one flag.
  class View final : public detail::OwnerView<DegradationManager, ManagerStats,
                                              ManagerView> {
   public:
    explicit View(const DegradationManager* m)
        : OwnerView(m, &DegradationManager::Stats) {}
    bool has_own_log() const override { return owner()->has_own_log_; }
  };

  static detail::levels::ControlState State(Control c) {
    return {{c.level, c.until},
            std::move(c.features_off),
            c.version,
            std::move(c.note)};
  }
  ManagerStats Stats() const { return machine_.Stats(); }

  const bool has_own_log_;
  const View view_{this};
  // The lock, the state under it and the events: destroyed (its telemetry
  // detached first) after the monitor stops and before the view goes.
  detail::levels::LevelMachine machine_;
  // The sources and the monitor thread polling them. Last, so that it stops
  // before anything its polls touch is destroyed.
  detail::SourceMonitor monitor_{"degradation manager", machine_.name()};
};

// When(manager, k, f, fallback)
//
// The article's `when` decorator: returns a callable that runs `f` (with the
// caller's arguments) while `manager.level() < k`, and otherwise returns
// `fallback`: a value convertible to f's result, or the result of calling it
// if it is a callable taking no arguments (there is no failure status to
// pass, unlike WithFallback's). Omit `fallback` for functions returning
// void: they are skipped. The check is one atomic load, and like level() it
// may be stale the moment it returns. Thread-safe as far as `f` and
// `fallback` are. REQUIRES: the manager outlives the wrapper.
template <typename F, typename Fallback>
auto When(const DegradationManager& manager, int k, F f, Fallback fallback) {
  const DegradationManager* m = &manager;
  return detail::MakeGuarded([m, k] { return m->level() < k; }, std::move(f),
                             std::move(fallback));
}
template <typename F>
auto When(const DegradationManager& manager, int k, F f) {
  return When(manager, k, std::move(f), detail::NoFallback{});
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADATION_MANAGER_HPP_
