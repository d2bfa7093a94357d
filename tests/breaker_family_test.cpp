// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0

#include "degrade/breaker_family.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

absl::StatusOr<int> Fail() { return absl::UnavailableError("host down"); }
absl::StatusOr<int> Succeed() { return 1; }

class BreakerFamilyTest : public ::testing::Test {
 protected:
  BreakerSettings Settings() {
    BreakerSettings s;
    s.name = "recall";
    s.clock = &clock_;
    s.ready_to_trip = trip::ConsecutiveFailures(3);
    return s;
  }
  FakeClock clock_;
};

TEST_F(BreakerFamilyTest, OneBreakerPerKeyNamedAfterIt) {
  BreakerFamily<std::string, int> family(Settings());
  auto a = family.Get("cf");
  auto b = family.Get("vector");
  EXPECT_NE(a, b);
  EXPECT_EQ(family.Get("cf"), a);
  EXPECT_EQ(a->name(), "recall/cf");
  EXPECT_EQ(b->name(), "recall/vector");
  EXPECT_EQ(family.size(), 2u);
  EXPECT_EQ(family.created(), 2u);
}

TEST_F(BreakerFamilyTest, OneSickKeyTripsOnlyItsOwnBreaker) {
  BreakerFamily<int, int> family(Settings());
  for (int i = 0; i < 3; ++i) (void)family.Get(7)->Execute(Fail);
  EXPECT_EQ(family.Get(7)->state(), State::kOpen);
  EXPECT_TRUE(IsBreakerOpen(family.Get(7)->Execute(Succeed).status()));
  EXPECT_EQ(family.Get(8)->state(), State::kClosed);
  EXPECT_TRUE(family.Get(8)->Execute(Succeed).ok());
  EXPECT_EQ(family.Get(7)->name(), "recall/7");
}

TEST_F(BreakerFamilyTest, TheBoundEvictsTheLeastRecentlyUsed) {
  FamilyOptions o;
  o.max_breakers = 3;
  BreakerFamily<int, int> family(Settings(), o);
  (void)family.Get(1);
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(2);
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(3);
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(1);  // 2 is now the least recently used
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(4);
  EXPECT_EQ(family.size(), 3u);
  EXPECT_EQ(family.Find(2), nullptr);
  EXPECT_NE(family.Find(1), nullptr);
  EXPECT_NE(family.Find(3), nullptr);
  EXPECT_NE(family.Find(4), nullptr);
  EXPECT_EQ(family.evicted(), 1u);
}

TEST_F(BreakerFamilyTest, EvictionPrefersBreakersNobodyHolds) {
  FamilyOptions o;
  o.max_breakers = 2;
  BreakerFamily<int, int> family(Settings(), o);
  auto held = family.Get(1);  // oldest, but in use
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(2);
  clock_.Advance(absl::Seconds(1));
  (void)family.Get(3);
  EXPECT_EQ(family.Find(1), held);
  EXPECT_EQ(family.Find(2), nullptr);
}

TEST_F(BreakerFamilyTest, AnEvictedBreakerLivesOnForItsHolder) {
  FamilyOptions o;
  o.max_breakers = 1;
  BreakerFamily<int, int> family(Settings(), o);
  auto first = family.Get(1);
  for (int i = 0; i < 3; ++i) (void)first->Execute(Fail);
  (void)family.Get(2);  // evicts 1 even though it is held: the bound wins
  EXPECT_EQ(family.size(), 1u);
  EXPECT_EQ(first->state(), State::kOpen);  // still usable, still open
  // The family forgot it: key 1 starts over, closed.
  auto again = family.Get(1);
  EXPECT_NE(again, first);
  EXPECT_EQ(again->state(), State::kClosed);
}

TEST_F(BreakerFamilyTest, IdleBreakersAreEvictedAfterTheirTtl) {
  FamilyOptions o;
  o.idle_ttl = absl::Minutes(10);
  BreakerFamily<int, int> family(Settings(), o);
  (void)family.Get(1);
  (void)family.Get(2);
  clock_.Advance(absl::Minutes(5));
  (void)family.Get(2);  // keeps 2 fresh
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(family.EvictIdle(), 0u);  // 1 is idle exactly the ttl: kept
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(family.EvictIdle(), 1u);
  EXPECT_EQ(family.Find(1), nullptr);
  EXPECT_NE(family.Find(2), nullptr);
  // Creating a breaker also sweeps idle ones.
  clock_.Advance(absl::Minutes(11));
  (void)family.Get(3);
  EXPECT_EQ(family.size(), 1u);
}

// Issue 13 (time at the extremes): `now - last_used` overflowed when a
// breaker was last used with the clock at InfinitePast (INT64_MIN ns) and
// swept at the Unix epoch or later: the wrapped difference was negative, so
// the breaker was never idle. Found by reading, after the settings fuzzer.
TEST_F(BreakerFamilyTest, IdleEvictionSurvivesAClockAtTheExtremes) {
  FamilyOptions o;
  o.idle_ttl = absl::Minutes(10);
  BreakerFamily<int, int> family(Settings(), o);
  clock_.Set(absl::InfinitePast());
  (void)family.Get(1);
  clock_.Set(absl::UnixEpoch() + absl::Hours(1));
  EXPECT_EQ(family.EvictIdle(), 1u);
  EXPECT_EQ(family.Find(1), nullptr);
  // And back: a clock stepped back never makes a breaker idle.
  (void)family.Get(2);
  clock_.Set(absl::InfinitePast());
  EXPECT_EQ(family.EvictIdle(), 0u);
  EXPECT_NE(family.Find(2), nullptr);
}

TEST_F(BreakerFamilyTest, ZeroMaxMeansTheDefaultBound) {
  BreakerFamily<int, int> family(Settings());
  for (int i = 0; i < 1100; ++i) (void)family.Get(i);
  EXPECT_EQ(family.size(), 1024u);
}

struct HostPort {
  std::string host;
  int port;
  bool operator==(const HostPort& o) const {
    return host == o.host && port == o.port;
  }
};
struct HostPortHash {
  std::size_t operator()(const HostPort& k) const {
    return std::hash<std::string>()(k.host) ^ static_cast<std::size_t>(k.port);
  }
};

TEST_F(BreakerFamilyTest, CustomKeysNeedANameFunction) {
  BreakerFamily<HostPort, int, HostPortHash> family(
      Settings(), FamilyOptions{},
      [](const HostPort& k) { return k.host + ":" + std::to_string(k.port); });
  EXPECT_EQ(family.Get({"10.0.0.1", 8080})->name(), "recall/10.0.0.1:8080");
}

// The key-name function calling back into its family, or throwing (issue
// 13, re-entrancy). It ran under the family's writer lock, so a call to
// Find(), size() or Get() waited for itself, and a throw escaped Get().
TEST_F(BreakerFamilyTest, TheKeyNameFunctionMayCallTheFamilyOrThrow) {
  using Family = BreakerFamily<std::string, int>;
  struct Case {
    const char* name;
    std::function<std::string(Family&, const std::string&)> key_name;
    const char* breaker_name;
  };
  const std::vector<Case> cases = {
      {"Find",
       [](Family& f, const std::string& k) {
         return f.Find(k) == nullptr ? k : "found";
       },
       "recall/cf"},
      {"size",
       [](Family& f, const std::string& k) {
         return k + std::to_string(f.size());
       },
       "recall/cf0"},
      {"Get of another key",
       [](Family& f, const std::string& k) {
         return k == "cf" ? f.Get("other")->name() : k;
       },
       "recall/recall/other"},
      {"throws",
       [](Family&, const std::string& k) -> std::string {
         throw std::runtime_error("no name for " + k);
       },
       "recall/cf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Family* self = nullptr;
    Family family(Settings(), FamilyOptions{},
                  [&](const std::string& k) { return c.key_name(*self, k); });
    self = &family;
    EXPECT_EQ(family.Get("cf")->name(), c.breaker_name);
    EXPECT_EQ(family.Get("cf"), family.Find("cf"));
  }
}

TEST(BreakerFamilyConcurrencyTest, ConcurrentGetsAgreeAndStayBounded) {
  FakeClock clock;
  BreakerSettings s;
  s.name = "shards";
  s.clock = &clock;
  FamilyOptions o;
  o.max_breakers = 16;
  BreakerFamily<int, int> family(s, o);
  std::vector<std::thread> threads;
  std::atomic<uint64_t> calls{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < 5000; ++i) {
        auto b = family.Get(static_cast<int>(rng() % 24));
        if (b->Execute([] { return 1; }).ok()) calls.fetch_add(1);
        if (t == 0 && i % 100 == 0) clock.Advance(absl::Seconds(1));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(family.size(), 16u);
  EXPECT_EQ(calls.load(), 4u * 5000u);
  EXPECT_EQ(family.created() - family.evicted(), family.size());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
