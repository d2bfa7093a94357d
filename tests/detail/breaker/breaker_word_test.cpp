// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/breaker_word.hpp: the packed word round-trips every
// state, mode and generation, and the legality table, row by row.

#include "degrade/detail/breaker/breaker_word.hpp"

#include <cstdint>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::BreakerMode;
using detail::BreakerWord;
using detail::IsLegalTransition;

TEST(BreakerWordTest, PackAndUnpackRoundTrip) {
  for (State s : {State::kClosed, State::kHalfOpen, State::kOpen}) {
    for (BreakerMode m : {BreakerMode::kNormal, BreakerMode::kForcedOpen,
                          BreakerMode::kMetricsOnly, BreakerMode::kBypass}) {
      for (uint64_t gen : {uint64_t{0}, uint64_t{1}, uint64_t{12345},
                           (uint64_t{1} << 60) - 1}) {
        const uint64_t w = BreakerWord::Pack(s, m, gen);
        EXPECT_EQ(BreakerWord::StateOf(w), s);
        EXPECT_EQ(BreakerWord::ModeOf(w), m);
        EXPECT_EQ(BreakerWord::GenOf(w), gen);
      }
    }
  }
}

// Every (from, to, mode) triple and whether a breaker may make it. Modes are
// tied to states (forced open only open, disabled only closed), and
// half-open is only reached from open, in normal mode, by time.
TEST(BreakerWordTest, LegalTransitionTable) {
  using S = State;
  using M = BreakerMode;
  struct Row {
    S from;
    S to;
    M mode;
    bool legal;
  };
  const std::vector<Row> rows = {
      // Normal operation.
      {S::kClosed, S::kClosed, M::kNormal, true},  // interval, Reset
      {S::kClosed, S::kOpen, M::kNormal, true},    // tripped
      {S::kClosed, S::kHalfOpen, M::kNormal, false},
      {S::kOpen, S::kHalfOpen, M::kNormal, true},  // the timeout passed
      {S::kOpen, S::kClosed, M::kNormal, true},    // Reset
      {S::kOpen, S::kOpen, M::kNormal, true},
      {S::kHalfOpen, S::kClosed, M::kNormal, true},  // trials succeeded
      {S::kHalfOpen, S::kOpen, M::kNormal, true},    // a trial failed
      {S::kHalfOpen, S::kHalfOpen, M::kNormal, false},
      // ForceOpen: always to open.
      {S::kClosed, S::kOpen, M::kForcedOpen, true},
      {S::kOpen, S::kOpen, M::kForcedOpen, true},
      {S::kHalfOpen, S::kOpen, M::kForcedOpen, true},
      {S::kClosed, S::kClosed, M::kForcedOpen, false},
      {S::kOpen, S::kHalfOpen, M::kForcedOpen, false},
      {S::kOpen, S::kClosed, M::kForcedOpen, false},
      // Disable (metrics-only): always to closed.
      {S::kClosed, S::kClosed, M::kMetricsOnly, true},
      {S::kOpen, S::kClosed, M::kMetricsOnly, true},
      {S::kHalfOpen, S::kClosed, M::kMetricsOnly, true},
      {S::kClosed, S::kOpen, M::kMetricsOnly, false},
      {S::kOpen, S::kHalfOpen, M::kMetricsOnly, false},
      {S::kHalfOpen, S::kOpen, M::kMetricsOnly, false},
      // Bypass: always to closed, like metrics-only.
      {S::kClosed, S::kClosed, M::kBypass, true},
      {S::kOpen, S::kClosed, M::kBypass, true},
      {S::kHalfOpen, S::kClosed, M::kBypass, true},
      {S::kClosed, S::kOpen, M::kBypass, false},
      {S::kOpen, S::kHalfOpen, M::kBypass, false},
      {S::kHalfOpen, S::kOpen, M::kBypass, false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(IsLegalTransition(r.from, r.to, r.mode), r.legal)
        << StateName(r.from) << " -> " << StateName(r.to) << " mode "
        << static_cast<int>(r.mode);
  }
  // Half-open is reachable from open in normal mode only, from nothing else.
  int to_half_open = 0;
  for (S from : {S::kClosed, S::kHalfOpen, S::kOpen}) {
    for (M m : {M::kNormal, M::kForcedOpen, M::kMetricsOnly, M::kBypass}) {
      to_half_open += IsLegalTransition(from, S::kHalfOpen, m) ? 1 : 0;
    }
  }
  EXPECT_EQ(to_half_open, 1);
  static_assert(IsLegalTransition(S::kOpen, S::kHalfOpen, M::kNormal),
                "usable in constant expressions");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
