// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The pieces of etcd's JSON watch stream (POST /v3/watch) that need no
// watcher state: the create request's body, the stream's timeouts, an HTTP
// error as a status, and one response message (cut out of the stream by
// json_stream.hpp) parsed into its events, flags and error. The watcher
// decides what a message means for it.

#ifndef DEGRADE_ETCD_DETAIL_WATCH_MESSAGE_HPP_
#define DEGRADE_ETCD_DETAIL_WATCH_MESSAGE_HPP_

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_document.hpp"
#include "degrade/etcd/client.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace etcd {

struct WatchEvent {
  bool is_delete = false;
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
};

// One message. `error` is not OK for an {"error": ...} message: etcd's code
// (CANCELLED and UNAVAILABLE, what a gateway sends while etcd shuts down,
// both become UNAVAILABLE) and its text; nothing else is then set.
struct WatchMessage {
  absl::Status error;
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;  // > 0: canceled because compacted
  uint64_t cluster_id = 0;       // result.header.cluster_id, 0 if absent
  int64_t header_revision = 0;   // result.header.revision, 0 if absent
  std::string canceled_result;   // the result, described, when canceled
  std::string cancel_reason;     // etcd's result.cancel_reason, if any
  std::vector<WatchEvent> events;
};

// POST /v3/watch with {"create_request": ...} for every key under
// `prefix` from `start_revision`.
inline httplib::Request WatchRequest(absl::string_view prefix,
                                     int64_t start_revision) {
  detail::json::Json create = detail::json::Json::object();
  create["key"] = absl::Base64Escape(RangeStart(prefix));
  create["range_end"] = absl::Base64Escape(PrefixEnd(prefix));
  create["start_revision"] = std::to_string(start_revision);
  detail::json::Json body = detail::json::Json::object();
  body["create_request"] = std::move(create);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  return req;
}

// The stream's bounds: connect, silence between messages, the request.
inline void SetStreamTimeouts(httplib::Client* http, absl::Duration connect,
                              absl::Duration idle, absl::Duration write) {
  time_t sec = 0, usec = 0;
  SplitDuration(connect, &sec, &usec);
  http->set_connection_timeout(sec, usec);
  SplitDuration(idle, &sec, &usec);
  http->set_read_timeout(sec, usec);
  SplitDuration(write, &sec, &usec);
  http->set_write_timeout(sec, usec);
}

// A watch answered with an HTTP status other than 200: etcd's code when
// the body has one, UNAVAILABLE for a proxy's 502-504, else INTERNAL.
inline absl::Status WatchHttpError(absl::string_view where, int http_status,
                                   const std::string& body) {
  absl::StatusCode code = http_status >= 502 && http_status <= 504
                              ? absl::StatusCode::kUnavailable
                              : absl::StatusCode::kInternal;
  absl::StatusOr<detail::json::Json> json =
      detail::json::ParseJsonDocument(body, where, "error body");
  if (json.ok() && CodeOfErrorBody(*json) != absl::StatusCode::kInternal) {
    code = CodeOfErrorBody(*json);
  }
  return absl::Status(
      code, absl::StrCat(where, ": HTTP ", http_status, ": ", Quoted(body)));
}

// Why a watch stream that ended by itself (not stopped, not cut short by
// one of its messages) failed; OK for a plain end after "created" (lost,
// idle or closed: the watcher resyncs and watches again).
inline absl::Status StreamEndStatus(absl::string_view where, int http_status,
                                    const std::string& error_body,
                                    const httplib::Result& res, bool created,
                                    bool inside_message) {
  if (http_status != 0 && http_status != 200) {
    return WatchHttpError(where, http_status, error_body);
  }
  if (!res && !created) return TransportError(where, res.error());
  if (inside_message) {
    return absl::InternalError(
        absl::StrCat(where, ": stream ended inside a message (truncated)"));
  }
  if (!created) {
    return absl::InternalError(
        absl::StrCat(where, ": stream ended before the watch was created"));
  }
  return absl::OkStatus();
}

// A watch etcd canceled for `reason` (its cancel_reason, e.g. "rpc error:
// code = Unauthenticated desc = etcdserver: invalid auth token"): the gRPC
// code the reason names (UNAUTHENTICATED, PERMISSION_DENIED, ...), else
// INTERNAL.
inline absl::Status CancelStatus(absl::string_view where,
                                 absl::string_view reason) {
  static constexpr struct {
    const char* name;
    absl::StatusCode code;
  } kCodes[] = {
      {"code = Unauthenticated", absl::StatusCode::kUnauthenticated},
      {"code = PermissionDenied", absl::StatusCode::kPermissionDenied},
      {"code = InvalidArgument", absl::StatusCode::kInvalidArgument},
      {"code = FailedPrecondition", absl::StatusCode::kFailedPrecondition},
      {"code = Unavailable", absl::StatusCode::kUnavailable}};
  absl::StatusCode code = absl::StatusCode::kInternal;
  for (const auto& c : kCodes) {
    if (reason.find(c.name) != absl::string_view::npos) code = c.code;
  }
  if (reason.find("permission denied") != absl::string_view::npos) {
    code = absl::StatusCode::kPermissionDenied;
  }
  return absl::Status(
      code, absl::StrCat(where, ": stream: watch canceled: ", reason));
}

// Parses one message; a message that makes no sense is INTERNAL or
// DATA_LOSS naming the field, its text prefixed by `where`.
inline absl::StatusOr<WatchMessage> ParseWatchMessage(absl::string_view text,
                                                      absl::string_view where) {
  const auto fail = [&where](absl::StatusCode code, absl::string_view why) {
    return absl::Status(code, absl::StrCat(where, ": ", why));
  };
  absl::StatusOr<detail::json::Json> msg =
      detail::json::ParseJsonDocument(text, where, "message");
  if (!msg.ok()) return absl::InternalError(msg.status().message());
  WatchMessage out;
  if (auto e = msg->find("error"); e != msg->end()) {
    std::string what = detail::json::Describe(*e);
    if (e->is_object()) {
      auto m = e->find("message");
      if (m != e->end() && m->is_string()) what = m->get<std::string>();
    }
    absl::StatusCode code = CodeOfErrorBody(*e);
    if (code == absl::StatusCode::kCancelled) {
      code = absl::StatusCode::kUnavailable;
    }
    out.error = fail(code, absl::StrCat("etcd error: ", what));
    return out;
  }
  auto result = msg->find("result");
  if (result == msg->end() || !result->is_object()) {
    return fail(absl::StatusCode::kInternal, "a message without a result");
  }
  const detail::json::Json& r = *result;
  const auto flag = [&r](const char* name) {
    auto it = r.find(name);
    return it != r.end() && it->is_boolean() && it->get<bool>();
  };
  out.created = flag("created");
  out.canceled = flag("canceled");
  if (auto h = r.find("header"); h != r.end()) {
    absl::Status s =
        ReadUint64(*h, "cluster_id", "result.header", &out.cluster_id);
    if (s.ok()) {
      s = ReadInt64(*h, "revision", "result.header", &out.header_revision);
    }
    if (!s.ok()) return fail(s.code(), s.message());
  }
  if (out.canceled) {
    absl::Status s =
        ReadInt64(r, "compact_revision", "result", &out.compact_revision);
    if (!s.ok()) return fail(s.code(), s.message());
    out.canceled_result = detail::json::Describe(r);
    if (auto why = r.find("cancel_reason");
        why != r.end() && why->is_string()) {
      out.cancel_reason = why->get<std::string>();
    }
  }
  auto events = r.find("events");
  if (events == r.end()) return out;
  if (!events->is_array()) {
    return fail(absl::StatusCode::kInternal, "result.events is not an array");
  }
  for (std::size_t i = 0; i < events->size(); ++i) {
    const detail::json::Json& ev = (*events)[i];
    const std::string at = absl::StrCat("result.events[", i, "]");
    auto kv = ev.is_object() ? ev.find("kv") : ev.end();
    if (!ev.is_object() || kv == ev.end()) {
      return fail(absl::StatusCode::kInternal, absl::StrCat(at, ": no kv"));
    }
    WatchEvent w;
    absl::Status s = ReadBytes(*kv, "key", at + ".kv", &w.key);
    if (s.ok()) s = ReadBytes(*kv, "value", at + ".kv", &w.value);
    if (s.ok()) s = ReadInt64(*kv, "mod_revision", at + ".kv", &w.mod_revision);
    if (auto t = ev.find("type"); s.ok() && t != ev.end()) {
      const std::string type = t->is_string() ? t->get<std::string>() : "";
      if (type != "PUT" && type != "DELETE") {
        s = absl::InternalError(
            absl::StrCat(at, ".type = ", detail::json::Describe(*t)));
      }
      w.is_delete = type == "DELETE";
    }
    if (!s.ok()) return fail(s.code(), s.message());
    out.events.push_back(std::move(w));
  }
  return out;
}

}  // namespace etcd
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_WATCH_MESSAGE_HPP_
