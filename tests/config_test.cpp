// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// config.hpp: the JSON format (the article's example, every extension, a
// table of invalid configs and what their messages must name), hostile input,
// file loading, reload-keeps-last-good, and the file watcher under in-place
// writes, rename-over, ConfigMap symlink swaps and deletion. No test sleeps:
// the watcher is driven with PollOnce(), and the one threaded test asserts
// invariants only.

#include "degrade/config.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
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
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// The seed article's config, verbatim.
constexpr absl::string_view kArticleJson = R"json({
  "degradation": {
    "level1": {"trigger": {"gpu_util": 0.85, "queue_length": 20}, "disable": ["semantic_cache", "debug_log", "light_metrics"]},
    "level2": {"trigger": {"gpu_util": 0.95, "queue_length": 50}, "disable": ["personalization", "ab_test", "feature_stats"]},
    "level3": {"trigger": {"queue_length": 100, "avg_latency_ms": 3000}, "disable": ["all_non_critical"]}
  }
})json";

// A small valid config whose level-1 gpu_util threshold is `gpu`: lets the
// watcher tests tell contents apart through the manager's config().
std::string OneLevelJson(double gpu) {
  return absl::StrCat(R"({"degradation": {"level1": {"trigger": {"gpu_util": )",
                      gpu, R"(}, "disable": ["debug_log"]}}})");
}

double Level1Gpu(const DegradationManager& manager) {
  std::shared_ptr<const DegradationConfig> config = manager.config();
  if (config == nullptr || config->levels.empty()) return -1;
  const auto it = config->levels[0].enter.find("gpu_util");
  return it == config->levels[0].enter.end() ? -1 : it->second;
}

// A fresh directory under the test temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string templ = ::testing::TempDir();
    if (templ.empty() || templ.back() != '/') templ += '/';
    templ += "degrade_config_test_XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const char* dir = ::mkdtemp(buf.data());
    EXPECT_NE(dir, nullptr) << "mkdtemp(" << templ << ") failed";
    path_ = dir == nullptr ? templ : std::string(dir);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  std::string Path(absl::string_view name) const {
    return absl::StrCat(path_, "/", name);
  }

 private:
  std::string path_;
};

// Truncates and rewrites the file in place (same inode).
void WriteInPlace(const std::string& path, absl::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  ASSERT_TRUE(out) << "writing " << path;
}

// Writes a temp file next to `path` and renames it over `path`: readers see
// the old file or the new one, never a mix (a new inode each time).
void WriteByRename(const std::string& path, absl::string_view content) {
  const std::string tmp = path + ".tmp";
  WriteInPlace(tmp, content);
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << "rename to " << path;
}

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

// Wraps level definitions in the two outer objects.
std::string Levels(absl::string_view body) {
  return absl::StrCat(R"({"degradation": {)", body, "}}");
}
constexpr absl::string_view kLevel1 =
    R"("level1": {"trigger": {"gpu_util": 0.85}, "disable": ["debug_log"]})";

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
       {"-0.5", "finite and >= 0"}},
      {"HugeNumberOverflows",
       Levels(R"("level1": {"trigger": {"gpu_util": 1e400}})"),
       "at byte",
       {"malformed JSON", "1e400", "overflow"}},
      {"EmptySignalName",
       Levels(R"("level1": {"trigger": {"": 1}})"),
       "degradation.level1.trigger.",
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

// ---- ReloadJson: the last good config keeps serving ------------------------

class ReloadJsonTest : public ::testing::Test {
 protected:
  DegradationManager::Options Options() {
    DegradationManager::Options o;
    o.name = "inference";
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view line) { log_.emplace_back(line); };
    return o;
  }

  FakeClock clock_;
  std::vector<std::string> log_;
};

TEST_F(ReloadJsonTest, GoodConfigApplies) {
  DegradationManager manager(Options());
  ASSERT_TRUE(ReloadJson(manager, kArticleJson, "svc.json").ok());
  EXPECT_EQ(manager.num_levels(), 3);
  EXPECT_EQ(manager.reloads(), 1u);
  EXPECT_EQ(manager.rejected_reloads(), 0u);
  ASSERT_NE(manager.config(), nullptr);
  EXPECT_EQ(manager.config()->levels[1].enter.at("gpu_util"), 0.95);
}

TEST_F(ReloadJsonTest, BadConfigKeepsTheOldOneServing) {
  DegradationManager manager(Options());
  ASSERT_TRUE(ReloadJson(manager, kArticleJson, "svc.json").ok());
  ASSERT_TRUE(manager.Observe("gpu_util", 0.9).ok());  // level 1
  const int level = manager.level();
  ASSERT_EQ(level, 1);
  ASSERT_FALSE(manager.Enabled("debug_log"));
  ASSERT_TRUE(manager.Enabled("personalization"));
  const std::shared_ptr<const DegradationConfig> before = manager.config();
  const std::size_t log_lines = log_.size();

  absl::Status s = ReloadJson(
      manager, Levels(R"("level1": {"trigger": {"gpu_util": "high"}})"),
      "svc.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("svc.json: degradation.level1.trigger.gpu_util"));

  EXPECT_EQ(manager.rejected_reloads(), 1u);
  EXPECT_EQ(manager.reloads(), 1u);
  EXPECT_EQ(manager.config(), before);
  EXPECT_EQ(manager.level(), level);
  EXPECT_EQ(manager.num_levels(), 3);
  EXPECT_FALSE(manager.Enabled("debug_log"));
  EXPECT_TRUE(manager.Enabled("personalization"));
  EXPECT_GT(log_.size(), log_lines) << "a rejected reload is logged";

  // Semantically invalid (valid JSON, bad thresholds) is refused the same way.
  s = ReloadJson(manager,
                 Levels(absl::StrCat(
                     kLevel1, R"(, "level2": {"trigger": {"gpu_util": 0.5}})")),
                 "svc.json");
  EXPECT_THAT(std::string(s.message()), HasSubstr("must rise with the level"));
  EXPECT_EQ(manager.rejected_reloads(), 2u);
  EXPECT_EQ(manager.config(), before);

  // And a good one still applies afterwards.
  EXPECT_TRUE(ReloadJson(manager, OneLevelJson(0.7)).ok());
  EXPECT_EQ(manager.num_levels(), 1);
  EXPECT_EQ(manager.reloads(), 2u);
}

// ---- ConfigFileWatcher
// -------------------------------------------------------

class ConfigFileWatcherTest : public ::testing::Test {
 protected:
  ConfigFileWatcherTest() : manager_(Options()) {}

  DegradationManager::Options Options() {
    DegradationManager::Options o;
    o.name = "watched";
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    return o;
  }

  // How many log lines mention `fragment` (e.g. an event name).
  int LogLinesWith(absl::string_view fragment) {
    std::lock_guard<std::mutex> lock(log_mu_);
    int n = 0;
    for (const std::string& line : log_) {
      if (absl::StrContains(line, fragment)) ++n;
    }
    return n;
  }

  FakeClock clock_;
  std::mutex log_mu_;  // the watcher thread logs too
  std::vector<std::string> log_;
  DegradationManager manager_;
  TempDir dir_;
};

TEST_F(ConfigFileWatcherTest, AppliesTheFileOnTheFirstPoll) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, kArticleJson);
  ConfigFileWatcher watcher(path, &manager_);
  EXPECT_TRUE(watcher.last_status().ok());  // before any poll
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(manager_.num_levels(), 3);
  EXPECT_EQ(watcher.reloads(), 1u);
  EXPECT_EQ(watcher.errors(), 0u);
  EXPECT_EQ(watcher.path(), path);
}

TEST_F(ConfigFileWatcherTest, UnchangedContentDoesNotReload) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(watcher.PollOnce().ok());
  // Rewriting the same bytes (a touch, a no-op deploy) changes nothing either.
  WriteInPlace(path, OneLevelJson(0.8));
  WriteByRename(path, OneLevelJson(0.8));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 1u);
  EXPECT_EQ(manager_.reloads(), 1u);
  EXPECT_EQ(manager_.config(), applied);
}

TEST_F(ConfigFileWatcherTest, InPlaceWriteReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  WriteInPlace(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.6);
  EXPECT_EQ(watcher.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, RenameOverReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteByRename(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  WriteByRename(path, OneLevelJson(0.9));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.9);
  WriteByRename(path, kArticleJson);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(manager_.num_levels(), 3);
  EXPECT_EQ(watcher.reloads(), 3u);
}

// Kubernetes mounts a ConfigMap as
//   dir/config.json -> ..data/config.json
//   dir/..data      -> ..2026_01_01_00_00_00.1      (swapped atomically)
//   dir/..2026_01_01_00_00_00.1/config.json
// and updates it by writing a new timestamped directory, pointing a temporary
// symlink at it, renaming that over ..data and deleting the old directory.
TEST_F(ConfigFileWatcherTest, ConfigMapSymlinkSwapReloads) {
  const auto make_version = [&](absl::string_view stamp,
                                const std::string& content) {
    const std::string version = dir_.Path(stamp);
    ASSERT_EQ(::mkdir(version.c_str(), 0700), 0);
    WriteInPlace(version + "/config.json", content);
  };
  const auto point_data_at = [&](absl::string_view stamp) {
    const std::string tmp = dir_.Path("..data_tmp");
    ASSERT_EQ(::symlink(std::string(stamp).c_str(), tmp.c_str()), 0);
    ASSERT_EQ(std::rename(tmp.c_str(), dir_.Path("..data").c_str()), 0);
  };
  make_version("..2026_01_01_00_00_00.1", OneLevelJson(0.8));
  point_data_at("..2026_01_01_00_00_00.1");
  const std::string path = dir_.Path("config.json");
  ASSERT_EQ(::symlink("..data/config.json", path.c_str()), 0);

  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  make_version("..2026_01_01_00_05_00.2", OneLevelJson(0.7));
  point_data_at("..2026_01_01_00_05_00.2");
  std::filesystem::remove_all(dir_.Path("..2026_01_01_00_00_00.1"));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.7);
  EXPECT_EQ(watcher.reloads(), 2u);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, DeletedFileIsReportedOnceAndTheOldConfigKept) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();

  ASSERT_EQ(std::remove(path.c_str()), 0);
  for (int i = 0; i < 3; ++i) {
    absl::Status s = watcher.PollOnce();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_EQ(watcher.last_status(), s);
  }
  EXPECT_EQ(watcher.errors(), 1u) << "reported once, not every poll";
  EXPECT_EQ(manager_.rejected_reloads(), 1u);
  EXPECT_EQ(LogLinesWith("config_rejected"), 1);
  EXPECT_EQ(manager_.config(), applied);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  // A different error (the path is now a directory) is news: reported.
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  EXPECT_EQ(watcher.PollOnce().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(watcher.errors(), 2u);
  EXPECT_EQ(manager_.rejected_reloads(), 2u);
  ASSERT_EQ(::rmdir(path.c_str()), 0);
}

TEST_F(ConfigFileWatcherTest, RestoredFileReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_FALSE(watcher.PollOnce().ok());

  // Back with new content: applied.
  WriteByRename(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_TRUE(watcher.last_status().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.6);
  EXPECT_EQ(watcher.reloads(), 2u);

  // Gone again: reported again, since the previous poll succeeded.
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_EQ(watcher.PollOnce().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(watcher.errors(), 2u);

  // Back with the content already applied: OK, nothing to reload.
  WriteByRename(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 2u);
  EXPECT_EQ(manager_.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, InvalidContentIsRejectedOnceAndTheOldConfigKept) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());

  WriteByRename(
      path,
      Levels(R"("level1": {"trigger": {"gpu_util": 0.9}, "hold": "60"})"));
  for (int i = 0; i < 3; ++i) {
    absl::Status s = watcher.PollOnce();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat(path, ": degradation.level1.hold")));
  }
  EXPECT_EQ(watcher.errors(), 1u);
  EXPECT_EQ(manager_.rejected_reloads(), 1u);
  EXPECT_EQ(LogLinesWith("config_rejected"), 1);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  WriteByRename(path, OneLevelJson(0.85));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.85);
  EXPECT_EQ(watcher.reloads(), 2u);
}

// A config centre agent that truncates and rewrites the file in place can be
// caught with the file empty, or half written: each such read is refused and
// the applied config keeps serving; the whole file is applied once written.
TEST_F(ConfigFileWatcherTest, EmptiedOrHalfWrittenFileKeepsTheOldConfig) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();

  WriteInPlace(path, "");
  absl::Status s = watcher.PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path + ": config is empty"));
  EXPECT_EQ(manager_.config(), applied);

  const std::string next = OneLevelJson(0.9);
  WriteInPlace(path, next.substr(0, next.size() / 2));
  s = watcher.PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("malformed JSON at byte"));
  EXPECT_EQ(manager_.config(), applied);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);
  EXPECT_EQ(manager_.rejected_reloads(), 2u);

  WriteInPlace(path, next);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.9);
  EXPECT_EQ(watcher.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, StopIsPromptAndIdempotent) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  watcher.Stop();                 // not running: no-op
  watcher.Start(absl::Hours(1));  // polls at once, then waits an hour...
  watcher.Start(absl::Hours(2));  // restart with a new period
  watcher.Stop();                 // ...unless stopped: this must not hang
  watcher.Stop();
  watcher.Start(absl::Hours(1));  // the destructor stops this one
}

// The background thread polls every millisecond while this thread replaces
// the file and others read the manager. Asserts invariants only; the final
// content is checked after a last, synchronous PollOnce().
TEST_F(ConfigFileWatcherTest, BackgroundPollingUnderConcurrentUpdates) {
  const std::string path = dir_.Path("degrade.json");
  WriteByRename(path, OneLevelJson(0.5));
  ConfigFileWatcher watcher(path, &manager_);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!done.load()) {
        const double gpu = Level1Gpu(manager_);
        // Never a half-applied config: either none yet or one that was written.
        EXPECT_TRUE(gpu == -1 || (gpu >= 0.5 && gpu <= 0.56)) << gpu;
        const int level = manager_.level();
        EXPECT_GE(level, 0);
        EXPECT_LE(level, 1);
        (void)manager_.Enabled("debug_log");
        (void)watcher.last_status();
        (void)watcher.reloads();
        std::this_thread::yield();
      }
    });
  }
  // A second poller racing the background thread: polls are serialised.
  threads.emplace_back([&] {
    while (!done.load()) {
      (void)watcher.PollOnce();
      std::this_thread::yield();
    }
  });
  watcher.Start(absl::Milliseconds(1));
  for (int i = 1; i <= 6; ++i) {
    WriteByRename(path, OneLevelJson(0.5 + 0.01 * i));
    (void)manager_.Observe("gpu_util", 0.1 * i);  // no ASSERT: threads run
  }
  done.store(true);
  for (std::thread& t : threads) t.join();
  watcher.Stop();

  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.56);
  EXPECT_EQ(watcher.errors(), 0u) << watcher.last_status();
  EXPECT_EQ(manager_.rejected_reloads(), 0u);
  EXPECT_GE(watcher.reloads(), 1u);
  EXPECT_LE(watcher.reloads(), 7u);
  EXPECT_EQ(manager_.reloads(), watcher.reloads());
}

}  // namespace
}  // namespace degrade
