// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of hedge_settings.hpp: HedgeSettings' defaults and bounds, and what
// a CancelToken promises the callable that receives one. Each rejected
// field is tabled in hedge_test; here, the inclusive edges, order and
// escaping, and a token that outlives its call.

#include "degrade/hedge_settings.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/hedge.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

bool Names(const absl::Status& s, absl::string_view text) {
  return s.code() == absl::StatusCode::kInvalidArgument &&
         s.message().find(text) != absl::string_view::npos;
}

TEST(HedgeSettingsTest, TheDefaultsAreTheAnchorsAndValid) {
  const HedgeSettings s;
  EXPECT_FALSE(s.delay.has_value());
  EXPECT_EQ(s.delay_quantile, 0.95);
  EXPECT_EQ(s.min_samples, 100);
  EXPECT_EQ(s.max_hedges, 1);
  EXPECT_EQ(s.max_extra_load, 0.05);
  EXPECT_EQ(s.window, absl::Seconds(10));
  EXPECT_EQ(s.clock, nullptr);
  EXPECT_EQ(s.metrics, nullptr);
  EXPECT_TRUE(ValidateHedgeSettings(s).ok()) << ValidateHedgeSettings(s);
}

TEST(HedgeSettingsTest, TheEdgesAreWhereTheCommentsSay) {
  HedgeSettings s;
  s.name = "ann";
  s.window = absl::Seconds(1);
  s.max_hedges = kMaxHedges;
  s.max_extra_load = 1;
  s.min_samples = 1;
  s.delay = absl::Nanoseconds(1);
  EXPECT_TRUE(ValidateHedgeSettings(s).ok()) << ValidateHedgeSettings(s);
  s.window = absl::Minutes(10);
  EXPECT_TRUE(ValidateHedgeSettings(s).ok()) << ValidateHedgeSettings(s);

  s.window = absl::Minutes(10) + absl::Nanoseconds(1);
  EXPECT_TRUE(Names(ValidateHedgeSettings(s), "'window'"));
  s.window = absl::Seconds(1) - absl::Nanoseconds(1);
  EXPECT_TRUE(Names(ValidateHedgeSettings(s), "'window'"));
  s.window = absl::Seconds(10);
  s.max_hedges = kMaxHedges + 1;
  EXPECT_TRUE(Names(ValidateHedgeSettings(s),
                    "'max_hedges' = 10 is invalid: "
                    "must be in [1, 9]"))
      << ValidateHedgeSettings(s);
  s.max_hedges = 1;
  for (double q : {0.0, 1.0, std::nan("")}) {
    s.delay_quantile = q;
    EXPECT_TRUE(Names(ValidateHedgeSettings(s), "'delay_quantile'")) << q;
  }
}

TEST(HedgeSettingsTest, AFixedDelayMustBePositiveAndFiniteAndSaysTheWayOut) {
  HedgeSettings s;
  s.name = "ann";
  for (absl::Duration d : {absl::ZeroDuration(), -absl::Milliseconds(1),
                           absl::InfiniteDuration()}) {
    s.delay = d;
    const absl::Status v = ValidateHedgeSettings(s);
    EXPECT_TRUE(Names(v, absl::StrCat("'delay' = ", absl::FormatDuration(d))))
        << v;
    EXPECT_TRUE(Names(v, "leave it unset")) << v;
  }
}

TEST(HedgeSettingsTest, TheFirstFaultInDeclarationOrderIsReportedEscaped) {
  HedgeSettings s;
  s.name = "ann\"\n";
  s.min_samples = 0;
  s.max_extra_load = 0;
  const absl::Status v = ValidateHedgeSettings(s);
  EXPECT_TRUE(Names(v, "hedge policy 'ann\\\"\\n': setting 'min_samples' = 0"))
      << v;
  s.min_samples = 1;
  EXPECT_TRUE(Names(ValidateHedgeSettings(s), "'max_extra_load' = 0"));
}

TEST(HedgeSettingsTest, ADefaultTokenIsNeverCancelledAndIsTheFirstAttempt) {
  static_assert(std::is_nothrow_copy_constructible_v<CancelToken>,
                "tokens are handed to RPC callbacks by value");
  const CancelToken token;
  EXPECT_FALSE(token.cancelled());
  EXPECT_EQ(token.attempt(), 0);
  const CancelToken copy = token;
  EXPECT_FALSE(copy.cancelled());
}

TEST(HedgeSettingsTest, CopiesOfTheTokensOutliveTheCallAndStayCancelled) {
  FakeClock clock;
  testing::ManualExecutor executor;
  HedgeSettings s;
  s.name = "ann";
  s.delay = absl::Milliseconds(10);
  s.max_extra_load = 1;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto policy = HedgePolicy::Create(s);
  ASSERT_TRUE(policy.ok()) << policy.status();

  std::optional<CancelToken> loser, winner;
  bool loser_saw_cancel_in_flight = false;
  {
    auto call = StartHedge(**policy, executor,
                           [&](const CancelToken& t) -> absl::StatusOr<int> {
                             if (t.attempt() == 0) {
                               loser = t;
                               EXPECT_FALSE(loser->cancelled());
                               executor.RunLast();  // the hedge answers
                               loser_saw_cancel_in_flight = loser->cancelled();
                               return 0;
                             }
                             winner = t;
                             return 1;
                           });
    clock.Advance(absl::Milliseconds(10));
    ASSERT_TRUE(call.SendHedge());
    executor.RunNext();
    EXPECT_EQ(*call.Take(), 1);
  }
  // The call is gone; the copies still share its flag.
  EXPECT_TRUE(loser_saw_cancel_in_flight);
  ASSERT_TRUE(loser.has_value() && winner.has_value());
  EXPECT_TRUE(loser->cancelled());
  EXPECT_EQ(loser->attempt(), 0);
  EXPECT_TRUE(winner->cancelled());  // the decision cancels every attempt
  EXPECT_EQ(winner->attempt(), 1);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
