// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// config.hpp is now an umbrella of config_parse.hpp and config_watcher.hpp:
// code that includes it alone still gets the parser, the file loader,
// ReloadJson and the watcher. The behaviour is tested in
// config_parse_test.cpp and config_watcher_test.cpp.

#include "degrade/config.hpp"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

constexpr absl::string_view kOneLevel =
    R"({"degradation": {"level1": {"trigger": {"q": 1}}}})";

TEST(ConfigHeaderTest, TheUmbrellaGivesTheParserAndTheWatcher) {
  absl::StatusOr<DegradationConfig> parsed =
      ParseDegradationConfig(kOneLevel, "umbrella");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(kMaxConfigBytes, std::size_t{1} << 20);

  ManagerOptions options;
  options.log_sink = [](absl::string_view) {};
  DegradationManager manager(options);
  EXPECT_TRUE(ReloadJson(manager, kOneLevel, "umbrella").ok());
  EXPECT_EQ(manager.num_levels(), 1);

  const std::string missing = ::testing::TempDir() + "/config_test_nope.json";
  EXPECT_TRUE(absl::IsNotFound(LoadDegradationConfigFile(missing).status()));
  ConfigFileWatcher watcher(missing, &manager);
  const absl::Status polled = watcher.PollOnce();
  EXPECT_TRUE(absl::IsNotFound(polled)) << polled;
  EXPECT_THAT(std::string(polled.message()), HasSubstr("config file"));
  EXPECT_EQ(manager.num_levels(), 1);  // the last good config keeps serving
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
