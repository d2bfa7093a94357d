// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/trial_ledger.hpp: slot and outstanding counts per way
// a trial ends, and the per-trial deadline (the oldest outstanding trial's
// admission plus the wait), including ties and saturation.

#include "degrade/detail/breaker/trial_ledger.hpp"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using detail::TrialLedger;

TEST(TrialLedgerTest, SlotsAndOutstandingFollowEachEnding) {
  TrialLedger t;
  t.Admit(1);
  t.Admit(2);
  t.Admit(3);
  t.Admit(4);
  EXPECT_EQ(t.slots_used(), 4u);
  EXPECT_EQ(t.outstanding(), 4u);
  t.Abandon(1);  // slot given back
  t.Exclude(2);  // slot given back
  t.Succeed(3);  // keeps its slot, no longer out
  EXPECT_EQ(t.slots_used(), 2u);
  EXPECT_EQ(t.outstanding(), 1u);
  t.Fail(4);
  EXPECT_EQ(t.outstanding(), 0u) << "a failed trial is no longer out";
  EXPECT_EQ(t.failed, 1u);
  EXPECT_EQ(t.deadline(), TrialLedger::kNever) << "no wait, no deadline";
}

TEST(TrialLedgerTest, TheOldestOutstandingTrialSetsTheDeadline) {
  constexpr int64_t kWait = 50;
  struct Step {
    enum { kAdmit, kSucceed, kExclude, kAbandon } op;
    int64_t at;
    int64_t want_deadline;
  };
  const Step steps[] = {
      {Step::kAdmit, 0, 50},    {Step::kAdmit, 30, 50},
      {Step::kSucceed, 0, 80},  {Step::kAdmit, 30, 80},  // a tie at 30
      {Step::kExclude, 30, 80}, {Step::kAbandon, 30, TrialLedger::kNever},
      {Step::kAdmit, 100, 150},
  };
  TrialLedger t(kWait);
  for (const Step& s : steps) {
    switch (s.op) {
      case Step::kAdmit:
        t.Admit(s.at);
        break;
      case Step::kSucceed:
        t.Succeed(s.at);
        break;
      case Step::kExclude:
        t.Exclude(s.at);
        break;
      case Step::kAbandon:
        t.Abandon(s.at);
        break;
    }
    EXPECT_EQ(t.deadline(), s.want_deadline)
        << "after op " << s.op << " at " << s.at;
  }
}

TEST(TrialLedgerTest, TheDeadlineSaturates) {
  TrialLedger t(std::numeric_limits<int64_t>::max());
  t.Admit(1000);
  EXPECT_EQ(t.deadline(), TrialLedger::kNever);
}

// JudgeTrials, row by row: succeeded, failed and slow trials reported; the
// policy; and the verdict. Four permits, thresholds 0.5 (failures) and 0.5
// (slow calls, tracked).
struct JudgeRow {
  uint64_t succeeded;
  uint64_t failed;
  uint64_t slow;
  bool rated;
  uint64_t decide_at;
  detail::TrialVerdict want;
};

TEST(JudgeTrialsTest, Table) {
  using V = detail::TrialVerdict;
  const JudgeRow rows[] = {
      // gobreaker: the first failure reopens; four successes close.
      {0, 1, 0, false, 4, V::kReopen},
      {3, 0, 0, false, 4, V::kWait},
      {4, 0, 3, false, 4, V::kClose},  // slow successes are successes
      {3, 1, 0, false, 4, V::kReopen},
      // resilience4j, all four judged together.
      {2, 1, 0, true, 4, V::kWait},
      {3, 1, 0, true, 4, V::kClose},   // 25% < 50%
      {2, 2, 0, true, 4, V::kReopen},  // 50% reaches 50%
      {4, 0, 2, true, 4, V::kReopen},  // 2 slow of 4
      {4, 0, 1, true, 4, V::kClose},
      // resilience4j with a minimum of 2 below the permits.
      {1, 0, 0, true, 2, V::kWait},
      {2, 0, 0, true, 2, V::kClose},
      {1, 1, 0, true, 2, V::kReopen},
      {0, 1, 0, true, 2, V::kWait},  // one failure is below the minimum
  };
  for (const JudgeRow& r : rows) {
    TrialLedger l;
    for (uint64_t i = 0; i < r.succeeded; ++i) {
      l.Admit(0);
      l.Succeed(0);
    }
    for (uint64_t i = 0; i < r.failed; ++i) {
      l.Admit(0);
      l.Fail(0);
    }
    for (uint64_t i = 0; i < r.slow; ++i) l.Slow();
    EXPECT_EQ(detail::JudgeTrials(l, r.rated, 4, r.decide_at, 0.5, 0.5, true),
              r.want)
        << r.succeeded << " ok, " << r.failed << " failed, " << r.slow
        << " slow, rated " << r.rated << ", decide at " << r.decide_at;
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
