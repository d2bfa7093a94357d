// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// hot_list.hpp: HotList refreshes, truncation, age, readers not waiting for
// a refresh, the background thread, baselines (and a table of bad ones),
// the fallback feeding WithFallback, and the wording of file errors
// ("hot-list file").

#include "degrade/hot_list.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
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
#include "degrade/status.hpp"
#include "degrade/with_fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/breakers.hpp"
#include "support/temp_files.hpp"
#include "support/tick_counter.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::BadFile;
using ::degrade_tests::MakeBreaker;
using ::degrade_tests::Trip;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using R = DegradeReason;

std::string WriteFile(const std::string& name, const std::string& content) {
  return ::degrade_tests::WriteTempFile("hot_list_test_" + name, content);
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

// Found by the settings fuzzer (corpus/settings/crash-hot-list-negative-age):
// a clock stepped back after a publish made the age negative, which a
// dashboard alarming on "age > 2 h" reads as very fresh.
TEST_F(HotListTest, AgeIsNeverNegativeWhenTheClockStepsBack) {
  HotList<std::string> hot(Options());
  ASSERT_TRUE(hot.Publish({"a"}).ok());
  clock_.Set(clock_.Now() - absl::Nanoseconds(1));
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  clock_.Set(absl::InfinitePast());
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  // Published at InfiniteFuture, read there: no time has passed.
  clock_.Set(absl::InfiniteFuture());
  ASSERT_TRUE(hot.Publish({"b"}).ok());
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  // Published at the FakeClock's earliest instant (its InfinitePast, 1677),
  // read at the epoch: the full 292 years.
  clock_.Set(absl::InfinitePast());
  ASSERT_TRUE(hot.Publish({"c"}).ok());
  clock_.Set(absl::UnixEpoch());
  EXPECT_EQ(hot.age(), absl::UnixEpoch() - absl::FromUnixNanos(INT64_MIN));
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
    ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
    ASSERT_EQ(refreshed_future.wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    hot.Stop();
    // The publish happens after the source returns; Stop() joined the
    // thread, so it is done.
    EXPECT_THAT(*hot.snapshot(), ElementsAre("x"));
    hot.Stop();  // idempotent
    ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
    ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());  // restart
  }  // the destructor stops the running thread
}

// What a call from the source back into its own list does, on the list's
// thread (issue 13, re-entrancy). Regressions: Start() there joined the
// list's own thread, the EDEADLK became a failed refresh and the list never
// refreshed again (with -fno-exceptions it aborted); RefreshOnce() there
// called the source again without end. Each row makes its calls at the
// first refresh; then the list must go on refreshing, or, when the source
// stopped it, refresh again after the next Start().
TEST_F(HotListTest, CallsFromTheSourceIntoItsOwnList) {
  using List = HotList<std::string>;
  struct Case {
    const char* name;
    std::function<absl::Status(List&)> calls;
    absl::StatusCode code;
    bool keeps_refreshing;
  };
  const absl::Duration ms = absl::Milliseconds(1);
  using absl::StatusCode;
  const std::vector<Case> cases = {
      {"Start",
       [ms](List& l) {
         EXPECT_TRUE(l.Start(ms).ok());
         return absl::OkStatus();
       },
       StatusCode::kOk, true},
      {"RefreshOnce", [](List& l) { return l.RefreshOnce(); },
       StatusCode::kFailedPrecondition, true},
      {"Publish", [](List& l) { return l.Publish({"pushed"}); },
       StatusCode::kOk, true},
      {"Stop, Start",
       [ms](List& l) {
         l.Stop();
         EXPECT_TRUE(l.Start(ms).ok());
         return absl::OkStatus();
       },
       StatusCode::kOk, true},
      {"Stop",
       [](List& l) {
         l.Stop();
         return absl::OkStatus();
       },
       StatusCode::kOk, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    degrade_tests::TickCounter refreshes;
    List* self = nullptr;
    absl::Status result;  // written before the first Tick(), read after
    HotListOptions<std::string> o;
    o.clock = &clock_;
    o.source = [&]() -> absl::StatusOr<std::vector<std::string>> {
      if (refreshes.count() == 0) result = c.calls(*self);
      refreshes.Tick();
      return std::vector<std::string>{"x"};
    };
    List hot(std::move(o));
    self = &hot;
    EXPECT_TRUE(hot.Start(ms).ok());
    ASSERT_TRUE(refreshes.WaitFor(1));
    EXPECT_EQ(result.code(), c.code) << result;
    if (!c.keeps_refreshing) {
      EXPECT_TRUE(hot.Start(ms).ok());
    }
    EXPECT_TRUE(refreshes.WaitFor(3)) << "the list stopped refreshing";
    hot.Stop();
    EXPECT_TRUE(hot.last_status().ok()) << hot.last_status();
    EXPECT_EQ(hot.failures(), 0u);
  }
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
      // Refused before it is read or parsed: the cap bounds the memory.
      {"hot_over_cap.json", std::string(kMaxHotListBytes + 1, ' '),
       "larger than 16777216 bytes"},
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

// ---- New names, and the wording of file errors ----

TEST_F(HotListTest, CountersHaveTheFeaturesNamesAndTheOldOne) {
  script_.Push(std::vector<std::string>{"a"});
  script_.Push(absl::UnavailableError("down"));
  HotList<std::string> hot(Options());
  ASSERT_TRUE(hot.RefreshOnce().ok());
  ASSERT_TRUE(hot.Publish({"b"}).ok());
  EXPECT_FALSE(hot.RefreshOnce().ok());
  EXPECT_FALSE(hot.Publish({}).ok());
  EXPECT_EQ(hot.updates(), 2u);
  EXPECT_EQ(hot.failures(), 2u);
  EXPECT_EQ(hot.refreshes(), hot.updates());
}

// The reader and the parser say what the file is: a hot-list file, and the
// list it was for.
TEST_F(HotListTest, BaselineFileErrorsSayHotListFile) {
  ::degrade_tests::TempDir dir("hot_list_test");
  HotList<std::string> hot(Options());
  const std::string missing = dir.Path("missing.json");
  EXPECT_THAT(std::string(hot.LoadBaseline(missing).message()),
              HasSubstr(absl::StrCat("hot: cannot open hot-list file '",
                                     missing, "'")));
  const std::string blank = dir.Path("blank.json");
  ::degrade_tests::WriteInPlace(blank, "\n");
  EXPECT_THAT(std::string(hot.LoadBaseline(blank).message()),
              HasSubstr(absl::StrCat("hot: baseline: ", blank,
                                     ": hot-list file is empty")));
  const std::string nul = dir.Path("nul.json");
  ::degrade_tests::WriteInPlace(nul, std::string("[\"a\"]\0", 6));
  EXPECT_THAT(std::string(hot.LoadBaseline(nul).message()),
              HasSubstr(absl::StrCat(nul,
                                     ": hot-list file contains a NUL "
                                     "byte at offset 5")));
  const absl::Status not_regular = hot.LoadBaseline(dir.Path(""));
  EXPECT_TRUE(absl::IsFailedPrecondition(not_regular)) << not_regular;
  EXPECT_THAT(std::string(not_regular.message()),
              HasSubstr("hot: hot-list file '"));
  for (const std::string& path : {missing, blank, nul}) {
    EXPECT_THAT(std::string(hot.LoadBaseline(path).message()),
                Not(HasSubstr("config")));
  }
  EXPECT_EQ(hot.snapshot(), nullptr);
  EXPECT_EQ(hot.failures(), 7u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
