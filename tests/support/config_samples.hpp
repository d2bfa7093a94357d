// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Config documents shared by the config tests: the seed article's config
// verbatim, a one-level config whose threshold tells contents apart, and a
// wrapper for level definitions.

#ifndef DEGRADE_TESTS_SUPPORT_CONFIG_SAMPLES_HPP_
#define DEGRADE_TESTS_SUPPORT_CONFIG_SAMPLES_HPP_

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"

namespace degrade_tests {

// The seed article's config, verbatim.
constexpr absl::string_view kArticleJson = R"json({
  "degradation": {
    "level1": {"trigger": {"gpu_util": 0.85, "queue_length": 20}, "disable": ["semantic_cache", "debug_log", "light_metrics"]},
    "level2": {"trigger": {"gpu_util": 0.95, "queue_length": 50}, "disable": ["personalization", "ab_test", "feature_stats"]},
    "level3": {"trigger": {"queue_length": 100, "avg_latency_ms": 3000}, "disable": ["all_non_critical"]}
  }
})json";

// A small valid config whose level-1 gpu_util threshold is `gpu`: lets the
// watcher tests tell contents apart through the manager's config().
inline std::string OneLevelJson(double gpu) {
  return absl::StrCat(R"({"degradation": {"level1": {"trigger": {"gpu_util": )",
                      gpu, R"(}, "disable": ["debug_log"]}}})");
}

// The level-1 gpu_util threshold the manager serves, or -1 without one.
inline double Level1Gpu(const degrade::DegradationManager& manager) {
  std::shared_ptr<const degrade::DegradationConfig> config = manager.config();
  if (config == nullptr || config->levels.empty()) return -1;
  const auto it = config->levels[0].enter.find("gpu_util");
  return it == config->levels[0].enter.end() ? -1 : it->second;
}

// Wraps level definitions in the two outer objects.
inline std::string Levels(absl::string_view body) {
  return absl::StrCat(R"({"degradation": {)", body, "}}");
}
constexpr absl::string_view kLevel1 =
    R"("level1": {"trigger": {"gpu_util": 0.85}, "disable": ["debug_log"]})";

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_CONFIG_SAMPLES_HPP_
