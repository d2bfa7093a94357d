// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the default-feature loader (`ParseDefaultFeatures`, and
// `DefaultFeatures::Reload` / `Load` on a file with the same bytes). Any
// bytes in: a vector or a status, never a crash, a hang or a leak. Beyond
// that it checks:
//
//   * a parsed vector is non-empty, within kMaxFeatureDimension, all finite;
//     its dimension is accepted as the expected one and any other refused;
//   * a serving `DefaultFeatures` takes the file exactly when it parses with
//     the serving dimension, and otherwise keeps serving the very same
//     snapshot, reporting the error.

#ifndef DEGRADE_TESTS_FUZZ_DEFAULT_FEATURES_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_DEFAULT_FEATURES_FUZZ_HPP_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "degrade/default_features.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

inline int FuzzDefaultFeatures(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);

  const absl::StatusOr<std::vector<float>> parsed =
      degrade::ParseDefaultFeatures(text, "fuzz");
  if (parsed.ok()) {
    DEGRADE_FUZZ_CHECK(!parsed->empty(), "an empty vector parsed");
    DEGRADE_FUZZ_CHECK(parsed->size() <= degrade::kMaxFeatureDimension,
                       parsed->size());
    for (const float v : *parsed) DEGRADE_FUZZ_CHECK(std::isfinite(v), v);
    DEGRADE_FUZZ_CHECK(
        degrade::ParseDefaultFeatures(text, "fuzz", parsed->size()).ok(),
        "its own dimension refused");
    DEGRADE_FUZZ_CHECK(
        !degrade::ParseDefaultFeatures(text, "fuzz", parsed->size() + 1).ok(),
        "another dimension accepted");
  } else {
    DEGRADE_FUZZ_CHECK_REFUSED(parsed.status());
  }

  static const ScratchFile file("features");
  file.Write(data, size);

  // A fresh load from the file agrees with the text.
  const auto loaded = degrade::DefaultFeatures::Load(file.path());
  DEGRADE_FUZZ_CHECK(loaded.ok() == parsed.ok(), loaded.status().ToString());
  if (loaded.ok()) {
    DEGRADE_FUZZ_CHECK(*(*loaded)->snapshot() == *parsed, "load != parse");
  }

  // A serving instance (dimension 4) is offered the file.
  const std::vector<float> good = {0.25f, -1.5f, 3.0f, 1e-3f};
  degrade::DefaultFeatures serving(good.size());
  DEGRADE_FUZZ_CHECK(serving.Set(good, "good").ok(), "Set");
  const degrade::DefaultFeatures::Snapshot before = serving.snapshot();
  const absl::Status s = serving.Reload(file.path());
  const bool fits = parsed.ok() && parsed->size() == good.size();
  DEGRADE_FUZZ_CHECK(s.ok() == fits, s.ToString());
  if (fits) {
    DEGRADE_FUZZ_CHECK(*serving.snapshot() == *parsed, "reload != parse");
    DEGRADE_FUZZ_CHECK(serving.reloads() == 2, serving.reloads());
  } else {
    CheckStillServing(serving, before, serving.errors(), s);
    const absl::StatusOr<std::vector<float>> fb = serving.Fallback()();
    DEGRADE_FUZZ_CHECK(fb.ok() && *fb == good, "fallback changed");
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_DEFAULT_FEATURES_FUZZ_HPP_
