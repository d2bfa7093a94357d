// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// redis/quota_options.hpp alone: a configuration is checked without a
// quota (ClusterQuota's own tests cover each field through Create).

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/redis/quota_options.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using redis::ClusterQuotaOptions;
using redis::ValidateClusterQuotaOptions;
using ::testing::HasSubstr;

ClusterQuotaOptions MinimalQuotaOptions() {
  ClusterQuotaOptions o;
  o.name = "fs";
  o.limit_per_second = 2000;
  o.expected_members = 20;
  return o;
}

TEST(RedisQuotaOptionsTest, TheDocumentedMinimumIsValid) {
  EXPECT_TRUE(ValidateClusterQuotaOptions(MinimalQuotaOptions()).ok());
}

TEST(RedisQuotaOptionsTest, AFieldThatIsLeftUnsetIsNamed) {
  ClusterQuotaOptions o = MinimalQuotaOptions();
  o.expected_members = 0;
  absl::Status s = ValidateClusterQuotaOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("expected_members"));
  EXPECT_THAT(s.message(), HasSubstr("'fs'"));
}

// The connection's rules are the hot list's, reported under the quota's
// name; the quota adds that a lease call must fit in a refresh period.
TEST(RedisQuotaOptionsTest, ConnectionRulesAreReportedUnderTheQuotasName) {
  ClusterQuotaOptions o = MinimalQuotaOptions();
  o.port = 70000;
  absl::Status s = ValidateClusterQuotaOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("redis cluster quota 'fs'"));
  o = MinimalQuotaOptions();
  o.command_timeout = absl::Seconds(1);
  s = ValidateClusterQuotaOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("command_timeout"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
