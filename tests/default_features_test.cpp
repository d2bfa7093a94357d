// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// default_features.hpp: DefaultFeatures loading, a table of bad files that
// must each be named and must leave the previous vector serving, readers
// racing reloads, the fallback feeding WithFallback, and the wording of file
// errors ("feature file", not "config file").

#include "degrade/default_features.hpp"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/with_fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/breakers.hpp"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::BadFile;
using ::degrade_tests::MakeBreaker;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using R = DegradeReason;

std::string WriteFile(const std::string& name, const std::string& content) {
  return ::degrade_tests::WriteTempFile("default_features_test_" + name,
                                        content);
}

std::string FeaturesJson(std::size_t dim, float value) {
  std::string s = absl::StrCat("{\"dimension\": ", dim, ", \"values\": [");
  for (std::size_t i = 0; i < dim; ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", value);
  }
  s += "]}";
  return s;
}

// ---- DefaultFeatures ----

class DefaultFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = WriteFile("good.json", FeaturesJson(4, 0.5f));
  }
  std::string good_;
};

TEST_F(DefaultFeaturesTest, GetBeforeAnyLoadRefusesRatherThanZeros) {
  DefaultFeatures f(4);
  absl::StatusOr<DefaultFeatures::Snapshot> s = f.Get();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.snapshot(), nullptr);
  EXPECT_EQ(f.dimension(), 0u);
}

TEST_F(DefaultFeaturesTest, LoadsAValidFile) {
  const std::string path = WriteFile(
      "valid.json",
      R"({"dimension": 3, "values": [0.25, -1, 2e-3], "generated_at": "x"})");
  absl::StatusOr<std::unique_ptr<DefaultFeatures>> f =
      DefaultFeatures::Load(path, 3);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<DefaultFeatures::Snapshot> s = (*f)->Get();
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(**s, ElementsAre(0.25f, -1.0f, 2e-3f));
  EXPECT_EQ((*f)->dimension(), 3u);
  EXPECT_EQ((*f)->reloads(), 1u);
}

TEST_F(DefaultFeaturesTest, LoadOfABadFileFailsWithItsName) {
  const std::string path = WriteFile("bad_load.json", "{");
  absl::StatusOr<std::unique_ptr<DefaultFeatures>> f =
      DefaultFeatures::Load(path);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(std::string(f.status().message()), HasSubstr(path));
}

TEST_F(DefaultFeaturesTest,
       EveryBadFileIsNamedAndThePreviousVectorKeepsServing) {
  const std::vector<BadFile> cases = {
      {"missing.json", "", "cannot open", true},
      {"empty.json", "", "file is empty"},
      {"blank.json", "  \n", "file is empty"},
      {"malformed.json", R"({"dimension": 4, "values": [1, 2,)",
       "malformed JSON"},
      {"toplevel_array.json", "[1, 2, 3, 4]", "must be an object"},
      {"values_string.json", R"({"dimension": 4, "values": "1,2,3,4"})",
       "must be an array of numbers"},
      {"dimension_string.json", R"({"dimension": "4", "values": [1, 2, 3, 4]})",
       "must be a positive integer"},
      {"double_overflow.json",
       R"({"dimension": 4, "values": [1, 1e400, 3, 4]})",
       "number overflow parsing '1e400'"},
      {"float_overflow.json", R"({"dimension": 4, "values": [1, 2, 1e300, 4]})",
       "values[2] = 1e+300: is not a finite number within float range"},
      {"wrong_dimension.json", FeaturesJson(5, 1.0f),
       "the model expects dimension 4"},
      {"length_mismatch.json", R"({"dimension": 4, "values": [1, 2, 3]})",
       "has 3 values but \"dimension\" is 4"},
      {"empty_values.json", R"({"dimension": 4, "values": []})", "is empty"},
      {"not_numbers.json", R"({"dimension": 4, "values": [1, "2", 3, 4]})",
       "values[1] = \"2\": must be a number (got a string)"},
      {"bool_value.json", R"({"dimension": 4, "values": [1, true, 3, 4]})",
       "values[1] = true: must be a number"},
      {"null_value.json", R"({"dimension": 4, "values": [1, 2, null, 4]})",
       "values[2] = null: must be a number"},
      {"missing_values.json", R"({"dimension": 4})", "needs a \"values\" key"},
      {"zero_dimension.json", R"({"dimension": 0, "values": []})",
       "must be in 1.."},
      {"negative_dimension.json",
       R"({"dimension": -4, "values": [1, 2, 3, 4]})", "must be in 1.."},
      {"duplicate_key.json",
       R"({"dimension": 4, "values": [1, 2, 3, 4], "values": [5, 6, 7, 8]})",
       "duplicate key"},
      {"nul_byte.json", std::string("{\"dimension\": 4,\0 \"values\": []}", 31),
       "NUL byte"},
      {"oversized.json", FeaturesJson(4, 0.5f) + std::string(200, ' '),
       "larger than 128 bytes"},
  };
  DefaultFeatures f(4, /*max_file_bytes=*/128);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot before = f.snapshot();
  ASSERT_NE(before, nullptr);
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        c.missing ? ::testing::TempDir() + "/fallback_test_does_not_exist.json"
                  : WriteFile(c.name, c.content);
    absl::Status s = f.Reload(path);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.fault));
    EXPECT_THAT(std::string(s.message()), HasSubstr("default features"));
    EXPECT_EQ(f.last_status(), s);
    // The very same vector keeps serving.
    EXPECT_EQ(f.snapshot(), before);
    absl::StatusOr<DefaultFeatures::Snapshot> got = f.Get();
    ASSERT_TRUE(got.ok());
    EXPECT_THAT(**got, ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  }
  EXPECT_EQ(f.errors(), cases.size());
  EXPECT_EQ(f.reloads(), 1u);
}

// Issue 13: FLT_MAX's shortest spelling, 3.4028235e+38 (what std::to_chars,
// Go and numpy write), is a double just above FLT_MAX that rounds to it; it
// was refused as "not within float range". Every value that rounds to a
// finite float is taken, exactly as a float parse would round it; the first
// one that rounds to infinity (the midpoint 2^128 - 2^103) is refused.
TEST(ParseDefaultFeaturesTest, ValuesThatRoundToAFiniteFloatAreTaken) {
  const absl::StatusOr<std::vector<float>> v = ParseDefaultFeatures(
      R"({"dimension": 8, "values": [3.4028235e+38, -3.4028235e+38,
          3.4028234663852886e38, 3.40282356779733e38, -0.0, 1e-46, 1e-45,
          4.9406564584124654e-324]})",
      "edges.json");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)[0], FLT_MAX);
  EXPECT_EQ((*v)[1], -FLT_MAX);
  EXPECT_EQ((*v)[2], FLT_MAX);
  EXPECT_EQ((*v)[3], FLT_MAX);  // just below the midpoint
  EXPECT_EQ((*v)[4], 0.0f);
  EXPECT_TRUE(std::signbit((*v)[4]));  // -0 stays -0
  EXPECT_EQ((*v)[5], 0.0f);            // below half the smallest denormal
  EXPECT_EQ((*v)[6], std::numeric_limits<float>::denorm_min());
  EXPECT_EQ((*v)[7], 0.0f);  // a double denormal
  for (const char* beyond : {"3.4028235677973366e38", "-3.4028235677973366e38",
                             "3.5e38", "1e39", "1.7976931348623157e308"}) {
    const absl::StatusOr<std::vector<float>> r = ParseDefaultFeatures(
        absl::StrCat(R"({"dimension": 1, "values": [)", beyond, "]}"),
        "beyond.json");
    ASSERT_FALSE(r.ok()) << beyond;
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr("is not a finite number within float range"))
        << beyond;
  }
}

TEST_F(DefaultFeaturesTest, MissingFileIsNotFound) {
  DefaultFeatures f;
  absl::Status s = f.Reload(::testing::TempDir() + "/fallback_test_nope.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
}

TEST_F(DefaultFeaturesTest, WithoutExpectedDimensionTheFirstLoadFixesIt) {
  DefaultFeatures f;
  ASSERT_TRUE(f.Reload(good_).ok());
  const std::string five = WriteFile("five.json", FeaturesJson(5, 1.0f));
  absl::Status s = f.Reload(five);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(five));
  EXPECT_THAT(std::string(s.message()), HasSubstr("dimension 5"));
  EXPECT_EQ(f.dimension(), 4u);
}

// The model consumes a fixed dimension: a vector of another one, from a file
// or from Set(), never replaces the one serving, and the fallback keeps
// handing out the serving vector.
TEST_F(DefaultFeaturesTest, WrongDimensionNeverReplacesTheServingVector) {
  DefaultFeatures f(4);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot serving = f.snapshot();

  for (const std::size_t dim : {1u, 3u, 5u, 64u}) {
    SCOPED_TRACE(dim);
    const std::string file =
        WriteFile(absl::StrCat("dim", dim, ".json"), FeaturesJson(dim, 1.0f));
    EXPECT_EQ(f.Reload(file).code(), absl::StatusCode::kInvalidArgument);
    const absl::Status set = f.Set(std::vector<float>(dim, 1.0f), "push");
    EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(set.message()),
                HasSubstr(absl::StrCat("dimension ", dim)));
    EXPECT_EQ(f.snapshot(), serving);
  }
  absl::StatusOr<std::vector<float>> fb = f.Fallback()();
  ASSERT_TRUE(fb.ok());
  EXPECT_EQ(*fb, std::vector<float>(4, 0.5f));
  EXPECT_EQ(f.errors(), 8u);
  EXPECT_EQ(f.reloads(), 1u);
}

TEST_F(DefaultFeaturesTest, ReloadSwapsAndOldSnapshotsStayValid) {
  DefaultFeatures f(4);
  ASSERT_TRUE(f.Reload(good_).ok());
  const DefaultFeatures::Snapshot old = f.snapshot();
  ASSERT_TRUE(f.Reload(WriteFile("two.json", FeaturesJson(4, 2.0f))).ok());
  EXPECT_THAT(*old, ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  EXPECT_THAT(*f.snapshot(), ElementsAre(2.0f, 2.0f, 2.0f, 2.0f));
}

TEST_F(DefaultFeaturesTest, SetRefusesEmptyAndNonFinite) {
  DefaultFeatures f(2);
  EXPECT_FALSE(f.Set({}).ok());
  EXPECT_FALSE(f.Set({1.0f, std::numeric_limits<float>::infinity()}).ok());
  EXPECT_FALSE(f.Set({1.0f, 2.0f, 3.0f}).ok());
  EXPECT_EQ(f.snapshot(), nullptr);
  EXPECT_TRUE(f.Set({1.0f, 2.0f}).ok());
  EXPECT_THAT(*f.snapshot(), ElementsAre(1.0f, 2.0f));
}

TEST_F(DefaultFeaturesTest, FallbackFeedsWithFallback) {
  FakeClock clock;
  auto cb = MakeBreaker<std::vector<float>>(&clock, "features");
  DefaultFeatures f(4);
  auto fail = []() -> absl::StatusOr<std::vector<float>> {
    return absl::UnavailableError("feature service down");
  };
  absl::StatusOr<StageResult<std::vector<float>>> before =
      WithFallback(*cb, "features", fail, f.Fallback());
  EXPECT_EQ(before.status().code(), absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE(f.Reload(good_).ok());
  absl::StatusOr<StageResult<std::vector<float>>> after =
      WithFallback(*cb, "features", fail, f.Fallback());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->is_default());
  EXPECT_THAT(after->value(), ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
  EXPECT_EQ(after->trace().ReasonFor("features"), R::kError);
}

TEST_F(DefaultFeaturesTest, ConcurrentReadersNeverSeeATornVector) {
  constexpr std::size_t kDim = 256;
  const std::string a = WriteFile("a.json", FeaturesJson(kDim, 1.0f));
  const std::string b = WriteFile("b.json", FeaturesJson(kDim, 2.0f));
  DefaultFeatures f(kDim);
  ASSERT_TRUE(f.Reload(a).ok());

  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        absl::StatusOr<DefaultFeatures::Snapshot> s = f.Get();
        if (!s.ok() || (*s)->size() != kDim) {
          torn.fetch_add(1);
          continue;
        }
        const float first = (**s)[0];
        bool same = first == 1.0f || first == 2.0f;
        for (float v : **s) same = same && v == first;
        if (!same) torn.fetch_add(1);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(f.Reload(i % 2 == 0 ? b : a).ok());
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(f.reloads(), 101u);
}

// ---- New names, and the wording of file errors ----

TEST_F(DefaultFeaturesTest, CountersHaveTheHotListsNamesAndTheOldOnes) {
  DefaultFeatures f(4);
  ASSERT_TRUE(f.Reload(good_).ok());
  EXPECT_FALSE(f.Set({1.0f}).ok());
  EXPECT_FALSE(f.Reload(WriteFile("bad_counters.json", "[")).ok());
  EXPECT_EQ(f.updates(), 1u);
  EXPECT_EQ(f.failures(), 2u);
  EXPECT_EQ(f.reloads(), f.updates());
  EXPECT_EQ(f.errors(), f.failures());
}

// The reader and the parser say what the file is: a feature file.
TEST_F(DefaultFeaturesTest, FileErrorsSayFeatureFile) {
  ::degrade_tests::TempDir dir("default_features_test");
  DefaultFeatures f(4, /*max_file_bytes=*/64);
  const struct {
    std::string path;
    std::string content;  // written unless empty and `missing`
    bool missing;
    std::string want;  // with the path substituted for %s
  } cases[] = {
      {dir.Path("missing.json"), "", true,
       "default features: cannot open feature file '%s'"},
      {dir.Path("blank.json"), " \t\n", false,
       "default features: %s: feature file is empty"},
      {dir.Path("nul.json"), std::string("{\0}", 3), false,
       "default features: %s: feature file contains a NUL byte at offset 1"},
      {dir.Path("huge.json"), std::string(65, ' '), false,
       "default features: %s: feature file is larger than 64 bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    if (!c.missing) ::degrade_tests::WriteInPlace(c.path, c.content);
    const absl::Status s = f.Reload(c.path);
    std::string want = c.want;
    want.replace(want.find("%s"), 2, c.path);
    EXPECT_THAT(std::string(s.message()), HasSubstr(want));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("config")));
  }
  const absl::Status dir_status = f.Reload(dir.Path(""));
  EXPECT_TRUE(absl::IsFailedPrecondition(dir_status)) << dir_status;
  EXPECT_THAT(std::string(dir_status.message()), HasSubstr("feature file '"));
  EXPECT_THAT(std::string(dir_status.message()),
              HasSubstr("' is not a regular file"));
}

TEST(ParseDefaultFeaturesTest, DocumentErrorsSayFeatureFile) {
  EXPECT_THAT(
      std::string(ParseDefaultFeatures("", "f.json").status().message()),
      HasSubstr("f.json: feature file is empty"));
  EXPECT_THAT(
      std::string(
          ParseDefaultFeatures(
              R"({"dimension": 1, "values": [1], "values": [2]})", "f.json")
              .status()
              .message()),
      HasSubstr("f.json: values: duplicate key"));
  absl::StatusOr<std::vector<float>> ok = ParseDefaultFeatures(
      R"({"dimension": 2, "values": [0.5, -1]})", "f.json");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(*ok, ElementsAre(0.5f, -1.0f));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
