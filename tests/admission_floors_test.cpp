// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Admission floors in the degradation config (driver (a) of issue 15): the
// JSON "admit" object of a level is read strictly, a floor must tighten as
// the level rises, floors accumulate like `disable`, and the manager
// publishes the floor of its current level as `admission_threshold()`,
// following escalation, staged recovery (one level at a time), overrides
// and reloads. The seed's config, which names no floors, admits everything
// at every level.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/request_class.hpp"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr absl::string_view kFloorsJson = R"({
  "degradation": {
    "hold": "10s",
    "level1": {"trigger": {"queue_delay_ms": 10},
               "admit": {"min": "SHEDDABLE_PLUS"}},
    "level2": {"trigger": {"queue_delay_ms": 20},
               "admit": {"min": "SHEDDABLE_PLUS", "cohorts_at_min": 64}},
    "level3": {"trigger": {"queue_delay_ms": 50}},
    "level4": {"trigger": {"queue_delay_ms": 100},
               "admit": {"min": "CRITICAL"}}
  }
})";

absl::Status ParseError(absl::string_view level_body) {
  return ParseDegradationConfig(absl::StrCat(
                                    R"({"degradation": {"level1": {"trigger": {"q": 1}, )",
                                    level_body, "}}}"))
      .status();
}

TEST(AdmissionFloorsTest, JsonFloorsAreReadAndAccumulate) {
  absl::StatusOr<DegradationConfig> c = ParseDegradationConfig(kFloorsJson);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->levels.size(), 4u);
  ASSERT_TRUE(c->levels[0].admit.has_value());
  EXPECT_EQ(c->levels[0].admit->min, Criticality::kSheddablePlus);
  EXPECT_EQ(c->levels[0].admit->cohorts_at_min, kNumCohorts);
  EXPECT_EQ(c->levels[0].admit->threshold(), 3 * kNumCohorts);
  EXPECT_EQ(c->levels[1].admit->threshold(), 2 * kNumCohorts + 64);
  EXPECT_FALSE(c->levels[2].admit.has_value());
  EXPECT_EQ(c->levels[3].admit->threshold(), 2 * kNumCohorts);
}

TEST(AdmissionFloorsTest, MalformedAdmitObjectsNameThePathAndRule) {
  struct Case {
    const char* body;
    const char* path;
    const char* rule;
  };
  const Case cases[] = {
      {R"("admit": "CRITICAL")", "admit", "must be an object"},
      {R"("admit": {})", "admit.min", "(missing)"},
      {R"("admit": {"min": "critical"})", "admit.min", "must be CRITICAL_PLUS"},
      {R"("admit": {"min": 1})", "admit.min", "must be a string"},
      {R"("admit": {"min": "CRITICAL", "cohorts_at_min": 129})",
       "admit.cohorts_at_min", "integer in [0, 128]"},
      {R"("admit": {"min": "CRITICAL", "cohorts_at_min": -1})",
       "admit.cohorts_at_min", "integer in [0, 128]"},
      {R"("admit": {"min": "CRITICAL", "cohorts_at_min": 1.5})",
       "admit.cohorts_at_min", "integer in [0, 128]"},
      {R"("admit": {"min": "CRITICAL", "cohorts_at_min": "64"})",
       "admit.cohorts_at_min", "must be a number"},
      {R"("admit": {"min": "CRITICAL", "cohort": 64})", "admit.cohort",
       "unknown key (allowed: min, cohorts_at_min)"},
  };
  for (const Case& c : cases) {
    const absl::Status s = ParseError(c.body);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(s.message().find(c.path), absl::string_view::npos)
        << c.body << " -> " << s;
    EXPECT_NE(s.message().find(c.rule), absl::string_view::npos)
        << c.body << " -> " << s;
  }
  EXPECT_TRUE(ParseError(R"("admit": {"min": "CRITICAL", "cohorts_at_min": 0})")
                  .ok());
}

TEST(AdmissionFloorsTest, AFloorMustNotLoosenAsTheLevelRises) {
  DegradationConfig c = ThreeLevels();
  c.levels[0].admit = AdmitFloor{Criticality::kCritical, kNumCohorts};
  c.levels[2].admit = AdmitFloor{Criticality::kSheddablePlus, 1};  // looser
  const absl::Status s = ValidateDegradationConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("level3.admit"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("must not admit more than the level below"),
            absl::string_view::npos)
      << s;
  // Equal floors are allowed (a level that changes only features).
  c.levels[2].admit = c.levels[0].admit;
  EXPECT_TRUE(ValidateDegradationConfig(c).ok());

  c.levels[1].admit = AdmitFloor{Criticality::kCritical, 200};
  EXPECT_NE(ValidateDegradationConfig(c).message().find(
                "level2.admit.cohorts_at_min = 200"),
            absl::string_view::npos)
      << ValidateDegradationConfig(c);
  c.levels[1].admit = AdmitFloor{static_cast<Criticality>(7), 0};
  EXPECT_NE(ValidateDegradationConfig(c).message().find("level2.admit.min"),
            absl::string_view::npos);
}

TEST(AdmissionFloorsTest, TheSeedConfigLoadsUnchangedAndAdmitsEverything) {
  // The source tree is found from __FILE__, as config_parse_test does.
  const absl::string_view self = __FILE__;
  const std::string path = absl::StrCat(
      self.substr(0, self.rfind("tests/")),
      "examples/config/inference_degradation.json");
  absl::StatusOr<DegradationConfig> c = LoadDegradationConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const LevelSpec& l : c->levels) EXPECT_FALSE(l.admit.has_value());
  FakeClock clock;
  ManagerOptions o;
  o.clock = &clock;
  o.log_sink = [](absl::string_view) {};
  auto m = DegradationManager::Create(*c, o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->Observe("queue_length", 500).ok());
  EXPECT_EQ((*m)->level(), 3);
  EXPECT_EQ((*m)->admission_threshold(), kAdmitAllRank);
}

class ManagerFloorsTest : public ManagerTestBase {
 protected:
  std::unique_ptr<DegradationManager> MakeFloors() {
    absl::StatusOr<DegradationConfig> c = ParseDegradationConfig(kFloorsJson);
    EXPECT_TRUE(c.ok()) << c.status();
    return Make(*c);
  }
};

TEST_F(ManagerFloorsTest, TheThresholdFollowsEscalationAndStagedRecovery) {
  auto m = MakeFloors();
  EXPECT_EQ(m->admission_threshold(), kAdmitAllRank);
  ObserveOk(*m, "queue_delay_ms", 120);  // straight to level 4
  EXPECT_EQ(m->level(), 4);
  EXPECT_EQ(m->admission_threshold(), FloorRank(Criticality::kCritical));

  // Calm: the manager steps down one level per hold, and the floor loosens
  // with it one step at a time: 4 -> 3 keeps level 2's floor (level 3 names
  // none), 3 -> 2 the same, 2 -> 1 admits all SHEDDABLE_PLUS, 1 -> 0 all.
  const int expected[] = {2 * kNumCohorts + 64, 2 * kNumCohorts + 64,
                          3 * kNumCohorts, kAdmitAllRank};
  for (int step = 0; step < 4; ++step) {
    ObserveOk(*m, "queue_delay_ms", 1);
    clock_.Advance(absl::Seconds(10));
    ObserveOk(*m, "queue_delay_ms", 1);
    EXPECT_EQ(m->level(), 3 - step);
    EXPECT_EQ(m->admission_threshold(), expected[step]) << "step " << step;
  }
}

TEST_F(ManagerFloorsTest, OverridesAndReloadsRepublishTheFloor) {
  auto m = MakeFloors();
  ASSERT_TRUE(m->ForceLevel(2, absl::Minutes(1)).ok());
  EXPECT_EQ(m->admission_threshold(), 2 * kNumCohorts + 64);

  // A reload that tightens level 2's floor applies at once, without a level
  // change.
  absl::StatusOr<DegradationConfig> c = ParseDegradationConfig(kFloorsJson);
  ASSERT_TRUE(c.ok());
  c->levels[1].admit->cohorts_at_min = 16;
  ASSERT_TRUE(m->Reload(*c).ok());
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->admission_threshold(), 2 * kNumCohorts + 16);

  // A refused reload changes nothing that is serving.
  c->levels[1].admit->cohorts_at_min = 500;
  EXPECT_FALSE(m->Reload(*c).ok());
  EXPECT_EQ(m->admission_threshold(), 2 * kNumCohorts + 16);

  // A reload to a config without floors admits everything again.
  ASSERT_TRUE(m->Reload(ThreeLevels()).ok());
  EXPECT_EQ(m->admission_threshold(), kAdmitAllRank);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
