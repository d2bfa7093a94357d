// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// with_fallback.hpp: WithFallback on success, error, an open breaker and a
// throwing callable; traces merged through stages; recall-score ordering and
// dedup, alone and behind a breaker (RankOrFallback, RerankOrFallback).

#include "degrade/with_fallback.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/breakers.hpp"
#include "support/traces.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::MakeBreaker;
using ::degrade_tests::Trip;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::degrade_tests::Entries;

using R = DegradeReason;
using Ints = std::vector<int>;

// ---- WithFallback ----

class WithFallbackTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::unique_ptr<CircuitBreaker<int>> cb_ = MakeBreaker<int>(&clock_, "cb");
};

TEST_F(WithFallbackTest, SuccessIsFresh) {
  StageResult<int> r = WithFallback(
      *cb_, "features", [] { return 7; }, -1);
  EXPECT_EQ(r.value(), 7);
  EXPECT_FALSE(r.is_default());
  EXPECT_TRUE(r.trace().empty());
  EXPECT_EQ(cb_->counts().total_successes, 1u);
}

TEST_F(WithFallbackTest, ErrorGivesFallbackValueTaggedError) {
  StageResult<int> r = WithFallback(
      *cb_, "features",
      []() -> absl::StatusOr<int> { return absl::InternalError("boom"); }, -1);
  EXPECT_EQ(r.value(), -1);
  EXPECT_TRUE(r.is_default());
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(std::make_pair("features", R::kError)));
  EXPECT_EQ(cb_->counts().total_failures, 1u);
}

TEST_F(WithFallbackTest, TimeoutStatusIsTaggedTimeout) {
  StageResult<int> r = WithFallback(
      *cb_, "features",
      []() -> absl::StatusOr<int> {
        return absl::DeadlineExceededError("slow");
      },
      -1);
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kTimeout);
}

TEST_F(WithFallbackTest, FallbackTakingStatusSeesTheFailure) {
  absl::Status seen;
  StageResult<int> r = WithFallback(
      *cb_, "features",
      []() -> absl::StatusOr<int> { return absl::NotFoundError("no user"); },
      [&seen](const absl::Status& s) {
        seen = s;
        return 42;
      });
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(seen.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(seen.message()), HasSubstr("no user"));
}

TEST_F(WithFallbackTest, NoArgumentFallbackIsCalledOnlyOnFailure) {
  int calls = 0;
  auto fallback = [&calls] {
    ++calls;
    return 5;
  };
  EXPECT_EQ(WithFallback(
                *cb_, "features", [] { return 1; }, fallback)
                .value(),
            1);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(
      WithFallback(
          *cb_, "features",
          []() -> absl::StatusOr<int> { return absl::InternalError("x"); },
          fallback)
          .value(),
      5);
  EXPECT_EQ(calls, 1);
}

TEST_F(WithFallbackTest, OpenBreakerSkipsTheCallAndTagsOpen) {
  Trip(*cb_);
  int calls = 0;
  StageResult<int> r = WithFallback(
      *cb_, "features",
      [&calls] {
        ++calls;
        return 1;
      },
      -1);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.value(), -1);
  EXPECT_TRUE(r.is_default());
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kBreakerOpen);
}

TEST_F(WithFallbackTest, ThrowingCallableIsTaggedExceptionAndCounted) {
  StageResult<int> r = WithFallback(
      *cb_, "features",
      []() -> int { throw std::runtime_error("feature client blew up"); }, -1);
  EXPECT_EQ(r.value(), -1);
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kException);
  EXPECT_EQ(cb_->counts().total_failures, 1u);
}

TEST_F(WithFallbackTest, FallibleFallbackSucceedingGivesStageResult) {
  absl::StatusOr<StageResult<int>> r = WithFallback(
      *cb_, "features",
      []() -> absl::StatusOr<int> { return absl::InternalError("x"); },
      []() -> absl::StatusOr<int> { return 3; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->value(), 3);
  EXPECT_TRUE(r->is_default());
}

TEST_F(WithFallbackTest, FallibleFallbackFailingNamesStageAndBothCauses) {
  absl::StatusOr<StageResult<int>> r = WithFallback(
      *cb_, "features",
      []() -> absl::StatusOr<int> { return absl::InternalError("rpc down"); },
      []() -> absl::StatusOr<int> {
        return absl::FailedPreconditionError("nothing loaded");
      });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("features"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("rpc down"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("nothing loaded"));
}

TEST_F(WithFallbackTest, TraceMergesThroughTwoStages) {
  auto recall_cb = MakeBreaker<Ints>(&clock_, "recall");
  Trip(*cb_);
  StageResult<int> features = WithFallback(
      *cb_, "features", [] { return 1; }, 0);
  StageResult<Ints> recall = WithFallback(
      features, *recall_cb, "recall",
      []() -> absl::StatusOr<Ints> { return absl::UnavailableError("redis"); },
      Ints{9, 8});
  EXPECT_THAT(recall.value(), ElementsAre(9, 8));
  EXPECT_TRUE(recall.is_default());
  EXPECT_THAT(Entries(recall.trace()),
              ElementsAre(std::make_pair("features", R::kBreakerOpen),
                          std::make_pair("recall", R::kError)));
  EXPECT_EQ(recall.trace().depth(), 2u);
  EXPECT_EQ(recall.trace().Encode(), "v1;features=open;recall=error");
}

TEST_F(WithFallbackTest, FreshStageCarriesUpstreamTraceButIsNotDefault) {
  DegradationTrace upstream;
  upstream.Add("features", R::kTimeout);
  StageResult<int> r = WithFallback(
      upstream, *cb_, "rank", [] { return 2; }, 0);
  EXPECT_EQ(r.value(), 2);
  EXPECT_FALSE(r.is_default());
  EXPECT_TRUE(r.degraded());
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(std::make_pair("features", R::kTimeout)));
}

// Every upstream call form the docs and users write compiles against the
// one UpstreamTrace overload and merges the same trace: a trace, a result
// (by reference and as a temporary), with each kind of fallback.
TEST_F(WithFallbackTest, EveryUpstreamCallFormMergesTheSameTrace) {
  DegradationTrace upstream;
  upstream.Add("features", R::kTimeout);
  const StageResult<Ints> result = StageResult<Ints>::From(upstream, Ints{1});
  const auto call = []() -> absl::StatusOr<int> {
    return absl::UnavailableError("down");
  };
  const std::string want = "v1;features=timeout;rank=error";
  EXPECT_EQ(WithFallback(upstream, *cb_, "rank", call, 0).trace().Encode(),
            want);
  EXPECT_EQ(WithFallback(result, *cb_, "rank", call, 0).trace().Encode(), want);
  EXPECT_EQ(WithFallback(result.trace(), *cb_, "rank", call, [] { return 0; })
                .trace()
                .Encode(),
            want);
  EXPECT_EQ(WithFallback(StageResult<Ints>::From(upstream, Ints{}), *cb_,
                         "rank", call, [](const absl::Status&) { return 0; })
                .trace()
                .Encode(),
            want);
  const absl::StatusOr<StageResult<int>> fallible = WithFallback(
      result, *cb_, "rank", call, []() -> absl::StatusOr<int> { return 0; });
  ASSERT_TRUE(fallible.ok());
  EXPECT_EQ(fallible->trace().Encode(), want);
}

// ---- Ranking and re-ranking ----

struct Candidate {
  std::string id;
  double recall_score;
};

std::vector<std::string> Ids(const std::vector<Candidate>& cs) {
  std::vector<std::string> out;
  for (const Candidate& c : cs) out.push_back(c.id);
  return out;
}

double ScoreOf(const Candidate& c) { return c.recall_score; }
const std::string& IdOf(const Candidate& c) { return c.id; }

std::vector<Candidate> Recalled() {
  return {{"a", 0.2}, {"b", 0.9}, {"c", 0.5},
          {"d", 0.9}, {"e", 0.2}, {"f", 0.5}};
}

TEST(OrderByRecallScoreTest, HighestFirstAndStableOnTies) {
  EXPECT_THAT(Ids(OrderByRecallScore(Recalled(), ScoreOf)),
              ElementsAre("b", "d", "c", "f", "a", "e"));
}

TEST(OrderByRecallScoreTest, NanScoresGoLast) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Candidate> cs = {{"x", nan}, {"a", 0.1}, {"y", nan}, {"b", 0.3}};
  EXPECT_THAT(Ids(OrderByRecallScore(std::move(cs), ScoreOf)),
              ElementsAre("b", "a", "x", "y"));
}

TEST(OrderByRecallScoreTest, EmptyStaysEmpty) {
  EXPECT_TRUE(OrderByRecallScore(std::vector<Candidate>{}, ScoreOf).empty());
}

class RankOrFallbackTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::unique_ptr<CircuitBreaker<std::vector<Candidate>>> cb_ =
      MakeBreaker<std::vector<Candidate>>(&clock_, "ranker");
};

TEST_F(RankOrFallbackTest, SuccessReturnsTheRankersOrder) {
  StageResult<std::vector<Candidate>> r = RankOrFallback(
      *cb_, "rank",
      [](const std::vector<Candidate>& cs) {
        return std::vector<Candidate>(cs.rbegin(), cs.rend());
      },
      Recalled(), ScoreOf);
  EXPECT_FALSE(r.is_default());
  EXPECT_THAT(Ids(r.value()), ElementsAre("f", "e", "d", "c", "b", "a"));
}

TEST_F(RankOrFallbackTest, FailureOrdersByRecallScore) {
  StageResult<std::vector<Candidate>> r = RankOrFallback(
      *cb_, "rank",
      [](const std::vector<Candidate>&)
          -> absl::StatusOr<std::vector<Candidate>> {
        return absl::InternalError("model server 500");
      },
      Recalled(), ScoreOf);
  EXPECT_TRUE(r.is_default());
  EXPECT_THAT(Ids(r.value()), ElementsAre("b", "d", "c", "f", "a", "e"));
  EXPECT_EQ(r.trace().ReasonFor("rank"), R::kError);
}

TEST_F(RankOrFallbackTest, OpenBreakerOrdersByRecallScoreWithoutCalling) {
  Trip(*cb_);
  int calls = 0;
  StageResult<std::vector<Candidate>> r = RankOrFallback(
      *cb_, "rank",
      [&calls](const std::vector<Candidate>& cs) {
        ++calls;
        return cs;
      },
      Recalled(), ScoreOf);
  EXPECT_EQ(calls, 0);
  EXPECT_THAT(Ids(r.value()), ElementsAre("b", "d", "c", "f", "a", "e"));
  EXPECT_EQ(r.trace().ReasonFor("rank"), R::kBreakerOpen);
}

TEST_F(RankOrFallbackTest, ThrowingRankerOrdersByRecallScore) {
  StageResult<std::vector<Candidate>> r = RankOrFallback(
      *cb_, "rank",
      [](const std::vector<Candidate>&) -> std::vector<Candidate> {
        throw std::runtime_error("tensor shape mismatch");
      },
      Recalled(), ScoreOf);
  EXPECT_THAT(Ids(r.value()), ElementsAre("b", "d", "c", "f", "a", "e"));
  EXPECT_EQ(r.trace().ReasonFor("rank"), R::kException);
}

TEST_F(RankOrFallbackTest, MergesTheUpstreamTrace) {
  DegradationTrace upstream;
  upstream.Add("recall", R::kTimeout);
  StageResult<std::vector<Candidate>> r = RankOrFallback(
      upstream, *cb_, "rank",
      [](const std::vector<Candidate>&)
          -> absl::StatusOr<std::vector<Candidate>> {
        return absl::UnavailableError("down");
      },
      Recalled(), ScoreOf);
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(std::make_pair("recall", R::kTimeout),
                          std::make_pair("rank", R::kError)));
}

TEST(DedupOnlyTest, KeepsOrderAndTheFirstOccurrence) {
  std::vector<Candidate> cs = {{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4},
                               {"b", 5}, {"d", 6}, {"a", 7}};
  std::vector<Candidate> out = DedupOnly(std::move(cs), IdOf);
  EXPECT_THAT(Ids(out), ElementsAre("a", "b", "c", "d"));
  EXPECT_EQ(out[0].recall_score, 1);
  EXPECT_EQ(out[1].recall_score, 2);
}

TEST(DedupOnlyTest, IntegerIdsAndEmptyInput) {
  EXPECT_THAT(
      DedupOnly(std::vector<int>{3, 1, 3, 2, 1}, [](int v) { return v; }),
      ElementsAre(3, 1, 2));
  EXPECT_TRUE(DedupOnly(std::vector<int>{}, [](int v) { return v; }).empty());
}

class RerankOrFallbackTest : public ::testing::Test {
 protected:
  std::vector<Candidate> WithDuplicates() {
    return {{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4}};
  }
  FakeClock clock_;
  std::unique_ptr<CircuitBreaker<std::vector<Candidate>>> cb_ =
      MakeBreaker<std::vector<Candidate>>(&clock_, "reranker");
};

TEST_F(RerankOrFallbackTest, SuccessReturnsTheRerankersList) {
  StageResult<std::vector<Candidate>> r = RerankOrFallback(
      *cb_, "rerank",
      [](const std::vector<Candidate>& cs) {
        return std::vector<Candidate>{cs[3], cs[1]};
      },
      WithDuplicates(), IdOf);
  EXPECT_FALSE(r.is_default());
  EXPECT_THAT(Ids(r.value()), ElementsAre("c", "b"));
}

TEST_F(RerankOrFallbackTest, FailureOnlyDeduplicates) {
  StageResult<std::vector<Candidate>> r = RerankOrFallback(
      *cb_, "rerank",
      [](const std::vector<Candidate>&)
          -> absl::StatusOr<std::vector<Candidate>> {
        return absl::InternalError("diversity service down");
      },
      WithDuplicates(), IdOf);
  EXPECT_TRUE(r.is_default());
  EXPECT_THAT(Ids(r.value()), ElementsAre("a", "b", "c"));
  EXPECT_EQ(r.trace().ReasonFor("rerank"), R::kError);
}

TEST_F(RerankOrFallbackTest, OpenBreakerOnlyDeduplicates) {
  Trip(*cb_);
  StageResult<std::vector<Candidate>> r = RerankOrFallback(
      *cb_, "rerank", [](const std::vector<Candidate>& cs) { return cs; },
      WithDuplicates(), IdOf);
  EXPECT_THAT(Ids(r.value()), ElementsAre("a", "b", "c"));
  EXPECT_EQ(r.trace().ReasonFor("rerank"), R::kBreakerOpen);
}

TEST_F(RerankOrFallbackTest, ThrowingRerankerOnlyDeduplicates) {
  StageResult<std::vector<Candidate>> r = RerankOrFallback(
      *cb_, "rerank",
      [](const std::vector<Candidate>&) -> std::vector<Candidate> {
        throw 42;  // not even a std::exception
      },
      WithDuplicates(), IdOf);
  EXPECT_THAT(Ids(r.value()), ElementsAre("a", "b", "c"));
  EXPECT_EQ(r.trace().ReasonFor("rerank"), R::kException);
}

TEST_F(RerankOrFallbackTest, FullChainAccumulatesEveryDegradedStage) {
  FakeClock clock;
  auto rank_cb = MakeBreaker<std::vector<Candidate>>(&clock, "ranker");
  StageResult<std::vector<Candidate>> ranked = RankOrFallback(
      *rank_cb, "rank",
      [](const std::vector<Candidate>&)
          -> absl::StatusOr<std::vector<Candidate>> {
        return absl::DeadlineExceededError("100ms budget");
      },
      WithDuplicates(), ScoreOf);
  StageResult<std::vector<Candidate>> reranked = RerankOrFallback(
      ranked.trace(), *cb_, "rerank",
      [](const std::vector<Candidate>&)
          -> absl::StatusOr<std::vector<Candidate>> {
        return absl::UnavailableError("down");
      },
      ranked.value(), IdOf);
  EXPECT_THAT(Ids(reranked.value()), ElementsAre("c", "a", "b"));
  EXPECT_EQ(reranked.trace().Encode(), "v1;rank=timeout;rerank=error");
  // The upstream result itself serves as well as its trace, for both.
  const auto down = [](const std::vector<Candidate>&)
      -> absl::StatusOr<std::vector<Candidate>> {
    return absl::UnavailableError("down");
  };
  EXPECT_EQ(RerankOrFallback(ranked, *cb_, "rerank", down, ranked.value(), IdOf)
                .trace()
                .Encode(),
            "v1;rank=timeout;rerank=error");
  EXPECT_EQ(
      RankOrFallback(ranked, *rank_cb, "rank2", down, WithDuplicates(), ScoreOf)
          .trace()
          .Encode(),
      "v1;rank=timeout;rank2=error");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
