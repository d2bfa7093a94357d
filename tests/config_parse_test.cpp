// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// config_parse.hpp: the JSON format (the article's example, every extension,
// a table of invalid configs and what their messages must name), hostile
// input, and file loading, with the wording of file errors ("config file").

#include "degrade/config_parse.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/config_samples.hpp"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::kArticleJson;
using ::degrade_tests::kLevel1;
using ::degrade_tests::Levels;
using ::degrade_tests::WriteInPlace;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// A fresh directory for this file's tests.
class TempDir : public ::degrade_tests::TempDir {
 public:
  TempDir() : ::degrade_tests::TempDir("degrade_config_parse_test") {}
};

// ---- Parsing: what valid configs turn into ---------------------------------

TEST(ParseDegradationConfigTest, ArticleExampleLoadsAsIs) {
  absl::StatusOr<DegradationConfig> config =
      ParseDegradationConfig(kArticleJson);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "degradation");
  ASSERT_EQ(config->levels.size(), 3u);

  const LevelSpec& l1 = config->levels[0];
  EXPECT_EQ(l1.name, "level1");
  EXPECT_THAT(l1.enter, UnorderedElementsAre(Pair("gpu_util", 0.85),
                                             Pair("queue_length", 20.0)));
  EXPECT_THAT(l1.disable,
              ElementsAre("semantic_cache", "debug_log", "light_metrics"));
  EXPECT_TRUE(l1.recover.empty());
  EXPECT_FALSE(l1.hold.has_value());
  EXPECT_FALSE(l1.enter_after.has_value());

  const LevelSpec& l2 = config->levels[1];
  EXPECT_EQ(l2.name, "level2");
  EXPECT_THAT(l2.enter, UnorderedElementsAre(Pair("gpu_util", 0.95),
                                             Pair("queue_length", 50.0)));
  EXPECT_THAT(l2.disable,
              ElementsAre("personalization", "ab_test", "feature_stats"));

  const LevelSpec& l3 = config->levels[2];
  EXPECT_EQ(l3.name, "level3");
  EXPECT_THAT(l3.enter, UnorderedElementsAre(Pair("queue_length", 100.0),
                                             Pair("avg_latency_ms", 3000.0)));
  EXPECT_THAT(l3.disable, ElementsAre(std::string(kAllNonCritical)));

  // Everything not in the file keeps the struct's defaults.
  const DegradationConfig defaults;
  EXPECT_EQ(config->recover_ratio, defaults.recover_ratio);
  EXPECT_EQ(config->hold, defaults.hold);
  EXPECT_EQ(config->enter_after, defaults.enter_after);
  EXPECT_EQ(config->cooldown, defaults.cooldown);
  EXPECT_TRUE(config->critical.empty());
}

TEST(ParseDegradationConfigTest, EveryExtensionKeyIsRead) {
  constexpr absl::string_view kJson = R"json({
    "degradation": {
      "name": "inference",
      "recover_ratio": 0.83,
      "hold": "1m30s",
      "enter_after": "500ms",
      "cooldown": "2h",
      "critical": ["ranking", "auth"],
      "level1": {
        "trigger": {"gpu_util": 0.9, "queue_length": 20},
        "recover": {"gpu_util": 0.75},
        "disable": ["debug_log"],
        "hold": "250us",
        "enter_after": "2s"
      },
      "level2": {
        "trigger": {"gpu_util": 0.97},
        "disable": ["all_non_critical"],
        "hold": "0s"
      }
    }
  })json";
  absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(kJson);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "inference");
  EXPECT_DOUBLE_EQ(config->recover_ratio, 0.83);
  EXPECT_EQ(config->hold, absl::Seconds(90));
  EXPECT_EQ(config->enter_after, absl::Milliseconds(500));
  EXPECT_EQ(config->cooldown, absl::Hours(2));
  EXPECT_THAT(config->critical, ElementsAre("ranking", "auth"));
  ASSERT_EQ(config->levels.size(), 2u);

  const LevelSpec& l1 = config->levels[0];
  EXPECT_THAT(l1.enter, UnorderedElementsAre(Pair("gpu_util", 0.9),
                                             Pair("queue_length", 20.0)));
  EXPECT_THAT(l1.recover, UnorderedElementsAre(Pair("gpu_util", 0.75)));
  EXPECT_THAT(l1.disable, ElementsAre("debug_log"));
  EXPECT_EQ(l1.hold, absl::Microseconds(250));
  EXPECT_EQ(l1.enter_after, absl::Seconds(2));

  const LevelSpec& l2 = config->levels[1];
  EXPECT_EQ(l2.name, "level2");
  EXPECT_TRUE(l2.recover.empty());
  EXPECT_EQ(l2.hold, absl::ZeroDuration());  // set, and zero
  EXPECT_FALSE(l2.enter_after.has_value());  // not set: the global applies
}

TEST(ParseDegradationConfigTest, KeyOrderDoesNotMatter) {
  constexpr absl::string_view kShuffled = R"json({"degradation": {
    "level3": {"disable": ["all_non_critical"], "trigger": {"avg_latency_ms": 3000, "queue_length": 100}},
    "level1": {"disable": ["semantic_cache", "debug_log", "light_metrics"], "trigger": {"queue_length": 20, "gpu_util": 0.85}},
    "level2": {"disable": ["personalization", "ab_test", "feature_stats"], "trigger": {"queue_length": 50, "gpu_util": 0.95}}
  }})json";
  absl::StatusOr<DegradationConfig> a = ParseDegradationConfig(kArticleJson);
  absl::StatusOr<DegradationConfig> b = ParseDegradationConfig(kShuffled);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->levels.size(), b->levels.size());
  for (std::size_t i = 0; i < a->levels.size(); ++i) {
    EXPECT_EQ(a->levels[i].name, b->levels[i].name);
    EXPECT_EQ(a->levels[i].enter, b->levels[i].enter);
    // Within a list, order is the author's: it is a list, not a set.
    EXPECT_EQ(a->levels[i].disable, b->levels[i].disable);
  }
}

TEST(ParseDegradationConfigTest, IntegersAndFloatsAreBothNumbers) {
  for (absl::string_view n : {"20", "20.0", "2e1", "2.0E+1"}) {
    const std::string json = absl::StrCat(
        R"({"degradation": {"level1": {"trigger": {"queue_length": )", n,
        "}}}}");
    absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(json);
    ASSERT_TRUE(config.ok()) << n << ": " << config.status();
    EXPECT_EQ(config->levels[0].enter.at("queue_length"), 20.0) << n;
    EXPECT_TRUE(config->levels[0].disable.empty()) << "disable is optional";
  }
}

TEST(ParseDegradationConfigTest, DurationsTakeAbslSyntaxWithAUnit) {
  const std::vector<std::pair<absl::string_view, absl::Duration>> cases = {
      {"60s", absl::Seconds(60)},    {"500ms", absl::Milliseconds(500)},
      {"1m30s", absl::Seconds(90)},  {"250us", absl::Microseconds(250)},
      {"2h", absl::Hours(2)},        {"1.5s", absl::Milliseconds(1500)},
      {"0s", absl::ZeroDuration()},  {"10ns", absl::Nanoseconds(10)},
      {"2h45m", absl::Minutes(165)},
  };
  for (const auto& [text, want] : cases) {
    const std::string json =
        absl::StrCat(R"({"degradation": {"hold": ")", text,
                     R"(", "level1": {"trigger": {"q": 1}}}})");
    absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(json);
    ASSERT_TRUE(config.ok()) << text << ": " << config.status();
    EXPECT_EQ(config->hold, want) << text;
  }
}

TEST(ParseDegradationConfigTest, AcceptsExactlyMaxLevels) {
  std::string json = R"({"degradation": {)";
  for (int n = 1; n <= kMaxLevels; ++n) {
    absl::StrAppend(&json, n > 1 ? ", " : "", "\"level", n,
                    "\": {\"trigger\": {\"queue_length\": ", n * 10, "}}");
  }
  json += "}}";
  absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(json);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->levels.size(), static_cast<std::size_t>(kMaxLevels));
  EXPECT_EQ(config->levels.back().name, absl::StrCat("level", kMaxLevels));
  EXPECT_EQ(config->levels.back().enter.at("queue_length"), kMaxLevels * 10);
}

// A file of the source tree. CMake compiles tests by absolute path, so the
// tree is found from __FILE__ wherever ctest runs; a hand build from the
// repository root gets a relative __FILE__, which works from there too.
std::string SourcePath(absl::string_view relative) {
  const absl::string_view self = __FILE__;  // .../tests/config_test.cpp
  const std::size_t tests = self.rfind("tests/");
  if (tests == absl::string_view::npos) return std::string(relative);
  return absl::StrCat(self.substr(0, tests), relative);
}

TEST(ParseDegradationConfigTest, ExampleFileParses) {
  const std::string path =
      SourcePath("examples/config/inference_degradation.json");
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->levels.size(), 3u);
  EXPECT_FALSE(config->critical.empty());
  EXPECT_FALSE(config->levels[0].recover.empty());
  EXPECT_EQ(config->hold, absl::Seconds(60));
}

// ---- Parsing: the table of invalid configs --------------------------------

struct InvalidCase {
  std::string name;  // the test's name suffix
  std::string json;
  std::string path;                    // the JSON path the message must name
  std::vector<std::string> fragments;  // the value, the rule / cause
};

std::ostream& operator<<(std::ostream& os, const InvalidCase& c) {
  return os << c.name;
}

std::vector<InvalidCase> InvalidCases() {
  return {
      // Document shape.
      {"TopLevelArray",
       "[1, 2]",
       "(top level)",
       {"[...] (2 elements)", "must be an object", "got an array"}},
      {"TopLevelString",
       R"("degradation")",
       "(top level)",
       {"\"degradation\"", "must be an object"}},
      {"MissingDegradation",
       R"({})",
       "degradation",
       {"(missing)", "needs a \"degradation\" key"}},
      {"UnknownTopLevelKey",
       absl::StrCat(R"({"degradaton": 1, "degradation": {)", kLevel1, "}}"),
       "degradaton",
       {"= 1", "unknown key", "allowed: degradation"}},
      {"UnknownTopLevelKeyWithADot",
       absl::StrCat(R"({"a.b": true, "degradation": {)", kLevel1, "}}"),
       "[\"a.b\"]",
       {"true", "unknown key"}},
      {"DegradationNotAnObject",
       R"({"degradation": []})",
       "degradation",
       {"[]", "must be an object", "got an array"}},
      {"NoLevels",
       R"({"degradation": {"name": "svc"}})",
       "degradation",
       {"needs at least one level", "level1 to level8"}},
      {"UnknownDegradationKey",
       Levels(absl::StrCat(R"("hold_for": "1s", )", kLevel1)),
       "degradation.hold_for",
       {"\"1s\"", "unknown key", "cooldown"}},
      {"UnknownLevelKey",
       Levels(
           R"("level1": {"triger": {"gpu_util": 0.85}, "trigger": {"gpu_util": 0.85}})"),
       "degradation.level1.triger",
       {"unknown key", "trigger, recover"}},
      {"LevelNotAnObject",
       Levels(R"("level1": 5)"),
       "degradation.level1",
       {"= 5", "must be an object", "got a number"}},
      // Level keys.
      {"LevelGap",
       Levels(absl::StrCat(kLevel1,
                           R"(, "level3": {"trigger": {"gpu_util": 0.95}})")),
       "degradation.level2",
       {"(missing)", "contiguously", "level3 is present"}},
      {"LevelZero",
       Levels(R"("level0": {"trigger": {"gpu_util": 0.5}})"),
       "degradation.level0",
       {"start at 1"}},
      {"LevelNine",
       Levels(absl::StrCat(kLevel1, R"(, "level9": {"trigger": {"q": 1}})")),
       "degradation.level9",
       {"at most 8 levels"}},
      {"LevelHundred",
       Levels(R"("level100": {"trigger": {"q": 1}})"),
       "degradation.level100",
       {"at most 8 levels"}},
      {"LevelNotANumber",
       Levels(R"("levelX": {"trigger": {"q": 1}})"),
       "degradation.levelX",
       {"not a level key", "level1 to level8"}},
      {"LevelLeadingZero",
       Levels(R"("level01": {"trigger": {"q": 1}})"),
       "degradation.level01",
       {"leading zeros"}},
      {"DuplicateLevelKey",
       Levels(absl::StrCat(kLevel1, ", ", kLevel1)),
       "degradation.level1",
       {"duplicate key"}},
      // Triggers.
      {"MissingTrigger",
       Levels(R"("level1": {"disable": ["debug_log"]})"),
       "degradation.level1.trigger",
       {"(missing)", "needs a trigger"}},
      {"EmptyTrigger",
       Levels(R"("level1": {"trigger": {}})"),
       "degradation.level1.trigger",
       {"{}", "at least one trigger signal"}},
      {"TriggerNotAnObject",
       Levels(R"("level1": {"trigger": [0.85]})"),
       "degradation.level1.trigger",
       {"must be an object", "got an array"}},
      {"ThresholdIsAString",
       Levels(R"("level1": {"trigger": {"gpu_util": "0.85"}})"),
       "degradation.level1.trigger.gpu_util",
       {"\"0.85\"", "must be a number", "got a string"}},
      {"ThresholdIsABoolean",
       Levels(R"("level1": {"trigger": {"gpu_util": true}})"),
       "degradation.level1.trigger.gpu_util",
       {"true", "must be a number", "got a boolean"}},
      {"ThresholdIsNull",
       Levels(R"("level1": {"trigger": {"gpu_util": null}})"),
       "degradation.level1.trigger.gpu_util",
       {"null", "must be a number"}},
      {"NegativeThreshold",
       Levels(R"("level1": {"trigger": {"gpu_util": -0.5}})"),
       "degradation.level1.trigger.gpu_util",
       {"-0.5", "finite and > 0"}},
      {"ZeroThreshold",
       Levels(R"("level1": {"trigger": {"gpu_util": 0}})"),
       "degradation.level1.trigger.gpu_util",
       {"= 0", "could never be left"}},
      {"HugeNumberOverflows",
       Levels(R"("level1": {"trigger": {"gpu_util": 1e400}})"),
       "at byte",
       {"malformed JSON", "1e400", "overflow"}},
      {"EmptySignalName",
       Levels(R"("level1": {"trigger": {"": 1}})"),
       "degradation.level1.trigger[\"\"]",
       {"signal names must not be empty"}},
      {"DuplicateSignal",
       Levels(R"("level1": {"trigger": {"gpu_util": 0.8, "gpu_util": 0.9}})"),
       "degradation.level1.trigger.gpu_util",
       {"duplicate key"}},
      {"ThresholdsFallWithTheLevel",
       Levels(absl::StrCat(kLevel1,
                           R"(, "level2": {"trigger": {"gpu_util": 0.8}})")),
       "degradation.level2.trigger.gpu_util",
       {"= 0.8", "must rise with the level", "enters at 0.85"}},
      {"ThresholdsEqualAcrossLevels",
       Levels(absl::StrCat(kLevel1,
                           R"(, "level2": {"trigger": {"gpu_util": 0.85}})")),
       "degradation.level2.trigger.gpu_util",
       {"must rise with the level"}},
      // Recovery.
      {"RecoverAboveEnter",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.85}, "recover": {"gpu_util": 0.9}})"),
       "degradation.level1.recover.gpu_util",
       {"= 0.9", "must not be above the enter threshold (0.85)"}},
      {"RecoverForAnUnknownSignal",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.85}, "recover": {"queue_length": 5}})"),
       "degradation.level1.recover.queue_length",
       {"= 5", "does not use"}},
      {"RecoverNotANumber",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.85}, "recover": {"gpu_util": [0.7]}})"),
       "degradation.level1.recover.gpu_util",
       {"must be a number"}},
      {"RecoverRatioZero",
       Levels(absl::StrCat(R"("recover_ratio": 0, )", kLevel1)),
       "degradation.recover_ratio",
       {"= 0", "(0, 1]"}},
      {"RecoverRatioAboveOne",
       Levels(absl::StrCat(R"("recover_ratio": 1.5, )", kLevel1)),
       "degradation.recover_ratio",
       {"= 1.5", "(0, 1]"}},
      {"RecoverRatioIsAString",
       Levels(absl::StrCat(R"("recover_ratio": "0.8", )", kLevel1)),
       "degradation.recover_ratio",
       {"\"0.8\"", "must be a number"}},
      // Durations.
      {"DurationWithoutUnit",
       Levels(absl::StrCat(R"("hold": "60", )", kLevel1)),
       "degradation.hold",
       {"\"60\"", "needs a unit"}},
      {"DurationZeroWithoutUnit",
       Levels(absl::StrCat(R"("cooldown": "0", )", kLevel1)),
       "degradation.cooldown",
       {"\"0\"", "needs a unit"}},
      {"DurationAsNumber",
       Levels(absl::StrCat(R"("hold": 60, )", kLevel1)),
       "degradation.hold",
       {"= 60", "must be a duration string", "got a number"}},
      {"DurationNegative",
       Levels(absl::StrCat(R"("enter_after": "-5s", )", kLevel1)),
       "degradation.enter_after",
       {"\"-5s\"", "must not be negative"}},
      {"DurationInfinite",
       Levels(absl::StrCat(R"("hold": "inf", )", kLevel1)),
       "degradation.hold",
       {"\"inf\"", "must be a finite duration"}},
      {"DurationGarbage",
       Levels(absl::StrCat(R"("hold": "soon", )", kLevel1)),
       "degradation.hold",
       {"\"soon\"", "not a valid duration", "1m30s"}},
      {"DurationUnknownUnit",
       Levels(absl::StrCat(R"("hold": "5d", )", kLevel1)),
       "degradation.hold",
       {"\"5d\"", "not a valid duration"}},
      {"LevelHoldInvalid",
       Levels(absl::StrCat(
           kLevel1,
           R"(, "level2": {"trigger": {"gpu_util": 0.9}, "hold": "1x"})")),
       "degradation.level2.hold",
       {"\"1x\"", "not a valid duration"}},
      {"LevelEnterAfterNegative",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.9}, "enter_after": "-1ms"})"),
       "degradation.level1.enter_after",
       {"\"-1ms\"", "must not be negative"}},
      // Feature lists and names.
      {"DisableNotAnArray",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.9}, "disable": "debug_log"})"),
       "degradation.level1.disable",
       {"\"debug_log\"", "must be an array of feature names", "got a string"}},
      {"DisableEntryNotAString",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.9}, "disable": ["a", 3]})"),
       "degradation.level1.disable[1]",
       {"= 3", "must be a string"}},
      {"DisableEntryEmpty",
       Levels(R"("level1": {"trigger": {"gpu_util": 0.9}, "disable": [""]})"),
       "degradation.level1.disable[0]",
       {"\"\"", "must not be empty"}},
      {"DisableDuplicate",
       Levels(
           R"("level1": {"trigger": {"gpu_util": 0.9}, "disable": ["debug_log", "ab_test", "debug_log"]})"),
       "degradation.level1.disable[2]",
       {"\"debug_log\"", "duplicate feature"}},
      {"CriticalDuplicate",
       Levels(absl::StrCat(R"("critical": ["ranking", "ranking"], )", kLevel1)),
       "degradation.critical[1]",
       {"\"ranking\"", "duplicate feature"}},
      {"CriticalAllNonCritical",
       Levels(absl::StrCat(R"("critical": ["all_non_critical"], )", kLevel1)),
       "degradation.critical[0]",
       {"\"all_non_critical\"", "must name a feature"}},
      {"CriticalNotAnArray",
       Levels(absl::StrCat(R"("critical": {"ranking": true}, )", kLevel1)),
       "degradation.critical",
       {"must be an array", "got an object"}},
      {"NameEmpty",
       Levels(absl::StrCat(R"("name": "", )", kLevel1)),
       "degradation.name",
       {"\"\"", "must not be empty"}},
      {"NameNotAString",
       Levels(absl::StrCat(R"("name": 7, )", kLevel1)),
       "degradation.name",
       {"= 7", "must be a string"}},
      // Malformed JSON: the "path" is the byte position.
      {"TruncatedJson",
       R"({"degradation": {"level1": {"trigger": )",
       "at byte 40",
       {"malformed JSON", "unexpected end of input"}},
      {"TrailingGarbage",
       absl::StrCat(Levels(kLevel1), " x"),
       "at byte",
       {"malformed JSON", "expected end of input"}},
      {"TrailingComma",
       Levels(R"("level1": {"trigger": {"gpu_util": 0.9,}})"),
       "at byte",
       {"malformed JSON", "syntax error"}},
      {"SingleQuotes", "{'degradation': {}}", "at byte 2", {"malformed JSON"}},
      {"Comment",
       absl::StrCat("// levels\n", Levels(kLevel1)),
       "at byte 1",
       {"malformed JSON"}},
      {"InvalidUtf8InAString",
       Levels("\"level1\": {\"trigger\": {\"gpu\xff\": 1}}"),
       "at byte",
       {"malformed JSON", "invalid string"}},
      {"NestedTooDeeply",
       absl::StrCat(std::string(100, '['), std::string(100, ']')),
       "[0][0][0]",
       {"nested more than 32 levels"}},
  };
}

class InvalidConfigTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidConfigTest, IsRejectedWithSourcePathValueAndRule) {
  const InvalidCase& c = GetParam();
  absl::StatusOr<DegradationConfig> config =
      ParseDegradationConfig(c.json, "svc.json");
  ASSERT_FALSE(config.ok()) << c.json;
  const absl::Status& s = config.status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::StartsWith("svc.json: "))
      << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(c.path)) << s;
  for (const std::string& f : c.fragments) {
    EXPECT_THAT(std::string(s.message()), HasSubstr(f)) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, InvalidConfigTest,
                         ::testing::ValuesIn(InvalidCases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& info) {
                           return info.param.name;
                         });

// ---- Parsing: hostile input -------------------------------------------------

TEST(ParseDegradationConfigTest, ANulByteIsRejectedWhereverItIs) {
  // Regression: nlohmann stops at a NUL, so garbage after one was accepted.
  const std::string valid =
      R"({"degradation": {"level1": {"trigger": {"q": 1}}}})";
  std::string trailing = valid + std::string(1, '\0') + "garbage {{{";
  absl::StatusOr<DegradationConfig> r =
      ParseDegradationConfig(trailing, "svc.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("NUL"));
  EXPECT_THAT(r.status().message(),
              ::testing::HasSubstr(std::to_string(valid.size())));
}

TEST(ParseDegradationConfigTest, EmptyInputIsRejected) {
  for (absl::string_view text : {"", " ", "\n\t \r\n"}) {
    absl::StatusOr<DegradationConfig> config =
        ParseDegradationConfig(text, "cc:/svc");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()),
                HasSubstr("cc:/svc: config is empty"));
  }
}

TEST(ParseDegradationConfigTest, OversizedInputIsRefusedBeforeParsing) {
  // Valid JSON, padded one byte past the limit: refused on size alone.
  std::string text(kArticleJson);
  text.append(kMaxConfigBytes + 1 - text.size(), ' ');
  absl::StatusOr<DegradationConfig> config =
      ParseDegradationConfig(text, "big");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("big: config is 1048577 bytes"));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("1 MiB"));

  text.pop_back();  // exactly at the limit: accepted
  EXPECT_TRUE(ParseDegradationConfig(text).ok());
}

TEST(ParseDegradationConfigTest, EveryPrefixOfAValidConfigReturnsAStatus) {
  const std::string full(kArticleJson);
  for (std::size_t n = 0; n <= full.size(); ++n) {
    absl::StatusOr<DegradationConfig> config =
        ParseDegradationConfig(absl::string_view(full).substr(0, n));
    if (n == full.size()) {
      EXPECT_TRUE(config.ok()) << config.status();
    } else {
      // Every proper prefix ends before the final '}', so none is valid.
      ASSERT_FALSE(config.ok()) << "prefix of " << n << " bytes";
      EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument)
          << config.status();
    }
  }
}

TEST(ParseDegradationConfigTest, RandomBytesAndMutationsNeverCrash) {
  std::mt19937 rng(20260101);  // deterministic
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 300; ++i) {
    std::string garbage(static_cast<std::size_t>(i % 64 + 1), '\0');
    for (char& c : garbage) c = static_cast<char>(byte(rng));
    absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(garbage);
    EXPECT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // One byte of the article changed to a JSON-ish character: many results
  // are still valid JSON of the wrong shape, some are even valid configs.
  const std::string full(kArticleJson);
  constexpr absl::string_view kChars = "{}[]\",:0-.e9 \\ntfa\xff";
  std::uniform_int_distribution<std::size_t> pos(0, full.size() - 1);
  std::uniform_int_distribution<std::size_t> pick(0, kChars.size() - 1);
  for (int i = 0; i < 2000; ++i) {
    std::string mutated = full;
    mutated[pos(rng)] = kChars[pick(rng)];
    absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(mutated);
    if (!config.ok()) {
      EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument)
          << config.status();
    }
  }
}

TEST(ParseDegradationConfigTest, LongValuesAreShortenedInMessages) {
  const std::string json =
      Levels(absl::StrCat(R"("level1": {"trigger": {"gpu_util": ")",
                          std::string(5000, 'x'), R"("}})"));
  absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(json);
  ASSERT_FALSE(config.ok());
  EXPECT_LT(config.status().message().size(), 300u) << config.status();
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("xxx..."));
}

// ---- Loading files ----------------------------------------------------------

TEST(LoadDegradationConfigFileTest, LoadsAFile) {
  TempDir dir;
  const std::string path = dir.Path("degrade.json");
  WriteInPlace(path, kArticleJson);
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->levels.size(), 3u);
}

TEST(LoadDegradationConfigFileTest, MissingFileIsNotFoundNamingThePath) {
  TempDir dir;
  const std::string path = dir.Path("nope.json");
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("No such file"));
}

TEST(LoadDegradationConfigFileTest, ErrorsInTheContentNameTheFile) {
  TempDir dir;
  const std::string path = dir.Path("bad.json");
  WriteInPlace(path, Levels(R"("level1": {"trigger": {"gpu_util": -1}})"));
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              ::testing::StartsWith(absl::StrCat(path, ": ")));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("degradation.level1.trigger.gpu_util = -1"));
}

TEST(LoadDegradationConfigFileTest, DirectoryIsNotARegularFile) {
  TempDir dir;
  const std::string path = dir.Path("conf.d");
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("not a regular file"));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(path));
}

TEST(LoadDegradationConfigFileTest, OversizedFileIsRefused) {
  TempDir dir;
  const std::string path = dir.Path("huge.json");
  std::string text(kArticleJson);
  text.append(kMaxConfigBytes + 1 - text.size(), ' ');
  WriteInPlace(path, text);
  absl::StatusOr<DegradationConfig> config = LoadDegradationConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("larger than 1048576 bytes"));
}

// ---- The wording of file errors ---------------------------------------------

// Every file error names the config file as such (the same reader serves
// feature and hot-list files, which say so instead).
TEST(LoadDegradationConfigFileTest, FileErrorsSayConfigFile) {
  TempDir dir;
  const std::string missing = dir.Path("nope.json");
  EXPECT_THAT(
      std::string(LoadDegradationConfigFile(missing).status().message()),
      HasSubstr(absl::StrCat("cannot open config file '", missing, "'")));

  const std::string directory = dir.Path("conf.d");
  ASSERT_EQ(::mkdir(directory.c_str(), 0700), 0);
  EXPECT_THAT(
      std::string(LoadDegradationConfigFile(directory).status().message()),
      HasSubstr(
          absl::StrCat("config file '", directory, "' is not a regular file")));

  const std::string huge = dir.Path("huge.json");
  WriteInPlace(huge, std::string(kMaxConfigBytes + 1, ' '));
  EXPECT_THAT(std::string(LoadDegradationConfigFile(huge).status().message()),
              HasSubstr(absl::StrCat(huge, ": config file is larger than ",
                                     kMaxConfigBytes, " bytes")));

  const std::string empty = dir.Path("empty.json");
  WriteInPlace(empty, " \n");
  EXPECT_THAT(std::string(LoadDegradationConfigFile(empty).status().message()),
              HasSubstr(absl::StrCat(empty, ": config file is empty")));

  const std::string nul = dir.Path("nul.json");
  WriteInPlace(nul, std::string("{\0}", 3));
  EXPECT_THAT(std::string(LoadDegradationConfigFile(nul).status().message()),
              HasSubstr(absl::StrCat(nul,
                                     ": config file contains a NUL byte at "
                                     "offset 1")));
}

// Found by review: a 1 MB token or key made a 1 MB message (and, through a
// watcher, a 1 MB log line).
TEST(ParseDegradationConfigTest, HugeTokensAndKeysMakeShortMessages) {
  const std::string number(1000000, '7');
  const std::string cases[] = {
      R"({"degradation": {"level1": {"trigger": {"q": )" + number + "}}}}",
      R"({"degradation": {"level1": {"trigger": {")" + std::string(500000, 'k') +
          R"(": -1}}}})",
      R"({"degradation": {")" + std::string(500000, 'x') + R"(": 1}})",
      R"({"degradation": {"level1": {"trigger": {"q": ")" +
          std::string(1000000, 'y'),
  };
  for (const std::string& text : cases) {
    const absl::StatusOr<DegradationConfig> c =
        ParseDegradationConfig(text, "big.json");
    ASSERT_FALSE(c.ok());
    EXPECT_LT(c.status().message().size(), 2000u)
        << c.status().message().substr(0, 300);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
