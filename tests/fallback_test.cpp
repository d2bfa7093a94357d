// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// fallback.hpp is now an umbrella of with_fallback.hpp, default_features.hpp
// and hot_list.hpp: code that includes it alone still gets every Plan B.
// The behaviour is tested in those headers' own test files.

#include "degrade/fallback.hpp"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;

TEST(FallbackHeaderTest, TheUmbrellaGivesEveryPlanB) {
  FakeClock clock;
  BreakerSettings settings;
  settings.name = "umbrella";
  settings.clock = &clock;
  CircuitBreaker<std::vector<float>> features_cb(settings);
  CircuitBreaker<std::vector<std::string>> recall_cb(settings);
  const auto down = [] { return absl::UnavailableError("down"); };

  DefaultFeatures defaults(2);
  ASSERT_TRUE(defaults.Set({0.5f, 1.5f}).ok());
  absl::StatusOr<StageResult<std::vector<float>>> f = WithFallback(
      features_cb, "features",
      [&]() -> absl::StatusOr<std::vector<float>> { return down(); },
      defaults.Fallback());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->is_default());
  EXPECT_THAT(f->value(), ElementsAre(0.5f, 1.5f));

  HotListOptions<std::string> o;
  o.clock = &clock;
  HotList<std::string> hot(o);
  ASSERT_TRUE(hot.Publish({"h1", "h2"}).ok());
  absl::StatusOr<StageResult<std::vector<std::string>>> r = WithFallback(
      *f, recall_cb, "recall",
      [&]() -> absl::StatusOr<std::vector<std::string>> { return down(); },
      hot.Fallback());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->value(), ElementsAre("h1", "h2"));
  EXPECT_EQ(r->trace().Encode(), "v1;features=error;recall=error");

  EXPECT_THAT(DedupOnly(std::vector<int>{3, 1, 3}, [](int i) { return i; }),
              ElementsAre(3, 1));
  EXPECT_GT(kMaxDefaultFeaturesBytes, 0u);
  EXPECT_GT(kMaxHotListBytes, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
