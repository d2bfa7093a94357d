// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the segment-defaults loader (`ParseSegmentDefaults`, and
// `SegmentDefaults::Reload` / `Load` on a file with the same bytes). Any
// bytes in: a set or a status, never a crash, a hang or a leak. Beyond that
// it checks:
//
//   * a parsed set is non-empty, within the segment and id bounds (small
//     ones here, so the fuzzer reaches them), one dimension throughout, all
//     finite; that dimension is accepted as the expected one and any other
//     refused;
//   * a fresh load from the file agrees with the text, and finds every
//     parsed segment (and the very vector each time: no copy);
//   * a serving `SegmentDefaults` (dimension 4) takes the file exactly when
//     it parses with dimension 4, and otherwise keeps serving the very same
//     vectors, reporting the error.

#ifndef DEGRADE_TESTS_FUZZ_SEGMENT_DEFAULTS_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_SEGMENT_DEFAULTS_FUZZ_HPP_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/default_features.hpp"
#include "degrade/segment_defaults.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

inline int FuzzSegmentDefaults(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);
  degrade::SegmentDefaultsOptions o;
  o.max_segments = 8;
  o.max_segment_id_bytes = 16;
  o.metrics = degrade::NoTelemetry();

  const absl::StatusOr<degrade::SegmentVectors> parsed =
      degrade::ParseSegmentDefaults(text, "fuzz", o);
  std::size_t dim = 0;
  if (parsed.ok()) {
    DEGRADE_FUZZ_CHECK(!parsed->empty(), "an empty set parsed");
    DEGRADE_FUZZ_CHECK(parsed->size() <= o.max_segments, parsed->size());
    dim = parsed->begin()->second.size();
    DEGRADE_FUZZ_CHECK(dim >= 1 && dim <= degrade::kMaxFeatureDimension, dim);
    for (const auto& [id, values] : *parsed) {
      DEGRADE_FUZZ_CHECK(!id.empty() && id.size() <= o.max_segment_id_bytes,
                         id.size());
      DEGRADE_FUZZ_CHECK(values.size() == dim, values.size());
      for (const float v : values) DEGRADE_FUZZ_CHECK(std::isfinite(v), v);
    }
    degrade::SegmentDefaultsOptions pinned = o;
    pinned.expected_dimension = dim;
    DEGRADE_FUZZ_CHECK(degrade::ParseSegmentDefaults(text, "fuzz", pinned).ok(),
                       "its own dimension refused");
    pinned.expected_dimension = dim + 1;
    DEGRADE_FUZZ_CHECK(
        !degrade::ParseSegmentDefaults(text, "fuzz", pinned).ok(),
        "another dimension accepted");
  } else {
    DEGRADE_FUZZ_CHECK_REFUSED(parsed.status());
  }

  static const ScratchFile file("segments");
  file.Write(data, size);

  // A fresh load from the file agrees with the text.
  const auto loaded = degrade::SegmentDefaults::Load(file.path(), o);
  DEGRADE_FUZZ_CHECK(loaded.ok() == parsed.ok(), loaded.status().ToString());
  if (loaded.ok()) {
    DEGRADE_FUZZ_CHECK((*loaded)->segments() == parsed->size(), "count");
    for (const auto& [id, values] : *parsed) {
      const degrade::SegmentDefaults::Snapshot v = (*loaded)->Find(id);
      DEGRADE_FUZZ_CHECK(v != nullptr && *v == values, "load != parse");
      DEGRADE_FUZZ_CHECK((*loaded)->Find(id) == v, "a lookup copied");
    }
  }

  // A serving instance (dimension 4) is offered the file.
  const std::vector<float> good = {0.25f, -1.5f, 3.0f, 1e-3f};
  degrade::SegmentDefaults serving(o);
  DEGRADE_FUZZ_CHECK(serving.Set({{"good", good}}, "good").ok(), "Set");
  const degrade::SegmentDefaults::Snapshot before = serving.Find("good");
  const absl::Status s = serving.Reload(file.path());
  const bool fits = parsed.ok() && dim == good.size();
  DEGRADE_FUZZ_CHECK(s.ok() == fits, s.ToString());
  if (fits) {
    DEGRADE_FUZZ_CHECK(serving.segments() == parsed->size(), "count");
    DEGRADE_FUZZ_CHECK(serving.updates() == 2, serving.updates());
  } else {
    DEGRADE_FUZZ_CHECK(serving.Find("good") == before, "set replaced");
    DEGRADE_FUZZ_CHECK(serving.segments() == 1, serving.segments());
    DEGRADE_FUZZ_CHECK(serving.failures() == 1, serving.failures());
    DEGRADE_FUZZ_CHECK(serving.last_status() == s, "last_status");
    DEGRADE_FUZZ_CHECK(!s.message().empty(), "a refusal without a cause");
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_SEGMENT_DEFAULTS_FUZZ_HPP_
