// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The out-of-line member functions of DegradationManager, included at the
// end of degradation_manager.hpp (spdlog's "-inl" split): the header keeps
// the contract, this file the mechanics. Including it alone includes the
// header first, so either order gives the whole class.
//
// Thread safety: see DegradationManager.

#ifndef DEGRADE_DETAIL_LEVELS_DEGRADATION_MANAGER_INL_HPP_
#define DEGRADE_DETAIL_LEVELS_DEGRADATION_MANAGER_INL_HPP_

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_manager.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

inline DegradationManager::DegradationManager(Options options)
    : name_(options.name.empty() ? std::string(kDefaultManagerName)
                                 : std::move(options.name)),
      who_(absl::StrCat("degradation manager '", name_, "'")),
      clock_(options.clock != nullptr ? options.clock : &RealClock::Instance()),
      has_own_log_(static_cast<bool>(options.log_sink)),
      history_(clock_->Now()),
      notifier_(options.metrics, view_, name_, std::move(options.log_sink),
                clock_, options.max_log_lines_per_second) {}

inline absl::Status DegradationManager::Reload(DegradationConfig config) {
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

inline absl::Status DegradationManager::RejectReload(absl::Status error) {
  {
    detail::MutexLock lock(&mu_);
    ++rejected_reloads_;
    PushLocked(Event::Rejected(name_, clock_->Now(), error));
  }
  Dispatch();
  return error;
}

inline absl::Status DegradationManager::ObserveBatch(
    const std::vector<std::pair<std::string, double>>& samples) {
  {
    detail::MutexLock lock(&mu_);
    if (config_ == nullptr) {
      return Error(absl::StatusCode::kFailedPrecondition,
                   "no config installed yet");
    }
    for (const auto& [signal, value] : samples) {
      absl::Status s = CheckSampleLocked(signal, value);
      if (!s.ok()) return s;
    }
    for (const auto& [signal, value] : samples) RecordLocked(signal, value);
    EvaluateLocked(clock_->Now());
  }
  Dispatch();
  return absl::OkStatus();
}

inline absl::Status DegradationManager::PollOnce() {
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
      for (const auto& [signal, value] : samples) {
        absl::Status s = CheckSampleLocked(signal, value);
        if (!s.ok()) {
          if (first_error.ok()) first_error = s;
          continue;
        }
        RecordLocked(signal, value);
      }
    }
    EvaluateLocked(clock_->Now());
  }
  Dispatch();
  return first_error;
}

inline FeatureGate DegradationManager::Feature(absl::string_view name) {
  detail::MutexLock lock(&mu_);
  return gates_.Get(name, !DisabledAtLocked(std::string(name), level()));
}

inline absl::Status DegradationManager::ForceLevel(int level,
                                                   absl::Duration ttl) {
  {
    detail::MutexLock lock(&mu_);
    const int n = static_cast<int>(compiled_.levels.size());
    if (level < 0 || level > n) {
      return Error(absl::StatusCode::kInvalidArgument, "ForceLevel(", level,
                   "): the level must be in [0, ", n, "]");
    }
    if (ttl <= absl::ZeroDuration()) {
      return Error(absl::StatusCode::kInvalidArgument, "ForceLevel(", level,
                   ", ", absl::FormatDuration(ttl), "): the ttl must be > 0");
    }
    const absl::Time now = clock_->Now();
    override_ = detail::levels::OverrideHold{
        level,
        ttl == absl::InfiniteDuration() ? absl::InfiniteFuture() : now + ttl};
    ApplyHoldLocked(now, detail::levels::HeldLevel(
                             override_, ControlHoldLocked(), this->level()));
    hysteresis_.recover_since.reset();
  }
  Dispatch();
  return absl::OkStatus();
}

inline void DegradationManager::ApplyHoldLocked(
    absl::Time now, std::optional<detail::levels::Held> h) {
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

inline bool DegradationManager::KnowsFeature(absl::string_view name) const {
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

inline absl::Status DegradationManager::SetControl(Control control) {
  {
    detail::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    absl::Status s = detail::levels::CheckControl(
        who_, compiled_, control.version, {control.level, control.until},
        control.features_off, now);
    if (!s.ok()) return s;
    // A recovery in progress keeps its timer: a newer document (an
    // extension) must not restart the hold of every manager it names.
    control_ = std::move(control);
    RecomputeGatesLocked();
    EvaluateLocked(now);
  }
  Dispatch();
  return absl::OkStatus();
}

inline void DegradationManager::ClearControl() {
  {
    detail::MutexLock lock(&mu_);
    if (!control_) return;
    // A floor's end starts the recovery hold afresh, as an override's does;
    // a features-only control never touched the level's timers.
    if (control_->level) hysteresis_.recover_since.reset();
    control_.reset();
    RecomputeGatesLocked();
    EvaluateLocked(clock_->Now());
  }
  Dispatch();
}

inline void DegradationManager::InstallLocked(DegradationConfig config,
                                              absl::Time now) {
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

inline void DegradationManager::EvaluateLocked(absl::Time now) {
  const std::vector<detail::levels::CompiledLevel>& levels = compiled_.levels;
  if (levels.empty()) return;
  const detail::levels::HoldDecision h =
      detail::levels::DecideHolds(now, override_, ControlHoldLocked(), level());
  if (h.override_ended) {
    PushLocked(Event::OverrideExpired(name_, now, override_->level));
    override_.reset();
    hysteresis_.recover_since.reset();
  }
  if (h.control_ended) {
    Event e = Event::OverrideExpired(name_, now, control_->level.value_or(-1));
    e.expired.note = control_->note;
    PushLocked(std::move(e));
    if (control_->level) hysteresis_.recover_since.reset();  // as ClearControl
    control_.reset();
    RecomputeGatesLocked();
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
    // A hold ended with another holding elsewhere, or a floor was set above
    // the level.
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

inline void DegradationManager::ChangeLevelLocked(LevelChange c) {
  history_.Record(c.from, c.to, c.time);
  hysteresis_.level = c.to;  // already so when Step moved it
  hysteresis_.last_change = c.time;
  level_.store(c.to, std::memory_order_relaxed);
  transitions_.fetch_add(1, std::memory_order_relaxed);
  RecomputeGatesLocked();
  PushLocked(Event(std::move(c)));
}

inline void DegradationManager::LogPollError(const absl::Status& s) {
  {
    detail::MutexLock lock(&mu_);
    PushLocked(Event::PollError(name_, clock_->Now(), s));
  }
  Dispatch();
}

inline ManagerStats DegradationManager::Stats() const {
  detail::MutexLock lock(&mu_);
  ManagerStats st;
  st.now = clock_->Now();
  st.level = level();
  st.num_levels = static_cast<int>(compiled_.levels.size());
  st.transitions.assign(history_.transitions().begin(),
                        history_.transitions().end());
  for (int k = 0; k <= std::max(st.num_levels, st.level); ++k) {
    st.time_at_level.push_back(history_.TimeAt(k, st.level, st.now));
  }
  st.features = gates_.Snapshot();
  st.reloads = reloads_;
  // Until an evaluation ends it, a control is reported as in force, as its
  // gates still are.
  if (control_) {
    st.control_version = control_->version;
    st.control_until = control_->until;
  }
  st.rejected_reloads = rejected_reloads_;
  for (int k = 1; k <= st.level; ++k) {
    st.at_or_above_since.push_back(history_.AtOrAboveSince(k));
  }
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_DEGRADATION_MANAGER_INL_HPP_
