// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: redis/hot_list_source.hpp
// -----------------------------------------------------------------------------
//
// The hot list from Redis. In the article the recall stage's Plan B, the
// global hot list, is computed offline every hour and written to a Redis
// sorted set; the service reads the top 200 by score. `HotListSource` is that
// reader, as a `HotListOptions<Item>::source`:
//
//   #include "degrade/hot_list.hpp"
//   #include "degrade/redis/hot_list_source.hpp"
//
//   degrade::redis::HotListSourceOptions rs;
//   rs.host = "10.0.0.7";
//   rs.port = 6379;
//   rs.key = "hot_items";                 // ZADD hot_items 0.97 item42 ...
//   auto redis = degrade::redis::HotListSource::Create(rs);
//   if (!redis.ok()) return redis.status();   // invalid settings
//
//   degrade::HotListOptions<std::string> o;
//   o.source = (*redis)->SourceFor<std::string>();   // members, best first
//   degrade::HotList<std::string> hot(std::move(o));
//   hot.Start(absl::Minutes(5));
//
// Optional: this header needs hiredis (Debian: libhiredis-dev) and the CMake
// target `degrade::redis`; the core library (`degrade::degrade`,
// `degrade/degrade.hpp`) never includes it. It does not include hot_list.hpp
// either (nor a JSON parser): the source is a plain callable, and the list
// is the caller's to include.
//
// What a fetch does: `ZREVRANGE key 0 N-1 WITHSCORES` on one connection,
// made lazily (with `connect_timeout`, then `AUTH` and `SELECT` when
// configured) and kept between fetches, each command (its write and all the
// reads of its reply) bounded by `command_timeout` as a whole, all behind the
// adapter's own `CircuitBreaker`. Every failure is a status naming the server,
// the key and the cause, and the hot list keeps serving its previous snapshot
// (its `age()` keeps growing):
//
//   Redis down, refused      UNAVAILABLE, "cannot connect: Connection refused"
//   connection lost          UNAVAILABLE (the connection is dropped; the next
//                            fetch reconnects)
//   connect or command slow  DEADLINE_EXCEEDED (the connection is dropped: a
//                            late reply must not be read as the next one's)
//   key missing, set empty   NOT_FOUND (Redis deletes empty sorted sets)
//   key of another type      FAILED_PRECONDITION, with Redis's WRONGTYPE text
//   a bad score (inf, text)  INVALID_ARGUMENT naming the index and the value
//   a malformed reply        INVALID_ARGUMENT naming what was expected
//   AUTH refused, NOAUTH     UNAUTHENTICATED (the password is never printed)
//   breaker open             the breaker's rejection (`IsBreakerOpen`), at
//                            once, without touching the network
//
// Reconnection is lazy: a transport error drops the connection and the next
// fetch the breaker admits connects again. A fetch that finds its kept
// connection closed by the server (Redis restarted since the last fetch)
// reconnects and retries once at once; a timeout is never retried.
//
// The breaker (defaults: `DefaultHotListBreakerSettings()`) counts only
// transport failures, UNAVAILABLE and DEADLINE_EXCEEDED: it measures whether
// Redis answers, and an answer about bad data is an answer. After 3 in a row
// it opens for 30 s, during which fetches fail at once; then one trial fetch
// decides. So a dead Redis costs at most three bounded waits, and then
// nothing until it is tried again.
//
// How long a fetch can block: `connect_timeout` (plus name resolution, which
// hiredis does with a blocking getaddrinfo: use an IP address, or a name the
// resolver answers at once) and `command_timeout` for each command sent
// (AUTH, SELECT, ZREVRANGE), as a deadline for the whole command, not per
// socket read (a server trickling its reply a byte at a time is cut off),
// twice over when a stale connection is retried. Both timeouts are refused
// outside [1 ms, about 24.8 days] (MinRedisTimeout/MaxRedisTimeout: what
// hiredis and the kernel honour). Readers of the hot list never wait for any of
// it.
//
// Thread safety: `HotListSource` is thread-safe. Fetches are serialised on
// one connection (a second concurrent fetch waits for the first), so it may
// be used from `HotList`'s background thread and `RefreshOnce()` at once.
// Its accessors (counters, `last_status()`, `connected()`, the breaker's
// state) never wait for a fetch in progress, and so neither do the hot
// list's readers; a `HotList::Stop()` waits at most for the fetch in
// progress, that is for the bounds below.
// SIGPIPE: a write to a connection the server closed raises SIGPIPE, whose
// default action kills the process; fetches block it on the calling thread
// for their duration and discard one they caused, so the process needs no
// SIGPIPE handler (one already pending is left alone).
//
// Nothing here throws; the header compiles with -fno-exceptions.

#ifndef DEGRADE_REDIS_HOT_LIST_SOURCE_HPP_
#define DEGRADE_REDIS_HOT_LIST_SOURCE_HPP_

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/sigpipe.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/redis/detail/command.hpp"
#include "degrade/redis/detail/reply.hpp"
#include "degrade/redis/scored_member.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace redis {

// The largest `top_n` accepted: a hot list is hundreds of items, and a
// mistyped N must not pull a million-member set into every refresh.
inline constexpr std::size_t kMaxHotListSourceItems = 100000;

// The timeouts a source honours. hiredis waits for a connection in whole
// milliseconds (rounding up) held in an int, and the kernel times socket
// reads and writes in clock ticks (1 to 10 ms): a shorter timeout would
// silently be a longer one, and one under a microsecond used to become a
// zero timeval, which the kernel reads as "no timeout" (a fetch from a
// server that never answers then never returned). A longer one than
// INT_MAX milliseconds (about 24.8 days) would be cut short by hiredis.
// Anything outside is refused, infinity included: a fetch must end.
inline absl::Duration MinRedisTimeout() { return absl::Milliseconds(1); }
inline absl::Duration MaxRedisTimeout() {
  return absl::Milliseconds(std::numeric_limits<int>::max());
}

// True for the statuses the adapter's breaker counts as failures: Redis did
// not answer in time (DEADLINE_EXCEEDED) or could not be reached, lost the
// connection or is not ready (UNAVAILABLE). Every other outcome (OK, a
// missing key, a wrong type, bad data, a refused AUTH) means Redis answered.
inline bool IsRedisTransportFailure(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// DefaultHotListBreakerSettings()
//
// The adapter's breaker defaults: open after 3 consecutive transport
// failures, for 30 s, then one trial; only transport failures count
// (`is_successful` is `!IsRedisTransportFailure`). The name is filled in by
// `HotListSource::Create` when left empty. Change fields of this value
// rather than replacing it: a default-constructed `BreakerSettings` has
// gobreaker's defaults and counts every error, bad data included.
inline BreakerSettings DefaultHotListBreakerSettings() {
  BreakerSettings s;
  s.max_requests = 1;
  s.timeout = absl::Seconds(30);
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  s.is_successful = [](const absl::Status& status) {
    return !IsRedisTransportFailure(status);
  };
  return s;
}

// HotListSourceOptions
//
// Where the hot list lives and how long to wait for it. Checked by
// `ValidateHotListSourceOptions()` (and `HotListSource::Create`).
struct HotListSourceOptions {
  // Server address: an IP address or a host name (resolved with a blocking
  // getaddrinfo on each connect; see the file comment). Not empty.
  std::string host = "127.0.0.1";
  // TCP port, 1..65535.
  int port = 6379;
  // The sorted set's key (binary-safe). Not empty.
  std::string key;
  // How many members to read, best (highest score) first: the N of
  // ZREVRANGE key 0 N-1. 1..kMaxHotListSourceItems; 200 as in the article.
  std::size_t top_n = 200;
  // Bound on establishing the TCP connection. In [kMinRedisTimeout,
  // kMaxRedisTimeout]; rounded up to a whole microsecond.
  absl::Duration connect_timeout = absl::Milliseconds(500);
  // Deadline for each command as a whole: its write and every read of its
  // reply (each socket operation waits only for the time left). In
  // [kMinRedisTimeout, kMaxRedisTimeout]; rounded up to a whole microsecond.
  absl::Duration command_timeout = absl::Milliseconds(500);
  // If set, `AUTH [username] password` after connecting. `username` (Redis 6
  // ACL users) requires `password`; neither may be empty.
  std::optional<std::string> username;
  std::optional<std::string> password;
  // If not 0, `SELECT database` after connecting. >= 0.
  int database = 0;
  // The adapter's breaker; see DefaultHotListBreakerSettings(). Its clock
  // (a FakeClock in tests) times only the breaker; socket timeouts are real.
  // An empty name becomes "redis <host>:<port>/<database> <key>".
  BreakerSettings breaker = DefaultHotListBreakerSettings();
};

// The name `HotListSourceOptions` had before (the library's option structs
// are all `...Options`, except `BreakerSettings`).
using HotListSourceSettings = HotListSourceOptions;

// ValidateHotListSourceOptions()
//
// Returns OK, or INVALID_ARGUMENT naming the first bad field, its value and
// the rule, then the breaker's own settings (`ValidateBreakerSettings`).
inline absl::Status ValidateHotListSourceOptions(
    const HotListSourceOptions& s) {
  const auto who = detail::SettingOwner::Described(
      absl::StrCat("redis hot list source (", detail::Printable(s.host), ":",
                   s.port, " key '", detail::Printable(s.key), "')"));
  const auto valid_timeout = [](absl::Duration d) {
    return d >= MinRedisTimeout() && d <= MaxRedisTimeout();
  };
  const std::string timeout_rule = absl::StrCat(
      "must be in [", absl::FormatDuration(MinRedisTimeout()), ", ",
      absl::FormatDuration(MaxRedisTimeout()),
      "]: hiredis and the kernel cannot honour a shorter or longer one");
  if (s.host.empty()) return who.Invalid("host", "\"\"", "must not be empty");
  if (s.host.find('\0') != std::string::npos) {
    return who.Invalid("host", detail::Printable(s.host),
                       "must not contain a NUL byte");
  }
  if (s.port < 1 || s.port > 65535) {
    return who.Invalid("port", s.port, "must be in 1..65535");
  }
  if (s.key.empty()) return who.Invalid("key", "\"\"", "must not be empty");
  if (s.top_n < 1 || s.top_n > kMaxHotListSourceItems) {
    return who.Invalid("top_n", s.top_n,
                       absl::StrCat("must be in 1..", kMaxHotListSourceItems));
  }
  if (!valid_timeout(s.connect_timeout)) {
    return who.Invalid("connect_timeout",
                       absl::FormatDuration(s.connect_timeout), timeout_rule);
  }
  if (!valid_timeout(s.command_timeout)) {
    return who.Invalid("command_timeout",
                       absl::FormatDuration(s.command_timeout), timeout_rule);
  }
  if (s.username.has_value() && s.username->empty()) {
    return who.Invalid("username", "\"\"", "must not be empty when set");
  }
  if (s.username.has_value() && !s.password.has_value()) {
    return who.Invalid("username", detail::Printable(*s.username),
                       "needs a password");
  }
  if (s.password.has_value() && s.password->empty()) {
    // The value itself is never printed.
    return who.Invalid("password", "\"\"", "must not be empty when set");
  }
  if (s.database < 0) {
    return who.Invalid("database", s.database, "must be >= 0");
  }
  return ValidateBreakerSettings(s.breaker);
}

// ValidateHotListSourceSettings()
//
// The name `ValidateHotListSourceOptions()` had before.
inline absl::Status ValidateHotListSourceSettings(
    const HotListSourceOptions& s) {
  return ValidateHotListSourceOptions(s);
}

// HotListSource
//
// Reads the hot list from a Redis sorted set; see the file comment. Made by
// `Create`, which validates the settings; connects on the first fetch.
//
// Thread-safe. Neither copyable nor movable. The callables from
// `SourceFor` hold its address: it must outlive them (declare it before the
// `HotList` that uses it, or `Stop()` the list first).
class HotListSource {
 public:
  using Breaker = CircuitBreaker<std::vector<ScoredMember>>;

  // HotListSource::Create()
  //
  // A source for `options`, or the INVALID_ARGUMENT of
  // `ValidateHotListSourceOptions`. Does not connect.
  static absl::StatusOr<std::unique_ptr<HotListSource>> Create(
      HotListSourceOptions settings) {
    absl::Status valid = ValidateHotListSourceOptions(settings);
    if (!valid.ok()) return valid;
    return std::unique_ptr<HotListSource>(
        new HotListSource(std::move(settings)));
  }

  HotListSource(const HotListSource&) = delete;
  HotListSource& operator=(const HotListSource&) = delete;

  // HotListSource::Fetch()
  //
  // The top `top_n` members with their scores, highest score first, through
  // the breaker; or the failure (see the file comment for the statuses).
  // Blocks for at most the bounds in the file comment; returns at once when
  // the breaker is open.
  //
  // Thread-safe; fetches are serialised.
  absl::StatusOr<std::vector<ScoredMember>> Fetch() {
    absl::StatusOr<std::vector<ScoredMember>> result =
        breaker_.Execute([this] { return FetchNow(); });
    detail::MutexLock lock(&stats_mu_);
    ++fetches_;
    if (!result.ok()) ++failures_;
    last_status_ = result.status();
    return result;
  }

  // HotListSource::SourceFor<Item>()
  //
  // A `HotListOptions<Item>::source` calling `Fetch()`: for
  // `Item = std::string` the members, for `Item = ScoredMember` the members
  // with their scores. For any other item type pass a map (below).
  template <typename Item>
  std::function<absl::StatusOr<std::vector<Item>>()> SourceFor() {
    if constexpr (std::is_same_v<Item, ScoredMember>) {
      return [this] { return Fetch(); };
    } else {
      static_assert(std::is_same_v<Item, std::string>,
                    "SourceFor<Item>() without a map gives std::string "
                    "members or ScoredMember; for other items pass a map "
                    "(const ScoredMember&) -> Item or absl::StatusOr<Item>");
      return SourceFor<std::string>(
          [](const ScoredMember& m) { return m.member; });
    }
  }

  // HotListSource::SourceFor<Item>(map)
  //
  // As above, each member turned into an `Item` by `map(const
  // ScoredMember&)`, returning `Item` or `absl::StatusOr<Item>` (to refuse a
  // member, e.g. one that is not a numeric id). One refused member fails the
  // whole refresh, with the map's code and a message naming the member and
  // its index, so the hot list keeps its previous snapshot rather than
  // serve a partial one. `map` is copied into the callable, must be
  // thread-safe if the callable is called concurrently, and must not throw
  // (a throw is caught by `HotList` and reported).
  template <typename Item, typename Map>
  std::function<absl::StatusOr<std::vector<Item>>()> SourceFor(Map map) {
    return [this, map]() -> absl::StatusOr<std::vector<Item>> {
      absl::StatusOr<std::vector<ScoredMember>> fetched = Fetch();
      if (!fetched.ok()) return fetched.status();
      std::vector<Item> items;
      items.reserve(fetched->size());
      for (std::size_t i = 0; i < fetched->size(); ++i) {
        const ScoredMember& m = (*fetched)[i];
        using Out =
            std::decay_t<std::invoke_result_t<const Map&, const ScoredMember&>>;
        if constexpr (std::is_same_v<Out, absl::StatusOr<Item>>) {
          absl::StatusOr<Item> item = std::invoke(map, m);
          if (!item.ok()) {
            return detail::Reworded(
                item.status(),
                absl::StrCat(where_, ": member [", i, "] '",
                             detail::redis::Excerpt(m.member), "' (score ",
                             m.score,
                             ") was refused: ", item.status().message()));
          }
          items.push_back(*std::move(item));
        } else {
          static_assert(std::is_convertible_v<Out, Item>,
                        "SourceFor<Item>(map): map must take const "
                        "ScoredMember& and return Item or "
                        "absl::StatusOr<Item>");
          items.push_back(std::invoke(map, m));
        }
      }
      return items;
    };
  }

  // The breaker in front of Redis (state, counts, manual control).
  Breaker& breaker() { return breaker_; }
  // The breaker's state now (applying a due open -> half-open).
  State breaker_state() { return breaker_.state(); }

  // Whether a connection is kept open for the next fetch. This and the
  // accessors below never wait for a fetch in progress (their lock is never
  // held across a network call). Thread-safe; may be stale at once.
  bool connected() const {
    detail::MutexLock lock(&stats_mu_);
    return connected_;
  }
  // Connections established (connected, authenticated, database selected)
  // so far: 1 after the first fetch, +1 for each reconnection.
  uint64_t connects() const {
    detail::MutexLock lock(&stats_mu_);
    return connects_;
  }
  // Fetch() calls so far, and how many of them failed (breaker rejections
  // included); counted when they return.
  uint64_t fetches() const {
    detail::MutexLock lock(&stats_mu_);
    return fetches_;
  }
  uint64_t failures() const {
    detail::MutexLock lock(&stats_mu_);
    return failures_;
  }
  // The status of the last Fetch() to return (OK before any).
  absl::Status last_status() const {
    detail::MutexLock lock(&stats_mu_);
    return last_status_;
  }

  // The validated options (with the breaker's name filled in).
  const HotListSourceOptions& options() const { return settings_; }
  // The name `options()` had before.
  const HotListSourceOptions& settings() const { return options(); }
  // "redis <host>:<port>/<database> key '<key>'": how messages name it.
  const std::string& where() const { return where_; }

 private:
  explicit HotListSource(HotListSourceOptions settings)
      : settings_(WithBreakerName(std::move(settings))),
        where_(absl::StrCat("redis ", settings_.host, ":", settings_.port, "/",
                            settings_.database, " key '",
                            detail::redis::Excerpt(settings_.key), "'")),
        breaker_(settings_.breaker) {}

  static HotListSourceOptions WithBreakerName(HotListSourceOptions s) {
    if (s.breaker.name.empty()) {
      s.breaker.name =
          absl::StrCat("redis ", s.host, ":", s.port, "/", s.database, " ",
                       detail::redis::Excerpt(s.key));
    }
    return s;
  }

  // The breaker's callable: one fetch, under the connection's lock.
  absl::StatusOr<std::vector<ScoredMember>> FetchNow() {
    detail::MutexLock lock(&conn_mu_);
    detail::ScopedSigpipeBlock no_sigpipe;
    const bool reused = context_ != nullptr;
    bool stale = false;
    absl::StatusOr<std::vector<ScoredMember>> result = QueryLocked(&stale);
    if (!result.ok() && reused && stale) {
      // The kept connection was closed by the other end (Redis restarted
      // or dropped idle clients): that says nothing about Redis now, so
      // reconnect and ask once more.
      result = QueryLocked(&stale);
    }
    return result;
  }

  // Connects if needed, then sends ZREVRANGE and parses the reply.
  absl::StatusOr<std::vector<ScoredMember>> QueryLocked(bool* stale)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_) {
    *stale = false;
    if (context_ == nullptr) {
      absl::Status connected = ConnectLocked();
      if (!connected.ok()) return connected;
    }
    const std::string stop = std::to_string(settings_.top_n - 1);
    const std::vector<absl::string_view> argv = {"ZREVRANGE", settings_.key,
                                                 "0", stop, "WITHSCORES"};
    absl::StatusOr<detail::redis::ReplyPtr> reply =
        Command(context_, "ZREVRANGE", argv, stale);
    if (!reply.ok()) {
      KeepLocked(nullptr);  // a transport error leaves it unusable
      return reply.status();
    }
    return detail::redis::ParseScoredMembers(**reply, where_, settings_.top_n);
  }

  // Connects, sets the command timeout, authenticates and selects the
  // database (detail/command.hpp); keeps the connection only if all of it
  // worked.
  absl::Status ConnectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_) {
    detail::redis::ConnectParams p;
    p.host = settings_.host;
    p.port = settings_.port;
    p.connect_timeout = settings_.connect_timeout;
    p.command_timeout = settings_.command_timeout;
    p.username = settings_.username;
    p.password = settings_.password;
    p.database = settings_.database;
    absl::StatusOr<detail::redis::ContextPtr> c =
        detail::redis::Connect(p, where_);
    if (!c.ok()) return c.status();
    KeepLocked(*std::move(c));
    return absl::OkStatus();
  }

  // Replaces the kept connection (null drops it), keeping what connected()
  // and connects() read in step.
  void KeepLocked(detail::redis::ContextPtr c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_) {
    const bool now_connected = c != nullptr;
    context_ = std::move(c);
    detail::MutexLock lock(&stats_mu_);
    connected_ = now_connected;
    if (now_connected) ++connects_;
  }

  // One command on `c` within command_timeout (detail/command.hpp).
  absl::StatusOr<detail::redis::ReplyPtr> Command(
      const detail::redis::ContextPtr& c, absl::string_view command,
      const std::vector<absl::string_view>& argv, bool* stale) const {
    return detail::redis::RunCommand(c, where_, command, argv,
                                     settings_.command_timeout, stale);
  }

  const HotListSourceOptions settings_;
  const std::string where_;
  Breaker breaker_;

  // Held for a whole fetch, network calls included; serialises fetches.
  // Taken before stats_mu_, never after it.
  detail::Mutex conn_mu_;
  detail::redis::ContextPtr context_ ABSL_GUARDED_BY(conn_mu_);
  // What the accessors read; never held across a network call.
  mutable detail::Mutex stats_mu_;
  bool connected_ ABSL_GUARDED_BY(stats_mu_) = false;
  uint64_t connects_ ABSL_GUARDED_BY(stats_mu_) = 0;
  uint64_t fetches_ ABSL_GUARDED_BY(stats_mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(stats_mu_) = 0;
  absl::Status last_status_ ABSL_GUARDED_BY(stats_mu_);
};

}  // namespace redis
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_HOT_LIST_SOURCE_HPP_
