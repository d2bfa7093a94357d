// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: redis/detail/reply.hpp
// -----------------------------------------------------------------------------
//
// The hiredis side of the Redis adapter: owning handles for a connection and
// a reply, and the reading of replies into statuses and values. Every
// function is pure (it reads a reply someone else received), so the parsing
// rules are tested on hand-built replies without a server
// (tests/redis/detail/reply_test.cpp):
//
//   ParseScoredMembers   the RESP2 reply to ZREVRANGE key 0 N-1 WITHSCORES
//                        (member, score, member, score, ...) -> members with
//                        their scores, or INVALID_ARGUMENT / NOT_FOUND naming
//                        the index and the value at fault
//   ErrorReplyStatus     an error reply -> the status a caller acts on:
//                        WRONGTYPE FAILED_PRECONDITION, NOAUTH / WRONGPASS /
//                        NOPERM UNAUTHENTICATED, LOADING / BUSY / ...
//                        UNAVAILABLE (not ready counts as down)
//
//   detail::redis::ReplyPtr reply(static_cast<redisReply*>(
//       redisCommandArgv(c, argc, argv, lens)));
//   absl::StatusOr<std::vector<ScoredMember>> members =
//       detail::redis::ParseScoredMembers(*reply, where, top_n);
//
// Needs hiredis (the CMake target degrade::redis). Thread-safe: no state.

#ifndef DEGRADE_REDIS_DETAIL_REPLY_HPP_
#define DEGRADE_REDIS_DETAIL_REPLY_HPP_

#include <hiredis/hiredis.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/redis/scored_member.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace redis {

// The public type the parser produces; named here because, inside this
// namespace, `redis::` means `detail::redis::`.
using ScoredMember = ::degrade::redis::ScoredMember;

struct ContextFree {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
struct ReplyFree {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
// Owning handles: a connection (redisFree) and a reply (freeReplyObject).
using ContextPtr = std::unique_ptr<redisContext, ContextFree>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

// `text` for a message: escaped (`Printable`), and cut at 64 bytes so a
// huge member or value can't flood a log line.
inline std::string Excerpt(absl::string_view text) {
  constexpr std::size_t kMax = 64;
  if (text.size() <= kMax) return Printable(text);
  return absl::StrCat(Printable(text.substr(0, kMax)), "... (", text.size(),
                      " bytes)");
}

inline absl::string_view ReplyText(const redisReply& r) {
  return r.str == nullptr ? absl::string_view()
                          : absl::string_view(r.str, r.len);
}

inline const char* ReplyTypeName(int type) {
  switch (type) {
    case REDIS_REPLY_STRING:
      return "a bulk string";
    case REDIS_REPLY_ARRAY:
      return "an array";
    case REDIS_REPLY_INTEGER:
      return "an integer";
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_STATUS:
      return "a status";
    case REDIS_REPLY_ERROR:
      return "an error";
    default:
      return "an unknown reply type";
  }
}

// The status for an error reply `text` to `command`, prefixed by `where`.
inline absl::Status ErrorReplyStatus(absl::string_view where,
                                     absl::string_view command,
                                     absl::string_view text) {
  const std::string msg =
      absl::StrCat(where, ": ", command, " refused: ", Excerpt(text));
  if (absl::StartsWith(text, "WRONGTYPE")) {
    return absl::FailedPreconditionError(
        absl::StrCat(msg, " (the key is not a sorted set)"));
  }
  if (absl::StartsWith(text, "NOAUTH") || absl::StartsWith(text, "WRONGPASS") ||
      absl::StartsWith(text, "NOPERM")) {
    return absl::UnauthenticatedError(msg);
  }
  if (absl::StartsWith(text, "LOADING") || absl::StartsWith(text, "BUSY") ||
      absl::StartsWith(text, "MASTERDOWN") ||
      absl::StartsWith(text, "TRYAGAIN") ||
      absl::StartsWith(text, "CLUSTERDOWN")) {
    return absl::UnavailableError(msg);  // not ready: a transport failure
  }
  return absl::FailedPreconditionError(msg);
}

// ParseScoredMembers()
//
// Turns the RESP2 reply to `ZREVRANGE key 0 N-1 WITHSCORES` (a flat array
// member, score, member, score, ...) into members with their scores, in the
// reply's order. `where` prefixes every message; `top_n` is the N asked for.
// Errors: an error reply (see ErrorReplyStatus), NOT_FOUND for an empty
// array (a missing key: Redis deletes empty sorted sets), INVALID_ARGUMENT
// for any other reply type, an odd or too large element count, an element
// that is not a bulk string, or a score that is not a finite number (named
// with the member's index and the value).
inline absl::StatusOr<std::vector<ScoredMember>> ParseScoredMembers(
    const redisReply& reply, absl::string_view where, std::size_t top_n) {
  if (reply.type == REDIS_REPLY_ERROR) {
    return ErrorReplyStatus(where, "ZREVRANGE", ReplyText(reply));
  }
  if (reply.type != REDIS_REPLY_ARRAY) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ZREVRANGE answered ", ReplyTypeName(reply.type),
                     ", expected an array of members and scores"));
  }
  if (reply.elements == 0) {
    return absl::NotFoundError(absl::StrCat(
        where, ": the key does not exist or its sorted set is empty"));
  }
  if (reply.elements % 2 != 0 || reply.elements / 2 > top_n) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": ZREVRANGE answered an array of ", reply.elements,
        " elements, expected an even number (member, score pairs) of at most ",
        2 * top_n));
  }
  std::vector<ScoredMember> out;
  out.reserve(reply.elements / 2);
  for (std::size_t i = 0; i < reply.elements / 2; ++i) {
    const redisReply* member = reply.element[2 * i];
    const redisReply* score = reply.element[2 * i + 1];
    for (const redisReply* e : {member, score}) {
      if (e == nullptr || e->type != REDIS_REPLY_STRING) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": member [", i, "]: the ", e == member ? "member" : "score",
            " is ", e == nullptr ? "missing" : ReplyTypeName(e->type),
            ", expected a bulk string"));
      }
    }
    const absl::string_view text = ReplyText(*score);
    double value = 0;
    if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": member [", i, "] '", Excerpt(ReplyText(*member)),
          "': score '", Excerpt(text), "' is not a finite number"));
    }
    out.push_back(ScoredMember{std::string(ReplyText(*member)), value});
  }
  return out;
}

}  // namespace redis
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_DETAIL_REPLY_HPP_
