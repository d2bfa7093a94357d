// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The recall fan-out: every route answering (fresh, merged in route order),
// some failing (partial, the trace naming exactly the missing routes and
// why), an open breaker (the route is not called), a throwing route, every
// route failing (the hot list serves, tagged as a default), the hot list
// empty too (an error naming every cause), upstream traces, merge policies,
// and the route validation done before any call.

#include "degrade/fan_out.hpp"

#include <atomic>
#include <memory>
#include <thread>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/hedge.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/traces.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

using ::degrade_tests::Entries;

using R = DegradeReason;
using Items = std::vector<std::string>;
using Breaker = CircuitBreaker<Items>;

// Three routes, each behind its own breaker on a fake clock, with scripted
// answers and call counters.
class FanOutRecallTest : public ::testing::Test {
 protected:
  FanOutRecallTest() {
    for (const char* name : {"cf", "vec", "fresh"}) {
      BreakerSettings s;
      s.name = name;
      s.clock = &clock_;
      breakers_.push_back(std::make_unique<Breaker>(std::move(s)));
    }
    answers_ = {Items{"a", "b"}, Items{"c", "a"}, Items{"d"}};
    calls_.assign(3, 0);
  }

  std::vector<RecallRoute<std::string>> Routes() {
    std::vector<RecallRoute<std::string>> routes;
    const char* names[] = {"cf", "vec", "fresh"};
    for (std::size_t i = 0; i < 3; ++i) {
      routes.push_back(
          {names[i], breakers_[i].get(), [this, i]() -> absl::StatusOr<Items> {
             ++calls_[i];
             return answers_[i];
           }});
    }
    return routes;
  }

  // Trips breaker `i` with the default rule (more than 5 consecutive
  // failures).
  void Trip(std::size_t i) {
    for (int n = 0; n < 6; ++n) {
      (void)breakers_[i]->Execute([]() -> absl::StatusOr<Items> {
        return absl::UnavailableError("x");
      });
    }
    ASSERT_EQ(breakers_[i]->state(), State::kOpen);
  }

  HotListOptions<std::string> HotOptions() {
    HotListOptions<std::string> o;
    o.clock = &clock_;
    o.name = "hot";
    return o;
  }

  FakeClock clock_;
  std::vector<std::unique_ptr<Breaker>> breakers_;
  std::vector<absl::StatusOr<Items>> answers_;
  std::vector<int> calls_;
};

TEST_F(FanOutRecallTest, AllRoutesUpIsFreshAndMergedInRouteOrder) {
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_default());
  EXPECT_FALSE(r->degraded());
  EXPECT_TRUE(r->trace().empty());
  // ConcatCandidates keeps duplicates.
  EXPECT_THAT(r->value(), ElementsAre("a", "b", "c", "a", "d"));
  EXPECT_THAT(calls_, ElementsAre(1, 1, 1));
  for (const auto& b : breakers_) EXPECT_EQ(b->counts().total_successes, 1u);
}

TEST_F(FanOutRecallTest, DedupByIdKeepsTheFirstOccurrence) {
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(Routes(), Items{"hot"},
                   DedupCandidatesById([](const std::string& s) { return s; }));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->value(), ElementsAre("a", "b", "c", "d"));
}

TEST_F(FanOutRecallTest, CustomMergeSeesTheAnsweredRoutesInOrder) {
  answers_[1] = absl::InternalError("vec broke");
  std::vector<std::size_t> sizes;
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(Routes(), Items{"hot"}, [&](std::vector<Items>&& answers) {
        for (const Items& a : answers) sizes.push_back(a.size());
        return Items{"merged"};
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(sizes, ElementsAre(2u, 1u));  // cf, fresh; vec did not answer
  EXPECT_THAT(r->value(), ElementsAre("merged"));
}

TEST_F(FanOutRecallTest, SomeRoutesDownIsPartialAndNamesExactlyTheMissing) {
  answers_[0] = absl::InternalError("cf broke");
  answers_[2] = absl::DeadlineExceededError("fresh too slow");
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_default());
  EXPECT_TRUE(r->degraded());
  EXPECT_THAT(r->value(), ElementsAre("c", "a"));
  EXPECT_THAT(Entries(r->trace()),
              ElementsAre(Pair("recall.cf", R::kError),
                          Pair("recall.fresh", R::kTimeout)));
  EXPECT_EQ(r->trace().Encode(), "v1;recall.cf=error;recall.fresh=timeout");
  EXPECT_EQ(breakers_[0]->counts().total_failures, 1u);
  EXPECT_EQ(breakers_[2]->counts().total_failures, 1u);
}

TEST_F(FanOutRecallTest, AnEmptyAnswerIsAnAnswer) {
  answers_ = {Items{}, absl::InternalError("x"), Items{}};
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_default());
  EXPECT_THAT(r->value(), IsEmpty());
  EXPECT_THAT(Entries(r->trace()), ElementsAre(Pair("recall.vec", R::kError)));
}

TEST_F(FanOutRecallTest, OpenBreakerIsRecordedAndTheRouteIsNotCalled) {
  Trip(1);
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_default());
  EXPECT_THAT(r->value(), ElementsAre("a", "b", "d"));
  EXPECT_THAT(Entries(r->trace()),
              ElementsAre(Pair("recall.vec", R::kBreakerOpen)));
  EXPECT_THAT(calls_, ElementsAre(1, 0, 1));
}

TEST_F(FanOutRecallTest, ForcedOpenBreakerIsRecordedAsOpen) {
  breakers_[0]->ForceOpen();
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->trace().ReasonFor("recall.cf"), R::kBreakerOpen);
  EXPECT_EQ(calls_[0], 0);
}

TEST_F(FanOutRecallTest, ThrowingRouteIsRecordedAsException) {
#if DEGRADE_HAS_EXCEPTIONS
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[0].call = []() -> absl::StatusOr<Items> {
    throw std::runtime_error("cf client blew up");
  };
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(routes, Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->is_default());
  EXPECT_THAT(r->value(), ElementsAre("c", "a", "d"));
  EXPECT_THAT(Entries(r->trace()),
              ElementsAre(Pair("recall.cf", R::kException)));
  EXPECT_EQ(breakers_[0]->counts().total_failures, 1u);
#else
  GTEST_SKIP() << "built without exceptions";
#endif
}

TEST_F(FanOutRecallTest, AllDownServesTheHotListAsADefault) {
  HotList<std::string> hot(HotOptions());
  ASSERT_TRUE(hot.Publish({"h1", "h2"}).ok());
  Trip(0);
  answers_[1] = absl::InternalError("vec broke");
  answers_[2] = absl::DeadlineExceededError("fresh too slow");
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), hot.Fallback());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->is_default());
  EXPECT_THAT(r->value(), ElementsAre("h1", "h2"));
  // "recall" first, with the first route's reason, then every route.
  EXPECT_THAT(Entries(r->trace()),
              ElementsAre(Pair("recall", R::kBreakerOpen),
                          Pair("recall.cf", R::kBreakerOpen),
                          Pair("recall.vec", R::kError),
                          Pair("recall.fresh", R::kTimeout)));
  EXPECT_THAT(calls_, ElementsAre(0, 1, 1));
}

TEST_F(FanOutRecallTest, StatusAwareFallbackSeesEveryCause) {
  answers_ = {absl::InternalError("cf broke"), absl::InternalError("vec broke"),
              absl::InternalError("fresh broke")};
  absl::Status seen;
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(Routes(), [&](const absl::Status& failure) {
        seen = failure;
        return Items{"plan-b"};
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->is_default());
  EXPECT_THAT(r->value(), ElementsAre("plan-b"));
  EXPECT_EQ(seen.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(seen.message(), HasSubstr("recall.cf"));
  EXPECT_THAT(seen.message(), HasSubstr("vec broke"));
  EXPECT_THAT(seen.message(), HasSubstr("fresh broke"));
  EXPECT_EQ(r->trace().ReasonFor("recall"), R::kError);
}

TEST_F(FanOutRecallTest, FallbackSeesTheFirstRoutesPayload) {
  for (std::size_t i = 0; i < 3; ++i) breakers_[i]->ForceOpen();
  bool open = false;
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(Routes(), [&](const absl::Status& failure) {
        open = IsBreakerOpen(failure);
        return Items{"plan-b"};
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(open);
  EXPECT_EQ(r->trace().Encode(),
            "v1;recall=open;recall.cf=open;recall.vec=open;"
            "recall.fresh=open");
}

TEST_F(FanOutRecallTest, AllDownAndEmptyHotListIsAnErrorNamingEveryCause) {
  HotList<std::string> hot(HotOptions());  // nothing published
  answers_ = {absl::InternalError("cf broke"), absl::InternalError("vec broke"),
              absl::UnavailableError("fresh broke")};
  absl::StatusOr<StageResult<Items>> r = FanOutRecall(Routes(), hot.Fallback());
  ASSERT_FALSE(r.ok());
  // The fallback's code: it says why there is no answer at all.
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("stage 'recall'"));
  EXPECT_THAT(r.status().message(), HasSubstr("recall.cf"));
  EXPECT_THAT(r.status().message(), HasSubstr("cf broke"));
  EXPECT_THAT(r.status().message(), HasSubstr("recall.vec"));
  EXPECT_THAT(r.status().message(), HasSubstr("vec broke"));
  EXPECT_THAT(r.status().message(), HasSubstr("recall.fresh"));
  EXPECT_THAT(r.status().message(), HasSubstr("fresh broke"));
  EXPECT_THAT(r.status().message(), HasSubstr("no snapshot"));
}

TEST_F(FanOutRecallTest, UpstreamTraceGoesFirst) {
  DegradationTrace upstream;
  upstream.Add("features", R::kBreakerOpen);
  answers_[1] = absl::InternalError("vec broke");
  absl::StatusOr<StageResult<Items>> partial =
      FanOutRecall(upstream, Routes(), Items{"hot"});
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_FALSE(partial->is_default());
  EXPECT_EQ(partial->trace().Encode(), "v1;features=open;recall.vec=error");

  answers_ = {Items{"a"}, Items{"b"}, Items{"c"}};
  absl::StatusOr<StageResult<Items>> fresh =
      FanOutRecall(upstream, Routes(), Items{"hot"});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->is_default());
  EXPECT_TRUE(fresh->degraded());
  EXPECT_EQ(fresh->trace().Encode(), "v1;features=open");
}

TEST_F(FanOutRecallTest, UpstreamStageResultIsMergedIntoTheFallback) {
  const StageResult<int> features =
      StageResult<int>::Fallback(0, "features", R::kTimeout);
  for (std::size_t i = 0; i < 3; ++i) breakers_[i]->ForceOpen();
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(features, Routes(), [] { return Items{"hot"}; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->is_default());
  EXPECT_EQ(r->trace().Encode(),
            "v1;features=timeout;recall=open;recall.cf=open;recall.vec=open;"
            "recall.fresh=open");
}

// The one UpstreamTrace overload takes every call form: a trace or a
// result, with and without a merge policy, the result also as a temporary.
TEST_F(FanOutRecallTest, EveryUpstreamCallFormMergesTheSameTrace) {
  DegradationTrace upstream;
  upstream.Add("features", R::kTimeout);
  const StageResult<int> features = StageResult<int>::From(upstream, 1);
  answers_[1] = absl::InternalError("vec broke");
  const auto dedup =
      DedupCandidatesById([](const std::string& c) { return c; });
  const std::string want = "v1;features=timeout;recall.vec=error";
  const absl::StatusOr<StageResult<Items>> forms[] = {
      FanOutRecall(upstream, Routes(), Items{"hot"}),
      FanOutRecall(upstream, Routes(), Items{"hot"}, dedup),
      FanOutRecall(features, Routes(), Items{"hot"}, dedup),
      FanOutRecall(features.trace(), Routes(), [] { return Items{"hot"}; }),
      FanOutRecall(StageResult<int>::From(upstream, 2), Routes(),
                   [](const absl::Status&) { return Items{"hot"}; }),
  };
  for (const absl::StatusOr<StageResult<Items>>& r : forms) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->trace().Encode(), want);
  }
}

TEST_F(FanOutRecallTest, AFullTraceStillNamesTheFallback) {
  DegradationTrace upstream;
  for (const char* s : {"s1", "s2", "s3", "s4", "s5", "s6"}) {
    upstream.Add(s, R::kError);
  }
  for (std::size_t i = 0; i < 3; ++i) breakers_[i]->ForceOpen();
  absl::StatusOr<StageResult<Items>> r =
      FanOutRecall(upstream, Routes(), Items{"hot"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->trace().Contains("recall"));
  EXPECT_TRUE(r->trace().Contains("recall.cf"));
  EXPECT_EQ(r->trace().size(), kTraceCapacity);
  EXPECT_EQ(r->trace().dropped(), 2u);  // vec and fresh
  EXPECT_EQ(r->trace().depth(), 10u);
}

// ---- Route validation ----

class FanOutRecallValidationTest : public FanOutRecallTest {
 protected:
  // Runs a fan-out over `routes` and checks it was refused before any call.
  absl::Status Refused(const std::vector<RecallRoute<std::string>>& routes) {
    EXPECT_EQ(ValidateRecallRoutes(routes).code(),
              absl::StatusCode::kInvalidArgument);
    absl::StatusOr<StageResult<Items>> r = FanOutRecall(routes, Items{"hot"});
    EXPECT_FALSE(r.ok());
    EXPECT_THAT(calls_, ElementsAre(0, 0, 0));
    for (const auto& b : breakers_) {
      EXPECT_EQ(b->counts().total_successes + b->counts().total_failures, 0u);
    }
    return r.status();
  }
};

TEST_F(FanOutRecallValidationTest, ValidRoutesPass) {
  EXPECT_TRUE(ValidateRecallRoutes(Routes()).ok());
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[0].name = "ab_9.-Zx";  // 8 bytes, the whole alphabet's kinds
  EXPECT_TRUE(ValidateRecallRoutes(routes).ok());
  EXPECT_EQ(kMaxRecallRouteNameLength, 8u);
}

TEST_F(FanOutRecallValidationTest, TooLongRouteNameIsRefused) {
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[1].name = "vector-ann";  // "recall.vector-ann" is 17 bytes
  const absl::Status s = Refused(routes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("route 1 'vector-ann'"));
  EXPECT_THAT(s.message(), HasSubstr("10 bytes, more than the 8"));
}

TEST_F(FanOutRecallValidationTest, BadCharacterOrEmptyNameIsRefused) {
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[2].name = "a;b";
  EXPECT_THAT(Refused(routes).message(), HasSubstr("outside [A-Za-z0-9_.-]"));
  routes[2].name = "";
  EXPECT_THAT(Refused(routes).message(), HasSubstr("empty"));
}

TEST_F(FanOutRecallValidationTest, DuplicateNameIsRefused) {
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[2].name = "cf";
  EXPECT_THAT(Refused(routes).message(), HasSubstr("already used by route 0"));
}

TEST_F(FanOutRecallValidationTest, NullBreakerOrEmptyCallIsRefused) {
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[0].breaker = nullptr;
  EXPECT_THAT(Refused(routes).message(), HasSubstr("breaker is null"));
  routes = Routes();
  routes[1].call = nullptr;
  EXPECT_THAT(Refused(routes).message(), HasSubstr("call is empty"));
}

TEST_F(FanOutRecallValidationTest, NoRoutesIsRefused) {
  EXPECT_THAT(Refused({}).message(), HasSubstr("no routes"));
}

// Hedging per route (hedge.hpp): the vector route's first attempt hangs
// until its hedge has won; the merged result is whole, and the route's
// breaker counts the loser as excluded. Real threads (a pool), no timing
// asserted: the hedge goes out after 1 ms whenever that is.
TEST_F(FanOutRecallTest, AHedgedRouteIsAnsweredByItsHedgeAndTheLoserIsExcluded) {
  HedgeSettings hs;
  hs.name = "vec";
  hs.delay = absl::Milliseconds(1);
  hs.max_extra_load = 1.0;
  hs.metrics = NoTelemetry();
  auto hedge = *HedgePolicy::Create(hs);
  BreakerSettings bs;
  bs.name = "vec";
  Breaker vec(bs);
  std::vector<RecallRoute<std::string>> routes = Routes();
  {
    ThreadPool pool(2);  // after the policy and breaker: destroyed first
    routes[1].breaker = &vec;
    routes[1].hedge = hedge.get();
    routes[1].executor = &pool;
    // A hedged call may outlive FanOutRecall: it owns what it uses (the
    // policy outlives the pool).
    auto calls = std::make_shared<std::atomic<int>>(0);
    HedgePolicy* policy = hedge.get();
    routes[1].call = [calls, policy,
                      answer = answers_[1]]() -> absl::StatusOr<Items> {
      if (calls->fetch_add(1) == 0) {
        while (policy->stats().hedges_won == 0) std::this_thread::yield();
        return Items{"late"};
      }
      return answer;
    };
    absl::StatusOr<StageResult<Items>> r =
        FanOutRecall(routes, Items{"hot"},
                     DedupCandidatesById([](const std::string& c) { return c; }));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->is_default());
    EXPECT_THAT(r->value(), ElementsAre("a", "b", "c", "d"));
    EXPECT_THAT(Entries(r->trace()), IsEmpty());
  }
  EXPECT_EQ(hedge->stats().hedges_won, 1u);
  EXPECT_EQ(hedge->stats().attempts_cancelled, 1u);
  EXPECT_EQ(vec.totals().successes, 1u);
  EXPECT_EQ(vec.totals().failures, 0u);
  EXPECT_EQ(vec.totals().exclusions, 1u);
}

TEST_F(FanOutRecallTest, AHedgedRouteNeedsAnExecutor) {
  HedgeSettings hs;
  hs.metrics = NoTelemetry();
  auto hedge = *HedgePolicy::Create(hs);
  std::vector<RecallRoute<std::string>> routes = Routes();
  routes[2].hedge = hedge.get();
  const absl::Status s = ValidateRecallRoutes(routes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("route 2 'fresh'"));
  EXPECT_THAT(s.message(), HasSubstr("executor is null"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
