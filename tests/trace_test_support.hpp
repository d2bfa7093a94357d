// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the tests of the degradation tag (degrade_reason,
// degradation_trace, stage_result and detail/trace_codec): failure messages
// that show traces as their encoding and reasons as tokens, a trace's
// entries as (stage, reason) pairs, and a trace of n entries.

#ifndef DEGRADE_TESTS_TRACE_TEST_SUPPORT_HPP_
#define DEGRADE_TESTS_TRACE_TEST_SUPPORT_HPP_

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "degrade/degradation_trace.hpp"
#include "degrade/degrade_reason.hpp"

namespace degrade {

// Failure messages show traces as their encoding and reasons as tokens.
inline void PrintTo(const DegradationTrace& t, std::ostream* os) {
  *os << t.Encode();
}
inline void PrintTo(DegradeReason r, std::ostream* os) { *os << ReasonName(r); }

namespace testing_support {

inline std::vector<std::pair<std::string, DegradeReason>> Entries(
    const DegradationTrace& t) {
  std::vector<std::pair<std::string, DegradeReason>> out;
  for (const TraceEntry& e : t)
    out.emplace_back(std::string(e.stage()), e.reason());
  return out;
}

// A trace of `n` entries named s0, s1, ...
inline DegradationTrace TraceOf(std::size_t n,
                                DegradeReason reason = DegradeReason::kError) {
  DegradationTrace t;
  for (std::size_t i = 0; i < n; ++i) t.Add(absl::StrCat("s", i), reason);
  return t;
}

}  // namespace testing_support
}  // namespace degrade

#endif  // DEGRADE_TESTS_TRACE_TEST_SUPPORT_HPP_
