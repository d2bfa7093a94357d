// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/fallback/snapshot_cell.hpp: the serving state DefaultFeatures and
// HotList share. Before the first install it refuses with its own message; an
// install swaps the value (old snapshots stay valid) and records when; a
// refused install or a failure never touches what serves and is counted;
// readers racing installs see whole values only.

#include "degrade/detail/fallback/snapshot_cell.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Cell = detail::SnapshotCell<std::vector<int>>;
using ::testing::ElementsAre;

std::shared_ptr<const std::vector<int>> Ints(std::vector<int> v) {
  return std::make_shared<const std::vector<int>>(std::move(v));
}

TEST(SnapshotCellTest, RefusesBeforeTheFirstInstall) {
  const Cell cell("nothing yet");
  EXPECT_EQ(cell.snapshot(), nullptr);
  EXPECT_EQ(cell.Get().status(), absl::FailedPreconditionError("nothing yet"));
  EXPECT_EQ(cell.Copy().status(), absl::FailedPreconditionError("nothing yet"));
  EXPECT_EQ(cell.snapshot_and_time().second, absl::InfinitePast());
  EXPECT_TRUE(cell.last_status().ok());
  EXPECT_EQ(cell.updates(), 0u);
  EXPECT_EQ(cell.failures(), 0u);
}

TEST(SnapshotCellTest, InstallSwapsAndRecordsWhen) {
  Cell cell("nothing yet");
  const absl::Time t1 = absl::FromUnixSeconds(100);
  ASSERT_TRUE(cell.Install(Ints({1, 2}), t1).ok());
  const auto first = cell.snapshot();
  ASSERT_TRUE(cell.Install(Ints({3})).ok());  // no time given
  EXPECT_THAT(*first, ElementsAre(1, 2));     // still valid, unchanged
  EXPECT_THAT(*cell.snapshot(), ElementsAre(3));
  EXPECT_EQ(cell.snapshot_and_time().second, absl::InfinitePast());
  ASSERT_TRUE(cell.Install(Ints({4}), t1 + absl::Seconds(1)).ok());
  EXPECT_EQ(cell.snapshot_and_time().second, t1 + absl::Seconds(1));
  absl::StatusOr<std::vector<int>> copy = cell.Copy();
  ASSERT_TRUE(copy.ok());
  EXPECT_THAT(*copy, ElementsAre(4));
  EXPECT_EQ(cell.updates(), 3u);
  const Cell::Stats stats = cell.stats();
  EXPECT_EQ(stats.snapshot, cell.snapshot());
  EXPECT_EQ(stats.updates, 3u);
  EXPECT_EQ(stats.failures, 0u);
  EXPECT_EQ(stats.installed_at, t1 + absl::Seconds(1));
}

TEST(SnapshotCellTest, RefusalsAndFailuresNeverTouchWhatServes) {
  Cell cell("nothing yet");
  // The check sees what serves: nothing, at first.
  std::vector<std::shared_ptr<const std::vector<int>>> seen;
  const auto record = [&seen](const auto& serving) {
    seen.push_back(serving);
    return absl::OkStatus();
  };
  ASSERT_TRUE(cell.Install(Ints({1, 2}), absl::InfinitePast(), record).ok());
  ASSERT_TRUE(cell.Install(Ints({3, 4}), absl::InfinitePast(), record).ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], nullptr);
  EXPECT_THAT(*seen[1], ElementsAre(1, 2));
  const auto serving = cell.snapshot();
  ASSERT_TRUE(cell.Install(Ints({1, 2, 3}), absl::InfinitePast(),
                           [](const auto&) {
                             return absl::InvalidArgumentError("refused");
                           })
                  .code() == absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cell.snapshot(), serving);
  EXPECT_EQ(cell.last_status(), absl::InvalidArgumentError("refused"));

  EXPECT_EQ(cell.Fail(absl::UnavailableError("down")),
            absl::UnavailableError("down"));
  EXPECT_EQ(cell.snapshot(), serving);
  EXPECT_EQ(cell.last_status(), absl::UnavailableError("down"));
  EXPECT_EQ(cell.updates(), 2u);
  EXPECT_EQ(cell.failures(), 2u);

  ASSERT_TRUE(cell.Install(Ints({7})).ok());
  EXPECT_TRUE(cell.last_status().ok()) << "a success clears the last status";
}

TEST(SnapshotCellTest, ConcurrentReadersSeeWholeValues) {
  Cell cell("nothing yet");
  ASSERT_TRUE(cell.Install(Ints(std::vector<int>(512, 0))).ok());
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        absl::StatusOr<std::vector<int>> v = cell.Copy();
        if (!v.ok() || v->size() != 512) {
          torn.fetch_add(1);
          continue;
        }
        for (int x : *v) {
          if (x != v->front()) torn.fetch_add(1);
        }
        (void)cell.stats();
      }
    });
  }
  for (int i = 1; i <= 200; ++i) {
    EXPECT_TRUE(cell.Install(Ints(std::vector<int>(512, i))).ok());
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(cell.updates(), 201u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
