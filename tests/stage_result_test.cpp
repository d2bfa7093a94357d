// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The degradation tag: StageResult's factories and accessors, the trace's
// fixed-capacity rules, ReasonFromStatus on real breaker statuses, and the
// text encoding (round trips, a table of malformed input, truncations and
// byte mutations of valid encodings).

#include "degrade/stage_result.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {

// Failure messages show traces as their encoding and reasons as tokens.
void PrintTo(const DegradationTrace& t, std::ostream* os) { *os << t.Encode(); }
void PrintTo(DegradeReason r, std::ostream* os) { *os << ReasonName(r); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;

using R = DegradeReason;

std::vector<std::pair<std::string, DegradeReason>> Entries(
    const DegradationTrace& t) {
  std::vector<std::pair<std::string, DegradeReason>> out;
  for (const TraceEntry& e : t)
    out.emplace_back(std::string(e.stage()), e.reason());
  return out;
}

// A trace of `n` entries named s0, s1, ...
DegradationTrace TraceOf(std::size_t n, DegradeReason reason = R::kError) {
  DegradationTrace t;
  for (std::size_t i = 0; i < n; ++i) t.Add(absl::StrCat("s", i), reason);
  return t;
}

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

// ---- Reasons ---------------------------------------------------------------

TEST(ReasonTest, NamesAreShortStableTokensThatParseBack) {
  const std::vector<std::pair<DegradeReason, absl::string_view>> table = {
      {R::kBreakerOpen, "open"},    {R::kTooManyRequests, "too_many"},
      {R::kTimeout, "timeout"},     {R::kError, "error"},
      {R::kException, "exception"}, {R::kShed, "shed"},
      {R::kUpstream, "upstream"},   {R::kInvalid, "invalid"},
  };
  for (const auto& [reason, token] : table) {
    EXPECT_EQ(ReasonName(reason), token);
    DegradeReason parsed = R::kNone;
    EXPECT_TRUE(ParseReasonName(token, &parsed)) << token;
    EXPECT_EQ(parsed, reason);
  }
  EXPECT_EQ(ReasonName(R::kNone), "none");
  EXPECT_EQ(ReasonName(static_cast<DegradeReason>(99)), "unknown");
  DegradeReason untouched = R::kShed;
  for (absl::string_view bad : {"none", "unknown", "", "OPEN", "open "}) {
    EXPECT_FALSE(ParseReasonName(bad, &untouched)) << bad;
  }
  EXPECT_EQ(untouched, R::kShed);
}

class ReasonFromStatusTest : public ::testing::Test {
 protected:
  BreakerSettings Settings() {
    BreakerSettings s;
    s.name = "feature-service";
    s.clock = &clock_;
    s.timeout = absl::Seconds(10);
    s.max_requests = 1;
    s.ready_to_trip = trip::ConsecutiveFailures(1);
    return s;
  }
  FakeClock clock_;
};

TEST_F(ReasonFromStatusTest, OkIsNone) {
  EXPECT_EQ(ReasonFromStatus(absl::OkStatus()), R::kNone);
}

TEST_F(ReasonFromStatusTest, OpenBreakerRejectionIsOpen) {
  CircuitBreaker<int> cb(Settings());
  (void)cb.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  ASSERT_EQ(cb.state(), State::kOpen);
  const absl::StatusOr<int> r = cb.Execute([] { return 1; });
  ASSERT_TRUE(IsBreakerOpen(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kBreakerOpen);
}

TEST_F(ReasonFromStatusTest, HalfOpenRejectionIsTooMany) {
  CircuitBreaker<int> cb(Settings());
  (void)cb.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  clock_.Advance(absl::Seconds(11));
  ASSERT_EQ(cb.state(), State::kHalfOpen);
  absl::StatusOr<Permit> trial = cb.Allow();  // takes the only trial slot
  ASSERT_TRUE(trial.ok()) << trial.status();
  const absl::StatusOr<int> r = cb.Execute([] { return 1; });
  ASSERT_TRUE(IsTooManyRequests(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kTooManyRequests);
  trial->Done(absl::OkStatus());
}

TEST_F(ReasonFromStatusTest, ThrowingCallableIsException) {
  CircuitBreaker<int> cb(Settings());
  const absl::StatusOr<int> r = cb.Execute(
      []() -> absl::StatusOr<int> { throw std::runtime_error("boom"); });
  ASSERT_TRUE(IsCallableException(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kException);
}

TEST_F(ReasonFromStatusTest, CallableDeadlineExceededIsTimeout) {
  CircuitBreaker<int> cb(Settings());
  const absl::StatusOr<int> r = cb.Execute([]() -> absl::StatusOr<int> {
    return absl::DeadlineExceededError("100 ms budget spent");
  });
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kTimeout);
}

TEST_F(ReasonFromStatusTest, OtherErrorsAreErrorEvenIfTheyLookLikeRejections) {
  // A backend's own UNAVAILABLE carrying the breaker's words is not a
  // rejection: only the payload counts.
  EXPECT_EQ(ReasonFromStatus(absl::UnavailableError(
                "circuit breaker 'feature-service' is open")),
            R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::InternalError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::CancelledError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::UnknownError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(CallableExceptionError("here", "what")),
            R::kException);
}

// ---- Encoding --------------------------------------------------------------

TEST(TraceEncodingTest, EncodesAndDecodesTable) {
  struct Case {
    std::vector<std::pair<std::string, DegradeReason>> adds;
    std::string encoded;
  };
  const std::vector<Case> cases = {
      {{}, "v1"},
      {{{"features", R::kBreakerOpen}}, "v1;features=open"},
      {{{"features", R::kBreakerOpen}, {"recall", R::kTimeout}},
       "v1;features=open;recall=timeout"},
      {{{"a", R::kTooManyRequests},
        {"b", R::kError},
        {"c", R::kException},
        {"d", R::kShed},
        {"e", R::kUpstream},
        {"f", R::kInvalid}},
       "v1;a=too_many;b=error;c=exception;d=shed;e=upstream;f=invalid"},
      {{{"Rank.v2_B-9", R::kShed}, {"bad name", R::kError}},
       "v1;Rank.v2_B-9=shed;+1"},
      {{{"", R::kError}}, "v1;+1"},
  };
  for (const Case& c : cases) {
    DegradationTrace t;
    for (const auto& [stage, reason] : c.adds) t.Add(stage, reason);
    EXPECT_EQ(t.Encode(), c.encoded);
    EXPECT_EQ(t.EncodedSize(), c.encoded.size());
    const absl::StatusOr<DegradationTrace> d =
        DegradationTrace::Decode(c.encoded);
    ASSERT_TRUE(d.ok()) << c.encoded << ": " << d.status();
    EXPECT_EQ(*d, t) << c.encoded;
  }
}

TEST(TraceEncodingTest, LongestTraceFillsExactlyTheMaximumSize) {
  DegradationTrace t;
  for (std::size_t i = 0; i < kTraceCapacity; ++i) {
    t.Add(absl::StrCat("stage-name-000", i), R::kException);
  }
  ASSERT_EQ(t.size(), kTraceCapacity);
  t.Add("one-more", R::kError);             // dropped: 1
  for (int i = 0; i < 16; ++i) t.Merge(t);  // 2^16, saturated
  ASSERT_EQ(t.dropped(), 65535u);
  const std::string s = t.Encode();
  EXPECT_EQ(s.size(), DegradationTrace::kMaxEncodedSize);
  const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, t);
}

TEST(TraceEncodingTest, EncodeToWritesAllOrNothing) {
  DegradationTrace t;
  t.Add("features", R::kBreakerOpen);
  const std::string want = "v1;features=open";
  char buf[DegradationTrace::kMaxEncodedSize];
  std::memset(buf, '#', sizeof(buf));
  EXPECT_EQ(t.EncodeTo(buf, want.size() - 1), 0u);
  EXPECT_EQ(buf[0], '#');  // nothing written
  EXPECT_EQ(t.EncodeTo(nullptr, 100), 0u);
  ASSERT_EQ(t.EncodeTo(buf, want.size()), want.size());
  EXPECT_EQ(std::string(buf, want.size()), want);
}

TEST(TraceEncodingTest, AppendToAppends) {
  DegradationTrace t;
  t.Add("rank", R::kShed);
  std::string header = "x-degradation: ";
  t.AppendTo(&header);
  EXPECT_EQ(header, "x-degradation: v1;rank=shed");
}

// Random valid traces: duplicates, invalid names, overflow and saturating
// dropped counts all appear. Both directions must round-trip exactly.
TEST(TraceEncodingTest, RandomValidTracesRoundTrip) {
  std::mt19937 rng(20260401);
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
  const auto pick = [&rng](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  std::size_t saw_overflow = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    DegradationTrace t;
    std::vector<std::string> used;
    const std::size_t adds = pick(14);
    for (std::size_t i = 0; i < adds; ++i) {
      std::string name;
      const std::size_t kind = pick(10);
      if (kind == 0 && !used.empty()) {
        name = used[pick(used.size())];  // a duplicate
      } else if (kind == 1) {
        name = "bad name";  // invalid: dropped
      } else {
        const std::size_t len = 1 + pick(kMaxStageNameLength);
        for (std::size_t j = 0; j < len; ++j)
          name += alphabet[pick(alphabet.size())];
      }
      used.push_back(name);
      t.Add(name, static_cast<DegradeReason>(1 + pick(8)));
    }
    if (pick(20) == 0) {
      const std::size_t doublings = pick(18);
      for (std::size_t i = 0; i < doublings; ++i) t.Merge(t);
    }
    if (t.overflowed()) ++saw_overflow;
    const std::string s = t.Encode();
    ASSERT_EQ(s.size(), t.EncodedSize());
    ASSERT_LE(s.size(), DegradationTrace::kMaxEncodedSize);
    const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
    ASSERT_TRUE(d.ok()) << s << ": " << d.status();
    ASSERT_EQ(*d, t) << s;
    ASSERT_EQ(d->Encode(), s);
    ASSERT_EQ(d->depth(), t.depth());
  }
  EXPECT_GT(saw_overflow, 100u);  // the generator does exercise "+count"
}

TEST(TraceEncodingTest, RejectsMalformedEncodingsWithTheCause) {
  struct Case {
    std::string input;
    std::string cause;
  };
  std::string nine = "v1";
  for (int i = 0; i < 9; ++i) absl::StrAppend(&nine, ";s", i, "=error");
  const std::vector<Case> cases = {
      {"", "bad version"},
      {"v2;features=open", "bad version"},
      {"V1", "bad version"},
      {" v1", "bad version"},
      {std::string("v1\0", 3), "bad version"},
      {"v1;features", "missing '='"},
      {"v1;=open", "the stage name is empty"},
      {"v1;feat ures=open", "outside [A-Za-z0-9_.-]"},
      {std::string("v1;feat\0ures=open", 17), "'\\x00' at index 4"},
      {"v1;r\xc3\xa9=open", "'\\xc3' at index 1"},
      {"v1;stage-name-00016=open", "16 bytes, more than the 15"},
      {"v1;features=opened", "unknown reason token"},
      {"v1;features=OPEN", "unknown reason token"},
      {"v1;features=none", "unknown reason token"},
      {"v1;features=open=x", "unknown reason token"},
      {"v1;features=open\n", "unknown reason token"},
      {"v1;features=", "empty reason"},
      {"v1;features=open;features=timeout", "duplicate stage"},
      {nine, "too many entries (at most 8)"},
      {"v1;features=open;", "trailing ';'"},
      {"v1;", "trailing ';'"},
      {"v1;;features=open", "duplicate ';'"},
      {"v1;features=open;;recall=timeout", "duplicate ';'"},
      {"v1;+", "not followed by a count"},
      {"v1;+0", "zero or has a leading zero"},
      {"v1;+007", "zero or has a leading zero"},
      {"v1;+65536", "more than 65535"},
      {"v1;+9999999999999999999999", "more than 65535"},
      {"v1;+1x", "not a decimal number"},
      {"v1;+-1", "not a decimal number"},
      {"v1;+2;features=open", "must be the last"},
      {"v1;+2;+3", "must be the last"},
      {std::string(1025, 'v'), "1025 bytes, more than the 1024 allowed"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const Case& c : cases) {
    const absl::StatusOr<DegradationTrace> d =
        DegradationTrace::Decode(c.input);
    ASSERT_FALSE(d.ok()) << c.input;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.input;
    EXPECT_THAT(d.status().message(), HasSubstr(c.cause)) << c.input;
    EXPECT_THAT(d.status().message(), HasSubstr("degradation trace"))
        << c.input;
  }
}

TEST(TraceEncodingTest, ErrorsNameTheOffsetAndEscapeTheToken) {
  absl::StatusOr<DegradationTrace> d =
      DegradationTrace::Decode("v1;features=open;;x=error");
  EXPECT_THAT(d.status().message(), HasSubstr("at offset 17"));
  d = DegradationTrace::Decode("v1;features=opne");
  EXPECT_THAT(d.status().message(), HasSubstr("at offset 12, token 'opne'"));
  d = DegradationTrace::Decode(std::string("v1;a\nb\0=open", 12));
  const std::string msg(d.status().message());
  EXPECT_THAT(msg, HasSubstr("at offset 3, token 'a\\nb\\x00=open'"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_EQ(msg.find('\0'), std::string::npos);
  // A long hostile token is shown capped.
  d = DegradationTrace::Decode("v1;" + std::string(900, 'x'));
  EXPECT_THAT(d.status().message(), HasSubstr("..."));
  EXPECT_LT(d.status().message().size(), 200u);
}

TEST(TraceEncodingTest, InputLimitIsExactlyOneKibibyte) {
  // 1024 bytes is looked at (and refused for its content); 1025 is not.
  const std::string at_limit = "v1;" + std::string(1021, 'x');
  absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(at_limit);
  EXPECT_THAT(d.status().message(), HasSubstr("missing '='"));
  d = DegradationTrace::Decode(at_limit + "x");
  EXPECT_THAT(d.status().message(), HasSubstr("more than the 1024"));
}

// Decodes `s`: either a status (INVALID_ARGUMENT) or a trace that encodes
// back to exactly `s`.
void ExpectStatusOrExactTrace(const std::string& s) {
  const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
  if (d.ok()) {
    EXPECT_EQ(d->Encode(), s);
  } else {
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(d.status().message()), Not(IsEmpty()));
  }
}

std::vector<std::string> ValidEncodings() {
  DegradationTrace full = TraceOf(kTraceCapacity, R::kException);
  full.Add("overflow", R::kTimeout);
  return {"v1", "v1;features=open;recall=timeout;rank=shed;rerank=error",
          "v1;a=too_many;b=upstream;+12345", full.Encode()};
}

TEST(TraceEncodingTest, EveryTruncationDecodesToAStatusOrAnExactTrace) {
  std::size_t rejected = 0;
  for (const std::string& valid : ValidEncodings()) {
    for (std::size_t n = 0; n <= valid.size(); ++n) {
      const std::string prefix = valid.substr(0, n);
      ExpectStatusOrExactTrace(prefix);
      if (!DegradationTrace::Decode(prefix).ok()) ++rejected;
    }
  }
  EXPECT_GT(rejected, 50u);
  // A cut inside a token never decodes.
  EXPECT_FALSE(DegradationTrace::Decode("v1;features=ope").ok());
  EXPECT_FALSE(DegradationTrace::Decode("v1;features").ok());
  EXPECT_FALSE(DegradationTrace::Decode("v").ok());
}

TEST(TraceEncodingTest, EverySingleByteMutationDecodesSafely) {
  const char replacements[] = {'\0', ';', '=', '+', 'x', '0', ' ', '\xff'};
  for (const std::string& valid : ValidEncodings()) {
    for (std::size_t i = 0; i < valid.size(); ++i) {
      for (char c : replacements) {
        std::string m = valid;
        m[i] = c;
        ExpectStatusOrExactTrace(m);
        ExpectStatusOrExactTrace(valid.substr(0, i) + valid.substr(i + 1));
      }
    }
  }
}

}  // namespace
}  // namespace degrade
