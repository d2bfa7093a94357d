// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of hot_list_stats.hpp: the defaults, and that a HotList offers its
// view to the telemetry it is built with (and to nothing with
// NoTelemetry()), the view and HotList::stats() reading the live list.

#include "degrade/hot_list_stats.hpp"

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(HotListStatsTest, DefaultsSayNoSnapshotYet) {
  const HotListStats st;
  EXPECT_EQ(st.age, absl::InfiniteDuration());
  EXPECT_EQ(st.items, 0u);
  EXPECT_EQ(st.refreshes, 0u);
  EXPECT_EQ(st.failures, 0u);
}

class Spy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachHotList(
      const HotListView& h) override {
    view = &h;
    name = h.name();  // the view is readable inside Attach
    return nullptr;
  }
  const HotListView* view = nullptr;
  std::string name;
};

TEST(HotListStatsTest, AListOffersItsViewAndTheViewReadsItLive) {
  FakeClock clock;
  Spy spy;
  HotListOptions<std::string> o;
  o.name = "hot";
  o.top_n = 2;
  o.clock = &clock;
  o.metrics = &spy;
  HotList<std::string> list(std::move(o));
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.name, "hot");
  EXPECT_EQ(spy.view->stats().age, absl::InfiniteDuration());

  ASSERT_TRUE(list.Publish({"a", "b", "c"}).ok());
  EXPECT_FALSE(list.Publish({}).ok());  // refused: the previous one serves
  clock.Advance(absl::Seconds(30));
  const HotListStats st = spy.view->stats();
  EXPECT_EQ(st.items, 2u);  // top_n
  EXPECT_EQ(st.refreshes, 1u);
  EXPECT_EQ(st.failures, 1u);
  EXPECT_EQ(st.age, absl::Seconds(30));
  // The list answers the same without a telemetry.
  const HotListStats direct = list.stats();
  EXPECT_EQ(direct.items, st.items);
  EXPECT_EQ(direct.refreshes, st.refreshes);
  EXPECT_EQ(direct.failures, st.failures);
  EXPECT_EQ(direct.age, st.age);
}

TEST(HotListStatsTest, AClockSteppingBackNeverMakesTheAgeNegative) {
  FakeClock clock;
  HotListOptions<int> o;
  o.clock = &clock;
  o.metrics = NoTelemetry();
  HotList<int> list(o);
  ASSERT_TRUE(list.Publish({1, 2}).ok());
  clock.Set(clock.Now() - absl::Minutes(10));
  EXPECT_EQ(list.stats().age, absl::ZeroDuration());
  clock.Advance(absl::Minutes(10) + absl::Seconds(4));
  EXPECT_EQ(list.stats().age, absl::Seconds(4));
}

TEST(HotListStatsTest, NoTelemetryAttachesNothingAndTheDefaultDoes) {
  Spy spy;
  const ScopedDefaultTelemetry scope(&spy);
  HotListOptions<int> o;
  o.metrics = NoTelemetry();
  HotList<int> unobserved(o);
  EXPECT_EQ(spy.view, nullptr);
  o.metrics = nullptr;  // the default
  HotList<int> observed(o);
  EXPECT_NE(spy.view, nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
