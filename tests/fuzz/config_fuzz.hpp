// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the degradation manager's config parser and validator
// (`ParseDegradationConfig`, `LoadDegradationConfigFile`, `ReloadJson`,
// `ConfigFileWatcher`). Any bytes in: a valid config or an INVALID_ARGUMENT
// status, never a crash, a hang or a leak. Beyond that it checks:
//
//   * the text and the file give the same answer;
//   * a config that parses also validates, installs in a manager, and the
//     manager's level stays within range whatever its signals do; a NaN
//     sample is refused;
//   * a config that does not parse is rejected by a serving manager without
//     changing anything it serves (the same config object, level and gates).

#ifndef DEGRADE_TESTS_FUZZ_CONFIG_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_CONFIG_FUZZ_HPP_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/config_watcher.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

// The config a manager serves before the fuzzed one is offered: two levels
// on one signal, gating two features.
inline constexpr absl::string_view kServingConfig = R"({"degradation": {
  "name": "serving", "hold": "1s",
  "level1": {"trigger": {"load": 0.7}, "disable": ["f1"]},
  "level2": {"trigger": {"load": 0.9}, "disable": ["f2"]}}})";

inline int FuzzConfig(const uint8_t* data, std::size_t size) {
  using degrade::DegradationConfig;
  const absl::string_view text = AsText(data, size);

  const absl::StatusOr<DegradationConfig> parsed =
      degrade::ParseDegradationConfig(text, "fuzz");
  if (parsed.ok()) {
    const absl::Status valid = degrade::ValidateDegradationConfig(*parsed);
    DEGRADE_FUZZ_CHECK(valid.ok(), valid.ToString());
    DEGRADE_FUZZ_CHECK(!parsed->levels.empty() &&
                           parsed->levels.size() <=
                               static_cast<std::size_t>(degrade::kMaxLevels),
                       parsed->levels.size());
  } else {
    DEGRADE_FUZZ_CHECK_REFUSED(parsed.status());
  }

  // The same bytes through the file loader.
  static const ScratchFile file("config");
  file.Write(data, size);
  const absl::StatusOr<DegradationConfig> loaded =
      degrade::LoadDegradationConfigFile(file.path());
  DEGRADE_FUZZ_CHECK(loaded.ok() == parsed.ok(), loaded.status().ToString(),
                     " vs ", parsed.status().ToString());
  if (loaded.ok()) {
    DEGRADE_FUZZ_CHECK(*loaded == *parsed, "file and text parse differently");
  } else {
    DEGRADE_FUZZ_CHECK(loaded.status().code() == parsed.status().code(),
                       loaded.status().ToString());
  }

  // A manager serving a good config is offered the fuzzed one.
  degrade::FakeClock clock;
  degrade::ManagerOptions options;
  options.name = "fuzz";
  options.clock = &clock;
  options.log_sink = [](absl::string_view) {};
  degrade::DegradationManager manager(options);
  DEGRADE_FUZZ_CHECK(degrade::ReloadJson(manager, kServingConfig).ok(),
                     "the serving config must load");
  const degrade::FeatureGate f1 = manager.Feature("f1");
  const degrade::FeatureGate f2 = manager.Feature("f2");
  DEGRADE_FUZZ_CHECK(manager.Observe("load", 0.8).ok(), "observe");
  DEGRADE_FUZZ_CHECK(manager.level() == 1, manager.level());
  const std::shared_ptr<const DegradationConfig> serving = manager.config();

  const absl::Status reload = degrade::ReloadJson(manager, text, "fuzz");
  DEGRADE_FUZZ_CHECK(reload.ok() == parsed.ok(), reload.ToString());
  if (!reload.ok()) {
    // Nothing that is serving changed.
    DEGRADE_FUZZ_CHECK(manager.config() == serving, "config replaced");
    DEGRADE_FUZZ_CHECK(manager.level() == 1, manager.level());
    DEGRADE_FUZZ_CHECK(!f1.enabled() && f2.enabled(), "gates moved");
    DEGRADE_FUZZ_CHECK(manager.rejected_reloads() == 1,
                       manager.rejected_reloads());
    DEGRADE_FUZZ_CHECK(manager.reloads() == 1, manager.reloads());
    return 0;
  }
  DEGRADE_FUZZ_CHECK(*manager.config() == *parsed, "installed a different one");

  // Drive every signal of the new config through its thresholds: the level
  // stays within [0, levels], and a NaN sample changes nothing.
  const int levels = manager.num_levels();
  DEGRADE_FUZZ_CHECK(levels == static_cast<int>(parsed->levels.size()), levels);
  for (const degrade::LevelSpec& level : parsed->levels) {
    for (const auto& [signal, threshold] : level.enter) {
      for (const double v :
           {threshold, 0.0,
            std::min(threshold * 2 + 1, std::numeric_limits<double>::max())}) {
        const absl::Status s = manager.Observe(signal, v);
        DEGRADE_FUZZ_CHECK(s.ok(), s.ToString());
        DEGRADE_FUZZ_CHECK(manager.level() >= 0 && manager.level() <= levels,
                           manager.level());
      }
      const int before = manager.level();
      const absl::Status nan =
          manager.Observe(signal, std::numeric_limits<double>::quiet_NaN());
      DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(nan), nan.ToString());
      DEGRADE_FUZZ_CHECK(manager.level() == before, "a NaN moved the level");
      const absl::Status zero = manager.Observe(signal, 0.0);
      DEGRADE_FUZZ_CHECK(zero.ok(), zero.ToString());
    }
  }
  // Long enough for every hold and cooldown to pass, step by step.
  for (int i = 0; i <= levels; ++i) {
    clock.Advance(absl::Hours(24 * 365));
    manager.Evaluate();
    DEGRADE_FUZZ_CHECK(manager.level() >= 0 && manager.level() <= levels,
                       manager.level());
  }

  // The watcher applies the same file (equal to the installed config: OK).
  degrade::ConfigFileWatcher watcher(file.path(), &manager);
  const absl::Status polled = watcher.PollOnce();
  DEGRADE_FUZZ_CHECK(polled.ok(), polled.ToString());
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_CONFIG_FUZZ_HPP_
