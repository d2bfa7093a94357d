// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// request_class.hpp: the criticality names round-trip and nothing else
// parses; ranks order classes the way shedding must; the metadata form
// decodes strictly; the cohort is the same for every process in one period,
// reshuffles at the next, and survives clocks at the extremes.

#include "degrade/request_class.hpp"

#include <array>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr std::array<Criticality, 4> kAll = {
    Criticality::kCriticalPlus, Criticality::kCritical,
    Criticality::kSheddablePlus, Criticality::kSheddable};

TEST(RequestClassTest, NamesRoundTripAndNothingElseParses) {
  for (const Criticality c : kAll) {
    absl::StatusOr<Criticality> back = ParseCriticality(CriticalityName(c));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, c);
  }
  for (const char* bad : {"", "critical", "CRITICAL ", "SHEDDABLE-PLUS",
                          "CRITICAL_PLUS_PLUS", "0"}) {
    absl::StatusOr<Criticality> got = ParseCriticality(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("SHEDDABLE_PLUS"),
              absl::string_view::npos);
  }
  EXPECT_EQ(RequestClass().criticality, Criticality::kCritical);
}

TEST(RequestClassTest, RanksOrderCriticalityBeforeCohort) {
  EXPECT_EQ(Rank({Criticality::kCriticalPlus, 0}), 0);
  EXPECT_EQ(Rank({Criticality::kSheddable, 127}), kAdmitAllRank - 1);
  EXPECT_LT(Rank({Criticality::kCritical, 127}),
            Rank({Criticality::kSheddablePlus, 0}));
  // A corrupted class is clamped to the least important, never promoted.
  EXPECT_EQ(Rank({static_cast<Criticality>(9), 200}), kAdmitAllRank - 1);
  EXPECT_EQ(FloorRank(Criticality::kCritical), 2 * kNumCohorts);
  EXPECT_EQ(FloorRank(Criticality::kSheddablePlus, 64), 2 * kNumCohorts + 64);
  EXPECT_EQ(FloorRank(Criticality::kSheddable, 500), kAdmitAllRank);
  EXPECT_EQ(FloorRank(Criticality::kCritical, -3), kNumCohorts);
}

TEST(RequestClassTest, ValidateNamesTheField) {
  EXPECT_TRUE(ValidateRequestClass({Criticality::kSheddable, 127}).ok());
  const absl::Status s = ValidateRequestClass({Criticality::kCritical, 128});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cohort 128"), absl::string_view::npos) << s;
  EXPECT_FALSE(ValidateRequestClass({static_cast<Criticality>(4), 0}).ok());
}

TEST(RequestClassTest, MetadataFormRoundTripsEveryClass) {
  for (const Criticality c : kAll) {
    for (int u = 0; u < kNumCohorts; ++u) {
      const RequestClass rc{c, static_cast<uint8_t>(u)};
      absl::StatusOr<RequestClass> back =
          DecodeRequestClass(EncodeRequestClass(rc));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, rc);
    }
  }
  EXPECT_EQ(EncodeRequestClass({Criticality::kSheddablePlus, 17}),
            "SHEDDABLE_PLUS:17");
}

TEST(RequestClassTest, MalformedMetadataIsInvalidArgumentNeverAClass) {
  for (const char* bad :
       {"", ":", "CRITICAL", "CRITICAL:", ":0", "CRITICAL:128",
        "CRITICAL:999", "CRITICAL:1000", "CRITICAL:-1", "CRITICAL:+1",
        "CRITICAL: 1", "CRITICAL:1 ", "CRITICAL:01", "CRITICAL:00",
        "critical:1", "CRITICAL:1:2", "CRITICAL:0x1", "CRITICAL::1"}) {
    absl::StatusOr<RequestClass> got = DecodeRequestClass(bad);
    EXPECT_FALSE(got.ok()) << "\"" << bad << "\" decoded";
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  // Embedded NULs and a huge value are quoted, truncated, refused.
  const std::string nul("CRITICAL:\0", 10);
  EXPECT_FALSE(DecodeRequestClass(nul).ok());
  const absl::Status big =
      DecodeRequestClass(std::string(10000, 'A')).status();
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(big.message().size(), 200u);
  EXPECT_TRUE(DecodeRequestClass("CRITICAL:0").ok());
  EXPECT_TRUE(DecodeRequestClass("SHEDDABLE:127").ok());
}

// Client text in the error is escaped: no raw control byte reaches a log.
TEST(RequestClassTest, DecodeRequestClassDoesNotEchoControlBytesIntoItsError) {
  static constexpr char kHostile[] = "CRITICAL\n2026-12-01 ERROR forged line\x1b[2J\0:1";
  const std::string hostile(kHostile, sizeof(kHostile) - 1);
  absl::StatusOr<RequestClass> got = DecodeRequestClass(hostile);
  ASSERT_FALSE(got.ok());
  for (const char ch : got.status().message()) {
    const auto u = static_cast<unsigned char>(ch);
    EXPECT_FALSE(u < 0x20 || u == 0x7f)
        << "raw control byte " << static_cast<int>(u) << " in: " << got.status().message();
  }
}

// The 64-byte quote never ends inside a UTF-8 sequence.
TEST(RequestClassTest, DecodeRequestClassCutsItsQuoteAtACharacterBoundary) {
  const std::string text = std::string(63, 'A') + "\xC3\xA9" + "B:1";  // "é" at 63..64
  absl::StatusOr<RequestClass> got = DecodeRequestClass(text);
  ASSERT_FALSE(got.ok());
  const absl::string_view m = got.status().message();
  EXPECT_EQ(m.find('\xC3'), absl::string_view::npos) << "a lead byte without its continuation";
  EXPECT_NE(m.find(std::string(63, 'A') + "..."), absl::string_view::npos) << m;
}

TEST(RequestClassTest, CohortIsStableInAPeriodAndReshufflesAtTheNext) {
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);  // 2027
  const auto hour = CohortRotation::Create().value();
  EXPECT_EQ(hour.period(), absl::Hours(1));
  const absl::Time start = absl::FromUnixSeconds(
      absl::ToUnixSeconds(t) / 3600 * 3600);
  int moved = 0;
  std::set<int> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string user = "user-" + std::to_string(i);
    const uint8_t c = hour.CohortOf(user, start);
    ASSERT_LT(c, kNumCohorts);
    seen.insert(c);
    // The same anywhere in the hour, and what UserCohort says.
    EXPECT_EQ(hour.CohortOf(user, start + absl::Minutes(59)), c);
    EXPECT_EQ(UserCohort(user, start + absl::Seconds(1)), c);
    if (hour.CohortOf(user, start + absl::Hours(1)) != c) ++moved;
  }
  // Spread over (nearly) every cohort, and the next hour reshuffles almost
  // every user (by chance 1 in 128 stays).
  EXPECT_GT(seen.size(), 120u);
  EXPECT_GT(moved, 950);
}

TEST(RequestClassTest, CohortIsAFixedFunctionOfKeyAndPeriod) {
  // Pinned values: a change of hash would split a fleet running two
  // versions into two disagreeing cohort maps, so it must be deliberate.
  const auto hour = CohortRotation::Create().value();
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  EXPECT_EQ(hour.PeriodIndex(t), 500000);
  EXPECT_EQ(static_cast<int>(hour.CohortOf("alice", t)), 68);
  EXPECT_EQ(static_cast<int>(hour.CohortOf("bob", t)), 89);
  EXPECT_EQ(static_cast<int>(hour.CohortOf("alice", t + absl::Hours(1))), 8);
  EXPECT_EQ(UserCohort("", t), hour.CohortOf("", t));
}

TEST(RequestClassTest, RotationRefusesNonPositivePeriodsAndSurvivesExtremes) {
  for (const absl::Duration d :
       {absl::ZeroDuration(), absl::Seconds(-1), -absl::InfiniteDuration()}) {
    absl::StatusOr<CohortRotation> r = CohortRotation::Create(d);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("period"), absl::string_view::npos);
  }
  const auto never = CohortRotation::Create(absl::InfiniteDuration()).value();
  EXPECT_EQ(never.PeriodIndex(absl::InfinitePast()), 0);
  EXPECT_EQ(never.CohortOf("u", absl::InfinitePast()),
            never.CohortOf("u", absl::InfiniteFuture()));
  const auto ns = CohortRotation::Create(absl::Nanoseconds(1)).value();
  const auto hour = CohortRotation::Create().value();
  for (const absl::Time t : {absl::InfinitePast(), absl::InfiniteFuture(),
                             absl::UnixEpoch() - absl::Nanoseconds(1)}) {
    EXPECT_LT(ns.CohortOf("u", t), kNumCohorts);
    EXPECT_LT(hour.CohortOf("u", t), kNumCohorts);
  }
  // Floor before the epoch: the nanosecond before it is in period -1.
  EXPECT_EQ(hour.PeriodIndex(absl::UnixEpoch() - absl::Nanoseconds(1)), -1);
  EXPECT_EQ(hour.PeriodIndex(absl::UnixEpoch()), 0);
  EXPECT_LT(hour.PeriodIndex(absl::InfinitePast()), 0);
  EXPECT_GT(hour.PeriodIndex(absl::InfiniteFuture()), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
