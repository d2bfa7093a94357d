// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The locked half of a DegradationManager: its lock and everything under
// it (the compiled config, the signals' last values, the hysteresis
// timers, the history, the override and the control, the gates), the
// lock-free level and admission threshold, and the events each change
// queues. Each operation takes the lock, applies the pure rules of its
// neighbours (level_compiler.hpp, hysteresis.hpp, holds.hpp), queues its
// events, releases the lock, then delivers them (manager_notifier.hpp).
// DegradationManager (degradation_manager.hpp) is the contract on top,
// with the sources' monitor; degradation_manager_test tests this through it.
//
// Thread-safe; see DegradationManager for the contract. Not a public API.

#ifndef DEGRADE_DETAIL_LEVELS_LEVEL_MACHINE_HPP_
#define DEGRADE_DETAIL_LEVELS_LEVEL_MACHINE_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
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
#include "degrade/detail/levels/holds.hpp"
#include "degrade/detail/levels/hysteresis.hpp"
#include "degrade/detail/levels/level_compiler.hpp"
#include "degrade/detail/levels/level_history.hpp"
#include "degrade/detail/levels/manager_event.hpp"
#include "degrade/detail/levels/manager_notifier.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/feature_gate.hpp"
#include "degrade/level_change.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/request_class.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace levels {

// A fleet control as the machine keeps it (DegradationManager::Control is
// the public spelling of the same fields).
struct ControlState {
  ControlHold hold;
  std::vector<std::string> features_off;
  uint64_t version = 0;
  std::string note;
};

class LevelMachine {
 public:
  using Event = ManagerEvent;

  // Manager `name`, telling time by `clock` (REQUIRES: outlives this).
  // Events queue from the start; Open() says where they go.
  LevelMachine(std::string name, const Clock* clock)
      : name_(std::move(name)),
        who_(absl::StrCat("degradation manager '", name_, "'")),
        clock_(clock),
        history_(clock_->Now()) {}

  LevelMachine(const LevelMachine&) = delete;
  LevelMachine& operator=(const LevelMachine&) = delete;

  const std::string& name() const { return name_; }
  const std::string& who() const { return who_; }

  // See ManagerNotifier::Open. REQUIRES: `view` outlives this.
  void Open(Telemetry* metrics, const ManagerView& view,
            std::function<void(absl::string_view)> log_sink,
            uint32_t max_lines_per_second) {
    notifier_.Open(metrics, view, name_, std::move(log_sink), clock_,
                   max_lines_per_second);
  }
  void AddObserver(ManagerNotifier::Observer observer) {
    notifier_.AddObserver(std::move(observer));
  }

  absl::Status Reload(DegradationConfig config) {
    absl::Status valid = ValidateDegradationConfig(config);
    if (!valid.ok()) return RejectReload(std::move(valid));
    {
      MutexLock lock(&mu_);
      if (config_ != nullptr && *config_ == config) return absl::OkStatus();
      const absl::Time now = clock_->Now();
      InstallLocked(std::move(config), now);
      ++reloads_;
      notifier_.Push(Event::Reloaded(
          name_, now, static_cast<int>(compiled_.levels.size()), level()));
      EvaluateLocked(now);
    }
    notifier_.Dispatch();
    return absl::OkStatus();
  }

  absl::Status RejectReload(absl::Status error) {
    {
      MutexLock lock(&mu_);
      ++rejected_reloads_;
      notifier_.Push(Event::Rejected(name_, clock_->Now(), error));
    }
    notifier_.Dispatch();
    return error;
  }

  std::shared_ptr<const DegradationConfig> config() const {
    MutexLock lock(&mu_);
    return config_;
  }
  uint64_t reloads() const {
    MutexLock lock(&mu_);
    return reloads_;
  }
  uint64_t rejected_reloads() const {
    MutexLock lock(&mu_);
    return rejected_reloads_;
  }

  // Records `samples` (RecordSamples: all or nothing, or each valid one)
  // and evaluates. Without a config, FAILED_PRECONDITION and nothing is
  // recorded (the error stands only for samples given), but the
  // evaluation runs: with no level to move, all it can do is end an
  // override or control whose deadline has passed, and a service whose
  // only calls are Observe() would otherwise keep an expired features-off
  // control in force for good. With a config, a rejected all or nothing
  // call changes nothing, not even a due hold (valid samples evaluate).
  absl::Status Record(
      const std::vector<std::pair<std::string, double>>& samples,
      bool all_or_nothing) {
    absl::Status s;
    {
      MutexLock lock(&mu_);
      if (config_ == nullptr) {
        s = absl::FailedPreconditionError(
            absl::StrCat(who_, ": no config installed yet",
                         all_or_nothing ? "" : "; source values dropped"));
        if (!all_or_nothing && samples.empty()) s = absl::OkStatus();
      } else {
        s = RecordSamples(compiled_, who_, samples, all_or_nothing, values_);
      }
      if (!s.ok() && all_or_nothing && config_ != nullptr) return s;
      EvaluateLocked(clock_->Now());
    }
    notifier_.Dispatch();
    return s;
  }

  void Evaluate() {
    {
      MutexLock lock(&mu_);
      EvaluateLocked(clock_->Now());
    }
    notifier_.Dispatch();
  }

  std::optional<double> signal_value(absl::string_view signal) const {
    MutexLock lock(&mu_);
    const auto it = compiled_.signal_index.find(std::string(signal));
    if (it == compiled_.signal_index.end()) return std::nullopt;
    return values_[it->second];
  }

  // Lock-free.
  int level() const { return level_.load(std::memory_order_relaxed); }
  int admission_threshold() const {
    return admission_threshold_.load(std::memory_order_relaxed);
  }
  uint64_t transitions() const {
    return transitions_.load(std::memory_order_relaxed);
  }

  int num_levels() const {
    MutexLock lock(&mu_);
    return static_cast<int>(compiled_.levels.size());
  }

  FeatureGate Feature(absl::string_view name) {
    MutexLock lock(&mu_);
    return gates_.Get(name, !DisabledAtLocked(std::string(name), level()));
  }
  bool Enabled(absl::string_view name) const {
    MutexLock lock(&mu_);
    return !DisabledAtLocked(std::string(name), level());
  }
  // A gate was issued for `name` or the config names it.
  bool KnowsFeature(absl::string_view name) const {
    const std::string f(name);
    MutexLock lock(&mu_);
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

  absl::Status ForceLevel(int level, absl::Duration ttl) {
    {
      MutexLock lock(&mu_);
      const absl::Time now = clock_->Now();
      absl::StatusOr<OverrideHold> o =
          MakeOverride(who_, static_cast<int>(compiled_.levels.size()), level,
                       ttl, now, steady_.Advance(now));
      if (!o.ok()) return o.status();
      override_ = *o;
      // Only an evaluation ends holds (and reports it); this applies them.
      ApplyHoldLocked(now,
                      HeldLevel(override_, ControlHoldLocked(), this->level()));
      hysteresis_.recover_since.reset();
    }
    notifier_.Dispatch();
    return absl::OkStatus();
  }

  void ClearOverride() {
    {
      MutexLock lock(&mu_);
      if (!override_) return;
      override_.reset();
      hysteresis_.recover_since.reset();
      EvaluateLocked(clock_->Now());
    }
    notifier_.Dispatch();
  }

  // Evaluates first, so that a hold past its deadline has ended.
  std::optional<int> ForcedLevel() {
    Evaluate();
    MutexLock lock(&mu_);
    if (!override_) return std::nullopt;
    return override_->level;
  }
  std::optional<ControlState> CurrentControl() {
    Evaluate();
    MutexLock lock(&mu_);
    return control_;
  }

  absl::Status SetControl(ControlState control) {
    {
      MutexLock lock(&mu_);
      const absl::Time now = clock_->Now();
      if (absl::Status s = CheckControlLocked(control, now); !s.ok()) return s;
      // A recovery in progress keeps its timer: a newer document (an
      // extension) must not restart the hold of every manager it names.
      control_ = std::move(control);
      RecomputeGatesLocked();
      EvaluateLocked(now);
    }
    notifier_.Dispatch();
    return absl::OkStatus();
  }
  absl::Status CheckControl(const ControlState& control) const {
    MutexLock lock(&mu_);
    return CheckControlLocked(control, clock_->Now());
  }
  void ClearControl() {
    {
      MutexLock lock(&mu_);
      if (!control_) return;
      EndControlLocked();
      EvaluateLocked(clock_->Now());
    }
    notifier_.Dispatch();
  }

  absl::Duration time_at_level(int level) const {
    MutexLock lock(&mu_);
    return history_.TimeAt(level, this->level(), clock_->Now());
  }

  void LogPollError(const absl::Status& s) {
    {
      MutexLock lock(&mu_);
      notifier_.Push(Event::PollError(name_, clock_->Now(), s));
    }
    notifier_.Dispatch();
  }

  ManagerStats Stats() const {
    MutexLock lock(&mu_);
    ManagerStats st;
    st.now = clock_->Now();
    st.level = level();
    st.num_levels = static_cast<int>(compiled_.levels.size());
    history_.Report(st.now, st);
    st.features = gates_.Snapshot();
    st.reloads = reloads_;
    // Until an evaluation ends it, a control is reported as in force, as
    // its gates still are.
    if (control_) {
      st.control_version = control_->version;
      st.control_until = control_->hold.until;
    }
    st.rejected_reloads = rejected_reloads_;
    return st;
  }

 private:
  void InstallLocked(DegradationConfig config, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CompiledConfig compiled = Compile(config);
    // Keep the last value of every signal the new config still uses.
    values_ = CarryOver(compiled_, values_, compiled);
    compiled_ = std::move(compiled);
    config_ = std::make_shared<const DegradationConfig>(std::move(config));
    const int n = static_cast<int>(compiled_.levels.size());
    RestartTimers(hysteresis_, compiled_.levels.size());
    if (override_ && override_->level > n) override_->level = n;
    if (control_ && control_->hold.floor && *control_->hold.floor > n) {
      control_->hold.floor = n;
    }
    if (level() > n) {
      ChangeLevelLocked(MakeChange(now, n, LevelChangeReason::kReload));
    } else {
      RecomputeGatesLocked();
    }
  }

  // The holds first (holds.hpp), then, unless an override pins the level,
  // the signals (hysteresis.hpp) above the control's floor.
  // The holds' deadlines are applied whatever the config: a manager with
  // none yet (its starting state) still takes a features-off control and
  // a ForceLevel(0), and each must end at its deadline like any other.
  void EvaluateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::vector<CompiledLevel>& levels = compiled_.levels;
    // Timers run on the steady line: a clock stepped back, or read at an
    // infinite instant, is no time passing (saturating.hpp).
    const absl::Time steady = steady_.Advance(now);
    const HoldDecision h =
        DecideHolds(now, override_, ControlHoldLocked(), level(), steady);
    if (h.override_ended) {
      notifier_.Push(Event::OverrideExpired(name_, now, override_->level));
      override_.reset();
      hysteresis_.recover_since.reset();
    }
    if (h.control_ended) {
      Event e =
          Event::OverrideExpired(name_, now, control_->hold.floor.value_or(-1));
      e.expired.note = control_->note;
      notifier_.Push(std::move(e));
      EndControlLocked();
    }
    if (levels.empty()) return;  // no level to move: only 0 exists
    Decision d;
    if (h.pinned) {
      // The level is pinned, but each level's trigger is still tracked, so
      // that `enter_after` measures real persistence.
      (void)TrackTriggers(levels, values_, hysteresis_, steady);
    } else {
      d = StepAbove(h.floor, levels, values_, hysteresis_, steady,
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
    return DisabledAt(compiled_, feature, level) ||
           ForcedOff(compiled_, FeaturesOffLocked(), feature);
  }
  const std::vector<std::string>* FeaturesOffLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return control_ ? &control_->features_off : nullptr;
  }
  void RecomputeGatesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The analysis does not follow the lock into the lambda, which runs
    // while it is held: hand it the compiled config by pointer.
    const CompiledConfig* compiled = &compiled_;
    const std::vector<std::string>* off = FeaturesOffLocked();
    const int l = level();
    admission_threshold_.store(AdmitThresholdAt(*compiled, l),
                               std::memory_order_relaxed);
    gates_.SetAll([compiled, off, l](const std::string& f) {
      return !DisabledAt(*compiled, f, l) && !ForcedOff(*compiled, off, f);
    });
  }
  std::optional<ControlHold> ControlHoldLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!control_) return std::nullopt;
    return control_->hold;
  }
  absl::Status CheckControlLocked(const ControlState& c, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return levels::CheckControl(who_, compiled_, c.version, c.hold,
                                c.features_off, now);
  }
  // However the control ends. A floor's end starts the recovery hold
  // afresh, as an override's does; a features-only control never touched
  // the level's timers.
  void EndControlLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (control_->hold.floor) hysteresis_.recover_since.reset();
    control_.reset();
    RecomputeGatesLocked();
  }
  // Moves the level where the holds put it, if anywhere: a kOverride change
  // noting the control when the floor is what moved it.
  void ApplyHoldLocked(absl::Time now, std::optional<Held> h)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!h) return;
    LevelChange c = MakeChange(now, h->level, LevelChangeReason::kOverride);
    if (h->by_control) {
      c.until = control_->hold.until;
      c.note = control_->note;
    } else {
      c.until = override_->shown_until;
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
  // The one place the level moves, whatever moved it. Its event is queued
  // under the lock, so that the queue's order is the transitions'.
  void ChangeLevelLocked(LevelChange c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    history_.Record(c.from, c.to, c.time);
    hysteresis_.level = c.to;  // already so when Step moved it
    hysteresis_.last_change = steady_.Advance(c.time);
    level_.store(c.to, std::memory_order_relaxed);
    transitions_.fetch_add(1, std::memory_order_relaxed);
    RecomputeGatesLocked();
    notifier_.Push(Event(std::move(c)));
  }

  const std::string name_;
  const std::string who_;  // "degradation manager 'name'", for messages
  const Clock* const clock_;

  // Read on every gate check and level() call; equal to hysteresis_.level
  // whenever mu_ is free.
  std::atomic<int> level_{0};
  // AdmitThresholdAt(compiled_, level_), republished with every gate
  // recomputation (level changes and reloads).
  std::atomic<int> admission_threshold_{kAdmitAllRank};
  std::atomic<uint64_t> transitions_{0};

  mutable Mutex mu_;
  std::shared_ptr<const DegradationConfig> config_ ABSL_GUARDED_BY(mu_);
  CompiledConfig compiled_ ABSL_GUARDED_BY(mu_);
  // The last value of each signal, by compiled_.signal_index.
  std::vector<std::optional<double>> values_ ABSL_GUARDED_BY(mu_);
  HysteresisState hysteresis_ ABSL_GUARDED_BY(mu_);
  // The time line hysteresis_'s timers and override_'s deadline are on.
  SteadyTime steady_ ABSL_GUARDED_BY(mu_);
  LevelHistory history_ ABSL_GUARDED_BY(mu_);
  std::optional<OverrideHold> override_ ABSL_GUARDED_BY(mu_);
  std::optional<ControlState> control_ ABSL_GUARDED_BY(mu_);
  GateTable gates_ ABSL_GUARDED_BY(mu_);
  uint64_t reloads_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_reloads_ ABSL_GUARDED_BY(mu_) = 0;
  // Last: its listener, which reads the state through the manager's view,
  // is detached before any of the state goes.
  ManagerNotifier notifier_;
};

}  // namespace levels
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_LEVEL_MACHINE_HPP_
