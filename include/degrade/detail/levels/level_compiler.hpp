// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A DegradationConfig turned into what the level decision reads on every
// sample: each signal name resolved once to an index into a vector of
// values, every recover threshold worked out (explicit, or enter *
// recover_ratio), each level's hold and enter_after with the config-wide
// defaults applied, and the disable lists made cumulative, so that "is
// feature X off at level k" is two set lookups. Also the checks and the
// carry-over of samples that only need the compiled signals. Pure: these
// read their arguments and nothing else; the manager calls them under its
// lock.
//
//   const levels::CompiledConfig c = levels::Compile(config);
//   std::vector<std::optional<double>> values(c.signal_names.size());
//   values[c.signal_index.at("gpu_util")] = 0.93;
//   bool off = levels::DisabledAt(c, "semantic_cache", /*level=*/2);
//
// Plain values: thread-compatible.

#ifndef DEGRADE_DETAIL_LEVELS_LEVEL_COMPILER_HPP_
#define DEGRADE_DETAIL_LEVELS_LEVEL_COMPILER_HPP_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace levels {

// One signal's threshold at one level.
struct Threshold {
  std::size_t signal;  // index into the values (CompiledConfig::signal_index)
  double value;
};

// A level with its signals resolved to indices. `enter` and `recover` list
// the same signals in the same order.
struct CompiledLevel {
  std::vector<Threshold> enter;
  std::vector<Threshold> recover;
  absl::Duration hold;
  absl::Duration enter_after;
  std::set<std::string> disabled;  // cumulative over levels 1..k
  bool all_non_critical = false;   // cumulative too
  // The admission threshold from this level's floor or the nearest lower
  // level's (kAdmitAllRank when none names one).
  int admit_threshold = kAdmitAllRank;
};

struct CompiledConfig {
  // levels[0] is level 1.
  std::vector<CompiledLevel> levels;
  // Every signal some level uses, by name, and its index; indices are dense
  // and follow the order of first use (level 1's signals first).
  std::map<std::string, std::size_t> signal_index;
  // The inverse: signal_names[signal_index[s]] == s.
  std::vector<std::string> signal_names;
  // The features `kAllNonCritical` leaves on.
  std::set<std::string> critical;
};

// Compiles `config`. REQUIRES: ValidateDegradationConfig(config) is OK
// (an invalid config compiles to something, but not to anything meaningful).
CompiledConfig Compile(const DegradationConfig& config);

// Whether `feature` is switched off at `level`: level 0 (or no levels)
// switches nothing off; level k switches off what levels 1..k list, and,
// once one of them lists `kAllNonCritical`, every feature that is not
// critical. An explicit entry wins over `critical`.
// REQUIRES: 0 <= level <= c.levels.size().
bool DisabledAt(const CompiledConfig& c, const std::string& feature, int level);

// The admission threshold in force at `level` (0: kAdmitAllRank).
int AdmitThresholdAt(const CompiledConfig& c, int level);

// OK if `value` may be recorded for `signal`; else INVALID_ARGUMENT, after
// `who` ("degradation manager 'm'"), naming the signal and the rule: a
// signal no level uses (the message lists the known ones), or a value that
// is not finite.
absl::Status CheckSample(const CompiledConfig& c, absl::string_view who,
                         const std::string& signal, double value);

// Records `samples` in `values` (indexed by c's signals) and returns the
// first CheckSample error. With `all_or_nothing` an error records none of
// them (one Observe call is one request); without, each valid one is
// recorded (a poll's sources fail one by one).
absl::Status RecordSamples(
    const CompiledConfig& c, absl::string_view who,
    const std::vector<std::pair<std::string, double>>& samples,
    bool all_or_nothing, std::vector<std::optional<double>>& values);

// The values of `to`'s signals, carried over by name from `values` (indexed
// by `from`'s signals); signals new in `to` have none.
std::vector<std::optional<double>> CarryOver(
    const CompiledConfig& from,
    const std::vector<std::optional<double>>& values, const CompiledConfig& to);

// ---- Implementation details ----

inline CompiledConfig Compile(const DegradationConfig& config) {
  CompiledConfig out;
  out.critical.insert(config.critical.begin(), config.critical.end());
  auto index_of = [&out](const std::string& signal) {
    const auto [it, added] =
        out.signal_index.emplace(signal, out.signal_names.size());
    if (added) out.signal_names.push_back(signal);
    return it->second;
  };
  std::set<std::string> disabled;
  bool all_non_critical = false;
  int admit_threshold = kAdmitAllRank;
  for (const LevelSpec& spec : config.levels) {
    CompiledLevel c;
    for (const auto& [signal, threshold] : spec.enter) {
      const std::size_t i = index_of(signal);
      c.enter.push_back({i, threshold});
      c.recover.push_back({i, RecoverThreshold(config, spec, signal)});
    }
    c.hold = spec.hold.value_or(config.hold);
    c.enter_after = spec.enter_after.value_or(config.enter_after);
    for (const std::string& f : spec.disable) {
      if (f == kAllNonCritical) {
        all_non_critical = true;
      } else {
        disabled.insert(f);
      }
    }
    c.disabled = disabled;
    c.all_non_critical = all_non_critical;
    if (spec.admit) admit_threshold = spec.admit->threshold();
    c.admit_threshold = admit_threshold;
    out.levels.push_back(std::move(c));
  }
  return out;
}

inline int AdmitThresholdAt(const CompiledConfig& c, int level) {
  if (level <= 0 || c.levels.empty()) return kAdmitAllRank;
  const std::size_t i =
      std::min(static_cast<std::size_t>(level), c.levels.size());
  return c.levels[i - 1].admit_threshold;
}

inline bool DisabledAt(const CompiledConfig& c, const std::string& feature,
                       int level) {
  if (level <= 0 || c.levels.empty()) return false;
  const CompiledLevel& l = c.levels[static_cast<std::size_t>(level) - 1];
  if (l.disabled.count(feature) != 0) return true;
  return l.all_non_critical && c.critical.count(feature) == 0;
}

inline absl::Status CheckSample(const CompiledConfig& c, absl::string_view who,
                                const std::string& signal, double value) {
  if (c.signal_index.find(signal) == c.signal_index.end()) {
    // Names come from configs and callers: escaped, abbreviated, and at
    // most 16 of them, so the message stays one short line.
    std::vector<std::string> known;
    for (const auto& [name, index] : c.signal_index) {
      if (known.size() == 16) {
        known.push_back(
            absl::StrCat("... (", c.signal_index.size(), " in all)"));
        break;
      }
      known.push_back(Abbreviated(name, kMaxNameChars));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": unknown signal '", Abbreviated(signal, kMaxNameChars),
        "' (no level uses it; known: ", absl::StrJoin(known, ", "), ")"));
  }
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": signal '", Abbreviated(signal, kMaxNameChars),
                     "' = ", ExactNumber(value), ": values must be finite"));
  }
  return absl::OkStatus();
}

inline absl::Status RecordSamples(
    const CompiledConfig& c, absl::string_view who,
    const std::vector<std::pair<std::string, double>>& samples,
    bool all_or_nothing, std::vector<std::optional<double>>& values) {
  const auto record = [&c, &values](const std::string& signal, double v) {
    values[c.signal_index.find(signal)->second] = v;
  };
  absl::Status first;
  for (const auto& [signal, value] : samples) {
    absl::Status s = CheckSample(c, who, signal, value);
    if (s.ok()) {
      if (!all_or_nothing) record(signal, value);
    } else if (all_or_nothing) {
      return s;
    } else if (first.ok()) {
      first = std::move(s);
    }
  }
  if (all_or_nothing) {
    for (const auto& [signal, value] : samples) record(signal, value);
  }
  return first;
}

inline std::vector<std::optional<double>> CarryOver(
    const CompiledConfig& from,
    const std::vector<std::optional<double>>& values,
    const CompiledConfig& to) {
  std::vector<std::optional<double>> out(to.signal_names.size());
  for (const auto& [name, old_index] : from.signal_index) {
    const auto it = to.signal_index.find(name);
    if (it != to.signal_index.end()) out[it->second] = values[old_index];
  }
  return out;
}

}  // namespace levels
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_LEVEL_COMPILER_HPP_
