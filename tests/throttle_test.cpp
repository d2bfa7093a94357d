// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// AdaptiveThrottler as the SRE book describes it, on a FakeClock: nothing
// refused while the server accepts, the formula max(0, (requests - k *
// accepts) / (requests + 1)) over the window, the cap, the newest fifth
// of the window for recovery, what a refusal looks like (IsThrottled,
// IsShed, no hint), RecordStatus, repeatable draws, every bad setting
// named; and threads admitting and recording at once (label concurrency,
// run under TSan). The overload and recovery figures are in
// retry_simulation_test.cpp.

#include "degrade/throttle.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

std::unique_ptr<AdaptiveThrottler> MakeThrottler(const FakeClock& clock,
                                                 ThrottleSettings s = {}) {
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return AdaptiveThrottler::Create(s).value();
}

TEST(AdaptiveThrottlerTest, NothingIsRefusedWhileTheServerAccepts) {
  FakeClock clock;
  auto t = MakeThrottler(clock);
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(t->Admit().ok());
    t->Record(true);
  }
  EXPECT_EQ(t->rejection_probability(), 0.0);
  EXPECT_EQ(t->stats().throttled, 0u);
  EXPECT_EQ(t->stats().admitted, 10'000u);
}

TEST(AdaptiveThrottlerTest, TheProbabilityIsTheBooksFormula) {
  FakeClock clock;
  ThrottleSettings s;
  s.max_rejection_probability = 1.0;
  s.fast_recovery = false;
  auto t = MakeThrottler(clock, s);
  // 99 requests asked, 20 accepted: (99 - 2 * 20) / 100.
  int asked = 0;
  while (asked < 99) {
    ++asked;
    if (t->Admit().ok() && asked <= 20) t->Record(true);
  }
  const ThrottleStats st = t->stats();
  EXPECT_EQ(st.window_requests, 99u);
  EXPECT_EQ(st.window_accepts, 20u);
  EXPECT_DOUBLE_EQ(t->rejection_probability(), (99.0 - 40.0) / 100.0);
}

TEST(AdaptiveThrottlerTest, TheCapKeepsProbesGoingDuringAFullOutage) {
  FakeClock clock;
  auto t = MakeThrottler(clock);  // max_rejection_probability 0.9
  int sent = 0;
  for (int i = 0; i < 100'000; ++i) {
    if (t->Admit().ok()) {
      ++sent;
      t->Record(false);
    }
  }
  EXPECT_DOUBLE_EQ(t->rejection_probability(), 0.9);
  EXPECT_GT(sent, 9'000);  // about 10% probe
  EXPECT_LT(sent, 11'000);
}

TEST(AdaptiveThrottlerTest, ARefusalIsThrottledAndShedWithoutAHint) {
  FakeClock clock;
  ThrottleSettings s;
  s.name = "ranker";
  auto t = MakeThrottler(clock, s);
  absl::Status refusal;
  for (int i = 0; i < 1000 && refusal.ok(); ++i) {
    refusal = t->Admit();
    if (refusal.ok()) t->Record(false);
  }
  ASSERT_FALSE(refusal.ok());
  EXPECT_TRUE(IsThrottled(refusal));
  EXPECT_TRUE(IsShed(refusal));
  EXPECT_EQ(refusal.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(ShedRetryAfter(refusal).has_value());
  EXPECT_THAT(refusal.message(), HasSubstr("throttle 'ranker'"));
  EXPECT_FALSE(IsThrottled(ShedError("admission", "full")));
}

TEST(AdaptiveThrottlerTest, RecordStatusCountsOnlyWhatTheServerAccepted) {
  FakeClock clock;
  ThrottleSettings s;
  s.fast_recovery = false;
  auto t = MakeThrottler(clock, s);
  ASSERT_TRUE(t->Admit().ok());
  t->RecordStatus(absl::OkStatus());
  t->RecordStatus(absl::NotFoundError("no such user"));  // answered
  t->RecordStatus(absl::ResourceExhaustedError("busy"));
  t->RecordStatus(ShedError("server", "overloaded", absl::Seconds(1)));
  EXPECT_EQ(t->stats().window_accepts, 2u);
}

TEST(AdaptiveThrottlerTest, TheWindowForgetsAnOutage) {
  FakeClock clock;
  ThrottleSettings s;
  s.fast_recovery = false;
  auto t = MakeThrottler(clock, s);
  for (int i = 0; i < 1000; ++i) {
    if (t->Admit().ok()) t->Record(false);
  }
  EXPECT_GT(t->rejection_probability(), 0.5);
  clock.Advance(absl::Minutes(2));
  EXPECT_EQ(t->rejection_probability(), 0.0);
  EXPECT_EQ(t->stats().window_requests, 0u);
}

TEST(AdaptiveThrottlerTest, TheSameSeedRefusesTheSameRequests) {
  auto run = [](uint64_t seed) {
    FakeClock clock;
    ThrottleSettings s;
    s.seed = seed;
    auto t = MakeThrottler(clock, s);
    std::string pattern;
    for (int i = 0; i < 200; ++i) {
      const bool ok = t->Admit().ok();
      pattern += ok ? '.' : 'x';
      if (ok) t->Record(i % 3 == 0);
    }
    return pattern;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(AdaptiveThrottlerTest, RefusesBadSettingsNamingSettingAndValue) {
  struct Case {
    void (*mutate)(ThrottleSettings&);
    const char* text;
  };
  const Case cases[] = {
      {[](ThrottleSettings& s) { s.k = 0.5; }, "'k' = 0.5"},
      {[](ThrottleSettings& s) { s.k = 1.0; }, "'k' = 1 is invalid"},
      {[](ThrottleSettings& s) { s.k = 1.09; }, "'k' = 1.09"},
      {[](ThrottleSettings& s) { s.k = std::nan(""); }, "'k' = nan"},
      {[](ThrottleSettings& s) { s.window = absl::ZeroDuration(); },
       "'window' = 0"},
      {[](ThrottleSettings& s) { s.window = absl::InfiniteDuration(); },
       "'window' = inf"},
      {[](ThrottleSettings& s) { s.max_rejection_probability = 1.5; },
       "'max_rejection_probability' = 1.5"},
      {[](ThrottleSettings& s) { s.name = ""; }, "'name'"},
  };
  for (const Case& c : cases) {
    ThrottleSettings s;
    c.mutate(s);
    const absl::Status st = AdaptiveThrottler::Create(s).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(st.message(), HasSubstr(c.text));
    // Create() refuses exactly what the public validator refuses.
    EXPECT_EQ(ValidateThrottleSettings(s), st) << c.text;
  }
}

// k = 1 once passed validation, and a client at the cap then needed about
// six windows (twelve minutes) to send 90% again after the server healed,
// and without fast recovery never did: k below 1.1 is refused, saying why.
TEST(AdaptiveThrottlerTest, RefusesKBelowTheRecoveryBoundSayingWhy) {
  ThrottleSettings s;
  s.k = 1.0;
  const absl::Status st = ValidateThrottleSettings(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("throttle 'throttle': setting 'k' = 1"));
  EXPECT_THAT(st.message(), HasSubstr("[1.1, 100]"));
  EXPECT_THAT(st.message(), HasSubstr("after the server heals"));
  s.k = kMinThrottleK;
  EXPECT_TRUE(ValidateThrottleSettings(s).ok());
}

// At the smallest k accepted, a client at 100 requests/s that an outage
// drove to the cap sends 90% of its requests again within 3 minutes of the
// server healing (120 s measured; 40 s at k = 2).
TEST(AdaptiveThrottlerTest, TheSmallestKRecoversWithinAFewMinutes) {
  FakeClock clock;
  ThrottleSettings s;
  s.k = kMinThrottleK;
  auto t = MakeThrottler(clock, s);
  for (int i = 0; i < 3000; ++i) {  // five minutes refused
    if (t->Admit().ok()) t->Record(false);
    clock.Advance(absl::Milliseconds(100));
  }
  ASSERT_DOUBLE_EQ(t->rejection_probability(), 0.9);
  int seconds = 0;
  for (int sent = 0; sent < 90 && seconds < 3600; seconds += 10) {
    sent = 0;
    for (int i = 0; i < 100; ++i) {  // ten seconds, all accepted
      if (t->Admit().ok()) {
        ++sent;
        t->Record(true);
      }
      clock.Advance(absl::Milliseconds(100));
    }
  }
  EXPECT_LE(seconds, 180);
}

TEST(AdaptiveThrottlerTest, ValidateAcceptsTheDefaultsAndEscapesTheName) {
  EXPECT_TRUE(ValidateThrottleSettings(ThrottleSettings{}).ok());
  ThrottleSettings s;
  s.name = "a\nb";
  s.k = 0.5;
  EXPECT_EQ(ValidateThrottleSettings(s).message(),
            "throttle 'a\\nb': setting 'k' = 0.5 is invalid: must be a "
            "finite number in [1.1, 100]: at k = 1 the client never sends "
            "more than the server accepted, so it takes many windows to "
            "send everything again after the server heals (the SRE book "
            "uses 2)");
}

TEST(AdaptiveThrottlerTest, ExportsItsSeriesThroughTheRegistry) {
  FakeClock clock;
  MetricsRegistry registry;
  ThrottleSettings s;
  s.name = "ranker";
  s.clock = &clock;
  s.metrics = &registry;
  auto t = AdaptiveThrottler::Create(s).value();
  for (int i = 0; i < 100; ++i) {
    if (t->Admit().ok()) t->Record(false);
  }
  const ThrottleStats st = t->stats();
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "degrade_throttle_rejected_total{throttle=\"ranker\"} ",
                        st.throttled)));
  EXPECT_THAT(text, HasSubstr("degrade_throttle_window_requests{throttle=\"ranker\"} 100"));
  EXPECT_GT(st.throttled, 0u);
}

TEST(AdaptiveThrottlerConcurrencyTest, ThreadsAdmittingAndRecordingKeepExactCounts) {
  FakeClock clock;
  auto t = MakeThrottler(clock);
  constexpr int kThreads = 4;
  constexpr int kRequests = 5000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kRequests; ++n) {
        if (t->Admit().ok()) t->Record((n + i) % 4 == 0);
        if (n % 1000 == 0) clock.Advance(absl::Seconds(1));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const ThrottleStats st = t->stats();
  EXPECT_EQ(st.admitted + st.throttled, uint64_t{kThreads * kRequests});
  EXPECT_EQ(st.window_requests, uint64_t{kThreads * kRequests});
  EXPECT_GT(st.throttled, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
