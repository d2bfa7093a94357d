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
// (both included here), `LevelChange` in level_change.hpp. The class keeps
// the state and the lock; the rules are pure functions in detail/levels/:
// the level decision in hysteresis.hpp, the override and control holds in
// holds.hpp, the config's tables in level_compiler.hpp; the event fan-out
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

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/levels/holds.hpp"
#include "degrade/detail/levels/hysteresis.hpp"
#include "degrade/detail/levels/level_compiler.hpp"
#include "degrade/detail/levels/level_history.hpp"
#include "degrade/detail/levels/manager_event.hpp"
#include "degrade/detail/levels/manager_notifier.hpp"
#include "degrade/detail/levels/source_monitor.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/event_log.hpp"
#include "degrade/feature_gate.hpp"
#include "degrade/level_change.hpp"
#include "degrade/signals.hpp"
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
      : name_(options.name.empty() ? std::string(kDefaultManagerName)
                                   : std::move(options.name)),
        who_(absl::StrCat("degradation manager '", name_, "'")),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        has_own_log_(static_cast<bool>(options.log_sink)),
        history_(clock_->Now()),
        notifier_(options.metrics, view_, name_, std::move(options.log_sink),
                  clock_, options.max_log_lines_per_second) {}

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

  const std::string& name() const { return name_; }

  // ---- Configuration ----

  // Validates `config` and, if it is valid, swaps it in atomically: readers
  // see the old or the new one, never a mixture. The current level carries
  // over, clamped to the new number of levels; holds and `enter_after`
  // timers restart. A config equal to the installed one changes nothing (a
  // config centre that re-pushes the same config every few seconds must not
  // keep restarting the holds). On error the old config keeps serving, the
  // rejection is counted and logged, and the error is returned.
  absl::Status Reload(DegradationConfig config) {
    absl::Status valid = ValidateDegradationConfig(config);
    if (!valid.ok()) return RejectReload(std::move(valid));
    {
      detail::MutexLock lock(&mu_);
      if (config_ != nullptr && *config_ == config) return absl::OkStatus();
      const absl::Time now = clock_->Now();
      InstallLocked(std::move(config), now);
      ++reloads_;
      PushLocked(Event::Reloaded(
          name_, now, static_cast<int>(compiled_.levels.size()), level()));
      EvaluateLocked(now);
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Records a reload that failed before reaching `Reload()` (a file that
  // could not be read or parsed): counts it, logs it, returns `error`.
  absl::Status RejectReload(absl::Status error) {
    {
      detail::MutexLock lock(&mu_);
      ++rejected_reloads_;
      PushLocked(Event::Rejected(name_, clock_->Now(), error));
    }
    Dispatch();
    return error;
  }

  // The installed config; nullptr before the first successful Reload().
  std::shared_ptr<const DegradationConfig> config() const {
    detail::MutexLock lock(&mu_);
    return config_;
  }
  uint64_t reloads() const {
    detail::MutexLock lock(&mu_);
    return reloads_;
  }
  uint64_t rejected_reloads() const {
    detail::MutexLock lock(&mu_);
    return rejected_reloads_;
  }

  // ---- Signals ----

  // Records a signal sample and re-evaluates the level. A non-finite value
  // or a signal that no level uses is rejected (INVALID_ARGUMENT naming it)
  // and changes nothing; before any config, FAILED_PRECONDITION.
  absl::Status Observe(absl::string_view signal, double value) {
    return ObserveBatch({{std::string(signal), value}});
  }

  // Records several samples, all or nothing: if any is rejected, none is
  // recorded. Then re-evaluates once.
  absl::Status ObserveBatch(
      const std::vector<std::pair<std::string, double>>& samples) {
    {
      detail::MutexLock lock(&mu_);
      if (config_ == nullptr) {
        return Error(absl::StatusCode::kFailedPrecondition,
                     "no config installed yet");
      }
      absl::Status s = detail::levels::RecordSamples(compiled_, who_, samples,
                                                     true, values_);
      if (!s.ok()) return s;
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Re-evaluates with the clock's current time: a hold can complete, or an
  // override expire, without a new sample. The monitor calls it every poll.
  void Evaluate() {
    {
      detail::MutexLock lock(&mu_);
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
  }

  // The last recorded value of `signal`, if any.
  std::optional<double> signal_value(absl::string_view signal) const {
    detail::MutexLock lock(&mu_);
    const auto it = compiled_.signal_index.find(std::string(signal));
    if (it == compiled_.signal_index.end()) return std::nullopt;
    return values_[it->second];
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
      return Error(absl::StatusCode::kFailedPrecondition,
                   "PollOnce() called from one of its own sources (it would "
                   "call that source again, without end)");
    }
    // The sources run outside the lock.
    auto [samples, first_error] = monitor_.CallAll();
    {
      detail::MutexLock lock(&mu_);
      if (config_ == nullptr && !samples.empty() && first_error.ok()) {
        first_error = Error(absl::StatusCode::kFailedPrecondition,
                            "no config installed yet; source values dropped");
      }
      if (config_ != nullptr) {
        absl::Status s = detail::levels::RecordSamples(compiled_, who_, samples,
                                                       false, values_);
        if (first_error.ok()) first_error = std::move(s);
      }
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
    return first_error;
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
        [this](const absl::Status& s) { LogPollError(s); });
  }

  // Stops the monitor and waits for it; a no-op when it isn't running.
  // Called from the monitor thread itself (a source, observer or log sink
  // running on it), it only asks the thread to stop after this poll; the
  // next Start() (from any thread), Stop() or the destructor joins it.
  void Stop() { monitor_.Stop(); }

  // ---- Level and features ----

  // The current level, 0 (normal) to num_levels(). One atomic load; the
  // level may change the moment it returns.
  int level() const { return level_.load(std::memory_order_relaxed); }

  // The admission threshold of the current level (request_class.hpp: ranks
  // below it are admitted), from the config's `admit` floors; kAdmitAllRank
  // at level 0 or when no level names a floor. One relaxed atomic load, for
  // an AdmissionController (admission.hpp) to read on every request. Follows
  // the level (staged recovery loosens it one level at a time) and reloads.
  int admission_threshold() const {
    return admission_threshold_.load(std::memory_order_relaxed);
  }

  int num_levels() const {
    detail::MutexLock lock(&mu_);
    return static_cast<int>(compiled_.levels.size());
  }

  // The gate of feature `name`, registered on first use. Call it once and
  // keep the gate; this call takes the lock.
  FeatureGate Feature(absl::string_view name) {
    detail::MutexLock lock(&mu_);
    return gates_.Get(name, !DisabledAtLocked(std::string(name), level()));
  }

  // Whether feature `name` is enabled at the current level. Takes the lock:
  // prefer a FeatureGate on hot paths. Like a gate's answer, it may be stale
  // the moment it returns.
  bool Enabled(absl::string_view name) const {
    detail::MutexLock lock(&mu_);
    return !DisabledAtLocked(std::string(name), level());
  }

  // ---- Manual override ----

  // Holds the level at `level` for `ttl` (InfiniteDuration: until cleared);
  // signals are still recorded but do not move the level. When the override
  // ends, the signals take over again from the forced level: a higher
  // wanted level applies at once, lower levels through staged recovery.
  // INVALID_ARGUMENT for a level outside [0, num_levels()] or ttl <= 0.
  absl::Status ForceLevel(int level, absl::Duration ttl) {
    {
      detail::MutexLock lock(&mu_);
      const absl::Time now = clock_->Now();
      absl::StatusOr<detail::levels::OverrideHold> o =
          detail::levels::MakeOverride(
              who_, static_cast<int>(compiled_.levels.size()), level, ttl, now);
      if (!o.ok()) return o.status();
      override_ = *o;
      // Only the evaluation ends holds (and says so); this applies them.
      ApplyHoldLocked(now, detail::levels::HeldLevel(
                               override_, ControlHoldLocked(), this->level()));
      hysteresis_.recover_since.reset();
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Ends an override now; the signals take over (see ForceLevel).
  void ClearOverride() {
    {
      detail::MutexLock lock(&mu_);
      if (!override_) return;
      override_.reset();
      hysteresis_.recover_since.reset();
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
  }

  // The forced level while an override is in force, else nullopt. Not a
  // plain read: it first evaluates at the clock's current time, so that an
  // override whose ttl has passed ends (and its expiry, and any level
  // change that follows, is reported to observers) before the answer.
  std::optional<int> ForcedLevel() {
    Evaluate();
    detail::MutexLock lock(&mu_);
    if (!override_) return std::nullopt;
    return override_->level;
  }
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
    {
      detail::MutexLock lock(&mu_);
      const absl::Time now = clock_->Now();
      if (absl::Status s = CheckControlLocked(control, now); !s.ok()) return s;
      // A recovery in progress keeps its timer: a newer document (an
      // extension) must not restart the hold of every manager it names.
      control_ = std::move(control);
      RecomputeGatesLocked();
      EvaluateLocked(now);
    }
    Dispatch();
    return absl::OkStatus();
  }
  // What SetControl would refuse, changing nothing: a version of 0, a level
  // outside [1, num_levels()], `until` not after the clock's now, or a
  // feature off that the config calls critical.
  absl::Status CheckControl(const Control& control) const {
    detail::MutexLock lock(&mu_);
    return CheckControlLocked(control, clock_->Now());
  }
  // Ends the control now (no-op without one); the level follows the
  // override or the signals as after an expiry.
  void ClearControl() {
    {
      detail::MutexLock lock(&mu_);
      if (!control_) return;
      EndControlLocked();
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
  }
  // Whether this manager has heard of feature `name`: a gate was issued
  // for it or its config names it. Takes the lock.
  bool KnowsFeature(absl::string_view name) const {
    const std::string f(name);
    detail::MutexLock lock(&mu_);
    if (compiled_.critical.count(f) != 0) return true;
    if (!compiled_.levels.empty() &&
        compiled_.levels.back().disabled.count(f) != 0) {
      return true;
    }
    for (const auto& [gate, on] : gates_.Snapshot()) {
      if (gate == f) return true;
    }
    return false;
  }
  // The control in force, if any; evaluates first (see ForcedLevel).
  std::optional<Control> CurrentControl() {
    Evaluate();
    detail::MutexLock lock(&mu_);
    return control_;
  }
  // Deprecated: the accessor spelling hides that it evaluates and may call
  // observers; use CurrentControl(). Same behaviour.
  std::optional<Control> control() { return CurrentControl(); }

  // ---- Observation ----

  // Called once per level change, in order, outside the lock.
  void AddObserver(Observer observer) {
    notifier_.AddObserver(std::move(observer));
  }

  // Level changes since construction.
  uint64_t transitions() const {
    return transitions_.load(std::memory_order_relaxed);
  }

  // Total time spent at `level` so far, including the current stay.
  absl::Duration time_at_level(int level) const {
    detail::MutexLock lock(&mu_);
    return history_.TimeAt(level, this->level(), clock_->Now());
  }

 private:
  // For the listeners and, a level change, the observers.
  using Event = detail::ManagerEvent;

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

  void InstallLocked(DegradationConfig config, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    detail::levels::CompiledConfig compiled = detail::levels::Compile(config);
    // Keep the last value of every signal the new config still uses.
    values_ = detail::levels::CarryOver(compiled_, values_, compiled);
    compiled_ = std::move(compiled);
    config_ = std::make_shared<const DegradationConfig>(std::move(config));
    const int n = static_cast<int>(compiled_.levels.size());
    detail::levels::RestartTimers(hysteresis_, compiled_.levels.size());
    if (override_ && override_->level > n) override_->level = n;
    if (control_ && control_->level && *control_->level > n) {
      control_->level = n;
    }
    if (level() > n) {
      ChangeLevelLocked(MakeChange(now, n, LevelChangeReason::kReload));
    } else {
      RecomputeGatesLocked();
    }
  }

  // The holds first (detail/levels/holds.hpp), then, unless an override
  // pins the level, the signals (hysteresis.hpp) above the control's floor.
  void EvaluateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::vector<detail::levels::CompiledLevel>& levels = compiled_.levels;
    if (levels.empty()) return;
    const detail::levels::HoldDecision h = detail::levels::DecideHolds(
        now, override_, ControlHoldLocked(), level());
    if (h.override_ended) {
      PushLocked(Event::OverrideExpired(name_, now, override_->level));
      override_.reset();
      hysteresis_.recover_since.reset();
    }
    if (h.control_ended) {
      Event e =
          Event::OverrideExpired(name_, now, control_->level.value_or(-1));
      e.expired.note = control_->note;
      PushLocked(std::move(e));
      EndControlLocked();
    }
    detail::levels::Decision d;
    if (h.pinned) {
      // The level is pinned, but each level's trigger is still tracked, so
      // that `enter_after` measures real persistence.
      (void)detail::levels::TrackTriggers(levels, values_, hysteresis_, now);
    } else {
      d = detail::levels::StepAbove(h.floor, levels, values_, hysteresis_, now,
                                    config_->cooldown);
    }
    if (!d.changed()) {
      // A hold ended with another holding elsewhere, or a floor was set
      // above the level.
      ApplyHoldLocked(now, h.held);
      return;
    }
    LevelChange c = MakeChange(now, d.to, d.reason);
    if (d.reason == LevelChangeReason::kSignal) {
      c.signal = compiled_.signal_names[d.signal];
      c.value = d.value;
      c.threshold = d.threshold;
    } else {
      c.hold = d.hold;
    }
    ChangeLevelLocked(std::move(c));
  }

  bool DisabledAtLocked(const std::string& feature, int level) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return detail::levels::DisabledAt(compiled_, feature, level) ||
           detail::levels::ForcedOff(compiled_, FeaturesOffLocked(), feature);
  }
  const std::vector<std::string>* FeaturesOffLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return control_ ? &control_->features_off : nullptr;
  }
  void RecomputeGatesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The analysis does not follow the lock into the lambda, which runs
    // while it is held: hand it the compiled config by pointer.
    const detail::levels::CompiledConfig* compiled = &compiled_;
    const std::vector<std::string>* off = FeaturesOffLocked();
    const int l = level();
    admission_threshold_.store(detail::levels::AdmitThresholdAt(*compiled, l),
                               std::memory_order_relaxed);
    gates_.SetAll([compiled, off, l](const std::string& f) {
      return !detail::levels::DisabledAt(*compiled, f, l) &&
             !detail::levels::ForcedOff(*compiled, off, f);
    });
  }
  // The control as the pure functions of detail/levels/holds.hpp take it.
  std::optional<detail::levels::ControlHold> ControlHoldLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!control_) return std::nullopt;
    return detail::levels::ControlHold{control_->level, control_->until};
  }
  absl::Status CheckControlLocked(const Control& c, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return detail::levels::CheckControl(
        who_, compiled_, c.version, {c.level, c.until}, c.features_off, now);
  }
  // However the control ends. A floor's end starts the recovery hold
  // afresh, as an override's does; a features-only control never touched
  // the level's timers.
  void EndControlLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (control_->level) hysteresis_.recover_since.reset();
    control_.reset();
    RecomputeGatesLocked();
  }
  // Moves the level where the holds put it, if anywhere: a kOverride change
  // noting the control when the floor is what moved it.
  void ApplyHoldLocked(absl::Time now, std::optional<detail::levels::Held> h)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!h) return;
    LevelChange c = MakeChange(now, h->level, LevelChangeReason::kOverride);
    if (h->by_control) {
      c.until = control_->until;
      c.note = control_->note;
    } else {
      c.until = override_->until;
    }
    ChangeLevelLocked(std::move(c));
  }

  LevelChange MakeChange(absl::Time now, int to, LevelChangeReason reason) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    LevelChange c;
    c.time = now;
    c.manager = name_;
    c.from = level();
    c.to = to;
    c.reason = reason;
    return c;
  }
  // The one place the level moves, whatever moved it.
  void ChangeLevelLocked(LevelChange c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    history_.Record(c.from, c.to, c.time);
    hysteresis_.level = c.to;  // already so when Step moved it
    hysteresis_.last_change = c.time;
    level_.store(c.to, std::memory_order_relaxed);
    transitions_.fetch_add(1, std::memory_order_relaxed);
    RecomputeGatesLocked();
    PushLocked(Event(std::move(c)));
  }

  // Under the lock, so that the queue's order is the transitions'.
  void PushLocked(Event e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    notifier_.Push(std::move(e));
  }
  void LogPollError(const absl::Status& s) {
    {
      detail::MutexLock lock(&mu_);
      PushLocked(Event::PollError(name_, clock_->Now(), s));
    }
    Dispatch();
  }
  void Dispatch() { notifier_.Dispatch(); }

  ManagerStats Stats() const {
    detail::MutexLock lock(&mu_);
    ManagerStats st;
    st.now = clock_->Now();
    st.level = level();
    st.num_levels = static_cast<int>(compiled_.levels.size());
    history_.Report(st.now, st);
    st.features = gates_.Snapshot();
    st.reloads = reloads_;
    // Until an evaluation ends it, a control is reported as in force, as its
    // gates still are.
    if (control_) {
      st.control_version = control_->version;
      st.control_until = control_->until;
    }
    st.rejected_reloads = rejected_reloads_;
    return st;
  }

  // An error of `code` whose message starts with who_.
  template <typename... Parts>
  absl::Status Error(absl::StatusCode code, const Parts&... parts) const {
    return absl::Status(code, absl::StrCat(who_, ": ", parts...));
  }

  const std::string name_;
  const std::string who_;  // "degradation manager 'name'", for messages
  const Clock* const clock_;
  const bool has_own_log_;

  // Read on every gate check and level() call; equal to hysteresis_.level
  // whenever mu_ is free.
  std::atomic<int> level_{0};
  // AdmitThresholdAt(compiled_, level_), republished with every gate
  // recomputation (level changes and reloads).
  std::atomic<int> admission_threshold_{kAdmitAllRank};
  std::atomic<uint64_t> transitions_{0};

  mutable detail::Mutex mu_;
  std::shared_ptr<const DegradationConfig> config_ ABSL_GUARDED_BY(mu_);
  detail::levels::CompiledConfig compiled_ ABSL_GUARDED_BY(mu_);
  // The last value of each signal, by compiled_.signal_index.
  std::vector<std::optional<double>> values_ ABSL_GUARDED_BY(mu_);
  detail::levels::HysteresisState hysteresis_ ABSL_GUARDED_BY(mu_);
  detail::levels::LevelHistory history_ ABSL_GUARDED_BY(mu_);
  std::optional<detail::levels::OverrideHold> override_ ABSL_GUARDED_BY(mu_);
  std::optional<Control> control_ ABSL_GUARDED_BY(mu_);
  detail::GateTable gates_ ABSL_GUARDED_BY(mu_);
  uint64_t reloads_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_reloads_ ABSL_GUARDED_BY(mu_) = 0;

  const View view_{this};
  // Attaches view_, so after it and everything it reads; destroyed, and
  // the telemetry detached, after the monitor stops and before those.
  detail::levels::ManagerNotifier notifier_;
  // The sources and the monitor thread polling them. Last, so that it stops
  // before anything its polls touch is destroyed.
  detail::SourceMonitor monitor_{"degradation manager", name_};
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
