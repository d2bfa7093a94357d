// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of stats_view.hpp: the old view names are StatsView aliases (source
// compatibility), a view cannot be destroyed through its interface,
// detail::OwnerView reads its owner live (through `stats`, another reader,
// or a derived interface), an attachment is destroyed through its base, and
// the generic seam: a ComponentView narrows to its own stats type only, and
// reaches a telemetry through Telemetry::AttachComponent.

#include "degrade/stats_view.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/strings/match.h"
#include "degrade/hedge_stats.hpp"
#include "degrade/hot_list_stats.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

// A namespace whose name merely contains the word: matched by text.
namespace degrade_test_anonymous_ads {
struct AdStats {
  int shown = 0;
};
}  // namespace degrade_test_anonymous_ads

namespace degrade {
namespace DEGRADE_TEST_UNIT {

// The eight views that were interfaces of their own are now one template.
static_assert(std::is_same_v<AdmissionView, StatsView<AdmissionStats>>);
static_assert(std::is_same_v<QueueView, StatsView<QueueStats>>);
static_assert(std::is_same_v<LimiterView, StatsView<LimiterStats>>);
static_assert(std::is_same_v<RetryBudgetView, StatsView<RetryBudgetStats>>);
static_assert(std::is_same_v<RetrierView, StatsView<RetrierStats>>);
static_assert(std::is_same_v<ThrottleView, StatsView<ThrottleStats>>);
static_assert(std::is_same_v<HedgeView, StatsView<HedgeStats>>);
static_assert(std::is_same_v<HotListView, StatsView<HotListStats>>);
// The manager's adds one function to the same shape.
static_assert(std::is_base_of_v<StatsView<ManagerStats>, ManagerView>);
static_assert(std::is_same_v<HedgeView::Stats, HedgeStats>);
// Owned by the component: never destroyed through the interface.
static_assert(!std::is_destructible_v<StatsView<HedgeStats>>);
static_assert(!std::is_destructible_v<ManagerView>);
static_assert(std::has_virtual_destructor_v<TelemetryAttachment>);

struct CounterStats {
  uint64_t hits = 0;
};

struct OtherStats {
  uint64_t hits = 0;
};

class Counter {
 public:
  explicit Counter(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  CounterStats stats() const { return CounterStats{hits_}; }
  CounterStats doubled() const { return CounterStats{2 * hits_}; }
  void Hit() { ++hits_; }

  const StatsView<CounterStats>& view() const { return view_; }

 private:
  std::string name_;
  uint64_t hits_ = 0;
  const detail::OwnerView<Counter, CounterStats> view_{this};
};

TEST(StatsViewTest, OwnerViewReadsItsOwnerLive) {
  Counter c("front");
  const StatsView<CounterStats>& v = c.view();
  EXPECT_EQ(v.name(), "front");
  EXPECT_EQ(&v.name(), &c.name());  // no copy of the name
  EXPECT_EQ(v.stats().hits, 0u);
  c.Hit();
  c.Hit();
  EXPECT_EQ(v.stats().hits, 2u);
}

TEST(StatsViewTest, OwnerViewUsesTheReaderItIsGiven) {
  Counter c("front");
  const detail::OwnerView<Counter, CounterStats> v(&c, &Counter::doubled);
  c.Hit();
  EXPECT_EQ(v.stats().hits, 2u);
  EXPECT_EQ(v.name(), "front");
}

// A view interface with more than name() and stats(), as ManagerView.
class FlaggedView : public StatsView<CounterStats> {
 public:
  virtual bool flagged() const = 0;

 protected:
  ~FlaggedView() = default;
};

class FlaggedCounterView final
    : public detail::OwnerView<Counter, CounterStats, FlaggedView> {
 public:
  using OwnerView::OwnerView;
  bool flagged() const override { return owner()->stats().hits > 1; }
};

TEST(StatsViewTest, ADerivedInterfaceAddsItsFunctionsThroughOwner) {
  Counter c("front");
  const FlaggedCounterView concrete(&c);
  const FlaggedView& v = concrete;
  EXPECT_FALSE(v.flagged());
  c.Hit();
  c.Hit();
  EXPECT_TRUE(v.flagged());
  EXPECT_EQ(v.stats().hits, 2u);
  EXPECT_EQ(v.name(), "front");
}

TEST(StatsViewTest, AnAttachmentIsDestroyedThroughItsBase) {
  bool destroyed = false;
  struct Mine : TelemetryAttachment {
    explicit Mine(bool* d) : d(d) {}
    ~Mine() override { *d = true; }
    bool* d;
  };
  std::unique_ptr<TelemetryAttachment> a = std::make_unique<Mine>(&destroyed);
  EXPECT_FALSE(destroyed);
  a.reset();
  EXPECT_TRUE(destroyed);
}

TEST(StatsViewTest, AComponentViewNarrowsToItsOwnStatsTypeOnly) {
  Counter c("front");
  c.Hit();
  const ComponentView& any = c.view();
  const StatsView<CounterStats>* mine = any.As<CounterStats>();
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine, &c.view());
  EXPECT_EQ(mine->stats().hits, 1u);
  // Same layout, another type: not the same component.
  EXPECT_EQ(any.As<OtherStats>(), nullptr);
  EXPECT_EQ(any.As<HedgeStats>(), nullptr);
  EXPECT_EQ(any.name(), "front");
}

// Shared objects built with -fvisibility=hidden each have their own copy of
// StatsKey<S>(): its text must still match, except for types with internal
// linkage, which two files may spell alike.
TEST(StatsViewTest, StatsKeysMatchByTextAcrossCopiesExceptInternalTypes) {
  const char* key = detail::StatsKey<HedgeStats>();
  EXPECT_EQ(key, detail::StatsKey<HedgeStats>());
  const std::string copy = key;  // as another shared object's copy would be
  EXPECT_TRUE(detail::SameStatsKey(key, copy.c_str())) << key;
  EXPECT_FALSE(detail::SameStatsKey(key, detail::StatsKey<QueueStats>()));
  const char* internal = detail::StatsKey<OtherStats>();
  const std::string internal_copy = internal;
  EXPECT_TRUE(detail::SameStatsKey(internal, internal));
  // OtherStats is in this file's own namespace: anonymous outside a unity
  // build, where it is matched by address only.
  if (absl::StrContains(internal, "{anonymous}") ||
      absl::StrContains(internal, "anonymous namespace")) {
    EXPECT_FALSE(detail::SameStatsKey(internal, internal_copy.c_str()));
  }
  const char* named = detail::StatsKey<degrade_test_anonymous_ads::AdStats>();
  const std::string named_copy = named;
  EXPECT_TRUE(detail::SameStatsKey(named, named_copy.c_str())) << named;
  struct Local {};
  const std::string local = detail::StatsKey<Local>();
  EXPECT_FALSE(detail::SameStatsKey(detail::StatsKey<Local>(), local.c_str()))
      << local;
  // A type of the global namespace: by address only (Clang spells a local
  // class the same way).
  const std::string global = detail::StatsKey<int>();
  EXPECT_FALSE(detail::SameStatsKey(detail::StatsKey<int>(), global.c_str()))
      << global;
}

// A telemetry that knows one stats type, as a service's own bridge would.
class CounterSpy final : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& view) override {
    ++offered;
    const StatsView<CounterStats>* counter = view.As<CounterStats>();
    if (counter == nullptr) return nullptr;
    seen = counter;
    return std::make_unique<TelemetryAttachment>();
  }
  int offered = 0;
  const StatsView<CounterStats>* seen = nullptr;
};

TEST(StatsViewTest, AComponentReachesATelemetryThroughTheGenericEntry) {
  CounterSpy spy;
  Counter c("front");
  std::unique_ptr<TelemetryAttachment> a =
      detail::Attach(&spy, &Telemetry::AttachComponent, c.view());
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(spy.offered, 1);
  EXPECT_EQ(spy.seen, &c.view());

  // A view of a type the spy does not know is offered and declined.
  const detail::OwnerView<Counter, CounterStats> counter_view(&c);
  struct Other {
    const std::string& name() const { return name_; }
    OtherStats stats() const { return {}; }
    std::string name_ = "other";
  } other;
  const detail::OwnerView<Other, OtherStats> other_view(&other);
  EXPECT_EQ(detail::Attach(&spy, &Telemetry::AttachComponent, other_view),
            nullptr);
  EXPECT_EQ(spy.offered, 2);

  // NoTelemetry() offers it to nobody.
  EXPECT_EQ(
      detail::Attach(NoTelemetry(), &Telemetry::AttachComponent, counter_view),
      nullptr);
  EXPECT_EQ(spy.offered, 2);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
