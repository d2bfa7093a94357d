// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// segment_defaults.hpp: SegmentDefaults loading; a table of bad files that
// must each be named (file, segment, cause) and must leave the previous set
// serving; the bounds at their exact limits; the dimension pinned by
// expected_dimension or the first load; Set's rules; age on a FakeClock;
// lookups counted; a seeded stream of mangled files; the
// degrade_segment_defaults_* series and their rows in docs/metrics.md; and
// readers looking segments up while a writer reloads (TSan).

#include "degrade/segment_defaults.hpp"

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/default_features.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::BadFile;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `{"dimension": dim, "segments": {id: [value x dim], ...}}`.
std::string SegmentsJson(std::size_t dim,
                         const std::vector<std::pair<std::string, float>>& s) {
  std::string out = absl::StrCat("{\"dimension\": ", dim, ", \"segments\": {");
  for (std::size_t k = 0; k < s.size(); ++k) {
    absl::StrAppend(&out, k == 0 ? "" : ", ", "\"", s[k].first, "\": [");
    for (std::size_t i = 0; i < dim; ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ", ", s[k].second);
    }
    out += "]";
  }
  out += "}}";
  return out;
}

// The good set every bad-file test starts from: dimension 4.
const std::string kGood =
    SegmentsJson(4, {{"US|ios|3", 0.5f}, {"DE|android|0", 0.25f}});

class SegmentDefaultsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.Path(name);
    ::degrade_tests::WriteInPlace(path, text);
    return path;
  }
  SegmentDefaultsOptions Options(std::size_t expected_dimension = 4) {
    SegmentDefaultsOptions o;
    o.expected_dimension = expected_dimension;
    o.clock = &clock_;
    o.metrics = NoTelemetry();
    return o;
  }

  FakeClock clock_;
  ::degrade_tests::TempDir dir_{"segment_defaults_test"};
};

TEST_F(SegmentDefaultsTest, NothingLoadedFindsNothingAndLoadRefuses) {
  SegmentDefaults s(Options());
  EXPECT_FALSE(s.loaded());
  EXPECT_EQ(s.Find("US|ios|3"), nullptr);
  EXPECT_EQ(s.dimension(), 0u);
  EXPECT_EQ(s.segments(), 0u);
  const std::string bad = Write("bad_load.json", "{");
  absl::StatusOr<std::unique_ptr<SegmentDefaults>> l =
      SegmentDefaults::Load(bad, Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr(bad));
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr("segment defaults: "));
}

TEST_F(SegmentDefaultsTest, LoadsAFileAndFindsEachSegmentWithoutCopying) {
  const std::string path =
      Write("valid.json",
            R"({"dimension": 3, "generated_at": "x", "segments": {
            "US|ios|3": [0.25, -1, 2e-3], "DE|android|0": [1, 2, 3]}})");
  absl::StatusOr<std::unique_ptr<SegmentDefaults>> s =
      SegmentDefaults::Load(path, Options(3));
  ASSERT_TRUE(s.ok()) << s.status();
  const SegmentDefaults::Snapshot us = (*s)->Find("US|ios|3");
  ASSERT_NE(us, nullptr);
  EXPECT_THAT(*us, ElementsAre(0.25f, -1.0f, 2e-3f));
  EXPECT_THAT(*(*s)->Find("DE|android|0"), ElementsAre(1.0f, 2.0f, 3.0f));
  // The same vector every time: a pointer into the set, not a copy.
  EXPECT_EQ((*s)->Find("US|ios|3").get(), us.get());
  // Unknown (and near-miss) segments go to the global tier.
  EXPECT_EQ((*s)->Find("US|ios|4"), nullptr);
  EXPECT_EQ((*s)->Find("US|ios|3 "), nullptr);
  EXPECT_EQ((*s)->Find(""), nullptr);
  EXPECT_EQ((*s)->dimension(), 3u);
  EXPECT_EQ((*s)->segments(), 2u);
  EXPECT_EQ((*s)->updates(), 1u);
  EXPECT_TRUE((*s)->loaded());
}

TEST_F(SegmentDefaultsTest, EveryBadFileIsNamedAndThePreviousSetKeepsServing) {
  const std::vector<BadFile> cases = {
      {"missing.json", "", "cannot open segment file", true},
      {"empty.json", "", "segment file is empty"},
      {"blank.json", " \n\t", "segment file is empty"},
      {"malformed.json", R"({"dimension": 4, "segments": {"a": [1, 2,)",
       "malformed JSON"},
      {"nul_byte.json",
       std::string("{\"dimension\": 4,\0 \"segments\": {}}", 33), "NUL byte"},
      {"toplevel_array.json", "[1, 2, 3, 4]", "must be an object"},
      {"missing_dimension.json", R"({"segments": {"a": [1, 2, 3, 4]}})",
       "needs a \"dimension\" key"},
      {"dimension_string.json",
       R"({"dimension": "4", "segments": {"a": [1, 2, 3, 4]}})",
       "must be a positive integer"},
      {"negative_dimension.json",
       R"({"dimension": -4, "segments": {"a": [1, 2, 3, 4]}})",
       "must be in 1.."},
      {"wrong_dimension.json", SegmentsJson(5, {{"a", 1}}),
       "the model expects dimension 4"},
      {"missing_segments.json", R"({"dimension": 4})",
       "needs a \"segments\" key"},
      {"segments_array.json", R"({"dimension": 4, "segments": [[1, 2, 3, 4]]})",
       "segments = [...] (1 element): must be an object from segment id"},
      {"no_segments.json", R"({"dimension": 4, "segments": {}})",
       "segments = {}: has no segments"},
      {"vector_string.json", R"({"dimension": 4, "segments": {"a": "1,2"}})",
       "segments.a = \"1,2\": must be an array of numbers"},
      {"mixed_dimension.json",
       R"({"dimension": 4, "segments": {"US|ios|3": [1, 2, 3, 4],
                                        "DE|android|0": [1, 2, 3]}})",
       "segments[\"DE|android|0\"] = (3 values): has 3 values but "
       "\"dimension\" is 4"},
      {"empty_vector.json", R"({"dimension": 4, "segments": {"a": []}})",
       "segments.a = []: is empty"},
      {"not_number.json",
       R"({"dimension": 4, "segments": {"US|ios|3": [1, "2", 3, 4]}})",
       "segments[\"US|ios|3\"][1] = \"2\": must be a number (got a string)"},
      {"null_value.json",
       R"({"dimension": 4, "segments": {"a": [1, 2, null, 4]}})",
       "segments.a[2] = null: must be a number"},
      {"double_overflow.json",
       R"({"dimension": 4, "segments": {"a": [1, 1e400, 3, 4]}})",
       "number overflow parsing '1e400'"},
      {"float_overflow.json",
       R"({"dimension": 4, "segments": {"FR|web|9": [1, 2, 1e300, 4]}})",
       "segments[\"FR|web|9\"][2] = 1e+300: is not a finite number within "
       "float range"},
      {"nan_token.json",
       R"({"dimension": 4, "segments": {"a": [NaN, 2, 3, 4]}})",
       "malformed JSON"},
      {"empty_id.json", R"({"dimension": 4, "segments": {"": [1, 2, 3, 4]}})",
       "segments[\"\"] = [...] (4 elements): has an empty segment id"},
      {"duplicate_id.json",
       R"({"dimension": 4, "segments": {"US|ios|3": [1, 2, 3, 4],
                                        "US|ios|3": [5, 6, 7, 8]}})",
       "segments[\"US|ios|3\"]: duplicate key"},
      {"too_many.json",
       SegmentsJson(4, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}),
       "segments = {...} (4 keys): has 4 segments; at most 3 are accepted "
       "(max_segments)"},
      {"long_id.json", SegmentsJson(4, {{std::string(17, 'x'), 1}}),
       "has a segment id of 17 bytes; at most 16 are accepted "
       "(max_segment_id_bytes)"},
      {"huge_id.json", SegmentsJson(4, {{std::string(100'000, 'y'), 1}}),
       "has a segment id of 100000 bytes"},
      {"oversized.json", kGood + std::string(1 << 20, ' '),
       "segment file is larger than 1048576 bytes"},
  };
  SegmentDefaultsOptions o = Options();
  o.max_file_bytes = 1 << 20;
  o.max_segments = 3;
  o.max_segment_id_bytes = 16;
  SegmentDefaults s(o);
  ASSERT_TRUE(s.Reload(Write("good.json", kGood)).ok());
  const SegmentDefaults::Snapshot us = s.Find("US|ios|3");
  const SegmentDefaults::Snapshot de = s.Find("DE|android|0");
  ASSERT_NE(us, nullptr);
  ASSERT_NE(de, nullptr);
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        c.missing ? dir_.Path("does_not_exist.json") : Write(c.name, c.content);
    const absl::Status st = s.Reload(path);
    ASSERT_FALSE(st.ok());
    const std::string message(st.message());
    EXPECT_THAT(message, HasSubstr(path));
    EXPECT_THAT(message, HasSubstr(c.fault));
    EXPECT_TRUE(absl::StartsWith(message, "segment defaults: ")) << message;
    // A long id is shown abbreviated, never whole.
    EXPECT_LT(message.size(), 1000u);
    EXPECT_EQ(s.last_status(), st);
    // The very same vectors keep serving.
    EXPECT_EQ(s.Find("US|ios|3"), us);
    EXPECT_EQ(s.Find("DE|android|0"), de);
    EXPECT_EQ(s.segments(), 2u);
    EXPECT_THAT(*s.Find("US|ios|3"), Each(0.5f));
  }
  EXPECT_EQ(s.failures(), cases.size());
  EXPECT_EQ(s.updates(), 1u);
  EXPECT_FALSE(s.stats().last_ok);
  EXPECT_EQ(s.Reload(dir_.Path("does_not_exist.json")).code(),
            absl::StatusCode::kNotFound);
  const absl::Status not_regular = s.Reload(dir_.Path(""));
  EXPECT_TRUE(absl::IsFailedPrecondition(not_regular)) << not_regular;
  EXPECT_THAT(std::string(not_regular.message()),
              HasSubstr("' is not a regular file"));
}

// Each bound accepts its exact limit and refuses one more.
TEST_F(SegmentDefaultsTest, BoundsHoldAtTheirExactLimits) {
  const std::string three = SegmentsJson(2, {{"a", 1}, {"b", 1}, {"c", 1}});
  SegmentDefaultsOptions o = Options(2);
  o.max_segments = 3;
  o.max_segment_id_bytes = 8;
  o.max_file_bytes = three.size();
  SegmentDefaults s(o);
  ASSERT_TRUE(s.Reload(Write("three.json", three)).ok());
  EXPECT_EQ(s.segments(), 3u);
  const absl::Status over_bytes =
      s.Reload(Write("three_plus.json", three + " "));
  EXPECT_THAT(std::string(over_bytes.message()),
              HasSubstr(absl::StrCat("larger than ", three.size(), " bytes")));

  o.max_file_bytes = kMaxSegmentDefaultsBytes;
  SegmentDefaults t(o);
  EXPECT_TRUE(
      t.Reload(Write("id8.json", SegmentsJson(2, {{"12345678", 1}}))).ok());
  EXPECT_THAT(std::string(t.Reload(Write("id9.json",
                                         SegmentsJson(2, {{"123456789", 1}})))
                              .message()),
              HasSubstr("segment id of 9 bytes; at most 8"));
  EXPECT_THAT(
      std::string(
          t.Reload(
               Write("four.json",
                     SegmentsJson(2, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}})))
              .message()),
      HasSubstr("has 4 segments; at most 3"));
  EXPECT_THAT(*t.Find("12345678"), ElementsAre(1.0f, 1.0f));

  // Set() keeps the same bounds.
  EXPECT_TRUE(t.Set({{"a", {1, 2}}, {"b", {1, 2}}, {"12345678", {1, 2}}}).ok());
  EXPECT_THAT(
      std::string(
          t.Set({{"a", {1, 2}}, {"b", {1, 2}}, {"c", {1, 2}}, {"d", {1, 2}}})
              .message()),
      HasSubstr("has 4 segments; at most 3"));
  EXPECT_THAT(std::string(t.Set({{"123456789", {1, 2}}}).message()),
              HasSubstr("segment id of 9 bytes"));
  EXPECT_EQ(t.segments(), 3u);

  // The largest dimension is accepted as a setting; one more is not.
  SegmentDefaultsOptions d = Options(kMaxFeatureDimension);
  EXPECT_TRUE(ValidateSegmentDefaultsOptions(d).ok());
  d.expected_dimension = kMaxFeatureDimension + 1;
  EXPECT_FALSE(ValidateSegmentDefaultsOptions(d).ok());
}

TEST_F(SegmentDefaultsTest, InvalidOptionsAreRefusedByName) {
  const struct {
    void (*mutate)(SegmentDefaultsOptions&);
    const char* want;
  } cases[] = {
      {[](SegmentDefaultsOptions& o) { o.max_file_bytes = 0; },
       "max_file_bytes = 0: must be in 1.."},
      {[](SegmentDefaultsOptions& o) { o.max_segments = 0; },
       "max_segments = 0: must be in 1..16777216"},
      {[](SegmentDefaultsOptions& o) {
         o.max_segments = kMaxSegmentsLimit + 1;
       },
       "max_segments = 16777217"},
      {[](SegmentDefaultsOptions& o) { o.max_segment_id_bytes = 0; },
       "max_segment_id_bytes = 0: must be in 1..65536"},
      {[](SegmentDefaultsOptions& o) {
         o.max_segment_id_bytes = kMaxSegmentIdBytesLimit + 1;
       },
       "max_segment_id_bytes = 65537"},
  };
  const std::string good = Write("good.json", kGood);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    SegmentDefaultsOptions o = Options();
    o.name = "seg";
    c.mutate(o);
    const absl::Status v = ValidateSegmentDefaultsOptions(o);
    EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(v.message()), HasSubstr("segment defaults 'seg'"));
    EXPECT_THAT(std::string(v.message()), HasSubstr(c.want));
    EXPECT_EQ(SegmentDefaults::Create(o).status(), v);
    EXPECT_EQ(SegmentDefaults::Load(good, o).status(), v);
    EXPECT_EQ(ParseSegmentDefaults(kGood, "t", o).status(), v);
    // Constructed anyway: it refuses every load and serves nothing.
    SegmentDefaults s(o);
    EXPECT_EQ(s.Reload(good), v);
    EXPECT_EQ(s.Set({{"a", {1, 2, 3, 4}}}), v);
    EXPECT_FALSE(s.loaded());
    EXPECT_EQ(s.failures(), 2u);
  }
}

// The model consumes one dimension: a set of another, from a file or from
// Set(), never replaces the one serving.
TEST_F(SegmentDefaultsTest, ADimensionOtherThanTheExpectedOneIsRefused) {
  SegmentDefaults s(Options(4));
  ASSERT_TRUE(s.Reload(Write("good.json", kGood)).ok());
  const SegmentDefaults::Snapshot serving = s.Find("US|ios|3");
  for (const std::size_t dim : {1u, 3u, 5u, 64u}) {
    SCOPED_TRACE(dim);
    const std::string file = Write(absl::StrCat("dim", dim, ".json"),
                                   SegmentsJson(dim, {{"US|ios|3", 1}}));
    const absl::Status r = s.Reload(file);
    EXPECT_EQ(r.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.message()),
                HasSubstr("the model expects dimension 4"));
    const absl::Status set =
        s.Set({{"US|ios|3", std::vector<float>(dim, 1.0f)}}, "push");
    EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(set.message()),
                HasSubstr(absl::StrCat("segment defaults: push: segments[\"US|"
                                       "ios|3\"] = (",
                                       dim, " values): has dimension ", dim,
                                       " but expected_dimension is 4")));
    EXPECT_EQ(s.Find("US|ios|3"), serving);
  }
  EXPECT_EQ(s.dimension(), 4u);
  EXPECT_EQ(s.failures(), 8u);
}

TEST_F(SegmentDefaultsTest, WithoutExpectedDimensionTheFirstLoadFixesIt) {
  SegmentDefaults s(Options(0));
  ASSERT_TRUE(s.Reload(Write("good.json", kGood)).ok());
  const std::string three =
      Write("three.json", SegmentsJson(3, {{"US|ios|3", 1}}));
  const absl::Status r = s.Reload(three);
  EXPECT_EQ(r.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.message()),
              HasSubstr(absl::StrCat(three,
                                     ": dimension 3 does not match the "
                                     "dimension 4 being served")));
  EXPECT_FALSE(s.Set({{"a", {1, 2, 3}}}).ok());
  EXPECT_EQ(s.dimension(), 4u);
  EXPECT_THAT(*s.Find("US|ios|3"), Each(0.5f));
  // The paired global vector says the same dimension.
  DefaultFeatures global(4);
  ASSERT_TRUE(global.Set({1, 2, 3, 4}).ok());
  EXPECT_EQ(s.dimension(), global.dimension());
}

TEST_F(SegmentDefaultsTest, SetAppliesTheFileRulesAndNamesTheSegment) {
  SegmentDefaults s(Options(0));
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    SegmentVectors set;
    const char* want;
  } cases[] = {
      {{}, "segments = (0 segments): has no segments"},
      {{{"", {1, 2}}}, "segments[\"\"] = (2 values): has an empty segment id"},
      {{{"a", {}}}, "segments.a = []: is empty"},
      {{{"a", {1, inf}}}, "segments.a[1] = inf: is not finite"},
      {{{"a", {1, std::nanf("")}}}, "segments.a[1] = nan: is not finite"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    const absl::Status st = s.Set(c.set, "push");
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()),
                HasSubstr(absl::StrCat("segment defaults: push: ", c.want)));
  }
  // Two dimensions in one set: the message names both segments.
  const absl::Status mixed = s.Set({{"a", {1, 2}}, {"b", {1, 2, 3}}}, "push");
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mixed.message()), HasSubstr("has dimension"));
  EXPECT_THAT(std::string(mixed.message()), HasSubstr("segments.a"));
  EXPECT_THAT(std::string(mixed.message()), HasSubstr("segments.b"));
  EXPECT_FALSE(s.loaded());
  EXPECT_EQ(s.failures(), 6u);

  ASSERT_TRUE(s.Set({{"a", {1, 2}}, {"b", {3, 4}}}).ok());
  EXPECT_THAT(*s.Find("b"), ElementsAre(3.0f, 4.0f));
  EXPECT_EQ(s.dimension(), 2u);
  EXPECT_TRUE(s.last_status().ok());
}

TEST_F(SegmentDefaultsTest, AReloadSwapsTheWholeSetAndOldVectorsStayValid) {
  SegmentDefaults s(Options());
  ASSERT_TRUE(s.Reload(Write("one.json", kGood)).ok());
  const SegmentDefaults::Snapshot old_de = s.Find("DE|android|0");
  ASSERT_TRUE(
      s.Reload(Write("two.json", SegmentsJson(4, {{"US|ios|3", 2}, {"FR", 3}})))
          .ok());
  // The old vector is intact though its segment is gone from the new set.
  EXPECT_THAT(*old_de, Each(0.25f));
  EXPECT_EQ(s.Find("DE|android|0"), nullptr);
  EXPECT_THAT(*s.Find("US|ios|3"), Each(2.0f));
  EXPECT_THAT(*s.Find("FR"), Each(3.0f));
  EXPECT_EQ(s.segments(), 2u);
}

TEST_F(SegmentDefaultsTest, AgeRunsOnTheClockAndNeverGoesNegative) {
  SegmentDefaults s(Options());
  EXPECT_EQ(s.age(), absl::InfiniteDuration());
  EXPECT_EQ(s.stats().age, absl::InfiniteDuration());
  const std::string good = Write("good.json", kGood);
  ASSERT_TRUE(s.Reload(good).ok());
  EXPECT_EQ(s.age(), absl::ZeroDuration());
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(s.age(), absl::Minutes(5));
  // A refused reload keeps the old set, and its age keeps growing.
  EXPECT_FALSE(s.Reload(Write("bad.json", "[")).ok());
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(s.stats().age, absl::Minutes(6));
  // A clock stepped back an hour behind the install reads as zero, then
  // counts from the install again.
  clock_.Set(clock_.Now() - absl::Minutes(66));
  EXPECT_EQ(s.age(), absl::ZeroDuration());
  clock_.Advance(absl::Hours(1) + absl::Seconds(3));
  EXPECT_EQ(s.age(), absl::Seconds(3));
  // An accepted one restarts it.
  ASSERT_TRUE(s.Reload(good).ok());
  EXPECT_EQ(s.age(), absl::ZeroDuration());
}

TEST_F(SegmentDefaultsTest, StatsCountLoadsAndLookups) {
  SegmentDefaults s(Options());
  EXPECT_EQ(s.Find("US|ios|3"), nullptr);  // nothing loaded: unknown
  ASSERT_TRUE(s.Reload(Write("good.json", kGood)).ok());
  EXPECT_FALSE(s.Reload(Write("bad.json", "{}")).ok());
  EXPECT_NE(s.Find("US|ios|3"), nullptr);
  EXPECT_NE(s.Find("DE|android|0"), nullptr);
  EXPECT_EQ(s.Find("JP|ios|1"), nullptr);
  clock_.Advance(absl::Seconds(90));
  const SegmentDefaultsStats st = s.stats();
  EXPECT_EQ(st.age, absl::Seconds(90));
  EXPECT_EQ(st.dimension, 4u);
  EXPECT_EQ(st.segments, 2u);
  EXPECT_EQ(st.accepted, 1u);
  EXPECT_EQ(st.refused, 1u);
  EXPECT_FALSE(st.last_ok);
  EXPECT_EQ(st.lookups_hit, 2u);
  EXPECT_EQ(st.lookups_unknown, 2u);
}

// A seeded stream of mangled files (bytes flipped, dropped, inserted, the
// text cut short): each is either a valid set, exactly what the parser
// makes of the same text, or refused with a message naming the file, the
// previous set serving on.
TEST_F(SegmentDefaultsTest, MangledFilesNeverReplaceTheSetWithGarbage) {
  const std::string base = SegmentsJson(
      4, {{"US|ios|3", 0.5f}, {"DE|android|0", -1.25f}, {"JP|web|7", 3e38f}});
  const std::string tokens[] = {"{",    "}",       "[",     "]",   ",",
                                ":",    "\"",      "1e400", "-",   "NaN",
                                "null", "\\u0000", "0",     "\"\""};
  std::mt19937 rng(20261206);
  SegmentDefaultsOptions o = Options();
  o.max_segment_id_bytes = 12;
  SegmentDefaults s(o);
  const std::string path = dir_.Path("mangled.json");
  int accepted = 0;
  int refused = 0;
  for (int round = 0; round < 2000; ++round) {
    SCOPED_TRACE(round);
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          text.erase(at, 1 + rng() % 8);
          break;
        case 2:
          text.insert(at, tokens[rng() % (sizeof(tokens) / sizeof(*tokens))]);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    ASSERT_TRUE(s.Set({{"seed", {9, 9, 9, 9}}}).ok());
    const SegmentDefaults::Snapshot before = s.Find("seed");
    ::degrade_tests::WriteInPlace(path, text);
    const absl::StatusOr<SegmentVectors> parsed =
        ParseSegmentDefaults(text, path, o);
    const absl::Status st = s.Reload(path);
    ASSERT_EQ(st.ok(), parsed.ok()) << st << " / " << parsed.status();
    if (st.ok()) {
      ++accepted;
      ASSERT_EQ(s.segments(), parsed->size());
      for (const auto& [id, values] : *parsed) {
        ASSERT_FALSE(id.empty());
        ASSERT_LE(id.size(), 12u);
        const SegmentDefaults::Snapshot v = s.Find(id);
        ASSERT_NE(v, nullptr);
        ASSERT_EQ(*v, values);
        ASSERT_EQ(v->size(), 4u);
        for (const float f : *v) ASSERT_TRUE(std::isfinite(f));
      }
    } else {
      ++refused;
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
      EXPECT_THAT(std::string(st.message()), HasSubstr(path));
      EXPECT_EQ(s.Find("seed"), before);
      EXPECT_EQ(s.segments(), 1u);
    }
  }
  // The stream exercises both outcomes.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 1000);
}

TEST_F(SegmentDefaultsTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  MetricsRegistry registry;
  SegmentDefaultsOptions o = Options();
  o.name = "seg";
  o.metrics = &registry;
  auto s = std::make_unique<SegmentDefaults>(o);
  const std::string label = R"({segment_defaults="seg")";
  const auto value = [&](const std::string& text, const std::string& series) {
    for (std::istringstream in(text); !in.eof();) {
      std::string line;
      std::getline(in, line);
      if (absl::StartsWith(line, series + " ")) {
        const std::string v = line.substr(series.size() + 1);
        return v == "+Inf" ? std::numeric_limits<double>::infinity()
                           : std::stod(v);
      }
    }
    ADD_FAILURE() << "no " << series << " in\n" << text;
    return std::nan("");
  };
  std::string text = registry.RenderPrometheus();
  EXPECT_EQ(value(text, "degrade_segment_defaults_age_seconds" + label + "}"),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(value(text, "degrade_segment_defaults_segments" + label + "}"), 0);

  ASSERT_TRUE(s->Reload(Write("good.json", kGood)).ok());
  EXPECT_FALSE(s->Reload(Write("bad.json", "[")).ok());
  s->Find("US|ios|3");
  s->Find("nope");
  s->Find("nope");
  clock_.Advance(absl::Seconds(90));
  text = registry.RenderPrometheus();
  const std::pair<std::string, double> want[] = {
      {"degrade_segment_defaults_age_seconds" + label + "}", 90},
      {"degrade_segment_defaults_dimension" + label + "}", 4},
      {"degrade_segment_defaults_segments" + label + "}", 2},
      {"degrade_segment_defaults_reloads_total" + label +
           R"(,result="accepted"})",
       1},
      {"degrade_segment_defaults_reloads_total" + label +
           R"(,result="refused"})",
       1},
      {"degrade_segment_defaults_last_reload_ok" + label + "}", 0},
      {"degrade_segment_defaults_lookups_total" + label + R"(,result="hit"})",
       1},
      {"degrade_segment_defaults_lookups_total" + label +
           R"(,result="unknown"})",
       2},
  };
  for (const auto& [series, v] : want) {
    EXPECT_EQ(value(text, series), v) << series;
  }

  // docs/metrics.md lists exactly the series exported.
  std::set<std::string> exported;
  for (std::istringstream in(text); !in.eof();) {
    std::string line;
    std::getline(in, line);
    if (absl::StartsWith(line, "# TYPE degrade_segment_defaults_")) {
      const std::string rest(absl::StripPrefix(line, "# TYPE "));
      exported.insert(rest.substr(0, rest.find(' ')));
    }
  }
  std::string doc_path = __FILE__;
  doc_path = doc_path.substr(0, doc_path.rfind("/tests/")) + "/docs/metrics.md";
  std::ifstream doc(doc_path);
  ASSERT_TRUE(doc.good()) << doc_path;
  std::set<std::string> documented;
  for (std::string line; std::getline(doc, line);) {
    if (absl::StartsWith(line, "| `degrade_segment_defaults_")) {
      documented.insert(line.substr(3, line.find('`', 3) - 3));
    }
  }
  EXPECT_EQ(exported.size(), 6u);
  EXPECT_EQ(exported, documented);

  s.reset();
  EXPECT_FALSE(absl::StrContains(registry.RenderPrometheus(),
                                 "degrade_segment_defaults_"));
}

class SegmentViewSpy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& v) override {
    view = v.As<SegmentDefaultsStats>();
    name = v.name();  // the view is readable inside Attach
    return nullptr;
  }
  const SegmentDefaultsView* view = nullptr;
  std::string name;
};

TEST_F(SegmentDefaultsTest, OffersItsViewToItsTelemetryAndNotToNone) {
  SegmentViewSpy spy;
  SegmentDefaultsOptions o = Options();
  o.name = "seg";
  o.metrics = &spy;
  SegmentDefaults s(o);
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "seg");
  ASSERT_TRUE(s.Set({{"a", {1, 2, 3, 4}}}).ok());
  EXPECT_EQ(spy.view->stats().segments, 1u);

  SegmentViewSpy ignored;
  ScopedDefaultTelemetry scope(&ignored);
  SegmentDefaults none(Options());  // NoTelemetry()
  EXPECT_EQ(ignored.view, nullptr);
  o.metrics = nullptr;  // the process default
  SegmentDefaults by_default(o);
  EXPECT_NE(ignored.view, nullptr);
}

// Readers look segments up while a writer reloads a new version each
// round. Version v's file gives every segment the value v, holds "both" and
// "common_0".."common_31" in every version and "odd" or "even" by parity.
// A reader must never see a vector of mixed values, a segment of both
// versions missing, versions going back, or a parity segment holding a
// vector of the other parity's version.
TEST(SegmentDefaultsConcurrencyTest, ReadersNeverSeeAMixedSetWhileReloading) {
  constexpr std::size_t kDim = 64;
  constexpr int kVersions = 60;
  ::degrade_tests::TempDir dir("segment_defaults_concurrency");
  std::vector<std::string> files;
  for (int v = 1; v <= kVersions; ++v) {
    std::vector<std::pair<std::string, float>> segs = {
        {"both", static_cast<float>(v)},
        {v % 2 == 1 ? "odd" : "even", static_cast<float>(v)}};
    for (int c = 0; c < 32; ++c) {
      segs.emplace_back(absl::StrCat("common_", c), static_cast<float>(v));
    }
    files.push_back(dir.Path(absl::StrCat("v", v, ".json")));
    ::degrade_tests::WriteInPlace(files.back(), SegmentsJson(kDim, segs));
  }
  SegmentDefaultsOptions o;
  o.expected_dimension = kDim;
  o.metrics = NoTelemetry();
  SegmentDefaults s(o);
  ASSERT_TRUE(s.Reload(files[0]).ok());

  std::atomic<bool> done{false};
  std::atomic<int> faults{0};
  std::atomic<int64_t> reads{0};
  const auto version_of = [&](const SegmentDefaults::Snapshot& p) -> float {
    if (p == nullptr || p->size() != kDim) return -1;
    for (const float f : *p) {
      if (f != (*p)[0]) return -1;
    }
    return (*p)[0];
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      float last = 0;
      int i = t;
      while (!done.load(std::memory_order_acquire)) {
        const std::string common = absl::StrCat("common_", i++ % 32);
        for (const char* id : {"both", common.c_str()}) {
          const float v = version_of(s.Find(id));
          if (v < last) faults.fetch_add(1);  // missing, mixed or older
          last = v < 0 ? last : v;
        }
        for (const char* id : {"odd", "even"}) {
          const SegmentDefaults::Snapshot p = s.Find(id);
          if (p == nullptr) continue;  // the other parity is serving
          const float v = version_of(p);
          const bool odd = static_cast<int>(v) % 2 == 1;
          if (v < 1 || odd != (id[0] == 'o')) faults.fetch_add(1);
        }
        (void)s.stats();
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int v = 2; v <= kVersions; ++v) {
    ASSERT_TRUE(s.Reload(files[static_cast<std::size_t>(v - 1)]).ok());
  }
  // Readers keep going after the last swap, so each sees some rounds.
  while (reads.load(std::memory_order_relaxed) < 300) std::this_thread::yield();
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(faults.load(), 0);
  EXPECT_EQ(s.updates(), static_cast<uint64_t>(kVersions));
  EXPECT_EQ(s.stats().lookups_unknown + s.stats().lookups_hit,
            static_cast<uint64_t>(4 * reads.load()));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
