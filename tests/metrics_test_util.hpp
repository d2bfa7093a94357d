// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the metrics tests (metric_writer_test,
// metrics_registry_test, stage_metrics_test, escalation_test): reading
// series out of an exposition, a breaker exporting to a test registry, a
// registry whose event log writes into a vector, and a fake component view
// (overload_metrics_test, retry_metrics_test).

#ifndef DEGRADE_TESTS_METRICS_TEST_UTIL_HPP_
#define DEGRADE_TESTS_METRICS_TEST_UTIL_HPP_

#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metrics_registry.hpp"
#include "gtest/gtest.h"

namespace degrade {

// The lines of `text` that start with `prefix`.
inline std::vector<std::string> LinesStartingWith(const std::string& text,
                                                  absl::string_view prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line);
  }
  return out;
}

// The value of the one sample line `series` (name plus labels exactly as
// rendered); NaN when it is absent.
inline double SampleValue(const std::string& text, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, series) && line.size() > series.size() &&
        line[series.size()] == ' ') {
      const std::string v(line.substr(series.size() + 1));
      if (v == "+Inf") return std::numeric_limits<double>::infinity();
      return std::stod(v);
    }
  }
  return std::nan("");
}

// Expects each series (name plus labels exactly as rendered) in `text` to
// have the paired value.
inline void ExpectSeries(
    const std::string& text,
    std::initializer_list<std::pair<absl::string_view, double>> expected) {
  for (const auto& [series, value] : expected) {
    EXPECT_EQ(SampleValue(text, series), value) << series;
  }
}

// Settings for a breaker named `name` on `clock`, exporting to `registry`.
inline BreakerSettings ExportedBreaker(absl::string_view name,
                                       const Clock* clock,
                                       MetricsRegistry* registry) {
  BreakerSettings s;
  s.name = std::string(name);
  s.clock = clock;
  s.metrics = registry;
  return s;
}

// A registry whose event log writes into a vector, on `clock`.
struct Fixture {
  explicit Fixture(const Clock* clock, uint32_t per_key = 1000) {
    EventLogOptions o;
    o.sink = [this](absl::string_view line) { lines.emplace_back(line); };
    o.clock = clock;
    o.max_lines_per_key = per_key;
    registry = std::make_unique<MetricsRegistry>(std::move(o));
  }
  std::vector<std::string> lines;
  std::unique_ptr<MetricsRegistry> registry;
};

// A two-level config on queue_length (enter 20/50, recover 10/40, hold 10 s).
inline DegradationConfig TwoLevels() {
  DegradationConfig c;
  c.name = "inference";
  c.hold = absl::Seconds(10);
  LevelSpec l1;
  l1.enter = {{"queue_length", 20}};
  l1.recover = {{"queue_length", 10}};
  l1.disable = {"debug_log"};
  LevelSpec l2;
  l2.enter = {{"queue_length", 50}};
  l2.recover = {{"queue_length", 40}};
  l2.disable = {"personalization"};
  c.levels = {l1, l2};
  return c;
}

// A view (AdmissionView, RetrierView, ...) returning whatever the test
// last put in `st`.
template <typename View, typename Stats>
class FakeView final : public View {
 public:
  explicit FakeView(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  Stats stats() const override { return st; }
  Stats st;

 private:
  std::string name_;
};

}  // namespace degrade

#endif  // DEGRADE_TESTS_METRICS_TEST_UTIL_HPP_
