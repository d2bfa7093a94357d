// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Hostile lifetimes and threads around the generic telemetry seam: many
// threads counting on ShardedCounts while waves of threads exit and their
// slots are reused (totals stay exact); scrapes racing the construction and
// destruction of exported components with the same name; a registry
// destroyed before its components; the process default swapped while
// components attach. Nothing sleeps.

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/control_watcher.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(AttackConcurrencyTest,
     ShardedCountsStayExactWhileThreadsExitAndSlotsAreReused) {
  detail::ShardedCounts<2> counts;
  const int wide = static_cast<int>(detail::ShardArraySize()) + 3;
  constexpr int kWaves = 6;
  constexpr uint64_t kAdds = 2000;
  // Long-lived writers keep their slots across the waves.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> long_lived_adds{0};
  std::vector<std::thread> steady;
  for (int i = 0; i < 2; ++i) {
    steady.emplace_back([&] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        counts.Add(0);
        ++n;
      }
      long_lived_adds.fetch_add(n);
    });
  }
  for (int wave = 0; wave < kWaves; ++wave) {
    // Past the exclusive slots: some threads land on the shared shards.
    std::vector<std::thread> threads;
    for (int t = 0; t < wide; ++t) {
      threads.emplace_back([&] {
        for (uint64_t i = 0; i < kAdds; ++i) counts.Add(1, 3);
      });
    }
    for (std::thread& t : threads) t.join();
  }
  stop.store(true);
  for (std::thread& t : steady) t.join();
  EXPECT_EQ(counts.Load(1), uint64_t{3} * kAdds * kWaves * wide);
  EXPECT_EQ(counts.Load(0), long_lived_adds.load());
}

bool ParseableJson(const std::string& s) { return nlohmann::json::accept(s); }

// Whether two samples of a Prometheus exposition have the same series.
bool HasDuplicateSeries(const std::string& prom) {
  std::set<std::string> series;
  for (absl::string_view line : absl::StrSplit(prom, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (!series.insert(std::string(line.substr(0, line.rfind(' ')))).second) {
      return true;
    }
  }
  return false;
}

TEST(AttackConcurrencyTest, ScrapesRaceComponentsOfOneNameComingAndGoing) {
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  MetricsRegistry registry;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string prom = registry.RenderPrometheus();
      if (HasDuplicateSeries(prom)) bad.fetch_add(1);
      if (!ParseableJson(registry.RenderJson())) bad.fetch_add(1);
    }
  });
  for (int i = 0; i < 300; ++i) {
    FleetControl::Options o;
    o.clock = &clock;
    o.log_sink = [](absl::string_view) {};
    o.metrics = &registry;
    o.name = "fleet";
    auto a = std::make_unique<FleetControl>(o);
    auto b = std::make_unique<FleetControl>(o);
    ControlFileWatcherOptions wo;
    wo.clock = &clock;
    wo.metrics = &registry;
    wo.name = "fleet";
    ControlFileWatcher w("/nonexistent/degrade/ctl.json", a.get(), wo);
    w.PollOnce().IgnoreError();
    if (i % 2 == 0) {
      a.reset();
    } else {
      b.reset();
    }
  }
  done.store(true);
  scraper.join();
  EXPECT_EQ(bad.load(), 0);
  // Every component is gone: none of their series is left.
  const std::string prom = registry.RenderPrometheus();
  EXPECT_FALSE(absl::StrContains(prom, "degrade_fleet_version{")) << prom;
  EXPECT_FALSE(absl::StrContains(prom, "degrade_file_watcher_polls_total{"))
      << prom;
  // And the name is free again: a new one gets it, not "fleet#2".
  FleetControl::Options o;
  o.log_sink = [](absl::string_view) {};
  o.metrics = &registry;
  o.name = "fleet";
  FleetControl again(o);
  EXPECT_TRUE(
      absl::StrContains(registry.RenderPrometheus(),
                        "degrade_fleet_version{fleet_control=\"fleet\"}"));
}

TEST(AttackConcurrencyTest, ARegistryDestroyedBeforeItsComponents) {
  auto registry = std::make_unique<MetricsRegistry>();
  FleetControl::Options o;
  o.log_sink = [](absl::string_view) {};
  o.metrics = registry.get();
  auto control = std::make_unique<FleetControl>(o);
  EXPECT_TRUE(absl::StrContains(registry->RenderPrometheus(),
                                "degrade_fleet_version{"));
  registry.reset();  // "Registrations may outlive their registry"
  EXPECT_FALSE(control->Apply("{", "t").ok());
  EXPECT_EQ(control->stats().refused_malformed, 1u);
  control.reset();
}

TEST(AttackConcurrencyTest, TheDefaultSwappedWhileComponentsAttach) {
  MetricsRegistry one, two;
  const ScopedDefaultTelemetry scope(&one);
  std::atomic<bool> done{false};
  std::thread swapper([&] {
    for (uint64_t i = 0; !done.load(); ++i) {
      SetDefaultTelemetry(i % 3 == 0 ? &one : i % 3 == 1 ? &two : nullptr);
    }
  });
  std::vector<std::unique_ptr<FleetControl>> controls;
  for (int i = 0; i < 200; ++i) {
    FleetControl::Options o;
    o.log_sink = [](absl::string_view) {};
    o.name = "f";
    controls.push_back(std::make_unique<FleetControl>(o));
  }
  done.store(true);
  swapper.join();
  SetDefaultTelemetry(&one);
  // Each attached to one registry at most: the names there are unique, and
  // together they are at most the components built.
  const auto count = [](const MetricsRegistry& r) {
    const nlohmann::json j = nlohmann::json::parse(r.RenderJson());
    for (const auto& family : j["metrics"]) {
      if (family["name"] == "degrade_fleet_version") {
        return family["samples"].size();
      }
    }
    return std::size_t{0};
  };
  EXPECT_LE(count(one) + count(two), controls.size());
  controls.clear();
  EXPECT_EQ(count(one), 0u);
  EXPECT_EQ(count(two), 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
