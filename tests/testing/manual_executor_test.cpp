// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of testing/manual_executor.hpp: nothing runs until told, in the
// order asked, tasks may submit tasks, and refusing refuses.

#include "degrade/testing/manual_executor.hpp"

#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace testing {
namespace DEGRADE_TEST_UNIT {

TEST(ManualExecutorTest, RunsNothingUntilToldThenInTheOrderAsked) {
  ManualExecutor ex;
  std::vector<int> ran;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ex.Submit([&ran, i] { ran.push_back(i); }));
  }
  EXPECT_TRUE(ran.empty());
  EXPECT_EQ(ex.pending(), 3u);
  EXPECT_TRUE(ex.RunLast());
  EXPECT_TRUE(ex.RunNext());
  EXPECT_EQ(ran, (std::vector<int>{2, 0}));
  auto task = ex.Take();
  ASSERT_TRUE(task);
  EXPECT_EQ(ex.pending(), 0u);
  task();
  EXPECT_EQ(ran, (std::vector<int>{2, 0, 1}));
  EXPECT_FALSE(ex.RunNext());
  EXPECT_FALSE(ex.Take());
  EXPECT_EQ(ex.submitted(), 3u);
}

TEST(ManualExecutorTest, RunAllRunsWhatTasksSubmit) {
  ManualExecutor ex;
  int n = 0;
  ex.Submit([&] {
    ++n;
    ex.Submit([&] { ++n; });
  });
  EXPECT_EQ(ex.RunAll(), 2u);
  EXPECT_EQ(n, 2);
}

TEST(ManualExecutorTest, RefusesWhileRefusing) {
  ManualExecutor ex;
  ex.set_refusing(true);
  EXPECT_FALSE(ex.Submit([] {}));
  EXPECT_EQ(ex.refused(), 1u);
  ex.set_refusing(false);
  EXPECT_TRUE(ex.Submit([] {}));
  EXPECT_EQ(ex.pending(), 1u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace testing
}  // namespace degrade
