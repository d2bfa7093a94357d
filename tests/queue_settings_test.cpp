// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of queue_settings.hpp on its own: the settings a user fills before
// any queue exists. The queue's reaction to each setting is in
// admission_queue_test.cpp; here, the defaults, the bounds, which fault is
// reported first, and the header's own example, word for word.

#include "degrade/queue_settings.hpp"

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

QueueSettings Valid() {
  QueueSettings s;
  s.name = "gpu";
  s.capacity = 8;
  return s;
}

TEST(QueueSettingsTest, TheDefaultsAreCoDelsAndTheCapacityIsMandatory) {
  const QueueSettings s;
  EXPECT_EQ(s.name, "queue");
  EXPECT_EQ(s.capacity, 0u);
  EXPECT_EQ(s.codel_target, absl::Milliseconds(5));
  EXPECT_EQ(s.codel_interval, absl::Milliseconds(100));
  EXPECT_TRUE(s.adaptive_lifo);
  EXPECT_TRUE(s.deadline_aware);
  EXPECT_FALSE(s.admission_threshold);
  EXPECT_FALSE(s.on_sojourn);
  EXPECT_EQ(s.admission, nullptr);
  EXPECT_EQ(s.clock, nullptr);
  EXPECT_EQ(s.metrics, nullptr);
  // A forgotten capacity is an error that says what to set, never a
  // default bound nobody chose.
  EXPECT_EQ(ValidateQueueSettings(s),
            absl::InvalidArgumentError(
                "admission queue 'queue': setting 'capacity' = 0 is invalid: "
                "must be in [1, 16777216] (a hard bound is mandatory)"));
  QueueSettings one = s;
  one.capacity = 1;
  EXPECT_TRUE(ValidateQueueSettings(one).ok()) << ValidateQueueSettings(one);
}

TEST(QueueSettingsTest, TheNameIsEscapedLikeEveryOtherComponents) {
  QueueSettings s = Valid();
  s.name = "a\nb";
  s.capacity = 0;
  EXPECT_EQ(ValidateQueueSettings(s),
            absl::InvalidArgumentError(
                "admission queue 'a\\nb': setting 'capacity' = 0 is invalid: "
                "must be in [1, 16777216] (a hard bound is mandatory)"));
}

TEST(QueueSettingsTest, TheCapacityBoundIsInclusive) {
  static_assert(kMaxQueueCapacity == std::size_t{1} << 24, "documented bound");
  QueueSettings s = Valid();
  s.capacity = kMaxQueueCapacity;
  EXPECT_TRUE(ValidateQueueSettings(s).ok()) << ValidateQueueSettings(s);
  s.capacity = kMaxQueueCapacity + 1;
  const absl::Status v = ValidateQueueSettings(s);
  EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(v.message().find("'capacity' = 16777217"), absl::string_view::npos)
      << v;
}

TEST(QueueSettingsTest, TheFirstBadSettingIsReportedInTheDocumentedOrder) {
  // Every setting wrong at once; fix them one by one and the report moves
  // on in the order the function's comment promises.
  QueueSettings s;
  s.name.clear();
  s.capacity = 0;
  s.codel_interval = absl::InfiniteDuration();
  s.codel_target = -absl::Milliseconds(1);
  const char* const order[] = {"'name'", "'capacity'", "'codel_interval'",
                               "'codel_target'"};
  for (const char* setting : order) {
    const absl::Status v = ValidateQueueSettings(s);
    ASSERT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << setting;
    EXPECT_NE(v.message().find(setting), absl::string_view::npos)
        << setting << " expected first in: " << v;
    if (s.name.empty()) {
      s.name = "gpu";
    } else if (s.capacity == 0) {
      s.capacity = 4;
    } else if (s.codel_interval == absl::InfiniteDuration()) {
      s.codel_interval = absl::Milliseconds(100);
    } else {
      s.codel_target = absl::Milliseconds(5);
    }
  }
  EXPECT_TRUE(ValidateQueueSettings(s).ok()) << ValidateQueueSettings(s);
}

TEST(QueueSettingsTest, TheTargetMustStayBelowTheInterval) {
  QueueSettings s = Valid();
  s.codel_target = absl::Nanoseconds(99'999'999);
  EXPECT_TRUE(ValidateQueueSettings(s).ok()) << ValidateQueueSettings(s);
  s.codel_target = s.codel_interval;
  EXPECT_EQ(ValidateQueueSettings(s).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(QueueSettingsTest, TheHeadersExampleSaysWhatValidationSays) {
  QueueSettings s;
  s.name = "gpu";
  s.capacity = 256;
  s.codel_target = absl::Milliseconds(20);
  EXPECT_TRUE(ValidateQueueSettings(s).ok()) << ValidateQueueSettings(s);
  s.codel_target = absl::Milliseconds(200);
  EXPECT_EQ(ValidateQueueSettings(s),
            absl::InvalidArgumentError(
                "admission queue 'gpu': setting 'codel_target' = 200ms is "
                "invalid: must be > 0 and < codel_interval (100ms)"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
