// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// redis/detail/reply.hpp, without a server: hand-built hiredis replies of
// every shape a real server won't send (wrong types, odd counts, missing
// elements, bad scores, huge values), each turned into the status a caller
// acts on, with messages naming the key, the index and the value.

#include "degrade/redis/detail/reply.hpp"

#include <hiredis/hiredis.h>

#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "degrade/redis/hot_list_source.hpp"
#include "degrade/redis/scored_member.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace redis {
namespace DEGRADE_TEST_UNIT {

using ::degrade::detail::redis::ParseScoredMembers;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Owns hand-built hiredis replies, for the shapes a real server won't send.
class Replies {
 public:
  const redisReply* Str(std::string s) {
    redisReply& r = New(REDIS_REPLY_STRING);
    strings_.push_back(std::move(s));
    r.str = strings_.back().data();
    r.len = strings_.back().size();
    return &r;
  }
  const redisReply* Err(std::string s) {
    const redisReply* r = Str(std::move(s));
    const_cast<redisReply*>(r)->type = REDIS_REPLY_ERROR;
    return r;
  }
  const redisReply* Int(long long v) {
    redisReply& r = New(REDIS_REPLY_INTEGER);
    r.integer = v;
    return &r;
  }
  const redisReply* Nil() { return &New(REDIS_REPLY_NIL); }
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
  // member, score, member, score, ...
  const redisReply* Pairs(std::vector<std::string> texts) {
    std::vector<const redisReply*> e;
    for (std::string& t : texts) e.push_back(Str(std::move(t)));
    return Array(std::move(e));
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

absl::StatusOr<std::vector<ScoredMember>> Parse(const redisReply* r,
                                                std::size_t top_n = 200) {
  return ParseScoredMembers(*r, "redis x:1/0 key 'hot'", top_n);
}

TEST(RedisReplyParseTest, ReadsMembersAndScoresInOrder) {
  Replies r;
  absl::StatusOr<std::vector<ScoredMember>> got =
      Parse(r.Pairs({"b", "2.5", std::string("a\0z", 3), "-1", "c", "1e3"}));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(ScoredMember{"b", 2.5},
                                ScoredMember{std::string("a\0z", 3), -1},
                                ScoredMember{"c", 1000}));
}

TEST(RedisReplyParseTest, EmptyArrayIsNotFound) {
  Replies r;
  const absl::Status s = Parse(r.Array({})).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("key 'hot'"), HasSubstr("does not exist")));
}

TEST(RedisReplyParseTest, ErrorRepliesKeepRedisText) {
  Replies r;
  absl::Status s =
      Parse(r.Err("WRONGTYPE Operation against a key holding the wrong kind"))
          .status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("key 'hot'"), HasSubstr("WRONGTYPE"),
                    HasSubstr("not a sorted set")));
  s = Parse(r.Err("NOAUTH Authentication required.")).status();
  EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
  s = Parse(r.Err("LOADING Redis is loading the dataset in memory")).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;  // not ready: counts as down
  EXPECT_TRUE(IsRedisTransportFailure(s));
}

TEST(RedisReplyParseTest, MalformedRepliesAreNamed) {
  Replies r;
  struct Case {
    const redisReply* reply;
    std::string want;
  };
  const std::vector<Case> cases = {
      {r.Int(3), "answered an integer, expected an array"},
      {r.Nil(), "answered nil"},
      {r.Str("x"), "answered a bulk string"},
      {r.Pairs({"a", "1", "b"}), "array of 3 elements, expected an even"},
      {r.Pairs({"a", "3", "b", "2", "c", "1"}), "of at most 4"},
      {r.Array({r.Int(1), r.Str("1")}), "member [0]: the member is an integer"},
      {r.Array({r.Str("a"), r.Nil()}), "member [0]: the score is nil"},
      {r.Array({r.Str("a"), r.Array({})}), "the score is an array"},
  };
  for (const Case& c : cases) {
    const absl::Status s = Parse(c.reply, /*top_n=*/2).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.want << ": " << s;
    EXPECT_THAT(std::string(s.message()),
                AllOf(HasSubstr("key 'hot'"), HasSubstr(c.want)));
  }
}

TEST(RedisReplyParseTest, BadScoresNameTheIndexAndTheValue) {
  for (const std::string bad :
       {"abc", "inf", "-inf", "nan", "", "1.5x", "0x", "1e999"}) {
    Replies r;
    const absl::Status s = Parse(r.Pairs({"a", "1", "b", bad})).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << ": " << s;
    EXPECT_THAT(std::string(s.message()),
                AllOf(HasSubstr("key 'hot'"), HasSubstr("member [1] 'b'"),
                      HasSubstr(absl::StrCat("score '", bad, "'")),
                      HasSubstr("not a finite number")))
        << bad;
  }
}

TEST(RedisReplyParseTest, LongValuesAreCutInMessages) {
  Replies r;
  const std::string huge(1000, 'm');
  const absl::Status s = Parse(r.Pairs({huge, "x"})).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("... (1000 bytes)"));
  EXPECT_LT(s.message().size(), 300u);
}

TEST(RedisReplyTest, ErrorRepliesOfEveryKindGetTheirCode) {
  const struct {
    const char* text;
    absl::StatusCode code;
  } cases[] = {
      {"WRONGTYPE Operation", absl::StatusCode::kFailedPrecondition},
      {"NOAUTH Authentication required.", absl::StatusCode::kUnauthenticated},
      {"WRONGPASS invalid username-password pair",
       absl::StatusCode::kUnauthenticated},
      {"NOPERM this user has no permissions",
       absl::StatusCode::kUnauthenticated},
      {"LOADING Redis is loading", absl::StatusCode::kUnavailable},
      {"BUSY Redis is busy", absl::StatusCode::kUnavailable},
      {"MASTERDOWN Link with MASTER is down", absl::StatusCode::kUnavailable},
      {"TRYAGAIN Multiple keys request", absl::StatusCode::kUnavailable},
      {"CLUSTERDOWN The cluster is down", absl::StatusCode::kUnavailable},
      {"ERR unknown command", absl::StatusCode::kFailedPrecondition},
  };
  for (const auto& c : cases) {
    const absl::Status s =
        detail::redis::ErrorReplyStatus("redis x:1/0", "AUTH", c.text);
    EXPECT_EQ(s.code(), c.code) << c.text;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("redis x:1/0: AUTH refused: ", c.text)));
  }
}

TEST(RedisReplyTest, ExcerptsAreEscapedAndCut) {
  EXPECT_EQ(detail::redis::Excerpt("member"), "member");
  EXPECT_EQ(detail::redis::Excerpt("a\nb"), "a\\nb");
  EXPECT_EQ(detail::redis::Excerpt(std::string(64, 'm')), std::string(64, 'm'));
  EXPECT_EQ(detail::redis::Excerpt(std::string(65, 'm')),
            std::string(64, 'm') + "... (65 bytes)");
}

TEST(RedisReplyTest, ReplyTypesAreNamed) {
  EXPECT_STREQ(detail::redis::ReplyTypeName(REDIS_REPLY_STRING),
               "a bulk string");
  EXPECT_STREQ(detail::redis::ReplyTypeName(REDIS_REPLY_ARRAY), "an array");
  EXPECT_STREQ(detail::redis::ReplyTypeName(REDIS_REPLY_NIL), "nil");
  EXPECT_STREQ(detail::redis::ReplyTypeName(-1), "an unknown reply type");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace redis
}  // namespace degrade
