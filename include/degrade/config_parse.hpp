// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: config_parse.hpp
// -----------------------------------------------------------------------------
//
// Reads a `DegradationConfig` from JSON text or a file. This is the pure
// half of the config layer: it knows the format and its rules, not the
// manager (config_watcher.hpp applies a config to a running
// `DegradationManager` and follows a file). The format is the seed
// article's, which loads as is:
//
//   {
//     "degradation": {
//       "level1": {"trigger": {"gpu_util": 0.85, "queue_length": 20},
//                  "disable": ["semantic_cache", "debug_log"]},
//       "level2": {"trigger": {"gpu_util": 0.95, "queue_length": 50},
//                  "disable": ["personalization", "ab_test"]},
//       "level3": {"trigger": {"queue_length": 100, "avg_latency_ms": 3000},
//                  "disable": ["all_non_critical"]}
//     }
//   }
//
// Optional keys beyond the article (each maps to the `DegradationConfig` /
// `LevelSpec` field of the same name, see degradation_config.hpp):
//
//   "degradation": "name" (string), "recover_ratio" (number), "hold",
//                  "enter_after", "cooldown" (durations), "critical" (array of
//                  feature names)
//   "levelN":      "recover" (object: signal -> number), "hold",
//                  "enter_after" (durations), "admit" (object: "min", a
//                  criticality name, and optionally "cohorts_at_min", an
//                  integer in [0, 128]: the admission floor, see AdmitFloor)
//
// Durations are strings with a unit: "60s", "500ms", "1m30s", "250us", "2h".
// Level keys are exactly `level1` .. `levelN`, N in 1..kMaxLevels, with no
// gaps; the key becomes `LevelSpec::name`. Key order never matters.
//
// Why so strict: a config pushed from a config centre is applied to every
// instance of a service at once, and a typo that silently drops a trigger
// ("gpu_utl") or a level ("levle2") disarms the protection exactly when it is
// needed. So every key must be known, every value must have the right type,
// and the whole config is validated (including `ValidateDegradationConfig()`'s
// semantic rules) before anything is returned. Every error is
// INVALID_ARGUMENT and reads
//
//   <source>: <json path> = <offending value>: <rule broken>
//
// for example
//
//   /etc/svc/degrade.json: degradation.level2.trigger.gpu_util = "0.95":
//   must be a number (got a string)
//
//   absl::StatusOr<degrade::DegradationConfig> config =
//       degrade::LoadDegradationConfigFile("/etc/svc/degrade.json");
//   if (!config.ok()) return config.status();   // names the file and field
//   absl::StatusOr<degrade::DegradationConfig> pushed =
//       degrade::ParseDegradationConfig(text, "configcenter: svc/degrade");
//
// Nothing here throws or needs exceptions (see detail/json_document.hpp): the
// header compiles and behaves the same with -fno-exceptions, and malformed
// input of any shape is a status, not an abort.
//
// Thread safety: the functions are thread-safe; they share no state.

#ifndef DEGRADE_CONFIG_PARSE_HPP_
#define DEGRADE_CONFIG_PARSE_HPP_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/levels/degradation_json.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest config text or file accepted, 1 MiB. A real config is a few
// kilobytes; anything near this is a wrong file (a log, a binary) and is
// refused before it is parsed or even fully read.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

// ParseDegradationConfig()
//
// Parses and validates `json_text` (format in the file comment). `source`
// names the text in error messages, typically a file path or "configcenter:
// <key>". Returns the config only if every check passes; otherwise
// INVALID_ARGUMENT naming the source, the JSON path, the value and the rule.
//
// Thread-safe.
absl::StatusOr<DegradationConfig> ParseDegradationConfig(
    absl::string_view json_text, absl::string_view source = "<json>");

// LoadDegradationConfigFile()
//
// Reads the file at `path` and parses it with `source = path`. A file that
// cannot be opened or read gives the errno-derived status (NOT_FOUND for a
// missing file, PERMISSION_DENIED, ...), its message naming the config file,
// its path and the system's error text; a path that is not a regular file (a
// directory, a FIFO) gives FAILED_PRECONDITION; a file over kMaxConfigBytes
// gives INVALID_ARGUMENT without reading the rest of it.
//
// Thread-safe.
absl::StatusOr<DegradationConfig> LoadDegradationConfigFile(
    const std::string& path);

// ---- Implementation details -------------------------------------------------

namespace detail {

// What config errors call the text and the file.
inline constexpr absl::string_view kConfigDocument = "config";
inline constexpr absl::string_view kConfigFile = "config file";

}  // namespace detail

namespace detail {

// ParseDegradationConfig, with what to call the text in errors: "config",
// or "config file" when it was read from one.
inline absl::StatusOr<DegradationConfig> ParseDegradationConfigAs(
    absl::string_view json_text, absl::string_view source_name,
    absl::string_view what) {
  namespace json = detail::json;
  const std::string source = detail::Printable(source_name);
  absl::StatusOr<json::Json> d = json::ParseEnvelope(
      json_text, source, what, kMaxConfigBytes, "degradation");
  if (!d.ok()) return d.status();
  DegradationConfig config;
  if (absl::Status s = json::ReadDegradation(source, *d, &config); !s.ok()) {
    return s;
  }
  // The semantic rules (rising thresholds, recover <= enter, ...) live in one
  // place; their messages already name the JSON path.
  if (absl::Status s = ValidateDegradationConfig(config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
  }
  return config;
}

}  // namespace detail

inline absl::StatusOr<DegradationConfig> ParseDegradationConfig(
    absl::string_view json_text, absl::string_view source_name) {
  return detail::ParseDegradationConfigAs(json_text, source_name,
                                          detail::kConfigDocument);
}

inline absl::StatusOr<DegradationConfig> LoadDegradationConfigFile(
    const std::string& path) {
  absl::StatusOr<std::string> content =
      detail::ReadFileCapped(path, kMaxConfigBytes, detail::kConfigFile);
  if (!content.ok()) return content.status();
  return detail::ParseDegradationConfigAs(*content, path, detail::kConfigFile);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONFIG_PARSE_HPP_
