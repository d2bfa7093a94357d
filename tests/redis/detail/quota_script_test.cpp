// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// redis/detail/quota_script.hpp's reply check, without a server: what a
// proxy, a look-alike or a tampered script might answer instead of
// {grant, members, share, bucket}, each refused with INVALID_ARGUMENT
// naming the element and the value, so no lie hands out tokens.

#include "degrade/redis/detail/quota_script.hpp"

#include <hiredis/hiredis.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::detail::redis::LeaseReply;
using ::degrade::detail::redis::ParseLeaseReply;
using ::testing::HasSubstr;

// Owns hand-built hiredis replies.
class LeaseReplies {
 public:
  const redisReply* Str(std::string s, int type = REDIS_REPLY_STRING) {
    redisReply& r = New(type);
    strings_.push_back(std::move(s));
    r.str = strings_.back().data();
    r.len = strings_.back().size();
    return &r;
  }
  const redisReply* Int(long long v) {
    redisReply& r = New(REDIS_REPLY_INTEGER);
    r.integer = v;
    return &r;
  }
  const redisReply* Array(std::vector<const redisReply*> elements) {
    redisReply& r = New(REDIS_REPLY_ARRAY);
    arrays_.emplace_back();
    for (const redisReply* e : elements) {
      arrays_.back().push_back(const_cast<redisReply*>(e));
    }
    r.elements = arrays_.back().size();
    r.element = arrays_.back().data();
    return &r;
  }
  const redisReply* Lease(long long grant, long long members, std::string share,
                          std::string bucket = "10",
                          std::string fleet_limit = "600") {
    return Array({Int(grant), Int(members), Str(std::move(share)),
                  Str(std::move(bucket)), Str(std::move(fleet_limit))});
  }

 private:
  redisReply& New(int type) {
    replies_.emplace_back();
    redisReply& r = replies_.back();
    r = redisReply{};
    r.type = type;
    return r;
  }
  std::deque<redisReply> replies_;
  std::deque<std::string> strings_;
  std::deque<std::vector<redisReply*>> arrays_;
};

absl::StatusOr<LeaseReply> Parse(const redisReply* r) {
  return ParseLeaseReply(*r, "quota 'q'", "EVALSHA", /*max_grant=*/1000,
                         /*limit=*/600);
}

TEST(QuotaScriptTest, AWellFormedLeaseIsRead) {
  LeaseReplies b;
  absl::StatusOr<LeaseReply> r =
      Parse(b.Lease(120, 3, "199.5", "42.25", "400"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->granted, 120);
  EXPECT_EQ(r->members, 3);
  EXPECT_DOUBLE_EQ(r->share, 199.5);
  EXPECT_DOUBLE_EQ(r->bucket, 42.25);
  EXPECT_DOUBLE_EQ(r->fleet_limit, 400);
}

TEST(QuotaScriptTest, EveryLieIsRefusedNamingTheElement) {
  LeaseReplies b;
  const struct {
    const redisReply* reply;
    const char* says;
  } lies[] = {
      {b.Int(5), "an integer, expected an array of 5"},
      {b.Array({b.Int(1), b.Int(1), b.Str("1")}), "an array of 3 elements"},
      {b.Array({b.Int(1), b.Int(1), b.Str("1"), b.Str("1")}),
       "an array of 4 elements"},
      {b.Array({b.Str("10"), b.Int(1), b.Str("1"), b.Str("1"), b.Str("1")}),
       "grant [0] as a bulk string"},
      {b.Array({b.Int(10), b.Str("3"), b.Str("1"), b.Str("1"), b.Str("1")}),
       "members [1] as a bulk string"},
      {b.Array({b.Int(10), b.Int(3), b.Int(1), b.Str("1"), b.Str("1")}),
       "share [2] as an integer"},
      {b.Array({b.Int(10), b.Int(3), b.Str("1"), nullptr, b.Str("1")}),
       "bucket [3] as nothing"},
      {b.Array({b.Int(10), b.Int(3), b.Str("1"), b.Str("1"), b.Int(600)}),
       "fleet limit [4] as an integer"},
      {b.Lease(-5, 3, "1"), "a grant of -5 tokens, outside [0, 1000]"},
      {b.Lease(1001, 3, "1"), "a grant of 1001 tokens"},
      {b.Lease(10, 0, "1"), "0 members, expected at least 1"},
      {b.Lease(10, -2, "1"), "-2 members"},
      {b.Lease(10, 3, "nan"), "a share of 'nan'"},
      {b.Lease(10, 3, "inf"), "a share of 'inf'"},
      {b.Lease(10, 3, "-1"), "a share of '-1'"},
      {b.Lease(10, 3, "601"), "a share of '601' tokens/s, outside [0, 600]"},
      {b.Lease(10, 3, "lots"), "a share of 'lots'"},
      {b.Lease(10, 3, "1", "x"), "a bucket of 'x'"},
      {b.Lease(10, 3, "1", "1", "0"), "a fleet limit of '0'"},
      {b.Lease(10, 3, "1", "1", "nan"), "a fleet limit of 'nan'"},
      {b.Lease(10, 3, "1", "1", "601"),
       "a fleet limit of '601' tokens/s, outside (0, 600]"},
  };
  for (const auto& lie : lies) {
    absl::StatusOr<LeaseReply> r = Parse(lie.reply);
    ASSERT_FALSE(r.ok()) << lie.says;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(lie.says));
    EXPECT_THAT(r.status().message(), HasSubstr("quota 'q': EVALSHA"));
    EXPECT_THAT(r.status().message(), HasSubstr("the lease is ignored"));
  }
}

TEST(QuotaScriptTest, ErrorRepliesBecomeTheirStatuses) {
  LeaseReplies b;
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Parse(b.Str("WRONGTYPE Operation against a key", REDIS_REPLY_ERROR))
          .status()));
  EXPECT_TRUE(absl::IsUnavailable(
      Parse(b.Str("BUSY Redis is busy running a script", REDIS_REPLY_ERROR))
          .status()));
  EXPECT_TRUE(absl::IsUnauthenticated(
      Parse(b.Str("NOAUTH Authentication required.", REDIS_REPLY_ERROR))
          .status()));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
