// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: etcd/client.hpp
// -----------------------------------------------------------------------------
//
// A small etcd v3 client for the few calls degrade's config sources need:
// read a prefix, put, delete, compact. It talks to etcd's JSON gateway
// (POST /v3/kv/range, /v3/kv/put, /v3/kv/deleterange, /v3/kv/compaction)
// over HTTP or HTTPS with cpp-httplib, so the adapter needs no gRPC. Keys
// and values are bytes (base64 on the wire); revisions are int64 (strings
// on the wire).
//
//   degrade::etcd::EtcdClientOptions o;
//   o.endpoint = "127.0.0.1:2379";
//   degrade::etcd::EtcdClient etcd(o);
//   absl::StatusOr<int64_t> rev = etcd.Put("/flags/ranker", "off");
//   if (!rev.ok()) return rev.status();       // names endpoint and cause
//   absl::StatusOr<degrade::etcd::RangeResult> r = etcd.Range("/flags/");
//   if (!r.ok()) return r.status();
//   for (const degrade::etcd::KeyValue& kv : r->kvs) {
//     Use(kv.key, kv.value, kv.mod_revision);
//   }
//   // r->revision: the store's revision the read was taken at
//
// In production etcd serves HTTPS and has auth on; an instance then reads
// as a user whose role may only read its prefix:
//
//   o.tls.enabled = true;
//   o.tls.ca_file = "/etc/etcd/ca.crt";          // signed etcd's certificate
//   o.tls.cert_file = "/etc/svc/etcd-client.crt";  // for --client-cert-auth
//   o.tls.key_file = "/etc/svc/etcd-client.key";
//   o.user = "instance";                           // role: read on the prefix
//   o.password = ReadSecret("etcd-instance");
//
// With a user, the client exchanges the password for a token (POST
// /v3/auth/authenticate) on its first request and sends it in the
// Authorization header of each one. A token etcd refuses as invalid
// (--auth-token-ttl passed without use, etcd restarted) or as older than
// the auth store is renewed once and the request retried; `authentications()`
// counts the tokens obtained.
//
// Errors are statuses, never exceptions, and each names the endpoint, the
// operation and the cause, e.g. "etcd 127.0.0.1:2379 Range '/flags/':
// cannot connect: Connection". The codes:
//
//   etcd not listening, connection lost    UNAVAILABLE
//   read or write timeout                  UNAVAILABLE (cpp-httplib does not
//                                          tell it from a lost connection)
//   connect timeout                        DEADLINE_EXCEEDED
//   no complete response within            DEADLINE_EXCEEDED (the request's
//     connect_timeout + request_timeout      deadline; e.g. a trickled reply)
//   Interrupt() called during the request  CANCELLED
//   HTTP status other than 200             etcd's gRPC code when its error
//                                          body has one (`code` or the
//                                          gateway's `grpc_code`; e.g.
//                                          OUT_OF_RANGE for a compacted
//                                          revision), else INTERNAL, with the
//                                          HTTP status
//   body not JSON, wrong shape             INTERNAL, naming the field
//   bad base64, a revision not a number    DATA_LOSS, naming the field
//   wrong user or password                 UNAUTHENTICATED, naming the user
//   a role without the permission          PERMISSION_DENIED (etcd's)
//   etcd's certificate not trusted (CA,    UNAUTHENTICATED, naming the cause
//     name), or ours refused or expired      and the option's file
//   bad TLS options (a file unreadable,    INVALID_ARGUMENT, naming the option
//     a certificate without its key)
//   TLS asked for, no OpenSSL in the build FAILED_PRECONDITION (never plain)
//
// Optional: this header needs cpp-httplib (Debian: libcpp-httplib-dev; for
// TLS built with OpenSSL, libssl-dev) and the CMake target `degrade::etcd`;
// the core library never includes it. CPPHTTPLIB_OPENSSL_SUPPORT must be
// defined alike in every translation unit that includes httplib.h (it
// changes cpp-httplib's classes): `degrade::etcd` carries it when its
// cpp-httplib has OpenSSL; define it yourself only to match.
//
// Thread safety: `EtcdClient` is thread-safe; requests are serialised on one
// connection object (a second caller waits for the first). `Interrupt()`
// may be called from any thread at any time and never waits for a request.
// SIGPIPE is blocked on the calling thread during a request (a write to a
// closed connection is then an error, not the signal's default death); no
// process-wide handler is installed.

#ifndef DEGRADE_ETCD_CLIENT_HPP_
#define DEGRADE_ETCD_CLIENT_HPP_

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/sigpipe.hpp"
#include "degrade/detail/thread_start.hpp"
#include "degrade/etcd/detail/gateway.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace etcd {

// EtcdClientOptions
//
// `endpoint` is "host:port" (an IPv4 address or name; HTTPS with
// `tls.enabled`, plain HTTP otherwise). The
// timeouts bound each phase of one request (`connect_timeout` the connect,
// `request_timeout` each socket read and write), and their sum the whole
// request: a response that has not arrived complete by then is
// DEADLINE_EXCEEDED however steadily its bytes trickle in (a watchdog
// thread, started with the first request, interrupts it). Each must be at
// least 1 ms (smaller values are raised to 1 ms).
// EtcdTlsOptions
//
// HTTPS to etcd's gateway (etcd started with --cert-file/--key-file, and
// --client-cert-auth --trusted-ca-file to require client certificates).
// Files are PEM and read when the first connection is made; one that
// cannot be read or parsed is INVALID_ARGUMENT naming the option and the
// file. A build whose cpp-httplib lacks OpenSSL support answers every
// request FAILED_PRECONDITION when `enabled`: never a plain connection.
struct EtcdTlsOptions {
  bool enabled = false;
  // The CA that signed etcd's server certificate; empty: the system's
  // trust store.
  std::string ca_file;
  // The client certificate and its key, both or neither. etcd's gateway
  // refuses (HTTP 400) a client certificate whose subject has a CommonName
  // when --client-cert-auth is on (3.4: the gateway cannot map it to a
  // user), so issue the instances' certificates without one and use
  // `user`/`password` for identity.
  std::string cert_file;
  std::string key_file;
  // Whether etcd's certificate must name the endpoint's host (a SAN IP or
  // DNS entry). Off, the chain is still verified against `ca_file`: only
  // the name is not checked (for a certificate issued to another name).
  bool verify_server_name = true;
};

struct EtcdClientOptions {
  std::string endpoint = "127.0.0.1:2379";
  absl::Duration connect_timeout = absl::Seconds(1);
  absl::Duration request_timeout = absl::Seconds(2);  // read and write
  EtcdTlsOptions tls{};
  // etcd's user and password (etcd with `auth enable`); an empty `user`
  // sends no credentials (a password without one is refused). The client
  // exchanges them for a token (POST /v3/auth/authenticate) on its first
  // request and sends the token in the Authorization header of every request; a
  // token etcd no longer accepts (its --auth-token-ttl passed unused, etcd
  // restarted) is renewed once and the request retried.
  std::string user{};
  std::string password{};
};

// One key as etcd stores it. `mod_revision` is the revision of its last
// change.
struct KeyValue {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
};

// The result of `Range()`: the keys under the prefix, in key order, as of
// the store revision `revision` (the response header's). `cluster_id` is
// the header's too (0 when absent): a cluster made anew has another one.
struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  uint64_t cluster_id = 0;
};

// EtcdClient
//
// See the file comment. Construction never touches the network.
class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;
  // Joins the watchdog thread, if one was started. REQUIRES: no request in
  // progress.
  ~EtcdClient();

  // Every key starting with `prefix` ("" means every key), with the store
  // revision the read was taken at. `revision` > 0 reads the keys as they
  // were at that revision (OUT_OF_RANGE from etcd when it was compacted or
  // is in the future); the header's revision is still the store's.
  absl::StatusOr<RangeResult> Range(absl::string_view prefix,
                                    int64_t revision = 0);

  // Sets `key` to `value`; returns the store revision of the change.
  absl::StatusOr<int64_t> Put(absl::string_view key, absl::string_view value);

  // Deletes `key` (not a prefix); OK also when it did not exist. Returns the
  // store revision after the call.
  absl::StatusOr<int64_t> Delete(absl::string_view key);

  // Compacts the history up to `revision` (physically: returns once the
  // store has discarded it). OUT_OF_RANGE if already compacted past it or
  // `revision` is in the future.
  absl::Status Compact(int64_t revision);

  // Makes the request in progress, if any, fail at once with CANCELLED
  // (later requests are unaffected). Thread-safe; never blocks on a request.
  void Interrupt();

  const std::string& endpoint() const { return options_.endpoint; }

  // How many auth tokens this client has obtained: the first, then one per
  // renewal. Thread-safe (a relaxed read).
  uint64_t authentications() const {
    return authentications_.load(std::memory_order_relaxed);
  }

  // OK when the TLS options can work in this build: INVALID_ARGUMENT for
  // a certificate without its key (or the other way round), a file that
  // cannot be read; FAILED_PRECONDITION when TLS is asked for and
  // cpp-httplib was built without OpenSSL. Touches no network.
  static absl::Status CheckOptions(const EtcdClientOptions& options);

 private:
  friend class EtcdPrefixWatcher;  // shares the token and the transport

  // POSTs `body` to `path`; the parsed JSON object of a 200 response.
  // With a user: authenticates first when no token is held, and once more
  // (retrying the request) when etcd refuses the token as invalid or old.
  absl::StatusOr<detail::json::Json> Call(absl::string_view op,
                                          const std::string& path,
                                          const std::string& body);
  // One exchange, with `token` (if not empty) as the Authorization header.
  absl::StatusOr<detail::json::Json> Exchange(const std::string& where,
                                              const std::string& path,
                                              const std::string& body,
                                              const std::string& token)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes http_ when there is none yet.
  absl::Status EnsureHttp(absl::string_view where)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Exchanges the user and password for token_.
  absl::Status Authenticate(const std::string& where)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The token for a watch stream (authenticating when none is held); ""
  // without a user.
  absl::StatusOr<std::string> StreamToken(absl::string_view where);
  // Forgets `stale` (a token etcd refused) so that the next use renews it.
  void DropToken(const std::string& stale);
  // Whether etcd refused a request's token: invalid (expired, or etcd
  // restarted) or issued before the auth store changed.
  static bool TokenRefused(const absl::Status& s);

  // An httplib client for the endpoint as the options say (HTTPS with
  // `tls.enabled`); INVALID_ARGUMENT or FAILED_PRECONDITION naming `where`.
  static absl::StatusOr<std::unique_ptr<httplib::Client>> NewHttp(
      const EtcdClientOptions& options, absl::string_view where);
  // A failed exchange as a status: TLS failures named (UNAUTHENTICATED for
  // a certificate one side refused), others as TransportError says.
  // `ssl_errors` is what OpenSSL queued on this thread during the request.
  static absl::Status TransportFailure(const EtcdClientOptions& options,
                                       absl::string_view where,
                                       httplib::Error err,
                                       const httplib::Client& http,
                                       const std::string& ssl_errors);
  // Clears OpenSSL's error queue of this thread; returns what it held.
  static std::string TakeSslErrors();

  // header.revision of a response object.
  absl::StatusOr<int64_t> HeaderRevision(absl::string_view op,
                                         const detail::json::Json& res) const;

  static constexpr std::size_t kMaxResponseBytes = std::size_t{256} << 20;
  // etcd's tokens are tens (simple) to hundreds (JWT) of bytes.
  static constexpr std::size_t kMaxTokenBytes = std::size_t{16} << 10;

  // The watchdog's loop: stops the request in flight once its deadline has
  // passed (and again every 10 ms while it stays in flight: a stop during
  // the connect finds no socket to shut yet).
  void Watchdog();
  // connect_timeout + request_timeout, each as httplib applies it.
  absl::Duration RequestBound() const;

  const EtcdClientOptions options_;
  detail::Mutex mu_;  // one request at a time
  std::unique_ptr<httplib::Client> http_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);  // "" none yet, or refused
  std::atomic<uint64_t> authentications_{0};
  // For Interrupt(): the client of the request in flight. httplib's stop()
  // is safe against a request running on another thread.
  detail::Mutex flight_mu_;
  httplib::Client* in_flight_ ABSL_GUARDED_BY(flight_mu_) = nullptr;
  bool interrupted_ ABSL_GUARDED_BY(flight_mu_) = false;
  // The deadline of the request in flight, and whether the watchdog
  // stopped it; the watchdog runs until closing_.
  detail::CondVar flight_cv_;
  absl::Time deadline_ ABSL_GUARDED_BY(flight_mu_) = absl::InfiniteFuture();
  bool timed_out_ ABSL_GUARDED_BY(flight_mu_) = false;
  bool closing_ ABSL_GUARDED_BY(flight_mu_) = false;
  bool watchdog_started_ ABSL_GUARDED_BY(flight_mu_) = false;
  std::thread watchdog_;  // set once, under flight_mu_; joined at the end
  // The request's socket, for the watchdog and Interrupt() to shut down
  // even during a TLS handshake (see RequestSocket).
  detail::etcd::RequestSocket socket_;
};

inline EtcdClient::EtcdClient(EtcdClientOptions options)
    : options_(std::move(options)) {}

inline EtcdClient::~EtcdClient() {
  {
    detail::MutexLock f(&flight_mu_);
    closing_ = true;
    flight_cv_.SignalAll();
  }
  if (watchdog_.joinable()) watchdog_.join();
}

inline absl::Duration EtcdClient::RequestBound() const {
  const auto at_least_1ms = [](absl::Duration d) {
    return std::max(d, absl::Milliseconds(1));
  };
  return at_least_1ms(options_.connect_timeout) +
         at_least_1ms(options_.request_timeout);
}

inline void EtcdClient::Watchdog() {
  detail::MutexLock f(&flight_mu_);
  while (!closing_) {
    if (in_flight_ == nullptr) {
      flight_cv_.Wait(&flight_mu_,
                      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(flight_mu_) {
                        return closing_ || in_flight_ != nullptr;
                      });
      continue;
    }
    httplib::Client* const request = in_flight_;
    const absl::Time deadline = deadline_;
    const absl::Duration left =
        detail::RemainingUntil(deadline, RealClock::Instance().Now());
    if (left <= absl::ZeroDuration()) {
      timed_out_ = true;
      socket_.Shut();
      request->stop();  // safe against the request running on its thread
    }
    // Until the deadline (or 10 ms after a stop), or until this request
    // is over and another may have begun.
    flight_cv_.WaitFor(
        &flight_mu_,
        left > absl::ZeroDuration() ? left : absl::Milliseconds(10),
        [this, request, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(flight_mu_) {
          return closing_ || in_flight_ != request || deadline_ != deadline;
        });
  }
}

inline void EtcdClient::Interrupt() {
  detail::MutexLock l(&flight_mu_);
  interrupted_ = true;
  if (in_flight_ == nullptr) return;
  socket_.Shut();
  in_flight_->stop();
}

inline absl::StatusOr<detail::json::Json> EtcdClient::Call(
    absl::string_view op, const std::string& path, const std::string& body) {
  const std::string where = absl::StrCat("etcd ", options_.endpoint, " ", op);
  detail::MutexLock l(&mu_);
  {
    // Per call, not per exchange: an Interrupt() between the token's
    // exchange and the request's must not be forgotten.
    detail::MutexLock f(&flight_mu_);
    interrupted_ = false;
  }
  if (absl::Status s = EnsureHttp(where); !s.ok()) return s;
  if (options_.user.empty()) return Exchange(where, path, body, "");
  const bool fresh = token_.empty();
  if (fresh) {
    if (absl::Status s = Authenticate(where); !s.ok()) return s;
  }
  absl::StatusOr<detail::json::Json> res = Exchange(where, path, body, token_);
  if (fresh || res.ok() || !TokenRefused(res.status())) return res;
  // Once: a token just issued and refused again is etcd's last word.
  token_.clear();
  if (absl::Status s = Authenticate(where); !s.ok()) return s;
  return Exchange(where, path, body, token_);
}

inline absl::StatusOr<detail::json::Json> EtcdClient::Exchange(
    const std::string& where, const std::string& path, const std::string& body,
    const std::string& token) {
  {
    detail::MutexLock f(&flight_mu_);
    if (interrupted_) {
      return absl::CancelledError(absl::StrCat(where, ": interrupted"));
    }
    timed_out_ = false;
    in_flight_ = http_.get();
    deadline_ = detail::SatAdd(RealClock::Instance().Now(), RequestBound());
    if (!watchdog_started_) {
      watchdog_started_ = true;
      // Without a thread (none could be made), each read and write is
      // still bounded by request_timeout, the connect by connect_timeout.
      absl::StatusOr<std::thread> t =
          detail::StartThread("etcd client watchdog", [this] { Watchdog(); });
      if (t.ok()) watchdog_ = std::move(*t);
    }
    flight_cv_.SignalAll();
  }
  // The body is collected by hand: etcd's gateway ends its chunked error
  // bodies with a trailer (Grpc-Trailer-Content-Type) that cpp-httplib 0.11
  // reports as a read error after the whole body has arrived. A body that
  // is complete JSON is therefore used even when the read "failed".
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (!token.empty()) req.set_header("Authorization", token);
  int http_status = 0;
  std::string text;
  req.response_handler = [&http_status](const httplib::Response& r) {
    http_status = r.status;
    return true;
  };
  req.content_receiver = [&text](const char* data, std::size_t n, uint64_t,
                                 uint64_t) {
    text.append(data, n);
    return text.size() <= kMaxResponseBytes;
  };
  // A write to a connection etcd or Interrupt() closed raises SIGPIPE
  // (cpp-httplib does not pass MSG_NOSIGNAL): blocked, it is EPIPE.
  detail::ScopedSigpipeBlock no_sigpipe;
  (void)TakeSslErrors();  // only this request's causes are reported
  httplib::Result res = http_->send(req);
  const std::string ssl_errors = TakeSslErrors();
  bool interrupted = false, timed_out = false;
  {
    detail::MutexLock f(&flight_mu_);
    socket_.Forget();
    in_flight_ = nullptr;
    deadline_ = absl::InfiniteFuture();
    interrupted = interrupted_;
    timed_out = timed_out_;
    flight_cv_.SignalAll();
  }
  if (interrupted) {
    return absl::CancelledError(absl::StrCat(where, ": interrupted"));
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(where, ": no complete response within ",
                     absl::FormatDuration(RequestBound()),
                     " (connect_timeout + request_timeout; ", text.size(),
                     " bytes of the body had arrived)"));
  }
  const std::string source = absl::StrCat(where, ": response");
  if (text.size() > kMaxResponseBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(source, ": over ", kMaxResponseBytes, " bytes"));
  }
  absl::StatusOr<detail::json::Json> json =
      detail::json::ParseJsonDocument(text, source, "response body");
  if (!res && !(http_status != 0 && json.ok())) {
    return TransportFailure(options_, where, res.error(), *http_, ssl_errors);
  }
  if (http_status != 200) {
    absl::StatusCode code = absl::StatusCode::kInternal;
    std::string message = detail::etcd::Quoted(text);
    if (json.ok()) {
      code = detail::etcd::CodeOfErrorBody(*json);
      auto it = json->find("message");
      if (it == json->end()) it = json->find("error");
      if (it != json->end() && it->is_string()) {
        message = it->get<std::string>();
      }
    }
    return absl::Status(
        code, absl::StrCat(where, ": HTTP ", http_status, ": ", message));
  }
  if (!json.ok()) {
    return absl::InternalError(json.status().message());
  }
  if (!json->is_object()) {
    return absl::InternalError(absl::StrCat(
        source, ": not a JSON object: ", detail::json::Describe(*json)));
  }
  return json;
}

inline absl::StatusOr<int64_t> EtcdClient::HeaderRevision(
    absl::string_view op, const detail::json::Json& res) const {
  auto header = res.find("header");
  int64_t revision = 0;
  absl::Status s =
      header == res.end()
          ? absl::InternalError("no header")
          : detail::etcd::ReadInt64(*header, "revision", "header", &revision);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("etcd ", options_.endpoint, " ", op,
                                     ": response: ", s.message()));
  }
  return revision;
}

inline absl::StatusOr<RangeResult> EtcdClient::Range(absl::string_view prefix,
                                                     int64_t revision) {
  const std::string op =
      absl::StrCat("Range ", detail::etcd::Quoted(prefix),
                   revision > 0 ? absl::StrCat(" at revision ", revision) : "");
  detail::json::Json req = detail::json::Json::object();
  req["key"] = absl::Base64Escape(detail::etcd::RangeStart(prefix));
  req["range_end"] = absl::Base64Escape(detail::etcd::PrefixEnd(prefix));
  if (revision > 0) req["revision"] = std::to_string(revision);
  absl::StatusOr<detail::json::Json> res = Call(op, "/v3/kv/range", req.dump());
  if (!res.ok()) return res.status();
  const std::string where =
      absl::StrCat("etcd ", options_.endpoint, " ", op, ": response");
  const auto fail = [&where](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  };
  RangeResult out;
  auto header = res->find("header");
  if (header == res->end()) return fail(absl::InternalError("no header"));
  if (absl::Status s =
          detail::etcd::ReadInt64(*header, "revision", "header", &out.revision);
      !s.ok()) {
    return fail(s);
  }
  if (absl::Status s = detail::etcd::ReadUint64(*header, "cluster_id", "header",
                                                &out.cluster_id);
      !s.ok()) {
    return fail(s);
  }
  auto kvs = res->find("kvs");
  if (kvs == res->end()) return out;
  if (!kvs->is_array()) {
    return fail(absl::InternalError(absl::StrCat(
        "kvs = ", detail::json::Describe(*kvs), ": not an array")));
  }
  out.kvs.reserve(kvs->size());
  for (std::size_t i = 0; i < kvs->size(); ++i) {
    const std::string at = absl::StrCat("kvs[", i, "]");
    KeyValue kv;
    absl::Status s = detail::etcd::ReadBytes((*kvs)[i], "key", at, &kv.key);
    if (s.ok()) s = detail::etcd::ReadBytes((*kvs)[i], "value", at, &kv.value);
    if (s.ok()) {
      s = detail::etcd::ReadInt64((*kvs)[i], "mod_revision", at,
                                  &kv.mod_revision);
    }
    if (!s.ok()) return fail(s);
    out.kvs.push_back(std::move(kv));
  }
  return out;
}

inline absl::StatusOr<int64_t> EtcdClient::Put(absl::string_view key,
                                               absl::string_view value) {
  const std::string op = absl::StrCat("Put ", detail::etcd::Quoted(key));
  detail::json::Json req = detail::json::Json::object();
  req["key"] = absl::Base64Escape(key);
  req["value"] = absl::Base64Escape(value);
  absl::StatusOr<detail::json::Json> res = Call(op, "/v3/kv/put", req.dump());
  if (!res.ok()) return res.status();
  return HeaderRevision(op, *res);
}

inline absl::StatusOr<int64_t> EtcdClient::Delete(absl::string_view key) {
  const std::string op = absl::StrCat("Delete ", detail::etcd::Quoted(key));
  detail::json::Json req = detail::json::Json::object();
  req["key"] = absl::Base64Escape(key);
  absl::StatusOr<detail::json::Json> res =
      Call(op, "/v3/kv/deleterange", req.dump());
  if (!res.ok()) return res.status();
  return HeaderRevision(op, *res);
}

inline absl::Status EtcdClient::Compact(int64_t revision) {
  const std::string op = absl::StrCat("Compact ", revision);
  detail::json::Json req = detail::json::Json::object();
  req["revision"] = std::to_string(revision);
  req["physical"] = true;
  return Call(op, "/v3/kv/compaction", req.dump()).status();
}

}  // namespace etcd
DEGRADE_NAMESPACE_END

// TLS and auth: the transport's setup and failures, the token's exchange
// and renewal, apart so that this header reads as the contract.
#include "degrade/etcd/detail/client_secure_inl.hpp"  // IWYU pragma: export

#endif  // DEGRADE_ETCD_CLIENT_HPP_
