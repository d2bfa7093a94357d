// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Concurrency invariants of DegradationManager, checked while and after many
// threads read gates and levels, reload configs, record samples, force
// levels and run the monitor. Built for ThreadSanitizer: the tsan preset runs
// this file. No timing is asserted: the FakeClock is moved by the writer
// threads, and every thread that draws random numbers uses a fixed seed.
// LatencyTracker and InFlightGauge under threads are in signals_test.cpp.

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kReaders = 4;
constexpr int kMaxLevel = 3;  // the larger of the two configs below

// Three levels on gpu (70 / 80 / 90) and queue (level 2).
DegradationConfig ConfigA() {
  DegradationConfig c;
  c.name = "a";
  c.recover_ratio = 0.5;
  c.hold = absl::Milliseconds(200);
  LevelSpec l1;
  l1.enter = {{"gpu", 70.0}};
  l1.disable = {"cache_refresh"};
  LevelSpec l2;
  l2.enter = {{"gpu", 80.0}, {"queue", 200.0}};
  l2.disable = {"debug_log", "ab_tag"};
  LevelSpec l3;
  l3.enter = {{"gpu", 90.0}};
  l3.disable = {std::string(kAllNonCritical)};
  c.levels = {l1, l2, l3};
  c.critical = {"auth", "ranking"};
  return c;
}

// Two levels, other thresholds, other gates, enter_after and cooldown.
DegradationConfig ConfigB() {
  DegradationConfig c;
  c.name = "b";
  c.hold = absl::Milliseconds(100);
  c.enter_after = absl::Milliseconds(20);
  c.cooldown = absl::Milliseconds(30);
  LevelSpec l1;
  l1.enter = {{"gpu", 60.0}};
  l1.recover = {{"gpu", 40.0}};
  l1.disable = {"debug_log"};
  LevelSpec l2;
  l2.enter = {{"gpu", 85.0}, {"queue", 300.0}};
  l2.disable = {std::string(kAllNonCritical), "ranking"};
  c.levels = {l1, l2};
  c.critical = {"auth", "ranking"};
  return c;
}

const std::vector<std::string>& FeatureNames() {
  static const std::vector<std::string> names = {
      "cache_refresh", "debug_log", "ab_tag", "auth", "ranking", "unlisted"};
  return names;
}

// What `feature` should be at `level` of `config`, computed from the config
// rather than by the manager.
bool ExpectedEnabled(const DegradationConfig& config, int level,
                     const std::string& feature) {
  const std::set<std::string> critical(config.critical.begin(),
                                       config.critical.end());
  for (int k = 1; k <= level; ++k) {
    for (const std::string& f :
         config.levels[static_cast<std::size_t>(k) - 1].disable) {
      if (f == feature) return false;
      if (f == kAllNonCritical && critical.count(feature) == 0) return false;
    }
  }
  return true;
}

// Observer calls and log lines, recorded from whichever thread delivers them.
class Recorder {
 public:
  void OnChange(const LevelChange& c) {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.push_back(c);
  }

  void OnLine(absl::string_view line) {
    const nlohmann::json j =
        nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    std::lock_guard<std::mutex> lock(mu_);
    if (j.is_discarded() || !j.is_object()) {
      bad_lines_.emplace_back(line);
      return;
    }
    if (j.value("event", "") == "level_change") ++level_change_lines_;
  }

  std::vector<LevelChange> changes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }
  std::vector<std::string> bad_lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bad_lines_;
  }
  std::size_t level_change_lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return level_change_lines_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<LevelChange> changes_;
  std::vector<std::string> bad_lines_;
  std::size_t level_change_lines_ = 0;
};

ManagerOptions OptionsFor(const Clock* clock, Recorder* recorder) {
  ManagerOptions o;
  o.name = "concurrent";
  o.clock = clock;
  o.log_sink = [recorder](absl::string_view line) { recorder->OnLine(line); };
  // The invariants below pair every level change with its line: no rate
  // limit (it has tests of its own in metrics_test).
  o.max_log_lines_per_second = std::numeric_limits<uint32_t>::max();
  return o;
}

// The invariants every run must end with, once all threads are joined.
void ExpectQuiescentInvariants(DegradationManager& m, const Recorder& r,
                               const std::vector<FeatureGate>& gates) {
  EXPECT_TRUE(r.bad_lines().empty()) << r.bad_lines().front();
  const std::vector<LevelChange> changes = r.changes();
  int previous = 0;  // the manager starts at level 0
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const LevelChange& c = changes[i];
    EXPECT_NE(c.from, c.to) << "change " << i << " reason " << c.reason;
    EXPECT_EQ(c.from, previous) << "change " << i << " reason " << c.reason;
    EXPECT_GE(c.to, 0) << "change " << i;
    EXPECT_LE(c.to, kMaxLevel) << "change " << i;
    EXPECT_EQ(c.manager, "concurrent");
    previous = c.to;
    if (::testing::Test::HasFailure()) break;  // one broken link is enough
  }
  EXPECT_EQ(previous, m.level());
  EXPECT_EQ(m.transitions(), changes.size());
  EXPECT_EQ(r.level_change_lines(), changes.size());

  const std::shared_ptr<const DegradationConfig> config = m.config();
  ASSERT_NE(config, nullptr);
  const int level = m.level();
  EXPECT_GE(level, 0);
  EXPECT_LE(level, static_cast<int>(config->levels.size()));
  for (const FeatureGate& g : gates) {
    const std::string name(g.name());
    EXPECT_EQ(g.enabled(), m.Enabled(name)) << name << " at " << level;
    EXPECT_EQ(g.enabled(), ExpectedEnabled(*config, level, name))
        << name << " at level " << level << " of config " << config->name;
  }
}

TEST(DegradationManagerConcurrencyTest, ReloadUnderConcurrentReaders) {
  FakeClock clock;
  Recorder recorder;
  DegradationManager m(OptionsFor(&clock, &recorder));
  ASSERT_TRUE(m.Reload(ConfigA()).ok());
  std::atomic<int> bad_observed{0};
  m.AddObserver([&](const LevelChange& c) {
    recorder.OnChange(c);
    if (c.to < 0 || c.to > kMaxLevel || c.from == c.to) ++bad_observed;
  });

  std::vector<FeatureGate> gates;
  for (const std::string& f : FeatureNames()) gates.push_back(m.Feature(f));

  // The monitor's source: quiet, with a spike every 20th poll.
  std::atomic<int> source_calls{0};
  m.AddSource("gpu", [&source_calls] {
    return source_calls.fetch_add(1) % 20 == 19 ? 95.0 : 5.0;
  });
  ASSERT_TRUE(m.Start(absl::Milliseconds(1)).ok());

  std::atomic<bool> done{false};
  std::atomic<int> bad_level{0};
  std::atomic<int> bad_wrapper{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      const FeatureGate gate =
          gates[static_cast<std::size_t>(t) % gates.size()];
      auto personalise = When(
          m, 2, [](int x) { return x; }, -1);
      int skipped = 0;
      auto log = When(m, 1, [&skipped] { --skipped; });
      auto tag = WhenEnabled(
          gate, [](int x) { return x + 1; }, [] { return -2; });
      std::uint64_t i = 0;
      while (!done.load(std::memory_order_relaxed)) {
        const int l = m.level();
        if (l < 0 || l > kMaxLevel) ++bad_level;
        const int p = personalise(7);
        if (p != 7 && p != -1) ++bad_wrapper;
        const int g = tag(1);
        if (g != 2 && g != -2) ++bad_wrapper;
        log();
        if (gate.enabled() && gate.name().empty()) ++bad_wrapper;
        if (++i % 64 == 0) (void)m.Enabled(FeatureNames()[i % 6]);
        if (i % 256 == 0) std::this_thread::yield();
      }
    });
  }

  // Alternates the two configs until the observer is done (and at least
  // 200 times), so the two always overlap whatever the scheduling.
  std::atomic<bool> observer_done{false};
  std::atomic<int> failed_reloads{0};
  std::uint64_t reloads = 0;
  std::thread reloader([&] {
    const DegradationConfig a = ConfigA();
    const DegradationConfig b = ConfigB();
    while (reloads < 200 || !observer_done.load()) {
      if (!m.Reload(reloads % 2 == 0 ? b : a).ok()) ++failed_reloads;
      ++reloads;
      clock.Advance(absl::Milliseconds(7));
    }
  });

  // Bursts of load, then quiet long enough for staged recovery; runs
  // alongside the monitor.
  std::atomic<int> failed_observes{0};
  std::thread observer([&] {
    std::mt19937 rng(20260101);
    std::uniform_real_distribution<double> high(60.0, 100.0);
    std::uniform_real_distribution<double> low(0.0, 30.0);
    std::uniform_real_distribution<double> queue(0.0, 400.0);
    // At least 4000 samples, and on until the monitor has polled 20 times.
    for (int i = 0; i < 4000 || source_calls.load() < 20; ++i) {
      const double gpu = i % 150 < 10 ? high(rng) : low(rng);
      absl::Status s =
          i % 3 == 0
              ? m.ObserveBatch(
                    {{"gpu", gpu}, {"queue", i % 150 < 10 ? queue(rng) : 0.0}})
              : m.Observe("gpu", gpu);
      if (!s.ok()) ++failed_observes;
      if (i % 10 == 0) m.Evaluate();
      clock.Advance(absl::Milliseconds(3));
    }
    observer_done = true;
  });

  observer.join();
  reloader.join();
  m.Stop();
  done = true;
  for (std::thread& r : readers) r.join();

  EXPECT_EQ(failed_reloads.load(), 0);
  EXPECT_EQ(failed_observes.load(), 0);
  EXPECT_EQ(bad_level.load(), 0);
  EXPECT_EQ(bad_wrapper.load(), 0);
  EXPECT_EQ(bad_observed.load(), 0);
  EXPECT_EQ(m.reloads(), reloads + 1);
  EXPECT_EQ(m.rejected_reloads(), 0u);
  EXPECT_GT(m.transitions(), 0u);
  ExpectQuiescentInvariants(m, recorder, gates);
}

TEST(DegradationManagerConcurrencyTest, OverridesSignalsAndReentrantObservers) {
  FakeClock clock;
  Recorder recorder;
  DegradationManager m(OptionsFor(&clock, &recorder));
  ASSERT_TRUE(m.Reload(ConfigA()).ok());
  std::atomic<int> callbacks{0};
  m.AddObserver([&](const LevelChange& c) {
    recorder.OnChange(c);
    // Calls back into the manager from whichever thread delivers.
    (void)m.level();
    (void)m.Enabled("cache_refresh");
    if (c.to == kMaxLevel) (void)m.Observe("queue", 0.0);
    ++callbacks;
  });
  std::vector<FeatureGate> gates;
  for (const std::string& f : FeatureNames()) gates.push_back(m.Feature(f));

  std::atomic<int> errors{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937 rng(1000u + static_cast<unsigned>(t));
      std::uniform_real_distribution<double> gpu(0.0, 100.0);
      for (int i = 0; i < 3000; ++i) {
        if (!m.Observe("gpu", gpu(rng)).ok()) ++errors;
        if (i % 5 == 0) clock.Advance(absl::Milliseconds(50));
      }
    });
  }
  writers.emplace_back([&] {
    std::mt19937 rng(77);
    std::uniform_int_distribution<int> level(0, kMaxLevel);
    std::uniform_int_distribution<int> ttl_ms(1, 300);
    for (int i = 0; i < 1500; ++i) {
      switch (i % 4) {
        case 0:
        case 1:
          if (!m.ForceLevel(level(rng), absl::Milliseconds(ttl_ms(rng))).ok()) {
            ++errors;
          }
          break;
        case 2:
          m.ClearOverride();
          break;
        default:
          (void)m.forced_level();
      }
      clock.Advance(absl::Milliseconds(20));
    }
  });
  std::atomic<bool> done{false};
  std::atomic<int> bad_level{0};
  std::thread reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      const int l = m.level();
      if (l < 0 || l > kMaxLevel) ++bad_level;
      for (const FeatureGate& g : gates) (void)g.enabled();
      std::this_thread::yield();
    }
  });
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  m.ClearOverride();

  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(bad_level.load(), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(callbacks.load()), m.transitions());
  ExpectQuiescentInvariants(m, recorder, gates);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
