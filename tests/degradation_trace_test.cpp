// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// DegradationTrace: the fixed-capacity rules (order, first reason wins,
// dropped counts that never under-count, saturation), merging, equality,
// and the stage-name checks. The text encoding is tested with its codec in
// detail/trace/trace_codec_test.cpp.

#include "degrade/degradation_trace.hpp"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "degrade/degrade_reason.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace_test_support.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::testing_support::Entries;
using ::degrade::testing_support::TraceOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

using R = DegradeReason;

// ---- DegradationTrace ------------------------------------------------------

TEST(DegradationTraceTest, AddRecordsStagesInOrder) {
  DegradationTrace t;
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(t.Add("features", R::kBreakerOpen));
  EXPECT_TRUE(t.Add("recall", R::kTooManyRequests));
  EXPECT_THAT(Entries(t), ElementsAre(Pair("features", R::kBreakerOpen),
                                      Pair("recall", R::kTooManyRequests)));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.depth(), 2u);
  EXPECT_FALSE(t.empty());
  ASSERT_EQ(t.entries().size(), 2u);
  EXPECT_EQ(t.entries()[1].stage(), "recall");
}

TEST(DegradationTraceTest, AddSameStageTwiceKeepsFirstReason) {
  DegradationTrace t;
  EXPECT_TRUE(t.Add("rank", R::kBreakerOpen));
  EXPECT_TRUE(t.Add("rank", R::kUpstream));  // still named: returns true
  EXPECT_THAT(Entries(t), ElementsAre(Pair("rank", R::kBreakerOpen)));
  EXPECT_EQ(t.depth(), 1u);
}

TEST(DegradationTraceTest, AddWithNoneRecordsNothing) {
  DegradationTrace t;
  EXPECT_FALSE(t.Add("rank", R::kNone));
  EXPECT_TRUE(t.empty());
}

TEST(DegradationTraceTest, AddStoresOutOfRangeReasonAsError) {
  DegradationTrace t;
  EXPECT_TRUE(t.Add("rank", static_cast<DegradeReason>(200)));
  EXPECT_EQ(t.ReasonFor("rank"), R::kError);
  EXPECT_EQ(t.Encode(), "v1;rank=error");
}

TEST(DegradationTraceTest, LookupIsExactAndCaseSensitive) {
  DegradationTrace t;
  t.Add("rank", R::kShed);
  EXPECT_TRUE(t.Contains("rank"));
  EXPECT_FALSE(t.Contains("Rank"));
  EXPECT_FALSE(t.Contains("ran"));
  EXPECT_FALSE(t.Contains("rank2"));
  EXPECT_FALSE(t.Contains(""));
  EXPECT_EQ(t.ReasonFor("rerank"), R::kNone);
  EXPECT_EQ(t.ReasonFor("rank"), R::kShed);
}

TEST(DegradationTraceTest, FullTraceCountsOverflowInDepth) {
  DegradationTrace t = TraceOf(kTraceCapacity);
  EXPECT_EQ(t.size(), kTraceCapacity);
  EXPECT_FALSE(t.overflowed());
  EXPECT_FALSE(t.Add("extra", R::kTimeout));
  EXPECT_FALSE(t.Add("extra2", R::kTimeout));
  EXPECT_TRUE(t.Add("s3", R::kTimeout));  // already named: no overflow
  EXPECT_TRUE(t.overflowed());
  EXPECT_EQ(t.size(), kTraceCapacity);
  EXPECT_EQ(t.dropped(), 2u);
  EXPECT_EQ(t.depth(), kTraceCapacity + 2);
  EXPECT_FALSE(t.Contains("extra"));
  EXPECT_EQ(t.ReasonFor("s3"), R::kError);
  EXPECT_THAT(t.Encode(), HasSubstr(";s7=error;+2"));
}

TEST(DegradationTraceTest, InvalidStageNameIsCountedButNotNamed) {
  DegradationTrace t;
  EXPECT_FALSE(t.Add("", R::kError));
  EXPECT_FALSE(t.Add("a-name-that-is-16", R::kError));
  EXPECT_FALSE(t.Add("rank;x=open", R::kError));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.dropped(), 3u);
  EXPECT_EQ(t.depth(), 3u);
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.Encode(), "v1;+3");  // the separators never reach the encoding
}

TEST(DegradationTraceTest, DroppedCountSaturates) {
  DegradationTrace t;
  t.Add("", R::kError);
  for (int i = 0; i < 20; ++i) t.Merge(t);  // doubles each time
  EXPECT_EQ(t.dropped(), 65535u);
  t.Add("", R::kError);
  EXPECT_EQ(t.dropped(), 65535u);
  EXPECT_EQ(t.Encode(), "v1;+65535");
}

TEST(DegradationTraceTest, MergeAppendsInOrderAndSkipsKnownStages) {
  DegradationTrace a;
  a.Add("features", R::kBreakerOpen);
  a.Add("recall", R::kTimeout);
  DegradationTrace b;
  b.Add("recall", R::kError);
  b.Add("rank", R::kShed);
  a.Merge(b);
  EXPECT_THAT(Entries(a),
              ElementsAre(Pair("features", R::kBreakerOpen),
                          Pair("recall", R::kTimeout), Pair("rank", R::kShed)));
  EXPECT_EQ(a.depth(), 3u);
  EXPECT_THAT(Entries(b), ElementsAre(Pair("recall", R::kError),
                                      Pair("rank", R::kShed)));  // untouched
}

TEST(DegradationTraceTest, MergeIntoFullTraceCountsOverflowAndSumsDropped) {
  DegradationTrace a = TraceOf(kTraceCapacity - 1);
  a.Add("", R::kError);  // dropped 1
  DegradationTrace b;
  b.Add("s0", R::kTimeout);  // already in a: skipped, not dropped
  b.Add("x", R::kTimeout);   // fills the last slot
  b.Add("y", R::kTimeout);   // no room: dropped
  b.Add("z", R::kTimeout);   // no room: dropped
  b.Add("", R::kError);      // b's own dropped 1
  a.Merge(b);
  EXPECT_EQ(a.size(), kTraceCapacity);
  EXPECT_EQ(a.ReasonFor("s0"), R::kError);
  EXPECT_EQ(a.ReasonFor("x"), R::kTimeout);
  EXPECT_FALSE(a.Contains("y"));
  EXPECT_EQ(a.dropped(), 1u + 2u + 1u);
  EXPECT_EQ(a.depth(), kTraceCapacity + 4);
}

TEST(DegradationTraceTest, MergeWithItselfKeepsEntries) {
  DegradationTrace t;
  t.Add("features", R::kBreakerOpen);
  t.Add("recall", R::kTimeout);
  t.Merge(t);
  EXPECT_THAT(Entries(t), ElementsAre(Pair("features", R::kBreakerOpen),
                                      Pair("recall", R::kTimeout)));
}

TEST(DegradationTraceTest, EqualityComparesEntriesOrderAndDropped) {
  DegradationTrace a;
  a.Add("x", R::kError);
  a.Add("y", R::kShed);
  DegradationTrace b;
  b.Add("x", R::kError);
  b.Add("y", R::kShed);
  EXPECT_EQ(a, b);
  DegradationTrace swapped;
  swapped.Add("y", R::kShed);
  swapped.Add("x", R::kError);
  EXPECT_NE(a, swapped);
  DegradationTrace other_reason;
  other_reason.Add("x", R::kError);
  other_reason.Add("y", R::kTimeout);
  EXPECT_NE(a, other_reason);
  b.Add("", R::kError);
  EXPECT_NE(a, b);
  a.Clear();
  EXPECT_EQ(a, DegradationTrace());
}

// ---- Stage names -----------------------------------------------------------

TEST(StageNameTest, AcceptsTheAlphabetUpToFifteenBytes) {
  for (absl::string_view name :
       {"a", "Z", "0", "_", ".", "-", "feature-service", "rank.v2_B-9",
        "abcdefghijklmno"}) {
    EXPECT_TRUE(IsValidStageName(name)) << name;
    EXPECT_TRUE(ValidateStageName(name).ok()) << name;
    DegradationTrace t;
    EXPECT_TRUE(t.Add(name, R::kError)) << name;
  }
}

TEST(StageNameTest, RejectsWithTheCause) {
  struct Case {
    std::string name;
    std::string cause;
  };
  const std::vector<Case> cases = {
      {"", "is empty"},
      {"abcdefghijklmnop", "16 bytes, more than the 15"},
      {"feature service", "' ' at index 7"},
      {"rank=x", "'=' at index 4"},
      {"a;b", "';' at index 1"},
      {"+1", "'+' at index 0"},
      {std::string("ra\0nk", 5), "'\\x00' at index 2"},
      {"r\xc3\xa9", "'\\xc3' at index 1"},
      {"rank\n", "'\\n' at index 4"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(IsValidStageName(c.name)) << c.name;
    const absl::Status s = ValidateStageName(c.name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(s.message(), HasSubstr(c.cause)) << c.name;
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr(std::string(1, '\0'))));
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
