// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A trace as (stage, reason) pairs, for gMock's ElementsAre(Pair(...)).

#ifndef DEGRADE_TESTS_SUPPORT_TRACES_HPP_
#define DEGRADE_TESTS_SUPPORT_TRACES_HPP_

#include <string>
#include <utility>
#include <vector>

#include "degrade/stage_result.hpp"

namespace degrade_tests {

inline std::vector<std::pair<std::string, degrade::DegradeReason>> Entries(
    const degrade::DegradationTrace& t) {
  std::vector<std::pair<std::string, degrade::DegradeReason>> out;
  for (const degrade::TraceEntry& e : t) {
    out.emplace_back(std::string(e.stage()), e.reason());
  }
  return out;
}

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TRACES_HPP_
