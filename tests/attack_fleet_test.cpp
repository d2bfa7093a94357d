// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Hostile conditions for the newly exported fleet components: a control
// file swapped for a directory, truncated mid-write and written back while
// the clock steps back (the watcher's counters and gauges must say the
// truth and the last good document keep serving); names with quotes,
// backslashes, newlines and invalid UTF-8 in the exposition (Prometheus
// lines stay parseable, JSON stays JSON); the same name registered twice;
// a FleetControl's log sink that throws.

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/control_watcher.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;
using ::testing::Not;

std::string AttackDoc(uint64_t version, absl::Time expires) {
  return absl::StrCat(
      R"({"degrade_control": {"version": )", version, R"(, "expires_at": ")",
      absl::FormatTime(absl::RFC3339_full, expires, absl::UTCTimeZone()),
      R"(", "reason": "INC-1"}})");
}

TEST(AttackFleetTest, ControlFileSwappedForADirectoryTruncatedAndClockStepped) {
  degrade_tests::TempDir dir("degrade_attack");
  const std::string path = dir.Path("control.json");
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  FleetControl::Options co;
  co.clock = &clock;
  co.log_sink = [](absl::string_view) {};
  co.metrics = NoTelemetry();
  FleetControl control(std::move(co));
  ControlFileWatcherOptions wo;
  wo.clock = &clock;
  wo.metrics = NoTelemetry();
  ControlFileWatcher watcher(path, &control, wo);

  const std::string v1 = AttackDoc(1, clock.Now() + absl::Hours(24));
  degrade_tests::WriteByRename(path, v1);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const absl::Time t0 = clock.Now();
  EXPECT_EQ(watcher.stats().reloads, 1u);

  // A directory where the file was: one error however many polls, the last
  // good document keeps serving, the last success stays and ages.
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  for (int i = 0; i < 3; ++i) {
    clock.Advance(absl::Seconds(10));
    EXPECT_EQ(watcher.PollOnce().code(), absl::StatusCode::kFailedPrecondition);
  }
  FileWatcherStats s = watcher.stats();
  EXPECT_EQ(s.polls, 4u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_FALSE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, t0);
  EXPECT_EQ(s.since_success, absl::Seconds(30));
  EXPECT_EQ(control.stats().version_in_force, 1u);

  // The same document back: not applied again, but the poll succeeded.
  ASSERT_EQ(::rmdir(path.c_str()), 0);
  degrade_tests::WriteInPlace(path, v1);
  ASSERT_TRUE(watcher.PollOnce().ok());
  s = watcher.stats();
  EXPECT_EQ(s.reloads, 1u);
  EXPECT_EQ(control.stats().repeated, 0u);
  EXPECT_TRUE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, clock.Now());
  const absl::Time t1 = clock.Now();

  // A partial write of v2: refused, v1 serves, the last success stays.
  const std::string v2 = AttackDoc(2, clock.Now() + absl::Hours(24));
  degrade_tests::WriteInPlace(path, v2.substr(0, v2.size() / 2));
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(watcher.PollOnce().ok());
  s = watcher.stats();
  EXPECT_EQ(s.errors, 2u);
  EXPECT_FALSE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, t1);
  EXPECT_EQ(control.stats().version_in_force, 1u);
  EXPECT_EQ(control.stats().refused_malformed, 1u);

  // The write completes while the clock is stepped back an hour: v2 is
  // put in force, and the last success neither moves back nor goes negative.
  clock.Set(clock.Now() - absl::Hours(1));
  degrade_tests::WriteInPlace(path, v2);
  ASSERT_TRUE(watcher.PollOnce().ok());
  s = watcher.stats();
  EXPECT_EQ(s.reloads, 2u);
  EXPECT_TRUE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, t1);
  EXPECT_EQ(s.since_success, absl::ZeroDuration());
  EXPECT_EQ(control.stats().version_in_force, 2u);
}

// Every line of a Prometheus text exposition is a comment or
// `name{label="value",...} number`, label values escaped.
void ExpectParseableExposition(const std::string& text) {
  static const std::regex kSample(
      R"re(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? ([-+]?[0-9.eE+-]+|NaN|[+-]Inf)$)re");
  std::set<std::string> series;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const std::string l(line);
    EXPECT_TRUE(std::regex_match(l, kSample)) << l;
    const std::string key = l.substr(0, l.rfind(' '));
    EXPECT_TRUE(series.insert(key).second) << "duplicate series " << key;
  }
}

TEST(AttackFleetTest, HostileNamesKeepTheExpositionParseableAndUnique) {
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  MetricsRegistry registry;
  const std::string hostile = "a\"b\\c\nd\xff\xfe{}=,e";
  degrade_tests::TempDir dir("degrade_attack");
  FleetControl::Options co;
  co.clock = &clock;
  co.log_sink = [](absl::string_view) {};
  co.metrics = &registry;
  co.name = hostile;
  FleetControl a(co);
  FleetControl b(co);  // the same name twice
  ControlFileWatcherOptions wo;
  wo.clock = &clock;
  wo.metrics = &registry;
  // Named by its path by default: a path with a newline and a quote.
  ControlFileWatcher w(dir.Path("ctl\n\"x\xc3"), &a, wo);
  ControlFileWatcher w2(dir.Path("ctl\n\"x\xc3"), &b, wo);
  w.PollOnce().IgnoreError();

  const std::string prom = registry.RenderPrometheus();
  EXPECT_THAT(prom, HasSubstr("degrade_fleet_version{"));
  EXPECT_THAT(prom, HasSubstr("degrade_file_watcher_polls_total{"));
  ExpectParseableExposition(prom);

  const std::string json = registry.RenderJson();
  ASSERT_TRUE(nlohmann::json::accept(json)) << json;
  // Both fleet controls are there, under two names.
  std::set<std::string> fleets;
  const nlohmann::json parsed = nlohmann::json::parse(json);
  for (const auto& family : parsed["metrics"]) {
    if (family["name"] != "degrade_fleet_version") continue;
    for (const auto& sample : family["samples"]) {
      fleets.insert(sample["labels"]["fleet_control"].get<std::string>());
    }
  }
  EXPECT_EQ(fleets.size(), 2u) << json;
}

TEST(AttackFleetTest, ASinkThatThrowsLosesOnlyItsLine) {
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  std::vector<std::string> lines;
  int calls = 0;
  FleetControl::Options co;
  co.clock = &clock;
  co.metrics = NoTelemetry();
  co.log_sink = [&](absl::string_view l) {
    if (++calls % 2 == 1) throw std::runtime_error("disk full");
    lines.emplace_back(l);
  };
  FleetControl control(std::move(co));
  ASSERT_TRUE(
      control.Apply(AttackDoc(1, clock.Now() + absl::Hours(1)), "t").ok());
  ASSERT_TRUE(
      control.Apply(AttackDoc(2, clock.Now() + absl::Hours(1)), "t").ok());
  // A flood of refusals: counted every one, written at the rate limit.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(control.Apply("{", "t").ok());
  }
  clock.Advance(absl::Seconds(2));
  EXPECT_FALSE(control.Apply("{", "t").ok());
  const FleetControlStats s = control.stats();
  EXPECT_EQ(s.version_in_force, 2u);
  EXPECT_EQ(s.accepted, 2u);
  EXPECT_EQ(s.refused_malformed, 1001u);
  EXPECT_LE(calls, 2 + 5 + 1);
  ASSERT_FALSE(lines.empty());
  for (const std::string& l : lines) {
    ASSERT_TRUE(nlohmann::json::accept(l)) << l;
    EXPECT_TRUE(nlohmann::json::parse(l).contains("time")) << l;
  }
  // The last line says how many refusals were not written.
  EXPECT_TRUE(nlohmann::json::parse(lines.back()).contains("suppressed"))
      << lines.back();
}

// A telemetry that reads the view and scrapes the registry it forwards to
// from inside AttachComponent, or that throws.
class ReenteringTelemetry : public Telemetry {
 public:
  explicit ReenteringTelemetry(MetricsRegistry* registry, bool fail)
      : registry_(registry), fail_(fail) {}
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& view) override {
    if (fail_) throw std::runtime_error("attach failed");
    if (const FleetControlView* f = view.As<FleetControlStats>()) {
      seen_version = f->stats().version;
    }
    scraped = registry_->RenderPrometheus();
    return registry_->AttachComponent(view);
  }
  uint64_t seen_version = 99;
  std::string scraped;

 private:
  MetricsRegistry* const registry_;
  const bool fail_;
};

TEST(AttackFleetTest, ATelemetryThatReentersOrThrowsWhileAttaching) {
  MetricsRegistry registry;
  ReenteringTelemetry reentering(&registry, /*fail=*/false);
  ReenteringTelemetry throwing(&registry, /*fail=*/true);
  FleetControl::Options o;
  o.log_sink = [](absl::string_view) {};
  o.name = "reentered";
  o.metrics = &reentering;
  FleetControl a(o);
  EXPECT_EQ(reentering.seen_version, 0u);
  o.name = "thrown";
  o.metrics = &throwing;
  FleetControl b(o);  // built unobserved
  EXPECT_FALSE(b.Apply("{", "t").ok());
  EXPECT_EQ(b.stats().refused_malformed, 1u);
  const std::string prom = registry.RenderPrometheus();
  EXPECT_THAT(prom,
              HasSubstr(R"(degrade_fleet_version{fleet_control="reentered"})"));
  EXPECT_THAT(prom, Not(HasSubstr(R"(fleet_control="thrown")")));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
