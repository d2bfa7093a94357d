// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Control documents and FleetControl: the format's rules (every bad input
// of the issue refused with the path, value and rule), the version floor
// (an older or equal re-push changes nothing), the whole-or-nothing apply,
// the release of what a newer document no longer names, expiry on the
// FakeClock with nobody watching, the max of a local ForceLevel and a
// control's level, and the reason on every log line, which carries its
// time and whose refusals are rate-limited.

#include "degrade/fleet_control.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/control_document.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/json_text.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"
#include "support/breakers.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

std::string Rfc(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

class FleetControlTest : public ManagerTestBase {
 protected:
  void SetUp() override {
    manager_ = Make();
    rank_ = degrade_tests::MakeBreaker<int>(&clock_, "rank");
    rerank_ = degrade_tests::MakeBreaker<int>(&clock_, "rerank");
    FleetControl::Options o;
    o.clock = &clock_;
    // Called from several threads at once in the concurrency test.
    o.log_sink = [this](absl::string_view l) {
      std::lock_guard<std::mutex> lock(lines_mu_);
      control_lines_.emplace_back(l);
    };
    control_ = std::make_unique<FleetControl>(std::move(o));
    ASSERT_TRUE(control_->AddManager(manager_.get()).ok());
    ASSERT_TRUE(control_->AddBreaker(rank_.get()).ok());
    ASSERT_TRUE(control_->AddBreaker(rerank_.get()).ok());
  }

  // A document of `version` ending `ttl` from now, with `body` (JSON
  // members after the required ones, or empty).
  std::string Doc(uint64_t version, absl::Duration ttl, std::string body,
                  std::string reason = "INC-1234: rank saturated") {
    return absl::StrCat(R"({"degrade_control": {"version": )", version,
                        R"(, "expires_at": ")", Rfc(clock_.Now() + ttl),
                        R"(", "reason": ")", reason, R"(")",
                        body.empty() ? "" : ", ", body, "}}");
  }

  absl::Status Apply(const std::string& text) {
    return control_->Apply(text, "etcd: /svc/control");
  }

  std::unique_ptr<DegradationManager> manager_;
  std::unique_ptr<CircuitBreaker<int>> rank_;
  std::unique_ptr<CircuitBreaker<int>> rerank_;
  std::unique_ptr<FleetControl> control_;
  // std::mutex: Debian's Abseil is not built with TSan, so TSan would not
  // see an absl::Mutex's ordering.
  std::mutex lines_mu_;
  std::vector<std::string> control_lines_;  // read once threads are joined
};

constexpr char kLevel2CacheOff[] =
    R"("managers": {"inference": {"level": 2, "features_off": ["semantic_cache"]}},
       "breakers_open": {"rank": true})";

TEST_F(FleetControlTest, ADocumentForcesLevelFeaturesAndBreakers) {
  FeatureGate cache = manager_->Feature("semantic_cache");
  FeatureGate debug = manager_->Feature("debug_log");
  ASSERT_TRUE(cache.enabled());
  ASSERT_TRUE(Apply(Doc(7, absl::Minutes(30), kLevel2CacheOff)).ok());
  EXPECT_EQ(manager_->level(), 2);
  EXPECT_FALSE(cache.enabled());  // forced off whatever the level
  EXPECT_FALSE(debug.enabled());  // off at level 2 by the config
  EXPECT_TRUE(rank_->forced_open());
  EXPECT_EQ(rank_->forced_open_until(), clock_.Now() + absl::Minutes(30));
  EXPECT_FALSE(rerank_->forced_open());
  EXPECT_EQ(control_->version(), 7u);
  ASSERT_TRUE(control_->in_force().has_value());
  EXPECT_EQ(control_->in_force()->reason, "INC-1234: rank saturated");

  // The control's log line and the manager's level change both carry why.
  ASSERT_EQ(control_lines_.size(), 1u);
  // "time" first, as on every component's line.
  EXPECT_TRUE(absl::StartsWith(
      control_lines_[0],
      absl::StrCat(
          R"({"time":")", detail::JsonTime(clock_.Now()),
          R"(","event":"control_applied","source":"etcd: /svc/control",)")))
      << control_lines_[0];
  const nlohmann::json applied = nlohmann::json::parse(control_lines_[0]);
  EXPECT_EQ(applied["event"], "control_applied");
  EXPECT_EQ(applied["version"], 7);
  EXPECT_EQ(applied["reason"], "INC-1234: rank saturated");
  EXPECT_FALSE(applied.contains("features_not_seen_yet"));
  bool noted = false;
  for (const std::string& l : lines_) {
    if (absl::StrContains(l, R"("event":"level_change")")) {
      EXPECT_THAT(
          l, HasSubstr(R"("note":"control v7: INC-1234: rank saturated")"));
      noted = true;
    }
  }
  EXPECT_TRUE(noted);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].reason, LevelChangeReason::kOverride);
  EXPECT_EQ(changes_[0].note, "control v7: INC-1234: rank saturated");
}

TEST_F(FleetControlTest, EverythingEndsAtExpiresAtWithNobodyWatching) {
  FeatureGate cache = manager_->Feature("semantic_cache");
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30), kLevel2CacheOff)).ok());
  clock_.Advance(absl::Minutes(30) - absl::Nanoseconds(1));
  manager_->Evaluate();
  EXPECT_EQ(manager_->level(), 2);
  EXPECT_TRUE(rank_->forced_open());
  EXPECT_TRUE(control_->in_force().has_value());
  clock_.Advance(absl::Nanoseconds(1));  // exactly expires_at: over
  EXPECT_FALSE(control_->in_force().has_value());
  EXPECT_FALSE(manager_->CurrentControl().has_value());  // evaluates
  EXPECT_TRUE(cache.enabled());
  // With no signal above level 0, recovery is staged as after any hold:
  // one level per 60 s hold.
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(61));
    manager_->Evaluate();
  }
  EXPECT_EQ(manager_->level(), 0);
  // The breaker's forced open ended too (it then probes, as after a trip).
  EXPECT_FALSE(rank_->forced_open());
  EXPECT_NE(rank_->state(), State::kOpen);
  bool expired = false;
  for (const std::string& l : lines_) {
    if (absl::StrContains(l, R"("event":"override_expired")")) {
      EXPECT_THAT(l, HasSubstr("control v1: INC-1234"));
      expired = true;
    }
  }
  EXPECT_TRUE(expired);
  // The version floor outlives the document.
  EXPECT_EQ(Apply(Doc(1, absl::Minutes(5), kLevel2CacheOff)).code(),
            absl::StatusCode::kFailedPrecondition);
}

// A manager with no config yet (its documented starting state) takes a
// document that only switches features off; it must end at expires_at as
// on a configured manager, not stay in force because an evaluation with no
// levels returned before looking at the holds (issue 32, item 3).
TEST_F(FleetControlTest, AFeaturesOffDocumentExpiresOnAManagerWithoutAConfig) {
  DegradationManager bare(Options("bare"));
  FleetControl::Options o;
  o.clock = &clock_;
  FleetControl control(std::move(o));
  ASSERT_TRUE(control.AddManager(&bare).ok());
  FeatureGate cache = bare.Feature("semantic_cache");
  ASSERT_TRUE(control
                  .Apply(Doc(1, absl::Minutes(30),
                             R"("managers": {"bare": {"features_off": )"
                             R"(["semantic_cache"]}})"),
                         "test")
                  .ok());
  EXPECT_FALSE(cache.enabled());
  clock_.Advance(absl::Minutes(30) - absl::Nanoseconds(1));
  bare.Evaluate();
  EXPECT_FALSE(cache.enabled());
  EXPECT_TRUE(bare.CurrentControl().has_value());
  clock_.Advance(absl::Nanoseconds(1));  // exactly expires_at: over
  EXPECT_FALSE(control.in_force().has_value());
  bare.Evaluate();
  EXPECT_TRUE(cache.enabled());
  EXPECT_TRUE(bare.Enabled("semantic_cache"));
  EXPECT_FALSE(bare.CurrentControl().has_value());
  EXPECT_EQ(bare.level(), 0);
  bool expired = false;
  for (const std::string& l : lines_) {
    expired = expired || absl::StrContains(l, R"("event":"override_expired")");
  }
  EXPECT_TRUE(expired);
}

TEST_F(FleetControlTest, OlderAndEqualVersionsChangeNothing) {
  const std::string v5 = Doc(5, absl::Minutes(30), kLevel2CacheOff);
  ASSERT_TRUE(Apply(v5).ok());
  const std::size_t lines = control_lines_.size();
  // The same document again (a watcher re-reading): accepted, no-op.
  EXPECT_TRUE(Apply(v5).ok());
  EXPECT_EQ(control_lines_.size(), lines);
  EXPECT_EQ(control_->applied(), 1u);

  const std::string older =
      Doc(4, absl::Minutes(60), R"("managers": {"inference": {"level": 3}})");
  absl::Status s = Apply(older);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("degrade_control.version = 4"));
  EXPECT_THAT(s.message(), HasSubstr("older"));
  const std::string same_version =
      Doc(5, absl::Minutes(60), R"("managers": {"inference": {"level": 3}})");
  s = Apply(same_version);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("other content"));
  EXPECT_EQ(manager_->level(), 2);
  EXPECT_EQ(control_->in_force()->version, 5u);
  EXPECT_EQ(control_->refused(), 2u);
  // Each refusal is one log line naming the source.
  ASSERT_EQ(control_lines_.size(), lines + 2);
  EXPECT_THAT(control_lines_.back(), HasSubstr("control_refused"));
  EXPECT_THAT(control_lines_.back(), HasSubstr("etcd: /svc/control"));
}

// A version of 2^64 - 1 once applied and then blocked every later document
// (versions only grow) until a restart. Above 2^53 it is refused, and the
// next honest version applies.
TEST_F(FleetControlTest, AHugeVersionIsRefusedAndBlocksNothing) {
  const absl::Status s =
      Apply(Doc(18446744073709551615u, absl::Minutes(30), kLevel2CacheOff));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("must be <= 9007199254740992 (2^53)"));
  EXPECT_EQ(control_->version(), 0u);
  ASSERT_TRUE(Apply(Doc(2, absl::Minutes(30), kLevel2CacheOff)).ok());
  EXPECT_EQ(control_->in_force()->version, 2u);
  EXPECT_EQ(manager_->level(), 2);
}

// Refusals go through the EventLog's rate limit (5 a second by default):
// a watcher re-reading a bad document cannot flood the log, and the next
// line says how many were dropped. Applied and lifted documents are audit
// lines, each written.
TEST_F(FleetControlTest, RefusalsAreRateLimitedAppliedAndLiftedAreNot) {
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(control_->Apply("not json", "etcd: /svc/control").ok());
  }
  EXPECT_EQ(control_->refused(), 8u);
  ASSERT_EQ(control_lines_.size(), 5u);
  const nlohmann::json first = nlohmann::json::parse(control_lines_[0]);
  EXPECT_EQ(first["time"], detail::JsonTime(clock_.Now()));
  EXPECT_EQ(first["event"], "control_refused");
  EXPECT_FALSE(first.contains("suppressed"));

  clock_.Advance(absl::Seconds(1));  // a new window
  EXPECT_FALSE(control_->Apply("not json", "etcd: /svc/control").ok());
  ASSERT_EQ(control_lines_.size(), 6u);
  const nlohmann::json next = nlohmann::json::parse(control_lines_.back());
  EXPECT_EQ(next["time"], detail::JsonTime(clock_.Now()));
  EXPECT_EQ(next["suppressed"], 3);

  // Seven documents applied in the same instant: seven lines.
  for (uint64_t v = 1; v <= 7; ++v) {
    ASSERT_TRUE(Apply(Doc(v, absl::Minutes(30), "")).ok());
  }
  ASSERT_TRUE(control_->Lift("etcd: /svc/control deleted").ok());
  ASSERT_EQ(control_lines_.size(), 6u + 7u + 1u);
  for (std::size_t i = 6; i < 13; ++i) {
    EXPECT_THAT(control_lines_[i], HasSubstr(R"("event":"control_applied")"));
  }
  EXPECT_EQ(
      control_lines_.back(),
      absl::StrCat(R"({"time":")", detail::JsonTime(clock_.Now()),
                   R"(","event":"control_lifted",)"
                   R"("source":"etcd: /svc/control deleted",)"
                   R"("version":7,"reason":"INC-1234: rank saturated"})"));
}

TEST_F(FleetControlTest, ANewerDocumentReleasesWhatItNoLongerNames) {
  FeatureGate cache = manager_->Feature("semantic_cache");
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30), kLevel2CacheOff)).ok());
  ASSERT_TRUE(
      Apply(Doc(2, absl::Minutes(30), R"("breakers_open": {"rerank": true})"))
          .ok());
  EXPECT_TRUE(cache.enabled());
  EXPECT_FALSE(rank_->forced_open());
  EXPECT_TRUE(rerank_->forced_open());
  EXPECT_FALSE(manager_->CurrentControl().has_value());
  // A breaker forced by hand meanwhile is not the control's to release.
  ASSERT_TRUE(rerank_->ForceOpenUntil(clock_.Now() + absl::Hours(2)).ok());
  ASSERT_TRUE(Apply(Doc(3, absl::Minutes(30), "")).ok());
  EXPECT_TRUE(rerank_->forced_open());
  EXPECT_EQ(rerank_->forced_open_until(), clock_.Now() + absl::Hours(2));
}

TEST_F(FleetControlTest, LiftEndsTheDocumentButKeepsTheFloor) {
  ASSERT_TRUE(Apply(Doc(9, absl::Minutes(30), kLevel2CacheOff)).ok());
  ASSERT_TRUE(control_->Lift("etcd: /svc/control deleted").ok());
  EXPECT_FALSE(control_->in_force().has_value());
  EXPECT_FALSE(rank_->forced_open());
  EXPECT_FALSE(manager_->CurrentControl().has_value());
  EXPECT_THAT(control_lines_.back(), HasSubstr("control_lifted"));
  EXPECT_THAT(control_lines_.back(), HasSubstr("INC-1234"));
  const absl::Status s = Apply(Doc(9, absl::Minutes(30), kLevel2CacheOff));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("lifted"));
  EXPECT_TRUE(control_->Lift("again").ok());  // nothing to lift: no-op
}

TEST_F(FleetControlTest, TheHigherOfLocalOverrideAndControlWins) {
  ASSERT_TRUE(manager_->ForceLevel(3, absl::Hours(1)).ok());
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30),
                        R"("managers": {"inference": {"level": 2}})"))
                  .ok());
  EXPECT_EQ(manager_->level(), 3);
  manager_->ClearOverride();
  EXPECT_EQ(manager_->level(), 3);  // the signals decide, in stages
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(61));
    manager_->Evaluate();
  }
  EXPECT_EQ(manager_->level(), 2);  // the control's floor holds it at 2
  ASSERT_TRUE(manager_->ForceLevel(1, absl::Hours(1)).ok());
  EXPECT_EQ(manager_->level(), 2);  // a local override cannot lower it
  clock_.Advance(absl::Minutes(30));
  manager_->Evaluate();
  EXPECT_EQ(manager_->level(), 1);  // the control ended; the override holds
}

TEST_F(FleetControlTest, TheControlsLevelIsAFloorTheSignalsCanRise) {
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30),
                        R"("managers": {"inference": {"level": 1}})"))
                  .ok());
  EXPECT_EQ(manager_->level(), 1);
  ObserveOk(*manager_, "gpu", 99);
  EXPECT_EQ(manager_->level(), 3);  // the load still degrades further
  ObserveOk(*manager_, "gpu", 10);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(61));
    ObserveOk(*manager_, "gpu", 10);
  }
  EXPECT_EQ(manager_->level(), 1);  // and recovers down to the floor only
  clock_.Advance(absl::Minutes(30));
  ObserveOk(*manager_, "gpu", 10);
  EXPECT_EQ(manager_->level(), 1);  // the floor ended: a fresh hold first
  clock_.Advance(absl::Seconds(61));
  ObserveOk(*manager_, "gpu", 10);
  EXPECT_EQ(manager_->level(), 0);
}

TEST_F(FleetControlTest, ANewerVersionDoesNotRestartARecovery) {
  ObserveOk(*manager_, "gpu", 75);  // level 1
  ASSERT_EQ(manager_->level(), 1);
  ASSERT_TRUE(
      Apply(Doc(1, absl::Minutes(30),
                R"("managers": {"inference": {"features_off": ["x"]}})"))
          .ok());
  ObserveOk(*manager_, "gpu", 10);  // the recovery hold starts
  clock_.Advance(absl::Seconds(40));
  // An extension, as DegradeControlExpiringSoon asks for.
  ASSERT_TRUE(
      Apply(Doc(2, absl::Minutes(60),
                R"("managers": {"inference": {"features_off": ["x"]}})"))
          .ok());
  clock_.Advance(absl::Seconds(25));
  ObserveOk(*manager_, "gpu", 10);
  EXPECT_EQ(manager_->level(), 0);  // 65 s of recovery: one hold
}

TEST_F(FleetControlTest, AnObserverMayReadTheFleetControlDuringAnApply) {
  uint64_t seen = 99;
  manager_->AddObserver(
      [&](const LevelChange&) { seen = control_->version(); });
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30),
                        R"("managers": {"inference": {"level": 2}})"))
                  .ok());
  EXPECT_EQ(seen, 0u);  // read during the apply, before the floor moved
  EXPECT_EQ(control_->version(), 1u);
}

TEST_F(FleetControlTest, ACriticalFeatureIsNeverOffEvenAfterAReload) {
  FeatureGate search = manager_->Feature("search");
  ASSERT_TRUE(
      Apply(Doc(1, absl::Minutes(30),
                R"("managers": {"inference": {"features_off": ["search"]}})"))
          .ok());
  EXPECT_FALSE(search.enabled());
  DegradationConfig c = ThreeLevels();
  c.critical.push_back("search");
  ASSERT_TRUE(manager_->Reload(c).ok());
  EXPECT_TRUE(search.enabled());
}

TEST_F(FleetControlTest, BreakerTimesAreWholeNanosecondsAndReleased) {
  const std::string body = absl::StrCat(
      R"("breakers_open": {"rank": ")",
      absl::FormatTime("%Y-%m-%dT%H:%M:%S.123456789250Z",
                       clock_.Now() + absl::Minutes(5), absl::UTCTimeZone()),
      R"("})");
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30), body)).ok());
  EXPECT_TRUE(rank_->forced_open());
  ASSERT_TRUE(control_->Lift("test").ok());
  EXPECT_FALSE(rank_->forced_open());  // released: the time matched exactly
  const absl::Status far = Apply(absl::StrCat(
      R"({"degrade_control": {"version": 2, "expires_at": "2300-01-01T00:00:00Z",)",
      R"( "reason": "r", "breakers_open": {"rank": true}}})"));
  EXPECT_EQ(far.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(far.message()), HasSubstr("must be before 2262"));
  EXPECT_FALSE(rank_->forced_open());
}

TEST_F(FleetControlTest, ARefusedDocumentChangesNothingAnywhere) {
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30), kLevel2CacheOff)).ok());
  // A critical feature (the config's "auth") cannot be switched off; the
  // manager is checked only while installing, so this exercises the
  // rollback of what was installed before it.
  const absl::Status s = Apply(
      Doc(2, absl::Minutes(30),
          R"("managers": {"inference": {"level": 3, "features_off": ["auth"]}},
         "breakers_open": {"rerank": true})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'auth' is critical"));
  EXPECT_EQ(manager_->level(), 2);
  EXPECT_TRUE(rank_->forced_open());
  EXPECT_FALSE(rerank_->forced_open());
  EXPECT_EQ(control_->version(), 1u);
  EXPECT_EQ(control_->in_force()->version, 1u);
  EXPECT_TRUE(changes_.size() == 1u) << "only v1's change was seen";
}

TEST_F(FleetControlTest, ARefusedDocumentLeavesHandForcedAndTrippedBreakers) {
  rank_->ForceOpen();             // an operator's, indefinite
  degrade_tests::Trip(*rerank_);  // tripped by its own calls
  ASSERT_EQ(rerank_->state(), State::kOpen);
  const absl::Status s =
      Apply(Doc(1, absl::Minutes(30),
                R"("managers": {"inference": {"features_off": ["auth"]}},
         "breakers_open": {"rank": true, "rerank": true})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(rank_->forced_open());
  EXPECT_EQ(rank_->forced_open_until(), absl::InfiniteFuture());
  EXPECT_EQ(rerank_->state(), State::kOpen);
  EXPECT_FALSE(rerank_->forced_open());
}

TEST_F(FleetControlTest, UnknownNamesAndLevelsAreRefusedWithTheirPath) {
  struct Case {
    std::string body;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"("managers": {"infrence": {"level": 1}})",
       "degrade_control.managers.infrence: no manager of that name here "
       "(registered: inference)"},
      {R"("breakers_open": {"rnak": true})",
       "degrade_control.breakers_open.rnak: no breaker of that name here "
       "(registered: rank, rerank)"},
      {R"("managers": {"inference": {"level": 4}})",
       "degrade_control.managers.inference.level = 4: the manager has levels "
       "0 to 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const absl::Status s = Apply(Doc(1, absl::Minutes(30), c.body));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(c.message));
    EXPECT_THAT(s.message(), HasSubstr("etcd: /svc/control"));
  }
  EXPECT_EQ(control_->version(), 0u);
  EXPECT_EQ(manager_->level(), 0);
}

TEST_F(FleetControlTest, UnseenFeaturesAreAppliedAndReported) {
  ASSERT_TRUE(
      Apply(Doc(1, absl::Minutes(30),
                R"("managers": {"inference": {"features_off": ["new_ui"]}})"))
          .ok());
  EXPECT_THAT(control_lines_.back(),
              HasSubstr(R"("features_not_seen_yet":"inference/new_ui")"));
  // The gate made later is off from its first use.
  EXPECT_FALSE(manager_->Feature("new_ui").enabled());
  EXPECT_EQ(manager_->level(), 0);
}

TEST_F(FleetControlTest, ReentrantApplyFromAnObserverIsRefused) {
  absl::Status inner;
  manager_->AddObserver([&](const LevelChange&) {
    inner = control_->Apply(Doc(99, absl::Minutes(5), ""), "observer");
  });
  ASSERT_TRUE(Apply(Doc(1, absl::Minutes(30),
                        R"("managers": {"inference": {"level": 1}})"))
                  .ok());
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(control_->version(), 1u);
}

// Four threads push documents of interleaved versions while two read. The
// floor never goes down and ends at the highest version; that document is
// the one in force on the manager and the breaker; every push was either
// applied or refused, and the successes are the applied count. Run under
// TSan in CI (label concurrency).
TEST_F(FleetControlTest, ConcurrentAppliesKeepTheFloorAndTheLastDocument) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  std::vector<std::string> docs(kThreads * kPerThread + 1);
  for (int v = 1; v <= kThreads * kPerThread; ++v) {
    docs[v] = Doc(
        static_cast<uint64_t>(v), absl::Minutes(30),
        absl::StrCat(R"("managers": {"inference": {"level": )", v % 3 + 1, "}}",
                     v % 2 == 0 ? R"(, "breakers_open": {"rank": true})" : ""));
  }
  std::atomic<int> ok{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Thread t pushes versions t+1, t+1+kThreads, ...: interleaved.
      for (int i = 0; i < kPerThread; ++i) {
        if (Apply(docs[1 + t + i * kThreads]).ok()) ok.fetch_add(1);
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      uint64_t last = 0;
      while (!done.load()) {
        const uint64_t v = control_->version();
        EXPECT_GE(v, last);  // the floor never goes down
        last = v;
        (void)control_->in_force();
        (void)manager_->level();
      }
    });
  }
  for (int t = 0; t < kThreads; ++t) threads[t].join();
  done.store(true);
  for (std::size_t t = kThreads; t < threads.size(); ++t) threads[t].join();

  const uint64_t top = kThreads * kPerThread;
  EXPECT_EQ(control_->version(), top);
  EXPECT_EQ(control_->applied(), static_cast<uint64_t>(ok.load()));
  EXPECT_EQ(control_->applied() + control_->refused(), top);
  ASSERT_TRUE(control_->in_force().has_value());
  EXPECT_EQ(control_->in_force()->version, top);
  ASSERT_TRUE(manager_->CurrentControl().has_value());
  EXPECT_EQ(manager_->control()->version, top);  // the deprecated spelling
  EXPECT_EQ(manager_->level(), static_cast<int>(top % 3 + 1));
  EXPECT_TRUE(rank_->forced_open());  // top is even
}

// Issue 29: what an operator sees. Each refusal is counted under its
// reason, the document in force and its end are reported, and an expired
// document is no longer in force while the floor stays.
TEST_F(FleetControlTest, StatsCountEachRefusalReasonAndTheDocumentInForce) {
  EXPECT_EQ(control_->name(), "fleet");  // the default
  FleetControlStats s = control_->stats();
  EXPECT_FALSE(s.in_force());
  EXPECT_EQ(s.refused_total(), 0u);

  ASSERT_TRUE(Apply(Doc(7, absl::Minutes(30), kLevel2CacheOff)).ok());
  const absl::Time end = clock_.Now() + absl::Minutes(30);
  ASSERT_TRUE(Apply(Doc(7, absl::Minutes(30), kLevel2CacheOff)).ok());  // again
  // malformed: not JSON; a document whose end has passed.
  EXPECT_FALSE(Apply("{").ok());
  EXPECT_FALSE(Apply(Doc(8, -absl::Minutes(1), "")).ok());
  // stale: older; the same version with other content.
  EXPECT_FALSE(Apply(Doc(6, absl::Minutes(30), "")).ok());
  EXPECT_FALSE(Apply(Doc(7, absl::Minutes(30), "", "other")).ok());
  // unknown_target: a manager, a breaker not registered here.
  EXPECT_FALSE(
      Apply(Doc(8, absl::Minutes(30), R"("managers": {"nope": {"level": 1}})"))
          .ok());
  EXPECT_FALSE(
      Apply(Doc(8, absl::Minutes(30), R"("breakers_open": {"nope": true})"))
          .ok());
  // ... even after a manager that is here and would accept its part.
  EXPECT_FALSE(Apply(Doc(8, absl::Minutes(30),
                         R"("managers": {"inference": {"level": 1},
                                         "nope": {"level": 1}})"))
                   .ok());
  // invalid: a level past the manager's levels (3).
  EXPECT_FALSE(Apply(Doc(8, absl::Minutes(30),
                         R"("managers": {"inference": {"level": 4}})"))
                   .ok());

  s = control_->stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.repeated, 1u);
  EXPECT_EQ(s.refused_malformed, 2u);
  EXPECT_EQ(s.refused_stale, 2u);
  EXPECT_EQ(s.refused_unknown_target, 3u);
  EXPECT_EQ(s.refused_invalid, 1u);
  EXPECT_EQ(s.refused_install_failed, 0u);
  EXPECT_EQ(s.refused_total(), control_->refused());
  EXPECT_EQ(s.version, 7u);
  EXPECT_EQ(s.version_in_force, 7u);
  EXPECT_EQ(s.expires_at, end);

  // Expired on the clock: not in force any more; the floor stays.
  clock_.Advance(absl::Minutes(31));
  s = control_->stats();
  EXPECT_FALSE(s.in_force());
  EXPECT_EQ(s.expires_at, absl::InfinitePast());
  EXPECT_EQ(s.version, 7u);

  // A lift is counted; lifting nothing is not.
  ASSERT_TRUE(Apply(Doc(9, absl::Minutes(30), "")).ok());
  ASSERT_TRUE(control_->Lift("test").ok());
  ASSERT_TRUE(control_->Lift("test").ok());
  s = control_->stats();
  EXPECT_EQ(s.lifted, 1u);
  EXPECT_EQ(s.accepted, 2u);
  EXPECT_FALSE(s.in_force());
  EXPECT_EQ(s.version, 9u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
