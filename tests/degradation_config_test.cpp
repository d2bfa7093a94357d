// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degradation_config.hpp, called directly (the config parser and the
// manager call it too): valid configs pass; a table of invalid ones, each
// built in code from a valid base, must each be refused with the path, the
// value and the rule in the message; RecoverThreshold's two sources; the
// field-by-field equality a manager uses to ignore a re-pushed config.

#include "degrade/degradation_config.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Two valid levels on gpu_util and queue_length, as the article's config.
DegradationConfig Base() {
  DegradationConfig c;
  c.name = "svc";
  LevelSpec l1;
  l1.name = "level1";
  l1.enter = {{"gpu_util", 0.85}, {"queue_length", 20}};
  l1.recover = {{"gpu_util", 0.7}};
  l1.disable = {"semantic_cache", "debug_log"};
  LevelSpec l2;
  l2.name = "level2";
  l2.enter = {{"gpu_util", 0.95}, {"queue_length", 50}};
  l2.disable = {std::string(kAllNonCritical)};
  c.levels = {l1, l2};
  c.critical = {"ranking"};
  return c;
}

TEST(ValidateDegradationConfigTest, TheBaseAndItsVariantsAreValid) {
  EXPECT_TRUE(ValidateDegradationConfig(Base()).ok());
  DegradationConfig c = Base();
  c.levels.resize(1);  // one level is enough
  EXPECT_TRUE(ValidateDegradationConfig(c).ok());
  c = Base();
  c.recover_ratio = 1.0;  // the upper bound is included
  c.hold = c.enter_after = c.cooldown = absl::ZeroDuration();
  c.levels[0].hold = absl::Hours(1);
  c.levels[0].recover = {{"gpu_util", 0.85}};  // recover == enter is allowed
  EXPECT_TRUE(ValidateDegradationConfig(c).ok());
  c = Base();
  c.levels[0].name = c.levels[1].name = "";  // unnamed: named by position
  EXPECT_TRUE(ValidateDegradationConfig(c).ok());
  c.levels.clear();
  for (int i = 0; i < kMaxLevels; ++i) {
    LevelSpec l;
    l.enter = {{"q", static_cast<double>(i + 1)}};
    c.levels.push_back(l);
  }
  EXPECT_TRUE(ValidateDegradationConfig(c).ok());
}

struct InvalidConfig {
  std::string name;  // the test's name suffix
  std::function<void(DegradationConfig&)> mutate;
  std::string path;   // the path the message must name
  std::string value;  // the offending value, as the message prints it
  std::string rule;   // the rule broken
};

std::ostream& operator<<(std::ostream& os, const InvalidConfig& c) {
  return os << c.name;
}

std::vector<InvalidConfig> InvalidConfigs() {
  return {
      {"EmptyName", [](auto& c) { c.name = ""; }, "degradation.name", "\"\"",
       "must not be empty"},
      {"NoLevels", [](auto& c) { c.levels.clear(); }, "degradation", "0 levels",
       "needs 1 to 8 levels"},
      {"TooManyLevels",
       [](auto& c) {
         c.levels.clear();
         for (int i = 0; i <= kMaxLevels; ++i) {
           LevelSpec l;
           l.enter = {{"q", static_cast<double>(i + 1)}};
           c.levels.push_back(l);
         }
       },
       "degradation", "9 levels", "needs 1 to 8 levels"},
      {"RecoverRatioZero", [](auto& c) { c.recover_ratio = 0; },
       "degradation.recover_ratio", "= 0", "must be in (0, 1]"},
      {"RecoverRatioAboveOne", [](auto& c) { c.recover_ratio = 1.5; },
       "degradation.recover_ratio", "= 1.5", "must be in (0, 1]"},
      {"RecoverRatioNaN", [](auto& c) { c.recover_ratio = kNaN; },
       "degradation.recover_ratio", "= nan", "must be in (0, 1]"},
      {"NegativeHold", [](auto& c) { c.hold = -absl::Seconds(1); },
       "degradation.hold", "= -1s", "must be a finite duration >= 0"},
      {"InfiniteHold", [](auto& c) { c.hold = absl::InfiniteDuration(); },
       "degradation.hold", "= inf", "must be a finite duration >= 0"},
      {"NegativeEnterAfter",
       [](auto& c) { c.enter_after = -absl::Milliseconds(5); },
       "degradation.enter_after", "= -5ms", "must be a finite duration >= 0"},
      {"InfiniteCooldown",
       [](auto& c) { c.cooldown = absl::InfiniteDuration(); },
       "degradation.cooldown", "= inf", "must be a finite duration >= 0"},
      {"EmptyCriticalName", [](auto& c) { c.critical.push_back(""); },
       "degradation.critical[1]", "= \"\"", "must name a feature"},
      {"CriticalAllNonCritical",
       [](auto& c) { c.critical = {std::string(kAllNonCritical)}; },
       "degradation.critical[0]", "= \"all_non_critical\"",
       "must name a feature"},
      {"DuplicateLevelName", [](auto& c) { c.levels[1].name = "level1"; },
       "degradation.level1", "= \"level1\"", "level names must be unique"},
      {"NoTrigger", [](auto& c) { c.levels[1].enter.clear(); },
       "degradation.level2.trigger", "= {}",
       "a level needs at least one trigger signal"},
      {"EmptySignalName", [](auto& c) { c.levels[0].enter[""] = 1; },
       "degradation.level1.trigger[\"\"]", "= \"\"",
       "signal names must not be empty"},
      {"NegativeThreshold",
       [](auto& c) { c.levels[0].enter["gpu_util"] = -0.1; },
       "degradation.level1.trigger.gpu_util", "= -0.1",
       "thresholds must be finite and > 0"},
      {"ZeroThreshold", [](auto& c) { c.levels[0].enter["gpu_util"] = 0.0; },
       "degradation.level1.trigger.gpu_util", "= 0",
       "thresholds must be > 0: a level is left when its signals fall below "
       "the recover threshold"},
      {"ZeroRecover", [](auto& c) { c.levels[0].recover["gpu_util"] = 0.0; },
       "degradation.level1.recover.gpu_util", "= 0",
       "so the level could never be left"},
      {"RecoverRoundsToZero",
       [](auto& c) {
         c.levels[0].enter["tiny"] = 4.9406564584124654e-324;
         c.recover_ratio = 0.5;
       },
       "degradation.level1.trigger.tiny", "= 5e-324",
       "its recover threshold (enter * recover_ratio 0.5) rounds to 0"},
      {"InfiniteThreshold",
       [](auto& c) { c.levels[1].enter["queue_length"] = kInf; },
       "degradation.level2.trigger.queue_length", "= inf",
       "thresholds must be finite and > 0"},
      {"NaNThreshold", [](auto& c) { c.levels[0].enter["gpu_util"] = kNaN; },
       "degradation.level1.trigger.gpu_util", "= nan",
       "thresholds must be finite and > 0"},
      {"ThresholdFallsWithTheLevel",
       [](auto& c) { c.levels[1].enter["gpu_util"] = 0.8; },
       "degradation.level2.trigger.gpu_util", "= 0.8",
       "thresholds must rise with the level (a lower level enters at 0.85)"},
      {"ThresholdEqualAcrossLevels",
       [](auto& c) { c.levels[1].enter["queue_length"] = 20; },
       "degradation.level2.trigger.queue_length", "= 20",
       "thresholds must rise with the level (a lower level enters at 20)"},
      {"RecoverForAnUnusedSignal",
       [](auto& c) { c.levels[0].recover["latency"] = 1; },
       "degradation.level1.recover.latency", "= 1",
       "recover names a signal this level's trigger does not use"},
      {"NegativeRecover", [](auto& c) { c.levels[0].recover["gpu_util"] = -1; },
       "degradation.level1.recover.gpu_util", "= -1",
       "thresholds must be finite and > 0"},
      {"RecoverAboveEnter",
       [](auto& c) { c.levels[0].recover["gpu_util"] = 0.9; },
       "degradation.level1.recover.gpu_util", "= 0.9",
       "a recover threshold must not be above the enter threshold (0.85)"},
      {"EmptyDisableName", [](auto& c) { c.levels[0].disable.push_back(""); },
       "degradation.level1.disable[2]", "= \"\"",
       "feature names must not be empty"},
      {"NegativeLevelHold",
       [](auto& c) { c.levels[1].hold = -absl::Seconds(2); },
       "degradation.level2.hold", "= -2s", "must be a finite duration >= 0"},
      {"InfiniteLevelEnterAfter",
       [](auto& c) { c.levels[0].enter_after = absl::InfiniteDuration(); },
       "degradation.level1.enter_after", "= inf",
       "must be a finite duration >= 0"},
      {"UnnamedLevelIsNamedByPosition",
       [](auto& c) {
         c.levels[1].name = "";
         c.levels[1].enter["gpu_util"] = 0.5;
       },
       "degradation.level2.trigger.gpu_util", "= 0.5",
       "thresholds must rise with the level"},
  };
}

class InvalidDegradationConfigTest
    : public ::testing::TestWithParam<InvalidConfig> {};

TEST_P(InvalidDegradationConfigTest, IsRefusedNamingPathValueAndRule) {
  const InvalidConfig& c = GetParam();
  DegradationConfig config = Base();
  c.mutate(config);
  const absl::Status s = ValidateDegradationConfig(config);
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  const std::string message(s.message());
  // "degradation config '<name>': <path> = <value>: <rule>"
  EXPECT_THAT(message, ::testing::StartsWith(absl::StrCat(
                           "degradation config '", config.name, "': ")));
  EXPECT_THAT(message, HasSubstr(absl::StrCat(": ", c.path, " ")));
  EXPECT_THAT(message, HasSubstr(c.value));
  EXPECT_THAT(message, HasSubstr(c.rule));
}

INSTANTIATE_TEST_SUITE_P(
    Table, InvalidDegradationConfigTest, ::testing::ValuesIn(InvalidConfigs()),
    [](const ::testing::TestParamInfo<InvalidConfig>& info) {
      return info.param.name;
    });

// The first problem in document order is the one reported.
TEST(ValidateDegradationConfigTest, ReportsTheFirstProblem) {
  DegradationConfig c = Base();
  c.recover_ratio = 2;
  c.levels[1].enter["gpu_util"] = 0.1;
  EXPECT_THAT(std::string(ValidateDegradationConfig(c).message()),
              HasSubstr("degradation.recover_ratio"));
}

TEST(RecoverThresholdTest, ExplicitRecoverWinsOverTheRatio) {
  const DegradationConfig c = Base();
  EXPECT_DOUBLE_EQ(RecoverThreshold(c, c.levels[0], "gpu_util"), 0.7);
  EXPECT_DOUBLE_EQ(RecoverThreshold(c, c.levels[0], "queue_length"),
                   20 * c.recover_ratio);
  EXPECT_DOUBLE_EQ(RecoverThreshold(c, c.levels[1], "gpu_util"),
                   0.95 * c.recover_ratio);
}

TEST(DegradationConfigEqualityTest, EveryFieldCounts) {
  const DegradationConfig base = Base();
  EXPECT_TRUE(base == Base());
  EXPECT_FALSE(base != Base());
  const std::vector<std::function<void(DegradationConfig&)>> changes = {
      [](auto& c) { c.name = "other"; },
      [](auto& c) { c.recover_ratio = 0.5; },
      [](auto& c) { c.hold = absl::Seconds(1); },
      [](auto& c) { c.enter_after = absl::Seconds(1); },
      [](auto& c) { c.cooldown = absl::Seconds(1); },
      [](auto& c) { c.critical.clear(); },
      [](auto& c) { c.levels.pop_back(); },
      [](auto& c) { c.levels[0].name = "first"; },
      [](auto& c) { c.levels[0].enter["gpu_util"] = 0.8; },
      [](auto& c) { c.levels[0].recover.clear(); },
      [](auto& c) { c.levels[0].disable.pop_back(); },
      [](auto& c) { c.levels[1].hold = absl::Seconds(1); },
      [](auto& c) { c.levels[1].enter_after = absl::Seconds(1); },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    DegradationConfig changed = Base();
    changes[i](changed);
    EXPECT_FALSE(changed == base) << "change " << i;
    EXPECT_TRUE(changed != base) << "change " << i;
  }
}

// Found by review: names from a config went into messages raw (a NUL or a
// newline could cut a log line short or forge one), and thresholds were
// printed to six digits, so a value and the one it broke could read alike.
TEST(ValidateDegradationConfigTest, MessagesEscapeNamesAndPrintExactNumbers) {
  DegradationConfig c;
  LevelSpec l1;
  const std::string hostile("gpu\0\nFAKE LOG LINE", 18);
  l1.enter = {{hostile, 1.0}};
  LevelSpec l2;
  l2.enter = {{hostile, 0.5}};
  c.levels = {l1, l2};
  const std::string m(ValidateDegradationConfig(c).message());
  EXPECT_EQ(m.find('\0'), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_THAT(m, HasSubstr(R"(degradation.level2.trigger["gpu\u0000\nFAKE LOG LINE"] = 0.5)"));

  LevelSpec a;
  a.enter = {{"g", 0.9500001}};
  LevelSpec b;
  b.enter = {{"g", 0.95}};
  c.levels = {a, b};
  EXPECT_THAT(std::string(ValidateDegradationConfig(c).message()),
              HasSubstr("g = 0.95: thresholds must rise with the level (a "
                        "lower level enters at 0.9500001)"));

  // The offending value in its exact form too: with six digits both sides
  // of these read 0.95 ("g = 0.95 ... enters at 0.95000002").
  a.enter = {{"g", 0.95000002}};
  b.enter = {{"g", 0.95000001}};
  c.levels = {a, b};
  EXPECT_THAT(std::string(ValidateDegradationConfig(c).message()),
              HasSubstr("g = 0.95000001: thresholds must rise with the level "
                        "(a lower level enters at 0.95000002)"));
  LevelSpec r;
  r.enter = {{"g", 0.95000001}};
  r.recover = {{"g", 0.95000002}};
  c.levels = {r};
  EXPECT_THAT(std::string(ValidateDegradationConfig(c).message()),
              HasSubstr("recover.g = 0.95000002: a recover threshold must not be "
                        "above the enter threshold (0.95000001)"));
}

TEST(ValidateDegradationConfigTest, AHugeNameMakesAShortMessage) {
  DegradationConfig c;
  LevelSpec l1;
  l1.enter = {{std::string(500000, 's'), -1.0}};
  c.levels = {l1};
  const absl::Status st = ValidateDegradationConfig(c);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(st.message().size(), 400u) << st.message().substr(0, 400);
  EXPECT_THAT(std::string(st.message()), HasSubstr("(500000 bytes)"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
