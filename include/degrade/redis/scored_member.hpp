// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: redis/scored_member.hpp
// -----------------------------------------------------------------------------
//
// `redis::ScoredMember`: one entry of a Redis sorted set, the member
// (binary-safe) and its score, as `redis::HotListSource::Fetch()` returns
// them, best first. Its own header so that the reply parser
// (redis/detail/reply.hpp) and the adapter (redis/hot_list_source.hpp) share
// it without either including the other's internals.
//
//   degrade::HotListOptions<degrade::redis::ScoredMember> o;
//   o.source = (*redis)->SourceFor<degrade::redis::ScoredMember>();
//   degrade::HotList<degrade::redis::ScoredMember> hot(std::move(o));
//   // After a refresh, hot.snapshot()->front() is the best item:
//   // its .member and its .score.
//
// A plain value: thread-compatible.

#ifndef DEGRADE_REDIS_SCORED_MEMBER_HPP_
#define DEGRADE_REDIS_SCORED_MEMBER_HPP_

#include <string>

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace redis {

// ScoredMember
//
// One entry of the sorted set: the member (binary-safe) and its score.
struct ScoredMember {
  std::string member;
  double score = 0;

  friend bool operator==(const ScoredMember& a, const ScoredMember& b) {
    return a.member == b.member && a.score == b.score;
  }
  friend bool operator!=(const ScoredMember& a, const ScoredMember& b) {
    return !(a == b);
  }
};

}  // namespace redis
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_SCORED_MEMBER_HPP_
