// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// One Redis command on a connected hiredis context, within a deadline for
// the whole command (its write and every read of its reply), not for each
// socket read: a server trickling its reply a byte at a time would
// otherwise hold the caller as long as it likes; and the connection that
// carries it (connect within a bound, then AUTH and SELECT, each a bounded
// command). Used by HotListSource (hot_list_source.hpp) and ClusterQuota
// (quota.hpp), so both adapters wait on Redis the same way.
//
// Thread-compatible: one context, one caller at a time. Not a public API.

#ifndef DEGRADE_REDIS_DETAIL_COMMAND_HPP_
#define DEGRADE_REDIS_DETAIL_COMMAND_HPP_

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/redis/detail/reply.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace redis {

// hiredis 1.x reports a socket timeout as its own error kind.
inline bool IsTimeoutError(int err) {
#ifdef REDIS_ERR_TIMEOUT
  return err == REDIS_ERR_TIMEOUT;
#else
  (void)err;
  return false;
#endif
}

// Rounded up, so a validated timeout is never shorter than asked and never
// the zero timeval that means "no timeout".
inline timeval Timeval(absl::Duration d) {
  return absl::ToTimeval(absl::Ceil(d, absl::Microseconds(1)));
}

inline bool IsTimeoutErrno(int e) {
  return e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT || e == EINPROGRESS;
}

// Sends `argv` on `c` and reads the reply (an error reply is a reply),
// all of it within `timeout` of the start (`where` names the source in
// messages). Before each write and read the socket's timeout is set to the
// time left.
// A transport failure is UNAVAILABLE or DEADLINE_EXCEEDED naming
// `command`; `*stale` says whether the other end had closed the
// connection. `c` is then unusable.
// RunCommandBy() is the same with a `deadline` (RealClock) that several
// commands share: a call made of more than one command (the quota's SCRIPT
// LOAD then EVALSHA) is bounded as a whole; `timeout` only names the
// bound in messages.
inline absl::StatusOr<ReplyPtr> RunCommandBy(
    const ContextPtr& c, absl::string_view where, absl::string_view command,
    const std::vector<absl::string_view>& argv, absl::Time deadline,
    absl::Duration timeout, bool* stale) {
  std::vector<const char*> args;
  std::vector<std::size_t> lens;
  args.reserve(argv.size());
  lens.reserve(argv.size());
  for (absl::string_view a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(c.get(), static_cast<int>(args.size()),
                             args.data(), lens.data()) != REDIS_OK) {
    return absl::UnavailableError(
        absl::StrCat(where, ": ", command,
                     ": cannot format the command: ", Excerpt(c->errstr)));
  }
  // The time left, as the socket's timeout; false once none is left.
  const auto arm = [&c, deadline] {
    const absl::Duration left = ::degrade::detail::RemainingUntil(
        deadline, ::degrade::RealClock::Instance().Now());
    return left > absl::ZeroDuration() &&
           redisSetTimeout(c.get(), Timeval(left)) == REDIS_OK;
  };
  bool out_of_time = false;
  int io_errno = 0;
  int written = 0;
  while (written == 0) {
    if (!arm()) {
      out_of_time = true;
      break;
    }
    errno = 0;
    if (redisBufferWrite(c.get(), &written) != REDIS_OK) {
      io_errno = errno;
      break;
    }
  }
  void* raw = nullptr;
  while (written != 0) {
    if (redisGetReplyFromReader(c.get(), &raw) != REDIS_OK) {
      io_errno = 0;  // a protocol error: c->errstr says which
      break;
    }
    if (raw != nullptr) break;
    if (!arm()) {
      out_of_time = true;
      break;
    }
    errno = 0;
    if (redisBufferRead(c.get()) != REDIS_OK) {
      io_errno = errno;
      break;
    }
  }
  ReplyPtr reply(static_cast<redisReply*>(raw));
  if (reply != nullptr) return reply;
  *stale =
      c->err == REDIS_ERR_EOF ||
      (c->err == REDIS_ERR_IO && (io_errno == ECONNRESET || io_errno == EPIPE));
  if (out_of_time || (c->err == REDIS_ERR_IO && IsTimeoutErrno(io_errno)) ||
      IsTimeoutError(c->err)) {
    const bool begun =
        written != 0 && c->reader != nullptr && c->reader->len > c->reader->pos;
    return absl::DeadlineExceededError(absl::StrCat(
        where, ": ", command, ": no answer within ",
        absl::FormatDuration(timeout),
        written == 0 ? " (the command was not sent)"
        : begun      ? " (the reply came too slowly)"
                     : "",
        out_of_time ? "" : absl::StrCat(" (", Excerpt(c->errstr), ")")));
  }
  return absl::UnavailableError(
      absl::StrCat(where, ": ", command, ": connection lost: ",
                   c->err != 0 ? Excerpt(c->errstr) : std::string("no reply")));
}

inline absl::StatusOr<ReplyPtr> RunCommand(
    const ContextPtr& c, absl::string_view where, absl::string_view command,
    const std::vector<absl::string_view>& argv, absl::Duration timeout,
    bool* stale) {
  return RunCommandBy(c, where, command, argv,
                      ::degrade::detail::SatAdd(
                          ::degrade::RealClock::Instance().Now(), timeout),
                      timeout, stale);
}

// Where a connection goes and how long each step may take: the fields the
// adapters' options share (validated by their owners).
struct ConnectParams {
  std::string host;
  int port = 0;
  absl::Duration connect_timeout;
  absl::Duration command_timeout;
  std::optional<std::string> username;
  std::optional<std::string> password;
  int database = 0;
};

// Connects to `p.host:p.port` within `p.connect_timeout`, sets the command
// timeout, then sends AUTH and SELECT when configured, each bounded by
// RunCommand. Returns the connection only if all of it worked; otherwise
// UNAVAILABLE or DEADLINE_EXCEEDED for transport failures (prefixed by
// `where`), or the status of AUTH's or SELECT's error reply.
// With `deadline` (RealClock; in and out): a call made of a connect and
// then commands bounded as a whole. InfiniteFuture on entry: set to the end
// of the TCP connect plus command_timeout (the connect keeps its own
// connect_timeout). Otherwise the connect waits at most until it, and AUTH
// and SELECT share it instead of a command_timeout each.
inline absl::StatusOr<ContextPtr> Connect(const ConnectParams& p,
                                          absl::string_view where,
                                          absl::Time* deadline = nullptr) {
  const auto now = [] { return ::degrade::RealClock::Instance().Now(); };
  absl::Duration connect_timeout = p.connect_timeout;
  if (deadline != nullptr && *deadline != absl::InfiniteFuture()) {
    connect_timeout = std::min(
        connect_timeout, ::degrade::detail::RemainingUntil(*deadline, now()));
    if (connect_timeout <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          where, ": cannot connect: no time left of ",
          absl::FormatDuration(p.command_timeout), " for the call"));
    }
  }
  ContextPtr c(redisConnectWithTimeout(p.host.c_str(), p.port,
                                       Timeval(connect_timeout)));
  const int connect_errno = errno;
  if (c == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(where, ": cannot connect: out of memory"));
  }
  if (c->err != 0) {
    const std::string msg = absl::StrCat(where, ": cannot connect within ",
                                         absl::FormatDuration(connect_timeout),
                                         ": ", Excerpt(c->errstr));
    return IsTimeoutErrno(connect_errno) ? absl::DeadlineExceededError(msg)
                                         : absl::UnavailableError(msg);
  }
  if (redisSetTimeout(c.get(), Timeval(p.command_timeout)) != REDIS_OK) {
    return absl::UnavailableError(absl::StrCat(
        where, ": cannot set the command timeout: ", Excerpt(c->errstr)));
  }
  bool stale = false;
  if (deadline != nullptr && *deadline == absl::InfiniteFuture()) {
    *deadline = ::degrade::detail::SatAdd(now(), p.command_timeout);
  }
  // Without a shared deadline, each command has command_timeout of its own.
  const auto by = [&] {
    return deadline != nullptr
               ? *deadline
               : ::degrade::detail::SatAdd(now(), p.command_timeout);
  };
  if (p.password.has_value()) {
    std::vector<absl::string_view> argv = {"AUTH"};
    if (p.username.has_value()) argv.push_back(*p.username);
    argv.push_back(*p.password);
    absl::StatusOr<ReplyPtr> r =
        RunCommandBy(c, where, "AUTH", argv, by(), p.command_timeout, &stale);
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(where, "AUTH", ReplyText(**r));
    }
  }
  if (p.database != 0) {
    const std::string db = std::to_string(p.database);
    absl::StatusOr<ReplyPtr> r = RunCommandBy(
        c, where, "SELECT", {"SELECT", db}, by(), p.command_timeout, &stale);
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_ERROR) {
      return ErrorReplyStatus(where, absl::StrCat("SELECT ", p.database),
                              ReplyText(**r));
    }
  }
  return c;
}

}  // namespace redis
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_DETAIL_COMMAND_HPP_
