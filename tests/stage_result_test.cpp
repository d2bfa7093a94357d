// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// StageResult<T>: its factories and accessors, the tag it carries from stage
// to stage, and that a result of a trivially copyable value is itself one.
// The trace's own rules are in degradation_trace_test.cpp, the reasons in
// degrade_reason_test.cpp and the text encoding in
// detail/trace/trace_codec_test.cpp.

#include "degrade/stage_result.hpp"

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace_test_support.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::testing_support::Entries;
using ::testing::ElementsAre;
using ::testing::Pair;

using R = DegradeReason;

// ---- StageResult -----------------------------------------------------------

TEST(StageResultTest, FreshIsNotDefaultAndHasEmptyTrace) {
  const auto r = StageResult<int>::Fresh(42);
  EXPECT_EQ(r.value(), 42);
  EXPECT_FALSE(r.is_default());
  EXPECT_FALSE(r.degraded());
  EXPECT_TRUE(r.trace().empty());
  EXPECT_EQ(r.trace().depth(), 0u);
  EXPECT_EQ(r.trace().Encode(), "v1");
}

TEST(StageResultTest, FallbackSetsIsDefaultAndTraceEntry) {
  const auto r = StageResult<std::vector<float>>::Fallback(
      {0.5f, 0.25f}, "features", R::kBreakerOpen);
  EXPECT_THAT(r.value(), ElementsAre(0.5f, 0.25f));
  EXPECT_TRUE(r.is_default());
  EXPECT_TRUE(r.degraded());
  EXPECT_EQ(r.trace().depth(), 1u);
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(Pair("features", R::kBreakerOpen)));
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kBreakerOpen);
}

TEST(StageResultTest, FallbackWithInvalidStageNameIsStillCountedAndDefault) {
  const auto r = StageResult<int>::Fallback(0, "feature service", R::kTimeout);
  EXPECT_TRUE(r.is_default());
  EXPECT_EQ(r.trace().size(), 0u);
  EXPECT_EQ(r.trace().dropped(), 1u);
  EXPECT_EQ(r.trace().depth(), 1u);
  EXPECT_EQ(r.trace().Encode(), "v1;+1");
}

TEST(StageResultTest, StaleIsDegradedButNotADefaultAndCarriesItsAgeBucket) {
  auto r =
      StageResult<int>::Stale(7, "features", R::kBreakerOpen, absl::Minutes(4));
  EXPECT_TRUE(r.is_stale());
  EXPECT_FALSE(r.is_default());
  EXPECT_TRUE(r.degraded());
  EXPECT_EQ(r.tier(), FallbackTier::kStale10m);
  EXPECT_EQ(r.trace().Encode(), "v1;features=open/stale-10m");
  // Even with no reason to record, a stale result says it is stale.
  auto quiet =
      StageResult<int>::Stale(7, "features", R::kNone, absl::Seconds(1));
  EXPECT_TRUE(quiet.is_stale());
  EXPECT_TRUE(quiet.degraded());
  EXPECT_TRUE(quiet.trace().empty());
  // Marking it a default afterwards makes it a default, not stale.
  r.MarkDefault("features", R::kError);
  EXPECT_TRUE(r.is_default());
  EXPECT_FALSE(r.is_stale());
}

TEST(StageResultTest, StaleAgeBucketsHaveInclusiveUpperBounds) {
  const auto tier = [](absl::Duration age) {
    return StageResult<int>::Stale(0, "f", R::kError, age).tier();
  };
  EXPECT_EQ(tier(-absl::Hours(1)), FallbackTier::kStale1m);  // clock back
  EXPECT_EQ(tier(absl::ZeroDuration()), FallbackTier::kStale1m);
  EXPECT_EQ(tier(absl::Minutes(1)), FallbackTier::kStale1m);
  EXPECT_EQ(tier(absl::Minutes(1) + absl::Nanoseconds(1)),
            FallbackTier::kStale10m);
  EXPECT_EQ(tier(absl::Minutes(10)), FallbackTier::kStale10m);
  EXPECT_EQ(tier(absl::Hours(1)), FallbackTier::kStale1h);
  EXPECT_EQ(tier(absl::Hours(1) + absl::Nanoseconds(1)),
            FallbackTier::kStaleOld);
  EXPECT_EQ(tier(absl::InfiniteDuration()), FallbackTier::kStaleOld);
}

TEST(StageResultTest, LadderDefaultsAreDefaultsWithTheirRung) {
  auto seg = StageResult<int>::Fallback(1, "features", R::kTimeout,
                                        FallbackTier::kSegment);
  EXPECT_TRUE(seg.is_default());
  EXPECT_FALSE(seg.is_stale());
  EXPECT_EQ(seg.tier(), FallbackTier::kSegment);
  EXPECT_EQ(seg.trace().Encode(), "v1;features=timeout/segment");
  auto global = StageResult<int>::Fallback(1, "features", R::kBreakerOpen,
                                           FallbackTier::kGlobal);
  EXPECT_EQ(global.trace().Encode(), "v1;features=open/global");
  // A stale tier is Stale()'s: as a default it is recorded as none.
  auto wrong = StageResult<int>::Fallback(1, "features", R::kError,
                                          FallbackTier::kStale1m);
  EXPECT_TRUE(wrong.is_default());
  EXPECT_FALSE(wrong.is_stale());
  EXPECT_EQ(wrong.trace().Encode(), "v1;features=error");
}

TEST(StageResultTest, ValueOverloadsMutateAndMoveOut) {
  auto r = StageResult<std::string>::Fresh("hot-list");
  r.value() += "-200";
  EXPECT_EQ(r.value(), "hot-list-200");
  static_assert(std::is_same<decltype(r.value()), std::string&>::value, "");
  static_assert(
      std::is_same<decltype(std::move(r).value()), std::string&&>::value, "");
  const auto& cr = r;
  static_assert(std::is_same<decltype(cr.value()), const std::string&>::value,
                "");

  auto p = StageResult<std::unique_ptr<int>>::Fallback(std::make_unique<int>(7),
                                                       "recall", R::kError);
  std::unique_ptr<int> out = std::move(p).value();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(*out, 7);
  EXPECT_EQ(p.value(), nullptr);  // NOLINT(bugprone-use-after-move): moved out
  EXPECT_TRUE(p.is_default());    // the tag survives moving the value out
}

TEST(StageResultTest, MutableTraceRecordsPartialWithoutMarkingDefault) {
  auto r = StageResult<int>::Fresh(3);
  EXPECT_TRUE(r.mutable_trace()->Add("recall", R::kTimeout));
  EXPECT_FALSE(r.is_default());
  EXPECT_TRUE(r.degraded());
  EXPECT_EQ(r.trace().ReasonFor("recall"), R::kTimeout);
}

TEST(StageResultTest, MarkDefaultSetsFlagAndEntry) {
  auto r = StageResult<int>::Fresh(3);
  EXPECT_TRUE(r.MarkDefault("rank", R::kShed));
  EXPECT_TRUE(r.is_default());
  EXPECT_THAT(Entries(r.trace()), ElementsAre(Pair("rank", R::kShed)));
}

TEST(StageResultTest, FromCarriesUpstreamTraceWithoutMarkingDefault) {
  const auto features =
      StageResult<int>::Fallback(0, "features", R::kBreakerOpen);
  const auto recall = StageResult<std::string>::From(features.trace(), "items");
  EXPECT_EQ(recall.value(), "items");
  EXPECT_FALSE(recall.is_default());
  EXPECT_TRUE(recall.degraded());
  EXPECT_EQ(recall.trace(), features.trace());
}

TEST(StageResultTest, RankerSeesThatItsFeaturesAreDefaults) {
  // The ranker reads its input's tag to down-weight default features.
  const auto rank = [](const StageResult<std::vector<float>>& features) {
    const float weight = features.is_default() ? 0.1f : 1.0f;
    return StageResult<float>::From(features.trace(),
                                    weight * features.value()[0]);
  };
  const auto fresh = rank(StageResult<std::vector<float>>::Fresh({2.0f}));
  const auto fallback = rank(StageResult<std::vector<float>>::Fallback(
      {2.0f}, "features", R::kTimeout));
  EXPECT_FLOAT_EQ(fresh.value(), 2.0f);
  EXPECT_FLOAT_EQ(fallback.value(), 0.2f);
  EXPECT_FALSE(fallback.is_default());
  EXPECT_EQ(fallback.trace().ReasonFor("features"), R::kTimeout);
}

TEST(StageResultTest, MergeUpstreamPutsUpstreamEntriesFirst) {
  auto rank = StageResult<int>::Fallback(1, "rank", R::kShed);
  const auto recall = StageResult<int>::Fallback(2, "recall", R::kTimeout);
  rank.MergeUpstream(recall);
  EXPECT_THAT(Entries(rank.trace()),
              ElementsAre(Pair("recall", R::kTimeout), Pair("rank", R::kShed)));
  EXPECT_TRUE(rank.is_default());
  EXPECT_EQ(rank.value(), 1);  // only the trace is read from upstream
}

TEST(StageResultTest, MergeUpstreamKeepsUpstreamReasonForSameStage) {
  auto r = StageResult<int>::Fallback(1, "features", R::kUpstream);
  DegradationTrace upstream;
  upstream.Add("features", R::kBreakerOpen);
  r.MergeUpstream(upstream);
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(Pair("features", R::kBreakerOpen)));
  EXPECT_EQ(r.trace().depth(), 1u);
}

TEST(StageResultTest, MergeUpstreamFansInTwoInputs) {
  const auto features = StageResult<int>::Fallback(0, "features", R::kError);
  const auto user = StageResult<int>::Fallback(0, "user", R::kTimeout);
  auto recall = StageResult<int>::Fresh(1);
  recall.MergeUpstream(features).MergeUpstream(user);
  // Each MergeUpstream puts its input before what was already there.
  EXPECT_THAT(
      Entries(recall.trace()),
      ElementsAre(Pair("user", R::kTimeout), Pair("features", R::kError)));
  EXPECT_FALSE(recall.is_default());
}

TEST(StageResultTest, FourStagePipelineNamesEveryLostLayer) {
  using Items = std::vector<int>;
  // Feature service: breaker open, the global average vector is served.
  const auto features = StageResult<std::vector<float>>::Fallback(
      {0.3f, 0.3f}, "features",
      ReasonFromStatus(absl::DeadlineExceededError("")));
  ASSERT_EQ(features.trace().ReasonFor("features"), R::kTimeout);
  // Recall fans out; two shards answer, one times out: partial, not default.
  auto recall = StageResult<Items>::From(features.trace(), Items{5, 3, 3, 9});
  recall.mutable_trace()->Add("recall", R::kBreakerOpen);
  // Ranking is shed by the degradation level: recall-score order is served.
  auto rank = StageResult<Items>::Fallback(recall.value(), "rank", R::kShed);
  rank.MergeUpstream(recall);
  // Re-ranking errors: de-duplicate only.
  auto rerank =
      StageResult<Items>::Fallback(Items{5, 3, 9}, "rerank", R::kError);
  rerank.MergeUpstream(rank);

  EXPECT_TRUE(features.is_default());
  EXPECT_FALSE(recall.is_default());
  EXPECT_TRUE(rank.is_default());
  EXPECT_TRUE(rerank.is_default());
  const DegradationTrace& t = rerank.trace();
  EXPECT_EQ(t.depth(), 4u);
  EXPECT_FALSE(t.overflowed());
  EXPECT_THAT(Entries(t),
              ElementsAre(Pair("features", R::kTimeout),
                          Pair("recall", R::kBreakerOpen),
                          Pair("rank", R::kShed), Pair("rerank", R::kError)));
  EXPECT_EQ(t.Encode(),
            "v1;features=timeout;recall=open;rank=shed;rerank=error");
  const absl::StatusOr<DegradationTrace> decoded =
      DegradationTrace::Decode(t.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, t);
  EXPECT_THAT(rerank.value(), ElementsAre(5, 3, 9));
}

TEST(StageResultTest, IntResultIsTriviallyCopyableAndHeapFree) {
  static_assert(std::is_trivially_copyable<DegradationTrace>::value, "");
  static_assert(std::is_trivially_copyable<TraceEntry>::value, "");
  static_assert(std::is_trivially_copyable<StageResult<int>>::value,
                "a trivially copyable result owns no heap memory");
  static_assert(std::is_trivially_destructible<StageResult<int>>::value, "");
  static_assert(sizeof(DegradationTrace) <= 160, "a trace is a small value");
  static_assert(sizeof(StageResult<int>) <= sizeof(DegradationTrace) + 8, "");
  // A copy is independent of its source.
  auto a = StageResult<int>::Fallback(1, "features", R::kError);
  StageResult<int> b = a;
  b.mutable_trace()->Add("recall", R::kTimeout);
  EXPECT_EQ(a.trace().depth(), 1u);
  EXPECT_EQ(b.trace().depth(), 2u);
}

// UpstreamTrace: made implicitly from a trace or from any StageResult<U>,
// it refers to that very trace (no copy), and nothing else converts.
TEST(StageResultTest, UpstreamTraceRefersToTheTraceOrTheResultsTrace) {
  DegradationTrace t;
  t.Add("features", R::kTimeout);
  const auto r = StageResult<std::string>::From(t, "x");
  const auto view = [](UpstreamTrace u) { return &u.trace(); };
  EXPECT_EQ(view(t), &t);
  EXPECT_EQ(view(r), &r.trace());
  EXPECT_EQ(view(StageResult<int>::From(t, 1))->Encode(),
            "v1;features=timeout");
  static_assert(std::is_convertible_v<const DegradationTrace&, UpstreamTrace>);
  static_assert(std::is_convertible_v<const StageResult<std::vector<int>>&,
                                      UpstreamTrace>);
  static_assert(!std::is_convertible_v<int, UpstreamTrace>);
  static_assert(!std::is_convertible_v<std::string, UpstreamTrace>);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
