// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The fallback combinators: WithFallback on success, error, an open breaker
// and a throwing callable; traces merged through stages; DefaultFeatures
// loading, a table of bad files that must each be named and must leave the
// previous vector serving, and readers racing reloads; HotList refreshes,
// truncation, age and the background thread; recall-score ordering and
// dedup, alone and behind a breaker.

#include "degrade/fallback.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using R = DegradeReason;
using Ints = std::vector<int>;

std::vector<std::pair<std::string, DegradeReason>> Entries(
    const DegradationTrace& t) {
  std::vector<std::pair<std::string, DegradeReason>> out;
  for (const TraceEntry& e : t)
    out.emplace_back(std::string(e.stage()), e.reason());
  return out;
}

// A breaker on a fake clock with the default trip rule (more than 5
// consecutive failures).
template <typename T>
std::unique_ptr<CircuitBreaker<T>> MakeBreaker(const FakeClock* clock,
                                               std::string name) {
  BreakerSettings s;
  s.name = std::move(name);
  s.clock = clock;
  return std::make_unique<CircuitBreaker<T>>(std::move(s));
}

template <typename T>
void Trip(CircuitBreaker<T>& cb) {
  for (int i = 0; i < 6; ++i) {
    (void)cb.Execute(
        []() -> absl::StatusOr<T> { return absl::UnavailableError("down"); });
  }
  ASSERT_EQ(cb.state(), State::kOpen);
}

std::string WriteFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/fallback_test_" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return path;
}

std::string FeaturesJson(std::size_t dim, float value) {
  std::string s = absl::StrCat("{\"dimension\": ", dim, ", \"values\": [");
  for (std::size_t i = 0; i < dim; ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", value);
  }
  s += "]}";
  return s;
}

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

// ---- DefaultFeatures ----

class DefaultFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = WriteFile("good.json", FeaturesJson(4, 0.5f));
  }
  std::string good_;
};

TEST_F(DefaultFeaturesTest, GetBeforeAnyLoadRefusesRatherThanZeros) {
  DefaultFeatures f(4);
  absl::StatusOr<DefaultFeatures::Snapshot> s = f.Get();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.snapshot(), nullptr);
  EXPECT_EQ(f.dimension(), 0u);
}

TEST_F(DefaultFeaturesTest, LoadsAValidFile) {
  const std::string path = WriteFile(
      "valid.json",
      R"({"dimension": 3, "values": [0.25, -1, 2e-3], "generated_at": "x"})");
  absl::StatusOr<std::unique_ptr<DefaultFeatures>> f =
      DefaultFeatures::Load(path, 3);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<DefaultFeatures::Snapshot> s = (*f)->Get();
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(**s, ElementsAre(0.25f, -1.0f, 2e-3f));
  EXPECT_EQ((*f)->dimension(), 3u);
  EXPECT_EQ((*f)->reloads(), 1u);
}

TEST_F(DefaultFeaturesTest, LoadOfABadFileFailsWithItsName) {
  const std::string path = WriteFile("bad_load.json", "{");
  absl::StatusOr<std::unique_ptr<DefaultFeatures>> f =
      DefaultFeatures::Load(path);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(std::string(f.status().message()), HasSubstr(path));
}

struct BadFile {
  std::string name;
  std::string content;  // unused when `missing`
  std::string fault;    // a substring the message must contain
  bool missing = false;
};

TEST_F(DefaultFeaturesTest,
       EveryBadFileIsNamedAndThePreviousVectorKeepsServing) {
  const std::vector<BadFile> cases = {
      {"missing.json", "", "cannot open", true},
      {"empty.json", "", "file is empty"},
      {"blank.json", "  \n", "file is empty"},
      {"malformed.json", R"({"dimension": 4, "values": [1, 2,)",
       "malformed JSON"},
      {"toplevel_array.json", "[1, 2, 3, 4]", "must be an object"},
      {"values_string.json", R"({"dimension": 4, "values": "1,2,3,4"})",
       "must be an array of numbers"},
      {"dimension_string.json", R"({"dimension": "4", "values": [1, 2, 3, 4]})",
       "must be a positive integer"},
      {"double_overflow.json",
       R"({"dimension": 4, "values": [1, 1e400, 3, 4]})",
       "number overflow parsing '1e400'"},
      {"float_overflow.json", R"({"dimension": 4, "values": [1, 2, 1e300, 4]})",
       "values[2] = 1e+300: is not a finite number within float range"},
      {"wrong_dimension.json", FeaturesJson(5, 1.0f),
       "the model expects dimension 4"},
      {"length_mismatch.json", R"({"dimension": 4, "values": [1, 2, 3]})",
       "has 3 values but \"dimension\" is 4"},
      {"empty_values.json", R"({"dimension": 4, "values": []})", "is empty"},
      {"not_numbers.json", R"({"dimension": 4, "values": [1, "2", 3, 4]})",
       "values[1] = \"2\": must be a number (got a string)"},
      {"bool_value.json", R"({"dimension": 4, "values": [1, true, 3, 4]})",
       "values[1] = true: must be a number"},
      {"null_value.json", R"({"dimension": 4, "values": [1, 2, null, 4]})",
       "values[2] = null: must be a number"},
      {"missing_values.json", R"({"dimension": 4})", "needs a \"values\" key"},
      {"zero_dimension.json", R"({"dimension": 0, "values": []})",
       "must be in 1.."},
      {"negative_dimension.json",
       R"({"dimension": -4, "values": [1, 2, 3, 4]})", "must be in 1.."},
      {"duplicate_key.json",
       R"({"dimension": 4, "values": [1, 2, 3, 4], "values": [5, 6, 7, 8]})",
       "duplicate key"},
      {"nul_byte.json", std::string("{\"dimension\": 4,\0 \"values\": []}", 31),
       "NUL byte"},
      {"oversized.json", FeaturesJson(4, 0.5f) + std::string(200, ' '),
       "larger than 128 bytes"},
  };
  DefaultFeatures f(4, /*max_file_bytes=*/128);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot before = f.snapshot();
  ASSERT_NE(before, nullptr);
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        c.missing ? ::testing::TempDir() + "/fallback_test_does_not_exist.json"
                  : WriteFile(c.name, c.content);
    absl::Status s = f.Reload(path);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.fault));
    EXPECT_THAT(std::string(s.message()), HasSubstr("default features"));
    EXPECT_EQ(f.last_status(), s);
    // The very same vector keeps serving.
    EXPECT_EQ(f.snapshot(), before);
    absl::StatusOr<DefaultFeatures::Snapshot> got = f.Get();
    ASSERT_TRUE(got.ok());
    EXPECT_THAT(**got, ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  }
  EXPECT_EQ(f.errors(), cases.size());
  EXPECT_EQ(f.reloads(), 1u);
}

TEST_F(DefaultFeaturesTest, MissingFileIsNotFound) {
  DefaultFeatures f;
  absl::Status s = f.Reload(::testing::TempDir() + "/fallback_test_nope.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
}

TEST_F(DefaultFeaturesTest, WithoutExpectedDimensionTheFirstLoadFixesIt) {
  DefaultFeatures f;
  ASSERT_TRUE(f.Reload(good_).ok());
  const std::string five = WriteFile("five.json", FeaturesJson(5, 1.0f));
  absl::Status s = f.Reload(five);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(five));
  EXPECT_THAT(std::string(s.message()), HasSubstr("dimension 5"));
  EXPECT_EQ(f.dimension(), 4u);
}

// The model consumes a fixed dimension: a vector of another one, from a file
// or from Set(), never replaces the one serving, and the fallback keeps
// handing out the serving vector.
TEST_F(DefaultFeaturesTest, WrongDimensionNeverReplacesTheServingVector) {
  DefaultFeatures f(4);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot serving = f.snapshot();

  for (const std::size_t dim : {1u, 3u, 5u, 64u}) {
    SCOPED_TRACE(dim);
    const std::string file =
        WriteFile(absl::StrCat("dim", dim, ".json"), FeaturesJson(dim, 1.0f));
    EXPECT_EQ(f.Reload(file).code(), absl::StatusCode::kInvalidArgument);
    const absl::Status set = f.Set(std::vector<float>(dim, 1.0f), "push");
    EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(set.message()),
                HasSubstr(absl::StrCat("dimension ", dim)));
    EXPECT_EQ(f.snapshot(), serving);
  }
  absl::StatusOr<std::vector<float>> fb = f.Fallback()();
  ASSERT_TRUE(fb.ok());
  EXPECT_EQ(*fb, std::vector<float>(4, 0.5f));
  EXPECT_EQ(f.errors(), 8u);
  EXPECT_EQ(f.reloads(), 1u);
}

TEST_F(DefaultFeaturesTest, ReloadSwapsAndOldSnapshotsStayValid) {
  DefaultFeatures f(4);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot old = f.snapshot();
  ASSERT_TRUE(f.Reload(WriteFile("two.json", FeaturesJson(4, 2.0f))).ok());
  EXPECT_THAT(*old, ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  EXPECT_THAT(*f.snapshot(), ElementsAre(2.0f, 2.0f, 2.0f, 2.0f));
}

TEST_F(DefaultFeaturesTest, SetRefusesEmptyAndNonFinite) {
  DefaultFeatures f(2);
  EXPECT_FALSE(f.Set({}).ok());
  EXPECT_FALSE(f.Set({1.0f, std::numeric_limits<float>::infinity()}).ok());
  EXPECT_FALSE(f.Set({1.0f, 2.0f, 3.0f}).ok());
  EXPECT_EQ(f.snapshot(), nullptr);
  EXPECT_TRUE(f.Set({1.0f, 2.0f}).ok());
  EXPECT_THAT(*f.snapshot(), ElementsAre(1.0f, 2.0f));
}

TEST_F(DefaultFeaturesTest, FallbackFeedsWithFallback) {
  FakeClock clock;
  auto cb = MakeBreaker<std::vector<float>>(&clock, "features");
  DefaultFeatures f(4);
  auto fail = []() -> absl::StatusOr<std::vector<float>> {
    return absl::UnavailableError("feature service down");
  };
  absl::StatusOr<StageResult<std::vector<float>>> before =
      WithFallback(*cb, "features", fail, f.Fallback());
  EXPECT_EQ(before.status().code(), absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE(f.Reload(good_).ok());
  absl::StatusOr<StageResult<std::vector<float>>> after =
      WithFallback(*cb, "features", fail, f.Fallback());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->is_default());
  EXPECT_THAT(after->value(), ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  EXPECT_EQ(after->trace().ReasonFor("features"), R::kError);
}

TEST_F(DefaultFeaturesTest, ConcurrentReadersNeverSeeATornVector) {
  constexpr std::size_t kDim = 256;
  const std::string a = WriteFile("a.json", FeaturesJson(kDim, 1.0f));
  const std::string b = WriteFile("b.json", FeaturesJson(kDim, 2.0f));
  DefaultFeatures f(kDim);
  ASSERT_TRUE(f.Reload(a).ok());

  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        absl::StatusOr<DefaultFeatures::Snapshot> s = f.Get();
        if (!s.ok() || (*s)->size() != kDim) {
          torn.fetch_add(1);
          continue;
        }
        const float first = (**s)[0];
        bool same = first == 1.0f || first == 2.0f;
        for (float v : **s) same = same && v == first;
        if (!same) torn.fetch_add(1);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(f.Reload(i % 2 == 0 ? b : a).ok());
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(f.reloads(), 101u);
}

// ---- HotList ----

// A scripted source: returns the next scripted answer on each call.
class ScriptedSource {
 public:
  void Push(absl::StatusOr<std::vector<std::string>> answer) {
    answers_.push_back(std::move(answer));
  }
  absl::StatusOr<std::vector<std::string>> operator()() {
    ++calls_;
    if (next_ >= answers_.size()) return absl::InternalError("script ended");
    return answers_[next_++];
  }
  int calls() const { return calls_; }

 private:
  std::vector<absl::StatusOr<std::vector<std::string>>> answers_;
  std::size_t next_ = 0;
  int calls_ = 0;
};

class HotListTest : public ::testing::Test {
 protected:
  HotListOptions<std::string> Options(std::size_t top_n = 3) {
    HotListOptions<std::string> o;
    o.top_n = top_n;
    o.clock = &clock_;
    o.name = "hot";
    o.source = [this] { return script_(); };
    return o;
  }

  FakeClock clock_;
  ScriptedSource script_;
};

TEST_F(HotListTest, NothingServesBeforeTheFirstSnapshot) {
  HotList<std::string> hot(Options());
  EXPECT_EQ(hot.snapshot(), nullptr);
  EXPECT_EQ(hot.Get().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(hot.age(), absl::InfiniteDuration());
}

TEST_F(HotListTest, DefaultTopNIs200) {
  HotList<int64_t> hot;
  EXPECT_EQ(hot.top_n(), 200u);
  std::vector<int64_t> items(250);
  for (std::size_t i = 0; i < items.size(); ++i)
    items[i] = static_cast<int64_t>(i);
  ASSERT_TRUE(hot.Publish(items).ok());
  ASSERT_EQ(hot.snapshot()->size(), 200u);
  EXPECT_EQ(hot.snapshot()->back(), 199);
}

TEST_F(HotListTest, RefreshPublishesTruncatedToTopN) {
  script_.Push(std::vector<std::string>{"a", "b", "c", "d", "e"});
  HotList<std::string> hot(Options(3));
  ASSERT_TRUE(hot.RefreshOnce().ok());
  EXPECT_THAT(*hot.snapshot(), ElementsAre("a", "b", "c"));
  EXPECT_EQ(hot.refreshes(), 1u);
}

TEST_F(HotListTest, FailedRefreshKeepsTheSnapshotAndReportsIt) {
  script_.Push(std::vector<std::string>{"a", "b"});
  script_.Push(absl::UnavailableError("redis timeout"));
  HotList<std::string> hot(Options());
  ASSERT_TRUE(hot.RefreshOnce().ok());
  const HotList<std::string>::Snapshot before = hot.snapshot();
  absl::Status s = hot.RefreshOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hot"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("redis timeout"));
  EXPECT_EQ(hot.last_status(), s);
  EXPECT_EQ(hot.failures(), 1u);
  EXPECT_EQ(hot.snapshot(), before);
}

TEST_F(HotListTest, EmptyRefreshKeepsTheSnapshot) {
  script_.Push(std::vector<std::string>{"a"});
  script_.Push(std::vector<std::string>{});
  HotList<std::string> hot(Options());
  ASSERT_TRUE(hot.RefreshOnce().ok());
  absl::Status s = hot.RefreshOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("empty"));
  EXPECT_THAT(*hot.snapshot(), ElementsAre("a"));
}

TEST_F(HotListTest, ThrowingSourceKeepsTheSnapshot) {
  HotListOptions<std::string> o = Options();
  bool first = true;
  o.source = [&first]() -> absl::StatusOr<std::vector<std::string>> {
    if (first) {
      first = false;
      return std::vector<std::string>{"a"};
    }
    throw std::runtime_error("redis client threw");
  };
  HotList<std::string> hot(std::move(o));
  ASSERT_TRUE(hot.RefreshOnce().ok());
  absl::Status s = hot.RefreshOnce();
  EXPECT_TRUE(IsCallableException(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("redis client threw"));
  EXPECT_THAT(*hot.snapshot(), ElementsAre("a"));
}

TEST_F(HotListTest, RefreshWithoutASourceFails) {
  HotList<std::string> hot;
  EXPECT_EQ(hot.RefreshOnce().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(HotListTest, AgeGrowsWithTheClockAndResetsOnAGoodRefresh) {
  script_.Push(std::vector<std::string>{"a"});
  script_.Push(absl::UnavailableError("down"));
  script_.Push(std::vector<std::string>{"b"});
  HotList<std::string> hot(Options());
  ASSERT_TRUE(hot.RefreshOnce().ok());
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  clock_.Advance(absl::Minutes(30));
  EXPECT_EQ(hot.age(), absl::Minutes(30));
  EXPECT_FALSE(hot.RefreshOnce().ok());  // a failure does not reset the age
  clock_.Advance(absl::Minutes(45));
  EXPECT_EQ(hot.age(), absl::Minutes(75));
  ASSERT_TRUE(hot.RefreshOnce().ok());
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(hot.age(), absl::Seconds(1));
}

TEST_F(HotListTest, ReadersDoNotWaitForARefreshInProgress) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> release_future = release.get_future().share();
  HotListOptions<std::string> o = Options();
  o.source = [&entered,
              release_future]() -> absl::StatusOr<std::vector<std::string>> {
    entered.set_value();
    release_future.wait();
    return std::vector<std::string>{"new"};
  };
  HotList<std::string> hot(std::move(o));
  ASSERT_TRUE(hot.Publish({"old"}).ok());
  std::thread refresher([&hot] { EXPECT_TRUE(hot.RefreshOnce().ok()); });
  entered.get_future().wait();
  // The source is blocked; readers still get the old snapshot at once.
  EXPECT_THAT(*hot.snapshot(), ElementsAre("old"));
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  release.set_value();
  refresher.join();
  EXPECT_THAT(*hot.snapshot(), ElementsAre("new"));
}

TEST_F(HotListTest, StartRefreshesInTheBackgroundAndStopsCleanly) {
  auto refreshed = std::make_shared<std::promise<void>>();
  std::future<void> refreshed_future = refreshed->get_future();
  auto once = std::make_shared<std::atomic<bool>>(false);
  HotListOptions<std::string> o;
  o.clock = &clock_;
  o.source = [refreshed, once]() -> absl::StatusOr<std::vector<std::string>> {
    if (!once->exchange(true)) refreshed->set_value();
    return std::vector<std::string>{"x"};
  };
  {
    HotList<std::string> hot(std::move(o));
    hot.Start(absl::Hours(1));
    ASSERT_EQ(refreshed_future.wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    hot.Stop();
    // The publish happens after the source returns; Stop() joined the
    // thread, so it is done.
    EXPECT_THAT(*hot.snapshot(), ElementsAre("x"));
    hot.Stop();  // idempotent
    hot.Start(absl::Hours(1));
    hot.Start(absl::Hours(1));  // restart
  }                             // the destructor stops the running thread
}

TEST_F(HotListTest, LoadBaselineOfStringIds) {
  HotList<std::string> hot(Options(2));
  const std::string path =
      WriteFile("hot_strings.json", R"(["i1", "i2", "i3"])");
  ASSERT_TRUE(hot.LoadBaseline(path).ok());
  EXPECT_THAT(*hot.snapshot(), ElementsAre("i1", "i2"));
}

TEST_F(HotListTest, LoadBaselineOfIntegerIds) {
  HotList<int64_t> hot;
  const std::string path = WriteFile("hot_ints.json", "[101, -2, 303]");
  ASSERT_TRUE(hot.LoadBaseline(path).ok());
  EXPECT_THAT(*hot.snapshot(), ElementsAre(101, -2, 303));
}

TEST_F(HotListTest, BadBaselinesAreNamedAndKeepTheSnapshot) {
  HotList<int64_t> hot;
  ASSERT_TRUE(hot.Publish({1, 2}).ok());
  const HotList<int64_t>::Snapshot before = hot.snapshot();
  const std::vector<BadFile> cases = {
      {"", "", "cannot open", true},
      {"hot_empty.json", "", "file is empty"},
      {"hot_malformed.json", "[1, 2", "malformed JSON"},
      {"hot_object.json", R"({"ids": [1]})", "must be an array of integer ids"},
      {"hot_string_id.json", R"([1, "2"])",
       "[1] = \"2\": must be an integer id"},
      {"hot_float_id.json", "[1, 2.5]", "[1] = 2.5: must be an integer id"},
      {"hot_too_big.json", "[18446744073709551615]", "out of int64 range"},
      {"hot_no_items.json", "[]", "has no items"},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        c.missing ? ::testing::TempDir() + "/fallback_test_no_hot.json"
                  : WriteFile(c.name, c.content);
    absl::Status s = hot.LoadBaseline(path);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.fault));
    EXPECT_EQ(hot.snapshot(), before);
  }
}

TEST_F(HotListTest, LoadBaselineWithAParseFunction) {
  struct Item {
    std::string id;
    double score;
  };
  HotList<Item> hot;
  const std::string path = WriteFile("hot_custom.txt", "a b c");
  ASSERT_TRUE(
      hot.LoadBaseline(path,
                       [](absl::string_view text, const std::string&)
                           -> absl::StatusOr<std::vector<Item>> {
                         std::vector<Item> items;
                         for (char ch : text) {
                           if (ch != ' ')
                             items.push_back(Item{std::string(1, ch), 1.0});
                         }
                         return items;
                       })
          .ok());
  ASSERT_EQ(hot.snapshot()->size(), 3u);
  EXPECT_EQ((*hot.snapshot())[2].id, "c");
}

TEST_F(HotListTest, FallbackServesTheSnapshotThroughWithFallback) {
  auto cb = MakeBreaker<std::vector<std::string>>(&clock_, "recall");
  Trip(*cb);
  HotList<std::string> hot(Options());
  auto recall = [] { return std::vector<std::string>{"personal"}; };
  absl::StatusOr<StageResult<std::vector<std::string>>> empty =
      WithFallback(*cb, "recall", recall, hot.Fallback());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(hot.Publish({"h1", "h2"}).ok());
  absl::StatusOr<StageResult<std::vector<std::string>>> r =
      WithFallback(*cb, "recall", recall, hot.Fallback());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->value(), ElementsAre("h1", "h2"));
  EXPECT_EQ(r->trace().ReasonFor("recall"), R::kBreakerOpen);
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
}

}  // namespace
}  // namespace degrade
