// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// DAGOR's step (detail/overload/admission_window.hpp) alone, without a
// controller or a clock: each row is one window's histogram of requests per
// rank, the level before it, the level in force, whether the window was
// overloaded, and the level that must follow, worked out by hand. Levels are
// written as rank x kLevelSteps + part (S = 1024 parts to a rank). The rules
// (docs/overload/admission.md): an overloaded window sheds about 5% of what
// the level in force admitted, a calm one restores about 1% of what the
// adaptive level admitted, whole ranks while they fit and a part of a rank
// worth more than twice the step; ranks nobody sent are passed over; the
// result stays in [min_threshold x S, admit-all].

#include "degrade/detail/overload/admission_window.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "degrade/request_class.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

constexpr int S = kLevelSteps;
constexpr int kAll = kAdmitAllLevel;
// Unlabelled traffic: CRITICAL:0.
constexpr int kR0 = static_cast<int>(Criticality::kCritical) * kNumCohorts;

static_assert(S == 1024, "the rows below are worked out for 1024 parts");
static_assert(kAll == 512 * 1024, "four criticalities of 128 cohorts");
static_assert(kR0 == 128, "CRITICAL:0");

RankHistogram Hist(const std::map<int, uint64_t>& by_rank) {
  RankHistogram h{};
  for (const auto& [rank, n] : by_rank) h[static_cast<std::size_t>(rank)] = n;
  return h;
}

// Ranks [first, last] with n requests each, plus `more`.
RankHistogram Ranks(int first, int last, uint64_t n,
                    std::map<int, uint64_t> more = {}) {
  for (int r = first; r <= last; ++r) more[r] = n;
  return Hist(more);
}

struct StepRow {
  const char* name;
  RankHistogram hist;
  int level;
  int in_force;
  bool overloaded;
  int want;
  AdmissionStep step = {};
};

AdmissionStep MinThreshold(int t) {
  AdmissionStep s;
  s.min_threshold = t;
  return s;
}
AdmissionStep Fractions(double tighten, double loosen) {
  AdmissionStep s;
  s.tighten_fraction = tighten;
  s.loosen_fraction = loosen;
  return s;
}

void RunSteps(const std::vector<StepRow>& rows) {
  for (const StepRow& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << r.name << " (from " << LevelRank(r.level) << "x" << S << "+"
                 << LevelPart(r.level) << ")");
    const int got =
        NextAdmissionLevel(r.hist, r.level, r.in_force, r.overloaded, r.step);
    EXPECT_EQ(got, r.want) << "got " << LevelRank(got) << "x" << S << "+"
                           << LevelPart(got) << ", want " << LevelRank(r.want)
                           << "x" << S << "+" << LevelPart(r.want);
    EXPECT_GE(got, r.step.min_threshold * S);
    EXPECT_LE(got, kAll);
  }
}

TEST(AdmissionWindowTest, AnOverloadedWindowTightens) {
  RunSteps({
      {"an empty window changes nothing", Hist({}), kR0 * S + 500,
       kR0 * S + 500, true, kR0 * S + 500},
      {"unlabelled traffic: about 5% of its one rank, in part (972/1024 kept)",
       Hist({{kR0, 1000}}), kAll, kAll, true, kR0 * S + 972},
      {"the next overloaded window: 5% of what is still admitted (48 of 949)",
       Hist({{kR0, 1000}}), kR0 * S + 972, kR0 * S + 972, true, kR0 * S + 922},
      {"a window of 10 requests still moves by one request's worth",
       Hist({{kR0, 10}}), kAll, kAll, true, kR0 * S + 921},
      {"whole ranks while they fit: the least important rank goes",
       Ranks(10, 29, 100), kAll, kAll, true, 29 * S},
      {"a rank worth exactly twice the step is cut whole", Ranks(10, 19, 100),
       kAll, kAll, true, 19 * S},
      {"a rank worth more than twice the step is cut in part (51 of 103)",
       Ranks(10, 18, 100, {{19, 103}}), kAll, kAll, true, 19 * S + 516},
      {"small ranks whole, then a part of the big one below the empty ranks",
       Ranks(100, 102, 10, {{50, 1000}}), kAll, kAll, true, 50 * S + 1001},
      {"a part that rounds down to nothing is cut whole", Hist({{kR0, 10000}}),
       kR0 * S + 1, kR0 * S + 1, true, kR0 * S},
      {"tightening walks down from the level in force (a manager floor)",
       Ranks(10, 29, 100), kAll, 20 * S, true, 19 * S},
      {"tightening stops at min_threshold", Hist({{4, 1000}, {5, 100}}),
       5 * S + 10, 5 * S + 10, true, 5 * S, MinThreshold(5)},
      {"already at min_threshold: stays", Hist({{4, 1000}}), 5 * S, 5 * S, true,
       5 * S, MinThreshold(5)},
      {"a floor in force below min_threshold: clamped up to it",
       Hist({{1, 100}}), 10 * S, 2 * S, true, 5 * S, MinThreshold(5)},
      {"with min_threshold 0 it can reach admit-nothing (tighten 100%)",
       Hist({{0, 10}}), S, S, true, 0, Fractions(1.0, 0.01)},
      {"at admit-nothing it stays", Hist({{0, 10}}), 0, 0, true, 0},
  });
}

TEST(AdmissionWindowTest, ACalmWindowLoosens) {
  RunSteps({
      {"an empty window changes nothing", Hist({}), kR0 * S + 500,
       kR0 * S + 500, false, kR0 * S + 500},
      {"at admit-all it stays", Hist({{kR0, 1000}}), kAll, kAll, false, kAll},
      {"about 1% of what is admitted, in part (10 of 900)", Hist({{kR0, 1000}}),
       kR0 * S + 922, kR0 * S + 922, false, kR0 * S + 933},
      {"loosening walks up from the adaptive level, not the floor in force",
       Hist({{kR0, 1000}}), kR0 * S + 922, 0, false, kR0 * S + 933},
      {"from a rank refused whole: at least loosen_fraction of it",
       Hist({{kR0, 1000}}), kR0 * S, kR0 * S, false, kR0 * S + 11},
      {"a larger loosen_fraction restores a larger least part",
       Hist({{kR0, 1000}}), kR0 * S, kR0 * S, false, kR0 * S + 103,
       Fractions(0.05, 0.1)},
      {"ranks nobody sent are passed over", Hist({{3, 100}, {200, 100}}), 5 * S,
       5 * S, false, 200 * S + 11},
      {"nothing sent above: straight to admit-all", Hist({{0, 100}}),
       511 * S + 1000, 511 * S + 1000, false, kAll},
      {"whole ranks while they fit",
       Ranks(20, 29, 5, {{0, 200}, {1, 200}, {2, 200}, {3, 200}, {4, 200}}),
       20 * S, 20 * S, false, 22 * S},
      {"a rank worth more than twice the step restored in part",
       Ranks(10, 29, 100), 20 * S, 20 * S, false, 20 * S + 103},
      {"the rest of a rank, then the empty ranks up to admit-all",
       Hist({{kR0, 1000}}), kR0 * S + 1020, kR0 * S + 1020, false, kAll},
      {"the rest of a rank, then a part of the next",
       Hist({{kR0, 1000}, {kR0 + 1, 1000}}), kR0 * S + 1020, kR0 * S + 1020,
       false, (kR0 + 1) * S + 11},
  });
}

// Overload then calm, window after window, on unlabelled traffic: the
// asymmetry is DAGOR's (back off fast, creep back), and the calm windows
// bring the level back to admit-all.
TEST(AdmissionWindowTest, OverloadThenRecovery) {
  const RankHistogram h = Hist({{kR0, 1000}});
  struct Row {
    bool overloaded;
    int want;
  };
  const std::vector<Row> rows = {
      {true, kR0 * S + 972},  {true, kR0 * S + 922},  {true, kR0 * S + 874},
      {false, kR0 * S + 885}, {false, kR0 * S + 896},
  };
  int level = kAll;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "window " << i);
    level = NextAdmissionLevel(h, level, level, rows[i].overloaded, {});
    EXPECT_EQ(level, rows[i].want);
  }
  int calm = 0;
  while (level < kAll && calm < 1000) {
    const int next = NextAdmissionLevel(h, level, level, false, {});
    ASSERT_GT(next, level) << "a calm window must loosen";
    level = next;
    ++calm;
  }
  EXPECT_EQ(level, kAll);
  // About 1/loosen_fraction windows, not hundreds.
  EXPECT_LE(calm, 15);
}

TEST(AdmissionWindowTest, TheResultStaysInBoundsAndMovesTheRightWay) {
  // A seeded sweep over histograms, levels and floors, checking the bounds
  // the header promises.
  uint64_t x = 20261129;
  const auto next = [&x](uint64_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % n;
  };
  for (int i = 0; i < 2000; ++i) {
    RankHistogram h{};
    const int ranks = static_cast<int>(next(5));
    for (int k = 0; k < ranks; ++k) {
      h[next(kAdmitAllRank)] = next(3) == 0 ? next(5) : next(100000);
    }
    AdmissionStep step;
    step.min_threshold =
        static_cast<int>(next(3) == 0 ? next(kAdmitAllRank + 1) : 0);
    // The levels a controller reaches: it starts at admit-all and the step
    // never goes below min_threshold.
    const int min_level = step.min_threshold * S;
    const int level =
        min_level +
        static_cast<int>(next(static_cast<uint64_t>(kAll - min_level) + 1));
    const int in_force =
        static_cast<int>(next(static_cast<uint64_t>(level) + 1));
    const bool overloaded = next(2) == 0;
    SCOPED_TRACE(::testing::Message()
                 << "case " << i << " level " << level << " in force "
                 << in_force << " min " << step.min_threshold << " overloaded "
                 << overloaded);
    const int got = NextAdmissionLevel(h, level, in_force, overloaded, step);
    EXPECT_GE(got, step.min_threshold * S);
    EXPECT_LE(got, kAll);
    uint64_t total = 0;
    for (const uint64_t n : h) total += n;
    if (total == 0) {
      EXPECT_EQ(got, level);
    } else if (overloaded) {
      EXPECT_LE(got, std::max(in_force, step.min_threshold * S));
    } else {
      EXPECT_GE(got, std::min(level, kAll));
    }
  }
}

TEST(AdmissionWindowTest, LevelArithmetic) {
  struct Row {
    int level;
    int rank;
    int part;
    int threshold;
  };
  const std::vector<Row> rows = {
      {0, 0, 0, 0},
      {1, 0, 1, 1},
      {S - 1, 0, S - 1, 1},
      {S, 1, 0, 1},
      {S + 1, 1, 1, 2},
      {kR0 * S + 972, kR0, 972, kR0 + 1},
      {kAll - 1, 511, S - 1, 512},
      {kAll, kAdmitAllRank, 0, kAdmitAllRank},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << "level " << r.level);
    EXPECT_EQ(LevelRank(r.level), r.rank);
    EXPECT_EQ(LevelPart(r.level), r.part);
    EXPECT_EQ(LevelThreshold(r.level), r.threshold);
  }
}

TEST(AdmissionWindowTest, AdmittedAtCountsTheBoundaryRankByItsPart) {
  const RankHistogram h = Hist({{0, 10}, {1, 1024}, {511, 7}});
  struct Row {
    int level;
    double admitted;
  };
  const std::vector<Row> rows = {
      {0, 0},        {S, 10},         {S + 512, 10 + 512},
      {2 * S, 1034}, {511 * S, 1034}, {511 * S + 512, 1034 + 3.5},
      {kAll, 1041},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << "level " << r.level);
    EXPECT_DOUBLE_EQ(AdmittedAt(h, r.level), r.admitted);
  }
}

TEST(AdmissionWindowTest, AdmitsPartAdmitsItsShareOfAnyRun) {
  struct Row {
    int part;
    uint64_t first;
  };
  std::vector<Row> rows;
  for (const int part : {0, 1, 100, 512, 972, S - 1, S}) {
    for (const uint64_t first : {uint64_t{0}, uint64_t{1}, uint64_t{12345},
                                 uint64_t{1} << 40, ~uint64_t{0} - 2000}) {
      rows.push_back({part, first});
    }
  }
  constexpr int kRun = 2000;
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << "part " << r.part << " from " << r.first);
    int admitted = 0;
    for (int i = 0; i < kRun; ++i) {
      if (AdmitsPart(r.first + static_cast<uint64_t>(i), r.part)) ++admitted;
    }
    const double exact = static_cast<double>(kRun) * r.part / S;
    if (r.part == 0) {
      EXPECT_EQ(admitted, 0);
    } else if (r.part == S) {
      EXPECT_EQ(admitted, kRun);
    } else {
      EXPECT_NEAR(admitted, exact, 4.0);
    }
  }
}

TEST(AdmissionWindowTest, DescribeAdmissionThreshold) {
  struct Row {
    int threshold;
    std::string text;
  };
  const std::vector<Row> rows = {
      {-1, "0 (admits nothing)"},
      {0, "0 (admits nothing)"},
      {1, "1 (admits through CRITICAL_PLUS:0)"},
      {kR0, "128 (admits through CRITICAL_PLUS:127)"},
      {kR0 + 1, "129 (admits through CRITICAL:0)"},
      {320, "320 (admits through SHEDDABLE_PLUS:63)"},
      {kAdmitAllRank - 1, "511 (admits through SHEDDABLE:126)"},
      {kAdmitAllRank, "512 (admits everything)"},
      {600, "600 (admits everything)"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.threshold);
    EXPECT_EQ(DescribeAdmissionThreshold(r.threshold), r.text);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
