// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of event_log.hpp: at most N lines per key per interval with the
// suppressed count on the next, the 10k QPS flood, clocks that jump, the key
// cap, a zero limit and a throwing sink. Every clock is a FakeClock.

#include "degrade/event_log.hpp"

#include <atomic>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/stage_metrics.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"
#include "nlohmann/json.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- The rate limiter ----

TEST(EventLogTest, AtMostNLinesPerKeyPerIntervalAndTheNextCarriesTheCount) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 3;
  o.interval = absl::Seconds(1);
  EventLog log(std::move(o));
  for (int i = 0; i < 10; ++i) log.Emit("k", R"({"n":1})");
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(log.suppressed_total(), 7u);
  // Another key has its own allowance.
  EXPECT_TRUE(log.Emit("other", "{}"));
  clock.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(log.Emit("k", R"({"n":2})"));  // same window
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(log.Emit("k", R"({"n":3})"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4], R"({"n":3,"suppressed":8})");
  EXPECT_TRUE(log.Emit("k", R"({"n":4})"));
  EXPECT_EQ(lines[5], R"({"n":4})");  // the count was reported once
  EXPECT_EQ(log.written_total(), 6u);
}

TEST(EventLogTest, AStageDegradingEveryRequestAt10kQpsWritesAHandfulPerSecond) {
  FakeClock clock;
  Fixture f(&clock, /*per_key=*/5);
  StageMetrics stages({"recsys", f.registry.get(), &clock});
  DegradationTrace t;
  t.Add("recall", DegradeReason::kBreakerOpen);
  // 10 simulated seconds at 10k requests per second.
  for (int s = 0; s < 10; ++s) {
    for (int i = 0; i < 10000; ++i) {
      stages.Observe(t);
      clock.Advance(absl::Microseconds(100));
    }
  }
  EXPECT_EQ(stages.fallbacks("recall", DegradeReason::kBreakerOpen), 100000u);
  // Each window of one second takes 5 lines, and suppresses the other 9995.
  EXPECT_EQ(f.lines.size(), 50u);
  // Nothing is lost silently: written + suppressed = every event, and the
  // lines say how many were suppressed before them.
  uint64_t reported = 0;
  for (const std::string& line : f.lines) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("suppressed")) reported += j["suppressed"].get<uint64_t>();
  }
  EXPECT_EQ(
      f.registry->log().written_total() + f.registry->log().suppressed_total(),
      100000u);
  // The first line of each later window reports the previous one's 9995;
  // the last window's are pending until the next line.
  EXPECT_EQ(reported, 9u * 9995u);
}

TEST(EventLogTest, AClockThatJumpsBackOrSaturatesStartsANewWindow) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 1;
  EventLog log(std::move(o));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_FALSE(log.Emit("k", "{}"));
  clock.Set(clock.Now() - absl::Hours(1));  // back: not stuck for an hour
  EXPECT_TRUE(log.Emit("k", "{}"));
  clock.Set(absl::InfiniteFuture());  // saturated readings: no overflow (UBSan)
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_FALSE(log.Emit("k", "{}"));
  EXPECT_EQ(lines.size(), 3u);
}

TEST(EventLogTest, KeysPastTheCapShareOneLimitUnlessIdleOnesCanGo) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 1;
  o.max_keys = 2;
  EventLog log(std::move(o));
  // Held keys in their window: nothing can be forgotten.
  EventLog::Key a = log.GetKey("a");
  EventLog::Key b = log.GetKey("b");
  EXPECT_TRUE(log.Emit(a, [] { return std::string("{}"); }));
  EXPECT_TRUE(log.Emit(b, [] { return std::string("{}"); }));
  EXPECT_TRUE(log.Emit("c", "{}"));   // the first overflow key
  EXPECT_FALSE(log.Emit("d", "{}"));  // shares c's allowance
  EXPECT_EQ(log.key_overflows(), 2u);
  // Their owners are gone (a BreakerFamily evicted them) and their windows
  // are over: a new key gets a limit of its own.
  a = EventLog::Key();
  b = EventLog::Key();
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(log.Emit("e", "{}"));
  EXPECT_TRUE(log.Emit("f", "{}"));
  EXPECT_EQ(log.key_overflows(), 2u);
  EXPECT_EQ(lines.size(), 5u);
}

TEST(EventLogTest, WriteAlwaysIgnoresAFullWindowButNotSilence) {
  FakeClock clock;
  std::vector<std::string> lines;
  EventLogOptions o;
  o.sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  o.clock = &clock;
  o.max_lines_per_key = 1;
  EventLog log(std::move(o));
  EXPECT_TRUE(log.Emit("k", R"({"n":1})"));
  EXPECT_FALSE(log.Emit("k", R"({"n":2})"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(log.WriteAlways([i] { return absl::StrCat(R"({"a":)", i, "}"); }));
  }
  EXPECT_THAT(lines, ElementsAre(R"({"n":1})", R"({"a":0})", R"({"a":1})",
                                 R"({"a":2})"));
  EXPECT_EQ(log.written_total(), 4u);
  EXPECT_EQ(log.suppressed_total(), 1u);
  // The rate-limited key still reports its own suppression, not the audit
  // lines'.
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(log.Emit("k", R"({"n":3})"));
  EXPECT_EQ(lines.back(), R"({"n":3,"suppressed":1})");

  EventLogOptions silent;
  silent.sink = [](absl::string_view) { FAIL() << "nothing may be written"; };
  silent.clock = &clock;
  silent.max_lines_per_key = 0;
  EventLog quiet(std::move(silent));
  EXPECT_FALSE(quiet.WriteAlways([] { return std::string("{}"); }));
  EXPECT_EQ(quiet.suppressed_total(), 1u);
}

TEST(EventLogTest, ZeroLimitSilencesAndAThrowingSinkLosesOnlyItsLine) {
  FakeClock clock;
  EventLogOptions silent;
  silent.sink = [](absl::string_view) { FAIL() << "nothing may be written"; };
  silent.clock = &clock;
  silent.max_lines_per_key = 0;
  EventLog quiet(std::move(silent));
  EXPECT_FALSE(quiet.Emit("k", "{}"));
  EXPECT_EQ(quiet.suppressed_total(), 1u);

  int calls = 0;
  EventLogOptions o;
  o.sink = [&calls](absl::string_view) {
    ++calls;
    throw std::runtime_error("disk full");
  };
  o.clock = &clock;
  EventLog log(std::move(o));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_TRUE(log.Emit("k", "{}"));
  EXPECT_EQ(calls, 2);
  std::vector<std::string> lines;
  log.SetSink([&lines](absl::string_view l) { lines.emplace_back(l); });
  EXPECT_TRUE(log.Emit("j", R"({"a":1})"));
  EXPECT_THAT(lines, ElementsAre(R"({"a":1})"));
}

// A sink calling back into its log (issue 13, re-entrancy): the sink runs
// outside the log's lock, so it may write a line of its own or replace
// itself; the line it is writing finishes on the old sink.
TEST(EventLogTest, ASinkMayEmitOrReplaceItself) {
  FakeClock clock;
  std::vector<std::string> first;
  std::vector<std::string> second;
  EventLog* self = nullptr;
  EventLogOptions o;
  o.clock = &clock;
  o.sink = [&](absl::string_view line) {
    first.emplace_back(line);
    if (first.size() == 1) {
      EXPECT_TRUE(self->Emit("nested", R"({"n":2})"));
      self->SetSink(
          [&second](absl::string_view l) { second.emplace_back(l); });
    }
  };
  EventLog log(std::move(o));
  self = &log;
  EXPECT_TRUE(log.Emit("outer", R"({"n":1})"));
  EXPECT_TRUE(log.Emit("outer", R"({"n":3})"));
  EXPECT_THAT(first, ElementsAre(R"({"n":1})", R"({"n":2})"));
  EXPECT_THAT(second, ElementsAre(R"({"n":3})"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
