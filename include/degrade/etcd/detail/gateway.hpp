// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What etcd::EtcdClient (etcd/client.hpp) says to and reads from etcd's
// JSON gateway: key ranges over a prefix, the endpoint, the gateway's
// field encodings and error bodies, and transport failures as statuses.
//
// Pure functions; thread-safe. Not a public API.

#ifndef DEGRADE_ETCD_DETAIL_GATEWAY_HPP_
#define DEGRADE_ETCD_DETAIL_GATEWAY_HPP_

#include <fcntl.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace etcd {

// The smallest key greater than every key with this prefix, as etcd's
// `range_end` ("\0", every key, for an empty prefix).
std::string PrefixEnd(absl::string_view prefix);

// The `key` of a range over the prefix: the prefix, or "\0" for every key
// (etcd refuses an empty key).
std::string RangeStart(absl::string_view prefix);

// "host:port" split; INVALID_ARGUMENT when malformed.
absl::Status SplitEndpoint(absl::string_view endpoint, std::string* host,
                           int* port);

// Field readers for the gateway's JSON. `where` names the place for errors
// ("header.revision", "kvs[3].key"). A missing field is its proto default
// (the gateway omits defaults): 0, "".
absl::Status ReadInt64(const detail::json::Json& object, const char* field,
                       absl::string_view where, int64_t* out);
absl::Status ReadBytes(const detail::json::Json& object, const char* field,
                       absl::string_view where, std::string* out);
absl::Status ReadUint64(const detail::json::Json& object, const char* field,
                        absl::string_view where, uint64_t* out);

// Maps an error body {"error": ..., "code": N, "message": ...} with a gRPC
// code (`code`, or `grpc_code` as the gateway's stream errors have it) to
// that code; INTERNAL otherwise.
absl::StatusCode CodeOfErrorBody(const detail::json::Json& body);

std::string Quoted(absl::string_view bytes);  // printable, for messages

// `d` (at least 1 ms) as httplib's seconds and microseconds.
void SplitDuration(absl::Duration d, time_t* sec, time_t* usec);

// A failed HTTP exchange as a status: connection refused or lost
// UNAVAILABLE, a connect timeout DEADLINE_EXCEEDED, anything else INTERNAL.
absl::Status TransportError(absl::string_view where, httplib::Error err);

// A duplicate of the socket cpp-httplib makes for a request, so that the
// request can be ended from another thread even during its TLS handshake:
// cpp-httplib's stop() waits for the handshake (its socket mutex is held
// throughout), and a peer trickling it renews the connect timeout with each
// byte. Shut() shuts the socket itself down (not just this descriptor): the
// handshake fails at once. Thread-safe; its lock is a leaf (nothing else
// is taken under it).
//
//   http->set_socket_options(socket.Taker());   // before send()
//   ... Shut() from another thread, then http->stop() ...
//   socket.Forget();                            // once send() returned
class RequestSocket {
 public:
  RequestSocket() = default;
  RequestSocket(const RequestSocket&) = delete;
  RequestSocket& operator=(const RequestSocket&) = delete;
  ~RequestSocket() { Forget(); }

  // For set_socket_options: keeps a duplicate of each socket made.
  httplib::SocketOptions Taker() {
    return [this](socket_t sock) {
      MutexLock l(&mu_);
      if (dup_ >= 0) ::close(dup_);
      dup_ = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
    };
  }
  void Shut() {
    MutexLock l(&mu_);
    if (dup_ >= 0) ::shutdown(dup_, SHUT_RDWR);
  }
  void Forget() {
    MutexLock l(&mu_);
    if (dup_ >= 0) ::close(dup_);
    dup_ = -1;
  }

 private:
  Mutex mu_;
  int dup_ ABSL_GUARDED_BY(mu_) = -1;
};

// ---- Implementation details ----

inline std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

inline std::string RangeStart(absl::string_view prefix) {
  return prefix.empty() ? std::string(1, '\0') : std::string(prefix);
}

inline absl::Status SplitEndpoint(absl::string_view endpoint, std::string* host,
                                  int* port) {
  const std::size_t colon = endpoint.rfind(':');
  int p = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(endpoint.substr(colon + 1), &p) || p <= 0 ||
      p > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd endpoint '", endpoint, "' must be host:port (port 1-65535)"));
  }
  *host = std::string(endpoint.substr(0, colon));
  *port = p;
  return absl::OkStatus();
}

// ReadInt64 and ReadUint64: a JSON integer or a decimal string.
template <typename T>
absl::Status ReadInteger(const detail::json::Json& object, const char* field,
                         absl::string_view where, const char* type, T* out) {
  *out = 0;
  if (!object.is_object()) {
    return absl::InternalError(absl::StrCat(where, " is not an object"));
  }
  auto it = object.find(field);
  if (it == object.end()) return absl::OkStatus();
  // A number above int64's range arrives as an unsigned one: refused like
  // the same value as a string, never wrapped to a negative revision.
  const bool fits =
      std::is_signed<T>::value
          ? it->is_number_integer() &&
                !(it->is_number_unsigned() &&
                  it->template get<uint64_t>() >
                      static_cast<uint64_t>(std::numeric_limits<T>::max()))
          : it->is_number_unsigned();
  if (fits) {
    *out = it->template get<T>();
    return absl::OkStatus();
  }
  if (it->is_string() &&
      absl::SimpleAtoi(it->get_ref<const std::string&>(), out)) {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(
      where, ".", field, " = ", detail::json::Describe(*it), ": not ", type));
}

inline absl::Status ReadInt64(const detail::json::Json& object,
                              const char* field, absl::string_view where,
                              int64_t* out) {
  return ReadInteger(object, field, where, "an int64", out);
}

inline absl::Status ReadUint64(const detail::json::Json& object,
                               const char* field, absl::string_view where,
                               uint64_t* out) {
  return ReadInteger(object, field, where, "a uint64", out);
}

inline absl::Status ReadBytes(const detail::json::Json& object,
                              const char* field, absl::string_view where,
                              std::string* out) {
  out->clear();
  if (!object.is_object()) {
    return absl::InternalError(absl::StrCat(where, " is not an object"));
  }
  auto it = object.find(field);
  if (it == object.end()) return absl::OkStatus();
  if (!it->is_string() ||
      !absl::Base64Unescape(it->get_ref<const std::string&>(), out)) {
    return absl::DataLossError(absl::StrCat(
        where, ".", field, " = ", detail::json::Describe(*it), ": not base64"));
  }
  return absl::OkStatus();
}

inline absl::StatusCode CodeOfErrorBody(const detail::json::Json& body) {
  if (!body.is_object()) return absl::StatusCode::kInternal;
  for (const char* field : {"code", "grpc_code"}) {
    auto it = body.find(field);
    if (it != body.end() && it->is_number_integer()) {
      const int64_t code = it->get<int64_t>();
      if (code > 0 && code <= 16) return static_cast<absl::StatusCode>(code);
    }
  }
  return absl::StatusCode::kInternal;
}

inline std::string Quoted(absl::string_view bytes) {
  constexpr std::size_t kMax = 80;
  std::string s = absl::CHexEscape(bytes.substr(0, kMax));
  if (bytes.size() > kMax) absl::StrAppend(&s, "...");
  return absl::StrCat("'", s, "'");
}

inline void SplitDuration(absl::Duration d, time_t* sec, time_t* usec) {
  const int64_t us = std::max<int64_t>(1000, absl::ToInt64Microseconds(d));
  *sec = static_cast<time_t>(us / 1000000);
  *usec = static_cast<time_t>(us % 1000000);
}

inline absl::Status TransportError(absl::string_view where,
                                   httplib::Error err) {
  const std::string cause = httplib::to_string(err);
  switch (err) {
    case httplib::Error::Connection:
      return absl::UnavailableError(
          absl::StrCat(where, ": cannot connect: ", cause));
    case httplib::Error::ConnectionTimeout:
      return absl::DeadlineExceededError(
          absl::StrCat(where, ": connect timed out: ", cause));
    case httplib::Error::Read:
    case httplib::Error::Write:
      return absl::UnavailableError(
          absl::StrCat(where, ": connection lost or timed out: ", cause));
    default:
      return absl::InternalError(
          absl::StrCat(where, ": HTTP request failed: ", cause));
  }
}

}  // namespace etcd
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_GATEWAY_HPP_
