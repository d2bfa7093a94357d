// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/levels/degradation_json.hpp
// -----------------------------------------------------------------------------
//
// The readers for the "degradation" object of a config document (the format
// is described in config_parse.hpp): the level keys `level1` .. `levelN`,
// each level's trigger / recover / disable / hold / enter_after, and the
// config-wide keys. They fill a `DegradationConfig` and stop at the first
// problem with a status naming the JSON path, the value and the rule; the
// semantic rules (thresholds rising with the level, ...) are left to
// `ValidateDegradationConfig()`, which `ParseDegradationConfig()` runs next.
//
//   DegradationConfig config;
//   absl::Status s = json::ReadDegradation(source, (*root)["degradation"],
//                                          &config);
//
// Pure functions of their arguments: thread-safe.

#ifndef DEGRADE_DETAIL_LEVELS_DEGRADATION_JSON_HPP_
#define DEGRADE_DETAIL_LEVELS_DEGRADATION_JSON_HPP_

#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace json {

// An object of signal name -> number.
inline absl::Status ReadThresholds(absl::string_view source,
                                   absl::string_view path, const Json& j,
                                   std::map<std::string, double>* out) {
  if (!j.is_object()) {
    return WrongType(source, path, j, "an object of signal name -> number");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    double v = 0;
    if (absl::Status s =
            ReadNumber(source, AppendKey(path, it.key()), it.value(), &v);
        !s.ok()) {
      return s;
    }
    (*out)[it.key()] = v;
  }
  return absl::OkStatus();
}

// Parses a level key: "level1" .. "level<kMaxLevels>" -> 1 .. kMaxLevels.
// Returns 0 and sets `*problem` for a key that starts with "level" but is
// not one; returns -1 for any other key.
inline int LevelNumber(absl::string_view key, std::string* problem) {
  if (!absl::StartsWith(key, "level")) return -1;
  const absl::string_view digits = key.substr(5);
  const std::string range = absl::StrCat("level1 to level", kMaxLevels);
  bool all_digits = !digits.empty();
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) all_digits = false;
  }
  if (!all_digits) {
    *problem = absl::StrCat("not a level key: levels are named ", range);
    return 0;
  }
  if (digits.size() > 1 && digits[0] == '0') {
    *problem =
        absl::StrCat("level numbers have no leading zeros (", range, ")");
    return 0;
  }
  if (digits.size() > 2) {  // also keeps the arithmetic below from overflowing
    *problem = absl::StrCat("at most ", kMaxLevels, " levels (", range, ")");
    return 0;
  }
  int n = 0;
  for (char c : digits) n = n * 10 + (c - '0');
  if (n == 0) {
    *problem = absl::StrCat("level numbers start at 1 (", range, ")");
    return 0;
  }
  if (n > kMaxLevels) {
    *problem = absl::StrCat("at most ", kMaxLevels, " levels (", range, ")");
    return 0;
  }
  return n;
}

// "admit": {"min": "<CRITICALITY>", "cohorts_at_min": <0..128>}; "min" is
// required, "cohorts_at_min" defaults to 128 (all of `min`).
inline absl::Status ReadAdmit(absl::string_view source, absl::string_view path,
                              const Json& j, AdmitFloor* out) {
  if (!j.is_object()) {
    return WrongType(source, path, j,
                     "an object {\"min\": \"SHEDDABLE_PLUS\", "
                     "\"cohorts_at_min\": 64}");
  }
  if (j.find("min") == j.end()) {
    return ErrorWithText(source, AppendKey(path, "min"), "(missing)",
                         "an admit object names the least important "
                         "criticality it admits");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = AppendKey(path, it.key());
    absl::Status s;
    if (it.key() == "min") {
      std::string name;
      s = ReadString(source, p, it.value(), &name);
      if (s.ok()) {
        absl::StatusOr<Criticality> c = ParseCriticality(name);
        if (c.ok()) {
          out->min = *c;
        } else {
          s = Error(source, p, it.value(),
                    "must be CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS "
                    "or SHEDDABLE");
        }
      }
    } else if (it.key() == "cohorts_at_min") {
      double v = 0;
      s = ReadNumber(source, p, it.value(), &v);
      if (s.ok() && !(v >= 0 && v <= kNumCohorts && v == static_cast<int>(v))) {
        s = Error(source, p, it.value(), "must be an integer in [0, 128]");
      }
      if (s.ok()) out->cohorts_at_min = static_cast<int>(v);
    } else {
      s = UnknownKey(source, p, it.value(), "min, cohorts_at_min");
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

inline absl::Status ReadLevel(absl::string_view source, absl::string_view path,
                              const Json& j, LevelSpec* level) {
  constexpr absl::string_view kAllowed =
      "trigger, recover, disable, hold, enter_after, admit";
  if (!j.is_object()) return WrongType(source, path, j, "an object");
  if (j.find("trigger") == j.end()) {
    return ErrorWithText(source, AppendKey(path, "trigger"), "(missing)",
                         "every level needs a trigger object of signal name -> "
                         "threshold");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string p = AppendKey(path, key);
    absl::Status s;
    if (key == "trigger") {
      s = ReadThresholds(source, p, v, &level->enter);
    } else if (key == "recover") {
      s = ReadThresholds(source, p, v, &level->recover);
    } else if (key == "disable") {
      s = ReadNameList(source, p, v, "feature", &level->disable);
    } else if (key == "hold") {
      absl::Duration d;
      s = ReadDuration(source, p, v, &d);
      if (s.ok()) level->hold = d;
    } else if (key == "enter_after") {
      absl::Duration d;
      s = ReadDuration(source, p, v, &d);
      if (s.ok()) level->enter_after = d;
    } else if (key == "admit") {
      AdmitFloor a;
      s = ReadAdmit(source, p, v, &a);
      if (s.ok()) level->admit = a;
    } else {
      s = UnknownKey(source, p, v, kAllowed);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

inline absl::Status ReadDegradation(absl::string_view source, const Json& d,
                                    DegradationConfig* config) {
  const std::string path = "degradation";
  const std::string allowed =
      absl::StrCat("level1 to level", kMaxLevels,
                   ", name, recover_ratio, hold, enter_after, cooldown, "
                   "critical");
  if (!d.is_object()) return WrongType(source, path, d, "an object");

  // Key order is irrelevant: nlohmann's objects iterate in sorted key order,
  // and levels are collected by number before they are read.
  std::map<int, const Json*> levels;
  for (auto it = d.begin(); it != d.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string p = AppendKey(path, key);
    absl::Status s;
    std::string problem;
    if (key == "name") {
      s = ReadString(source, p, v, &config->name);
      if (s.ok() && config->name.empty()) {
        s = Error(source, p, v, "must not be empty");
      }
    } else if (key == "recover_ratio") {
      s = ReadNumber(source, p, v, &config->recover_ratio);
    } else if (key == "hold") {
      s = ReadDuration(source, p, v, &config->hold);
    } else if (key == "enter_after") {
      s = ReadDuration(source, p, v, &config->enter_after);
    } else if (key == "cooldown") {
      s = ReadDuration(source, p, v, &config->cooldown);
    } else if (key == "critical") {
      s = ReadNameList(source, p, v, "feature", &config->critical);
      for (std::size_t i = 0; s.ok() && i < config->critical.size(); ++i) {
        if (config->critical[i] == kAllNonCritical) {
          s = Error(source, AppendIndex(p, i), v[i],
                    "must name a feature; all_non_critical is only "
                    "meaningful in a level's disable list");
        }
      }
    } else if (const int n = LevelNumber(key, &problem); n > 0) {
      levels[n] = &v;
    } else if (n == 0) {
      s = Error(source, p, v, problem);
    } else {
      s = UnknownKey(source, p, v, allowed);
    }
    if (!s.ok()) return s;
  }

  if (levels.empty()) {
    return Error(source, path, d,
                 absl::StrCat("needs at least one level (level1 to level",
                              kMaxLevels, ")"));
  }
  // Contiguous from 1: the highest number present must equal the count.
  for (int n = 1; n <= levels.rbegin()->first; ++n) {
    if (levels.count(n) == 0) {
      return ErrorWithText(
          source, absl::StrCat(path, ".level", n), "(missing)",
          absl::StrCat("levels must be numbered contiguously from "
                       "level1, but level",
                       levels.rbegin()->first, " is present"));
    }
  }
  for (const auto& [n, level_json] : levels) {
    LevelSpec level;
    level.name = absl::StrCat("level", n);
    if (absl::Status s = ReadLevel(source, absl::StrCat(path, ".", level.name),
                                   *level_json, &level);
        !s.ok()) {
      return s;
    }
    config->levels.push_back(std::move(level));
  }
  return absl::OkStatus();
}

}  // namespace json
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_DEGRADATION_JSON_HPP_
