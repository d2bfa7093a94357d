// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The watch-stream members of etcd::EtcdPrefixWatcher, included at the end
// of etcd/watcher.hpp (the "-inl" split the manager and the admission queue
// use): the header keeps the contract and the resync loop, this file one
// stream's mechanics: the request, the chunked JSON messages, what ends a
// stream. Including it alone includes the header first.
//
// Thread safety: see EtcdPrefixWatcher; both run on the watcher's thread.

#ifndef DEGRADE_ETCD_DETAIL_WATCHER_STREAM_INL_HPP_
#define DEGRADE_ETCD_DETAIL_WATCHER_STREAM_INL_HPP_

#include <httplib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/sigpipe.hpp"
#include "degrade/etcd/detail/json_stream.hpp"
#include "degrade/etcd/detail/watch_message.hpp"
#include "degrade/etcd/watcher.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace etcd {

inline EtcdClientOptions EtcdPrefixWatcher::ClientOptions(
    const EtcdWatcherOptions& o) {
  EtcdClientOptions c;
  c.endpoint = o.endpoint;
  c.connect_timeout = o.connect_timeout;
  c.request_timeout = o.request_timeout;
  c.tls = o.tls;
  c.user = o.user;
  c.password = o.password;
  return c;
}

inline EtcdPrefixWatcher::StreamEnd EtcdPrefixWatcher::Watch(
    int64_t start_revision, absl::Status* status) {
  const std::string where = Where();
  watch_start_ = start_revision;
  stream_created_ = false;
  stream_token_.clear();
  const EtcdClientOptions client_options = ClientOptions(options_);
  absl::StatusOr<std::unique_ptr<httplib::Client>> made =
      EtcdClient::NewHttp(client_options, where);
  absl::StatusOr<std::string> token =
      made.ok() ? client_.StreamToken(where) : made.status();
  if (!token.ok()) {
    *status = token.status();
    return stopping() ? StreamEnd::kStopped : StreamEnd::kFailed;
  }
  stream_token_ = *token;
  httplib::Client& http = **made;
  // While garbled_, a stream silent for Lasting() ends (kEnded, not
  // quick): a healthy quiet stream ends the outage then, not at the idle
  // timeout.
  const absl::Duration idle =
      garbled_ ? Lasting() : options_.stream_idle_timeout;
  detail::etcd::SetStreamTimeouts(&http, options_.connect_timeout, idle,
                                  options_.request_timeout);
  http.set_socket_options(stream_socket_.Taker());
  httplib::Request req =
      detail::etcd::WatchRequest(options_.prefix, start_revision);
  if (!stream_token_.empty()) req.set_header("Authorization", stream_token_);
  int http_status = 0;
  req.response_handler = [&](const httplib::Response& r) {
    http_status = r.status;
    return !stopping();
  };
  // Messages are whole JSON objects, possibly split across or sharing
  // chunks (detail/json_stream.hpp cuts them out).
  detail::etcd::JsonObjectSplitter splitter(std::size_t{64} << 20);
  std::string error_body;
  bool created = false, ended_here = false;
  StreamEnd end = StreamEnd::kEnded;
  stream_events_ = 0;
  // The read timeout bounds each socket read; this bounds each message,
  // from its first byte to its last, so that bytes trickling in do not keep
  // a stream that delivers nothing alive.
  absl::Time message_began = RealClock::Instance().Now();
  req.content_receiver = [&](const char* data, std::size_t n, uint64_t,
                             uint64_t) {
    if (stopping()) return false;
    if (http_status != 200) {
      error_body.append(data, std::min<std::size_t>(n, 4096));
      return error_body.size() < 4096;
    }
    if (!splitter.inside()) message_began = RealClock::Instance().Now();
    absl::Status s = splitter.Feed(
        absl::string_view(data, n),
        [&](absl::string_view m) {
          message_began =
              RealClock::Instance().Now();  // the next one's bytes may follow
          return HandleMessage(m, &created, &end, status);
        },
        &ended_here);
    if (!s.ok()) {
      *status = absl::Status(s.code(),
                             absl::StrCat(where, ": stream: ", s.message()));
      end = StreamEnd::kFailed;
      ended_here = true;
    } else if (!ended_here && splitter.inside() &&
               detail::ElapsedSince(RealClock::Instance().Now(),
                                    message_began) > idle) {
      *status = absl::UnavailableError(absl::StrCat(
          where, ": stream: no complete message within ",
          absl::FormatDuration(idle), " (its bytes trickle in); dropped"));
      end = StreamEnd::kFailed;
      ended_here = true;
    }
    return !ended_here && !stopping();
  };

  {
    detail::MutexLock l(&mu_);
    if (stopping()) return StreamEnd::kStopped;
    stream_ = &http;
  }
  detail::ScopedSigpipeBlock no_sigpipe;  // Stop() may shut the socket
  (void)EtcdClient::TakeSslErrors();
  httplib::Result res = http.send(req);
  const std::string ssl_errors = EtcdClient::TakeSslErrors();
  {
    detail::MutexLock l(&mu_);
    stream_ = nullptr;
    stream_socket_.Forget();
  }
  stream_created_ = created;
  if (stopping()) return StreamEnd::kStopped;
  if (ended_here) return end;
  if (!res && !created && http_status == 0 && options_.tls.enabled) {
    *status = EtcdClient::TransportFailure(client_options, where, res.error(),
                                           http, ssl_errors);
    return StreamEnd::kFailed;
  }
  *status = detail::etcd::StreamEndStatus(where, http_status, error_body, res,
                                          created, splitter.inside());
  return status->ok() ? StreamEnd::kEnded : StreamEnd::kFailed;
}

inline absl::Status EtcdPrefixWatcher::CheckStreamHeader(
    uint64_t cluster_id, int64_t revision) const {
  if (cluster_id != 0 && cluster_id_ != 0 && cluster_id != cluster_id_) {
    return absl::AbortedError(
        absl::StrCat(Where(), ": stream: header.cluster_id ", cluster_id,
                     " is not the read's ", cluster_id_,
                     " (etcd made anew after the read); resyncing"));
  }
  if (revision > 0 && revision < seen_revision_) {
    return absl::AbortedError(absl::StrCat(
        Where(), ": stream: header.revision ", revision,
        " is below the revision ", seen_revision_,
        " already seen (etcd wiped or restored after the read); resyncing"));
  }
  return absl::OkStatus();
}

inline bool EtcdPrefixWatcher::HandleMessage(absl::string_view text,
                                             bool* created, StreamEnd* end,
                                             absl::Status* status) {
  absl::StatusOr<detail::etcd::WatchMessage> m =
      detail::etcd::ParseWatchMessage(text, Where() + ": stream");
  if (absl::Status bad = m.ok() ? m->error : m.status(); !bad.ok()) {
    *status = std::move(bad);
    *end = StreamEnd::kFailed;
    return false;
  }
  // Every message's header must come from the cluster the read came from,
  // at a revision no lower than one already seen: otherwise etcd was wiped
  // or restored after the read, and this watch follows a history the
  // delivered state is not part of (writes below the old head would never
  // arrive, keys gone would never be deleted). Resync from a fresh read.
  if (absl::Status moved = CheckStreamHeader(m->cluster_id, m->header_revision);
      !moved.ok()) {
    *status = std::move(moved);
    *end = StreamEnd::kClusterChanged;
    return false;
  }
  if (m->canceled && m->compact_revision <= 0 && !m->cancel_reason.empty()) {
    // Refused at its creation (auth: etcd says "created" and "canceled" at
    // once): no history to check, nothing delivered.
    *status = detail::etcd::CancelStatus(Where(), m->cancel_reason);
    *end = StreamEnd::kFailed;
    return false;
  }
  if (m->created && !*created) {
    // The watch exists now: a wipe after this point ends the stream, one
    // before it shows in the history at the read's revision.
    bool compacted = false;
    // raw-time-ok: a revision, not a time
    if (absl::Status h = CheckHistory(watch_start_ - 1, &compacted); !h.ok()) {
      *status = std::move(h);
      *end = compacted                  ? StreamEnd::kCompacted
             : absl::IsAborted(*status) ? StreamEnd::kClusterChanged
                                        : StreamEnd::kFailed;
      return false;
    }
    *created = true;
    // Following again: the outage is over, unless streams go bad once
    // created (then an event, or a stream that lasts, says so).
    if (!garbled_) {
      Recovered();
      SetState(EtcdWatcherState::kWatching);
    }
  }
  if (m->canceled) {
    if (m->compact_revision > 0) {
      *end = StreamEnd::kCompacted;
      return false;
    }
    *status = absl::InternalError(absl::StrCat(
        Where(), ": stream: watch canceled: ", m->canceled_result));
    *end = StreamEnd::kFailed;
    return false;
  }
  for (const detail::etcd::WatchEvent& ev : m->events) {
    if (stopping()) break;
    ++stream_events_;
    seen_revision_ = std::max(seen_revision_, ev.mod_revision);
    PublishRevision();
    if (ev.mod_revision < watch_start_ ||
        OlderThanKnown(ev.key, ev.mod_revision)) {
      // A replay: delivering it would roll the key back, or bring back a
      // key deleted before the read.
      continue;
    }
    if (ev.is_delete) {
      Erase(ev.key, ev.mod_revision);
    } else if (auto it = delivered_.find(ev.key);
               it == delivered_.end() || it->second.rev != ev.mod_revision ||
               it->second.hash != Hash(ev.value)) {
      Put(ev.key, ev.value, ev.mod_revision);
    }
  }
  if (!m->events.empty() && garbled_) {
    garbled_ = false;
    Recovered();
  }
  return !stopping();
}

inline absl::Status EtcdPrefixWatcher::CheckHistory(int64_t revision,
                                                    bool* compacted) {
  // An empty store at the read: no history to check.
  if (revision <= 0) return absl::OkStatus();
  absl::StatusOr<RangeResult> r = client_.Range(options_.prefix, revision);
  if (!r.ok()) {
    // etcd answers OUT_OF_RANGE for both; only the message tells them
    // apart. A revision in the future is a store that restarted below it.
    const absl::string_view m = r.status().message();
    if (absl::IsOutOfRange(r.status()) &&
        m.find("future revision") != absl::string_view::npos) {
      return absl::AbortedError(absl::StrCat(
          Where(), ": the read's revision ", revision,
          " is in the store's future now: etcd was wiped or restored after "
          "the read; reading again"));
    }
    if (absl::IsOutOfRange(r.status()) &&
        m.find("compacted") != absl::string_view::npos) {
      *compacted = true;
    }
    return r.status();
  }
  std::size_t matched = 0;
  for (const KeyValue& kv : r->kvs) {
    const auto d = delivered_.find(kv.key);
    const auto f = refused_.find(kv.key);
    const bool same =
        (d != delivered_.end() && d->second.rev == kv.mod_revision &&
         d->second.hash == Hash(kv.value)) ||
        (f != refused_.end() && f->second == kv.mod_revision);
    if (!same) {
      return absl::AbortedError(absl::StrCat(
          Where(), ": key ", detail::etcd::Quoted(kv.key), " at revision ",
          revision,
          " is not what the read at that revision delivered: etcd "
          "was made anew under the same cluster_id after the read; reading "
          "again"));
    }
    ++matched;
  }
  if (matched != delivered_.size() + refused_.size()) {
    return absl::AbortedError(absl::StrCat(
        Where(), ": the prefix at revision ", revision, " holds ", matched,
        " keys, the read delivered ", delivered_.size() + refused_.size(),
        ": etcd was made anew under the same cluster_id after the read; "
        "reading again"));
  }
  return absl::OkStatus();
}

}  // namespace etcd
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_WATCHER_STREAM_INL_HPP_
