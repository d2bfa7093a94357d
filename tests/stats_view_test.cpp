// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of stats_view.hpp: the old view names are StatsView aliases (source
// compatibility), a view cannot be destroyed through its interface,
// detail::OwnerView reads its owner live (through `stats`, another reader,
// or a derived interface), and an attachment is destroyed through its base.

#include "degrade/stats_view.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "degrade/hedge_stats.hpp"
#include "degrade/hot_list_stats.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/retry_stats.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace {

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

}  // namespace
}  // namespace degrade
