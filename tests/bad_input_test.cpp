// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Bad input and misuse that the README's "What happens when…" table lists and
// no other test file covered on its own: malformed and non-finite config
// input offered to a manager that is serving, negative durations in a config
// built in code, zero or negative budgets, and zero periods and sizes. Each
// test asserts what the library does (refuse, and keep serving what it
// served; or make the value safe), not only that nothing crashes.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/config.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Two levels on one signal, each switching a feature off.
constexpr absl::string_view kServing = R"({"degradation": {
  "name": "svc", "hold": "1s",
  "level1": {"trigger": {"load": 0.7}, "disable": ["f1"]},
  "level2": {"trigger": {"load": 0.9}, "disable": ["f2"]}}})";

// A manager serving kServing at level 1 (f1 off, f2 on).
class ServingManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManagerOptions o;
    o.name = "svc";
    o.clock = &clock_;
    o.log_sink = [](absl::string_view) {};
    manager_ = std::make_unique<DegradationManager>(o);
    ASSERT_TRUE(ReloadJson(*manager_, kServing, "svc.json").ok());
    f1_ = manager_->Feature("f1");
    f2_ = manager_->Feature("f2");
    ASSERT_TRUE(manager_->Observe("load", 0.8).ok());
    ASSERT_EQ(manager_->level(), 1);
    serving_ = manager_->config();
  }

  // Nothing the manager serves has changed since SetUp().
  void ExpectStillServing() {
    EXPECT_EQ(manager_->config(), serving_);
    EXPECT_EQ(manager_->level(), 1);
    EXPECT_FALSE(f1_.enabled());
    EXPECT_TRUE(f2_.enabled());
    EXPECT_EQ(manager_->reloads(), 1u);
  }

  FakeClock clock_;
  std::unique_ptr<DegradationManager> manager_;
  FeatureGate f1_;
  FeatureGate f2_;
  std::shared_ptr<const DegradationConfig> serving_;
};

using BadInputTest = ServingManagerTest;

// Malformed JSON of every kind is INVALID_ARGUMENT naming the source (and,
// for a syntax error, the byte), and the manager keeps its config, level and
// gates.
TEST_F(BadInputTest, MalformedConfigJsonIsRefusedAndTheOldConfigKeepsServing) {
  struct Case {
    const char* name;
    std::string text;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"truncated", R"({"degradation": {"level1": {"trigger": )",
       "malformed JSON at byte"},
      {"trailing garbage", absl::StrCat(kServing, " }"),
       "malformed JSON at byte"},
      {"NaN literal",
       R"({"degradation": {"level1": {"trigger": {"load": NaN}}}})",
       "malformed JSON at byte"},
      {"single quotes", "{'degradation': {}}", "malformed JSON at byte"},
      {"a comment", R"({/* tuned */ "degradation": {}})",
       "malformed JSON at byte"},
      {"binary", "\x89PNG\r\n\x1a\n", "malformed JSON at byte"},
      {"a NUL byte", std::string("{\"degradation\"") + '\0' + ": {}}",
       "NUL byte at offset 14"},
      {"empty", "", "config is empty"},
      {"whitespace", " \n\t ", "config is empty"},
      {"nested too deep", std::string(40, '[') + std::string(40, ']'),
       "nested more than"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = ReloadJson(*manager_, c.text, "svc.json");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("svc.json: "));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.says));
    ExpectStillServing();
  }
  EXPECT_EQ(manager_->rejected_reloads(), cases.size());
}

// JSON has no NaN or Infinity, and a literal beyond double range is refused
// rather than read as infinity. A config built in code with a non-finite
// number is refused by Reload(), which keeps the old one.
TEST_F(BadInputTest, NonFiniteNumbersNeverBecomeThresholds) {
  for (
      const absl::string_view text :
      {R"({"degradation": {"level1": {"trigger": {"load": 1e400}}}})",
       R"({"degradation": {"level1": {"trigger": {"load": -1e400}}}})",
       R"({"degradation": {"recover_ratio": 1e999, "level1": {"trigger": {"load": 1}}}})",
       R"({"degradation": {"level1": {"trigger": {"load": Infinity}}}})"}) {
    SCOPED_TRACE(text);
    const absl::Status s = ReloadJson(*manager_, text, "svc.json");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    ExpectStillServing();
  }

  const DegradationConfig good = *serving_;
  for (const double bad : {kNaN, kInf, -kInf}) {
    SCOPED_TRACE(bad);
    DegradationConfig threshold = good;
    threshold.levels[0].enter["load"] = bad;
    DegradationConfig recover = good;
    recover.levels[1].recover["load"] = bad;
    DegradationConfig ratio = good;
    ratio.recover_ratio = bad;
    for (DegradationConfig* c : {&threshold, &recover, &ratio}) {
      const absl::Status s = manager_->Reload(*c);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_THAT(std::string(s.message()),
                  HasSubstr("degradation config 'svc'"));
      ExpectStillServing();
    }
  }
}

// Durations in a config built in code are checked like the JSON ones (where
// "-5s" is refused as it is parsed): negative or infinite is refused.
TEST_F(BadInputTest, NegativeDurationsInAManagerConfigAreRefused) {
  const DegradationConfig good = *serving_;
  std::vector<std::pair<const char*, DegradationConfig>> cases;
  for (const absl::Duration bad :
       {absl::Seconds(-1), absl::Nanoseconds(-1), -absl::InfiniteDuration(),
        absl::InfiniteDuration()}) {
    DegradationConfig c = good;
    c.hold = bad;
    cases.emplace_back("degradation.hold", c);
    c = good;
    c.enter_after = bad;
    cases.emplace_back("degradation.enter_after", c);
    c = good;
    c.cooldown = bad;
    cases.emplace_back("degradation.cooldown", c);
    c = good;
    c.levels[1].hold = bad;
    cases.emplace_back("degradation.level2.hold", c);
    c = good;
    c.levels[0].enter_after = bad;
    cases.emplace_back("degradation.level1.enter_after", c);
  }
  for (const auto& [field, config] : cases) {
    SCOPED_TRACE(field);
    const absl::Status s = manager_->Reload(config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(field));
    ExpectStillServing();
  }
  EXPECT_EQ(manager_->rejected_reloads(), cases.size());
}

// A zero or negative latency budget means "no time at all": the call's
// answer is never served (DEADLINE_EXCEEDED), nothing blocks, and a breaker
// counts the timeout as a failure. An error the call returned is kept.
TEST(ZeroOrNegativeBudgetTest, TimesOutAtOnceInsteadOfBlocking) {
  FakeClock clock;
  for (const absl::Duration budget :
       {absl::ZeroDuration(), absl::Milliseconds(-1),
        -absl::InfiniteDuration()}) {
    SCOPED_TRACE(absl::FormatDuration(budget));
    const Deadline d = Deadline::In(budget, &clock);
    EXPECT_TRUE(d.expired());
    EXPECT_EQ(d.remaining(), absl::ZeroDuration());

    // A spent budget never calls the function (it would hand the expired
    // deadline on): DEADLINE_EXCEEDED whatever it would have returned.
    bool called = false;
    absl::StatusOr<int> late = CallWithDeadline(
        budget,
        [&](const Deadline&) {
          called = true;
          return 7;
        },
        &clock);
    EXPECT_FALSE(called);
    EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
    absl::StatusOr<int> error = CallWithDeadline(
        budget,
        [](const Deadline&) -> absl::StatusOr<int> {
          return absl::UnavailableError("down");
        },
        &clock);
    EXPECT_EQ(error.status().code(), absl::StatusCode::kDeadlineExceeded);

    // A hard timeout with no budget does not wait for a call that blocks.
    ThreadPool pool(1);
    auto release = std::make_shared<std::atomic<bool>>(false);
    absl::StatusOr<int> hung = CallWithTimeout(pool, budget, [release] {
      while (!release->load()) std::this_thread::yield();
      return 1;
    });
    EXPECT_EQ(hung.status().code(), absl::StatusCode::kDeadlineExceeded);

    BreakerSettings s;
    s.name = "rank";
    s.clock = &clock;
    CircuitBreaker<int> cb(s);
    absl::StatusOr<int> r = ExecuteWithTimeout(cb, pool, budget, [release] {
      while (!release->load()) std::this_thread::yield();
      return 1;
    });
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    // The caller's budget, not the backend: no permit, no outcome.
    EXPECT_EQ(cb.totals().failures, 0u);
    EXPECT_EQ(cb.totals().successes, 0u);
    release->store(true);  // the pool's destructor joins the late calls
  }
}

// Zero sizes are made safe instead of refused: a pool gets one thread and a
// queue of one, a hot list keeps at least one item. Periods a background
// refresher or file watcher cannot honour (zero, negative, under 1 ms,
// over a year, infinite) are refused with INVALID_ARGUMENT naming the
// owner (since issue 13; they used to be clamped), and a refresher already
// running is left as it was.
TEST(ZeroPeriodAndSizeTest, AreClampedToSafeValues) {
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  int queued = 0;
  {
    ThreadPool pool(0, 0);
    ASSERT_TRUE(pool.Submit([&] {
      while (!release.load()) std::this_thread::yield();
      ++ran;
    }));
    // The one thread may not have taken the first task off the queue yet,
    // so fill the queue of one until it refuses.
    while (pool.Submit([&] { ++ran; })) ++queued;
    EXPECT_LE(queued, 1);
    release = true;
  }  // the destructor runs what was queued
  EXPECT_EQ(ran.load(), 1 + queued);

  // Background pollers report through callbacks; the test waits on those
  // (generously), it does not sleep.
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;  // guarded by mu
  const auto wait_for = [&](const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), done);
  };

  HotListOptions<int64_t> options;
  options.top_n = 0;
  options.source = [&]() -> absl::StatusOr<std::vector<int64_t>> {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
    }
    cv.notify_all();
    return std::vector<int64_t>{3, 2, 1};
  };
  HotList<int64_t> hot(options);
  EXPECT_EQ(hot.top_n(), 1u);
  ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());  // polls at once
  EXPECT_TRUE(wait_for([&] { return calls >= 1; }));
  const absl::Duration bad_periods[] = {
      absl::ZeroDuration(),    absl::Seconds(-1),
      absl::Nanoseconds(1),    absl::Microseconds(999),
      absl::Hours(24 * 366),   absl::InfiniteDuration()};
  for (const absl::Duration period : bad_periods) {
    SCOPED_TRACE(absl::FormatDuration(period));
    const absl::Status s = hot.Start(period);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("hot_list: Start(period = "));
  }
  hot.Stop();
  {
    // A refused Start() did not restart the refresher (which would have
    // polled again at once).
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(calls, 1);
  }
  ASSERT_NE(hot.snapshot(), nullptr);
  EXPECT_EQ(*hot.snapshot(), std::vector<int64_t>{3});

  FakeClock clock;
  ManagerOptions mo;
  mo.clock = &clock;
  int rejections = 0;  // guarded by mu
  mo.log_sink = [&](absl::string_view line) {
    if (!absl::StrContains(line, "config_rejected")) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++rejections;
    }
    cv.notify_all();
  };
  DegradationManager manager(mo);
  ConfigFileWatcher watcher("/nonexistent/degrade.json", &manager);
  for (const absl::Duration period : bad_periods) {
    SCOPED_TRACE(absl::FormatDuration(period));
    const absl::Status s = watcher.Start(period);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(),
                HasSubstr("config file watcher '/nonexistent/degrade.json'"));
  }
  ASSERT_TRUE(watcher.Start(absl::Milliseconds(1)).ok());
  EXPECT_TRUE(wait_for([&] { return rejections >= 1; }));
  watcher.Stop();
  EXPECT_EQ(watcher.last_status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager.config(), nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
