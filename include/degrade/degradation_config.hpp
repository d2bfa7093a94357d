// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degradation_config.hpp
// -----------------------------------------------------------------------------
//
// The configuration of a `DegradationManager` as plain values: which load
// signals push the service into which degradation level, what each level
// switches off, and how recovery is damped. `config_parse.hpp` reads it from
// JSON; code can also build it directly:
//
//   degrade::DegradationConfig config;
//   config.name = "inference";
//   degrade::LevelSpec l1;
//   l1.name = "level1";
//   l1.enter = {{"gpu_util", 0.85}, {"queue_length", 20}};
//   l1.disable = {"semantic_cache", "debug_log"};
//   config.levels.push_back(l1);
//   absl::Status ok = degrade::ValidateDegradationConfig(config);
//
// Every rule here is checked by `ValidateDegradationConfig()`, and the
// manager refuses a config that breaks one; the messages name the JSON path a
// config file would use (`degradation.level2.trigger.gpu_util`).
//
// Plain values: thread-compatible, like any struct.

#ifndef DEGRADE_DEGRADATION_CONFIG_HPP_
#define DEGRADE_DEGRADATION_CONFIG_HPP_

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/request_class.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The `disable` token that switches off every feature not listed as critical.
inline constexpr absl::string_view kAllNonCritical = "all_non_critical";

// The most levels a manager supports (level 0, normal, is not counted).
inline constexpr int kMaxLevels = 8;

// The name of a manager (and of its config) that was given none.
inline constexpr absl::string_view kDefaultManagerName = "degradation";

// AdmitFloor
//
// The least important requests a level still admits (request_class.hpp):
// every class of a more important criticality, and of `min` itself the
// cohorts 0 .. cohorts_at_min - 1. `{kSheddablePlus, 64}` refuses all
// SHEDDABLE traffic and half the SHEDDABLE_PLUS users, always the same half
// within a cohort period. A level without one keeps the floor of the level
// below (level 0 admits everything), so floors, like `disable`, accumulate.
struct AdmitFloor {
  Criticality min = Criticality::kSheddable;
  // In [0, 128]: 128 admits all of `min`, 0 none of it.
  int cohorts_at_min = kNumCohorts;

  // The admission threshold: ranks below it are admitted.
  int threshold() const { return FloorRank(min, cohorts_at_min); }
};

inline bool operator==(const AdmitFloor& a, const AdmitFloor& b) {
  return a.min == b.min && a.cohorts_at_min == b.cohorts_at_min;
}

// LevelSpec
//
// One degradation level. Level k is wanted when ANY of its `enter` signals
// reaches (>=) its threshold. The manager leaves level k for k-1 only after
// EVERY one of its signals has stayed below (<) its recover threshold for
// `hold`.
struct LevelSpec {
  // Names the level in messages and logs; "level1", "level2", ... in JSON.
  std::string name;
  // Signal name -> enter threshold, finite and > 0. At least one.
  std::map<std::string, double> enter;
  // Signal name -> recover threshold, > 0 and at most the enter threshold.
  // A signal of `enter` missing here recovers below `enter * recover_ratio`
  // (which must not round to 0). A threshold of 0 is refused: no signal
  // falls below it, so the level could never be left.
  std::map<std::string, double> recover;
  // Features this level switches off (levels are cumulative: level k also
  // switches off everything levels 1..k-1 do). `kAllNonCritical` switches
  // off every feature not in `DegradationConfig::critical`.
  std::vector<std::string> disable;
  // Per-level overrides of the config-wide values.
  std::optional<absl::Duration> hold;
  std::optional<absl::Duration> enter_after;
  // Admission floor from this level up (see AdmitFloor); none keeps the
  // lower level's. A floor must not admit more than a lower level's.
  std::optional<AdmitFloor> admit;
};

// DegradationConfig
//
// A whole manager configuration. `levels[0]` is level 1.
struct DegradationConfig {
  // Names the config in validation errors ("degradation config '<name>'").
  // The manager's own name, in its logs and metrics, is ManagerOptions::name.
  std::string name = std::string(kDefaultManagerName);
  // 1 to kMaxLevels levels. For a signal used by several levels, enter
  // thresholds must rise strictly with the level.
  std::vector<LevelSpec> levels;
  // Recover threshold = enter threshold * recover_ratio where a level gives
  // none; in (0, 1]. The article enters at 90% and leaves below 75%: 0.83.
  double recover_ratio = 0.8;
  // How long every signal of level k must stay below its recover threshold
  // before the manager steps down to k-1. Each step needs a fresh hold.
  absl::Duration hold = absl::Seconds(60);
  // How long a level's trigger must hold before the manager enters it;
  // filters one-sample spikes. 0 enters on the first sample.
  absl::Duration enter_after = absl::ZeroDuration();
  // Minimum time after any level change before the next step down.
  // Escalation is never delayed by it.
  absl::Duration cooldown = absl::ZeroDuration();
  // Features that `kAllNonCritical` leaves on (an explicit `disable` entry
  // still switches them off).
  std::vector<std::string> critical;
};

// Field-by-field equality, so a re-pushed identical config can be ignored.
inline bool operator==(const LevelSpec& a, const LevelSpec& b) {
  return a.name == b.name && a.enter == b.enter && a.recover == b.recover &&
         a.disable == b.disable && a.hold == b.hold &&
         a.enter_after == b.enter_after && a.admit == b.admit;
}
inline bool operator!=(const LevelSpec& a, const LevelSpec& b) {
  return !(a == b);
}
inline bool operator==(const DegradationConfig& a, const DegradationConfig& b) {
  return a.name == b.name && a.levels == b.levels &&
         a.recover_ratio == b.recover_ratio && a.hold == b.hold &&
         a.enter_after == b.enter_after && a.cooldown == b.cooldown &&
         a.critical == b.critical;
}
inline bool operator!=(const DegradationConfig& a, const DegradationConfig& b) {
  return !(a == b);
}

namespace detail {

// Names and keys come from config files: escaped and abbreviated in
// messages (json_text.hpp), and numbers in their shortest exact form, so a
// value and the threshold it broke never print alike.
inline std::string LevelPath(const DegradationConfig& c, std::size_t i) {
  const std::string& n = c.levels[i].name;
  return n.empty() ? absl::StrCat("degradation.level", i + 1)
                   : KeyPath("degradation", n);
}

inline std::string Quoted(absl::string_view name) {
  return absl::StrCat("\"", Abbreviated(name, kMaxNameChars), "\"");
}

inline absl::Status ConfigError(const DegradationConfig& c,
                                absl::string_view path, absl::string_view value,
                                absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("degradation config '", Abbreviated(c.name, kMaxNameChars),
                   "': ", path, " = ", value, ": ", rule));
}

// Enter and recover thresholds are finite and > 0. Zero is refused because
// a level is left only when its signals fall below (<) their recover
// thresholds: below 0 is where no utilisation, queue length or latency ever
// goes, so the level could never be left.
inline absl::Status CheckThreshold(const DegradationConfig& c,
                                   absl::string_view path, double threshold) {
  if (threshold == 0.0) {
    return ConfigError(c, path, "0",
                       "thresholds must be > 0: a level is left when its "
                       "signals fall below the recover threshold, and no "
                       "signal >= 0 falls below 0, so the level could never "
                       "be left");
  }
  if (!std::isfinite(threshold) || threshold < 0.0) {
    return ConfigError(c, path, ExactNumber(threshold),
                       "thresholds must be finite and > 0");
  }
  return absl::OkStatus();
}

inline bool ValidDuration(absl::Duration d) {
  return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
}

}  // namespace detail

// The recover threshold of `signal` at `level` (see LevelSpec::recover).
// REQUIRES: `signal` is one of `level.enter`.
inline double RecoverThreshold(const DegradationConfig& config,
                               const LevelSpec& level,
                               const std::string& signal) {
  const auto it = level.recover.find(signal);
  if (it != level.recover.end()) return it->second;
  return level.enter.at(signal) * config.recover_ratio;
}

// Returns OK, or INVALID_ARGUMENT naming the path, the value and the rule of
// the first problem found.
inline absl::Status ValidateDegradationConfig(const DegradationConfig& c) {
  using detail::ConfigError;
  if (c.name.empty()) {
    return ConfigError(c, "degradation.name", "\"\"", "must not be empty");
  }
  if (c.levels.empty() ||
      c.levels.size() > static_cast<std::size_t>(kMaxLevels)) {
    return ConfigError(c, "degradation",
                       absl::StrCat(c.levels.size(), " levels"),
                       absl::StrCat("needs 1 to ", kMaxLevels, " levels"));
  }
  if (!std::isfinite(c.recover_ratio) || c.recover_ratio <= 0.0 ||
      c.recover_ratio > 1.0) {
    return ConfigError(c, "degradation.recover_ratio",
                       detail::ExactNumber(c.recover_ratio), "must be in (0, 1]");
  }
  if (!detail::ValidDuration(c.hold)) {
    return ConfigError(c, "degradation.hold", absl::FormatDuration(c.hold),
                       "must be a finite duration >= 0");
  }
  if (!detail::ValidDuration(c.enter_after)) {
    return ConfigError(c, "degradation.enter_after",
                       absl::FormatDuration(c.enter_after),
                       "must be a finite duration >= 0");
  }
  if (!detail::ValidDuration(c.cooldown)) {
    return ConfigError(c, "degradation.cooldown",
                       absl::FormatDuration(c.cooldown),
                       "must be a finite duration >= 0");
  }
  for (std::size_t i = 0; i < c.critical.size(); ++i) {
    const std::string& f = c.critical[i];
    if (f.empty() || f == kAllNonCritical) {
      return ConfigError(c, absl::StrCat("degradation.critical[", i, "]"),
                         detail::Quoted(f), "must name a feature");
    }
  }
  std::set<std::string> level_names;
  std::map<std::string, double> previous_enter;  // signal -> lower level's
  int previous_floor = kAdmitAllRank;              // the lower level's threshold
  for (std::size_t i = 0; i < c.levels.size(); ++i) {
    const LevelSpec& l = c.levels[i];
    const std::string path = detail::LevelPath(c, i);
    if (!l.name.empty() && !level_names.insert(l.name).second) {
      return ConfigError(c, path, detail::Quoted(l.name),
                         "level names must be unique");
    }
    if (l.enter.empty()) {
      return ConfigError(c, path + ".trigger", "{}",
                         "a level needs at least one trigger signal");
    }
    for (const auto& [signal, threshold] : l.enter) {
      const std::string p = detail::KeyPath(path + ".trigger", signal);
      if (signal.empty()) {
        return ConfigError(c, p, "\"\"", "signal names must not be empty");
      }
      if (absl::Status s = detail::CheckThreshold(c, p, threshold); !s.ok()) {
        return s;
      }
      if (l.recover.count(signal) == 0 &&
          !(threshold * c.recover_ratio > 0.0)) {
        return ConfigError(
            c, p, detail::ExactNumber(threshold),
            absl::StrCat("its recover threshold (enter * recover_ratio ",
                         detail::ExactNumber(c.recover_ratio),
                         ") rounds to 0: the level could never be left"));
      }
      const auto prev = previous_enter.find(signal);
      if (prev != previous_enter.end() && !(threshold > prev->second)) {
        return ConfigError(
            c, p, detail::ExactNumber(threshold),
            absl::StrCat("thresholds must rise with the level (a lower level "
                         "enters at ",
                         detail::ExactNumber(prev->second), ")"));
      }
    }
    for (const auto& [signal, threshold] : l.recover) {
      const std::string p = detail::KeyPath(path + ".recover", signal);
      const auto enter = l.enter.find(signal);
      if (enter == l.enter.end()) {
        return ConfigError(c, p, detail::ExactNumber(threshold),
                           "recover names a signal this level's trigger does "
                           "not use");
      }
      if (absl::Status s = detail::CheckThreshold(c, p, threshold); !s.ok()) {
        return s;
      }
      if (threshold > enter->second) {
        return ConfigError(
            c, p, detail::ExactNumber(threshold),
            absl::StrCat("a recover threshold must not be above the enter "
                         "threshold (",
                         detail::ExactNumber(enter->second), ")"));
      }
    }
    for (std::size_t j = 0; j < l.disable.size(); ++j) {
      if (l.disable[j].empty()) {
        return ConfigError(c, absl::StrCat(path, ".disable[", j, "]"), "\"\"",
                           "feature names must not be empty");
      }
    }
    if (l.hold && !detail::ValidDuration(*l.hold)) {
      return ConfigError(c, path + ".hold", absl::FormatDuration(*l.hold),
                         "must be a finite duration >= 0");
    }
    if (l.enter_after && !detail::ValidDuration(*l.enter_after)) {
      return ConfigError(c, path + ".enter_after",
                         absl::FormatDuration(*l.enter_after),
                         "must be a finite duration >= 0");
    }
    if (l.admit) {
      const AdmitFloor& a = *l.admit;
      if (static_cast<std::size_t>(a.min) >= kNumCriticalities) {
        return ConfigError(c, path + ".admit.min",
                           absl::StrCat(static_cast<int>(a.min)),
                           "must be CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS "
                           "or SHEDDABLE");
      }
      if (a.cohorts_at_min < 0 || a.cohorts_at_min > kNumCohorts) {
        return ConfigError(c, path + ".admit.cohorts_at_min",
                           absl::StrCat(a.cohorts_at_min),
                           "must be an integer in [0, 128]");
      }
      if (a.threshold() > previous_floor) {
        return ConfigError(
            c, path + ".admit",
            absl::StrCat("{\"min\": \"", CriticalityName(a.min),
                         "\", \"cohorts_at_min\": ", a.cohorts_at_min, "}"),
            "a level must not admit more than the level below it (floors "
            "tighten as the level rises)");
      }
      previous_floor = a.threshold();
    }
    for (const auto& [signal, threshold] : l.enter) {
      previous_enter[signal] = threshold;
    }
  }
  return absl::OkStatus();
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADATION_CONFIG_HPP_
