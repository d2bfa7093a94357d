// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The TLS and auth members of etcd::EtcdClient, included at the end of
// etcd/client.hpp (the "-inl" split the watcher uses): how the transport
// is made (plain, or HTTPS with a CA, a client certificate and the name
// check), what a TLS failure means, and the token's exchange and renewal.
// Including it alone includes the header first.
//
// TLS needs cpp-httplib with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT, which
// the degrade::etcd CMake target defines when OpenSSL is found): without
// it, TLS options are FAILED_PRECONDITION, never a plain connection.
//
// Thread safety: see EtcdClient.

#ifndef DEGRADE_ETCD_DETAIL_CLIENT_SECURE_INL_HPP_
#define DEGRADE_ETCD_DETAIL_CLIENT_SECURE_INL_HPP_

#include <httplib.h>

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#endif

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/etcd/client.hpp"
#include "degrade/etcd/detail/gateway.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace etcd {

inline absl::Status EtcdClient::CheckOptions(const EtcdClientOptions& o) {
  std::string host;
  int port = 0;
  if (absl::Status s = detail::etcd::SplitEndpoint(o.endpoint, &host, &port);
      !s.ok()) {
    return s;
  }
  if (o.user.empty() && !o.password.empty()) {
    // A password without a user would silently send no credentials.
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd ", o.endpoint, ": a password is set but user is empty"));
  }
  const EtcdTlsOptions& t = o.tls;
  if (!t.enabled) {
    if (!t.ca_file.empty() || !t.cert_file.empty() || !t.key_file.empty()) {
      // Files without `enabled` would otherwise be a silent plain link.
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd ", o.endpoint, ": tls files are set but tls.enabled is false"));
    }
    return absl::OkStatus();
  }
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  return absl::FailedPreconditionError(absl::StrCat(
      "etcd ", o.endpoint,
      ": tls.enabled, but cpp-httplib was built without OpenSSL "
      "(CPPHTTPLIB_OPENSSL_SUPPORT is not defined; link degrade::etcd with "
      "OpenSSL found); refusing a plain connection"));
#else
  if (t.cert_file.empty() != t.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd ", o.endpoint,
        ": tls.cert_file and tls.key_file go together (one is empty)"));
  }
  for (const auto& [name, path] :
       {std::pair<const char*, const std::string*>{"tls.ca_file", &t.ca_file},
        {"tls.cert_file", &t.cert_file},
        {"tls.key_file", &t.key_file}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    if (!in.good()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd ", o.endpoint, ": ", name, " '", *path, "' cannot be read"));
    }
  }
  return absl::OkStatus();
#endif
}

inline absl::StatusOr<std::unique_ptr<httplib::Client>> EtcdClient::NewHttp(
    const EtcdClientOptions& o, absl::string_view where) {
  if (absl::Status s = CheckOptions(o); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  }
  std::string host;
  int port = 0;
  (void)detail::etcd::SplitEndpoint(o.endpoint, &host, &port);
  if (!o.tls.enabled) return std::make_unique<httplib::Client>(host, port);
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  return absl::FailedPreconditionError(absl::StrCat(where, ": no TLS"));
#else
  const EtcdTlsOptions& t = o.tls;
  auto http = std::make_unique<httplib::Client>(
      absl::StrCat("https://", host, ":", port), t.cert_file, t.key_file);
  if (!http->is_valid()) {
    (void)TakeSslErrors();
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": tls.cert_file '", t.cert_file, "' and tls.key_file '",
        t.key_file, "' are not a PEM certificate and its key"));
  }
  if (!t.cert_file.empty()) {
    // etcd answers a certificate out of its validity only by closing the
    // connection (with TLS 1.3 after the handshake, so no alert reaches
    // this side): said here, it is a clear status.
    if (X509* cert = SSL_CTX_get0_certificate(http->ssl_context())) {
      const bool early = X509_cmp_current_time(X509_get0_notBefore(cert)) > 0;
      const bool late = X509_cmp_current_time(X509_get0_notAfter(cert)) < 0;
      if (early || late) {
        return absl::UnauthenticatedError(absl::StrCat(
            where, ": TLS: tls.cert_file '", t.cert_file, "' is ",
            late ? "expired" : "not valid yet",
            ": etcd would refuse it; renew the client certificate"));
      }
    }
  }
  if (t.verify_server_name) {
    // cpp-httplib verifies the chain and then the host's name.
    if (!t.ca_file.empty()) http->set_ca_cert_path(t.ca_file);
    http->enable_server_certificate_verification(true);
    return http;
  }
  // The chain alone: OpenSSL verifies it during the handshake (a refused
  // chain fails it), cpp-httplib's name check stays off.
  http->enable_server_certificate_verification(false);
  SSL_CTX* ctx = http->ssl_context();
  const int loaded = t.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                       : SSL_CTX_load_verify_locations(
                                             ctx, t.ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": tls.ca_file '", t.ca_file,
                     "' holds no PEM certificate: ", TakeSslErrors()));
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return http;
#endif
}

inline absl::Status EtcdClient::EnsureHttp(absl::string_view where) {
  if (http_ != nullptr) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<httplib::Client>> http =
      NewHttp(options_, where);
  if (!http.ok()) return http.status();
  http_ = std::move(*http);
  time_t sec = 0, usec = 0;
  detail::etcd::SplitDuration(options_.connect_timeout, &sec, &usec);
  http_->set_connection_timeout(sec, usec);
  detail::etcd::SplitDuration(options_.request_timeout, &sec, &usec);
  http_->set_read_timeout(sec, usec);
  http_->set_write_timeout(sec, usec);
  http_->set_socket_options(socket_.Taker());
  return absl::OkStatus();
}

inline std::string EtcdClient::TakeSslErrors() {
  std::string out;
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  while (const unsigned long e = ERR_get_error()) {  // NOLINT(runtime/int)
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (out.size() < 1024) absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
#endif
  return out;
}

inline absl::Status EtcdClient::TransportFailure(
    const EtcdClientOptions& o, absl::string_view where, httplib::Error err,
    const httplib::Client& http, const std::string& ssl_errors) {
  (void)http;
  if (!o.tls.enabled) return detail::etcd::TransportError(where, err);
  const std::string cause =
      ssl_errors.empty() ? httplib::to_string(err) : ssl_errors;
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (err == httplib::Error::SSLServerVerification) {
    const long v = http.get_openssl_verify_result();  // NOLINT(runtime/int)
    const std::string why =
        v != X509_V_OK
            ? std::string(X509_verify_cert_error_string(v))
            : "it does not name the endpoint's host (tls.verify_server_name)";
    return absl::UnauthenticatedError(
        absl::StrCat(where, ": TLS: etcd's certificate is not trusted: ", why,
                     " (tls.ca_file '", o.tls.ca_file, "')"));
  }
#endif
  if (err == httplib::Error::SSLLoadingCerts) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": TLS: tls.ca_file '", o.tls.ca_file,
                     "' cannot be loaded: ", cause));
  }
  // etcd refuses a client certificate (from another CA, expired, revoked)
  // with an alert (TLS 1.2: in the handshake; TLS 1.3: read after it) or,
  // with TLS 1.3, by closing the connection after the handshake, so that
  // the request's write fails: each request makes a new connection, so a
  // write failing is that. This side refusing etcd's certificate is
  // "certificate verify failed".
  const bool alert = absl::StrContains(ssl_errors, "alert");
  if (!o.tls.cert_file.empty() &&
      (alert || err == httplib::Error::Write ||
       (err == httplib::Error::SSLConnection && ssl_errors.empty()))) {
    // Without an alert it is an inference (etcd going away at that very
    // moment looks the same), and the message says so.
    return absl::UnauthenticatedError(absl::StrCat(
        where, ": TLS: etcd ", alert ? "refuses" : "most likely refuses",
        " tls.cert_file '", o.tls.cert_file,
        "' (not signed by its --trusted-ca-file, expired, or revoked): ",
        alert ? ssl_errors
              : "it closed the connection right after the handshake"));
  }
  if (absl::StrContains(ssl_errors, "certificate verify failed")) {
    return absl::UnauthenticatedError(absl::StrCat(
        where, ": TLS: etcd's certificate is not trusted (tls.ca_file '",
        o.tls.ca_file, "'): ", ssl_errors));
  }
  if (err == httplib::Error::SSLConnection) {
    return absl::UnavailableError(
        absl::StrCat(where, ": TLS handshake failed: ", cause));
  }
  return detail::etcd::TransportError(where, err);
}

inline bool EtcdClient::TokenRefused(const absl::Status& s) {
  // etcd's words (also inside a watch's cancel_reason), not the code: a
  // refused certificate is UNAUTHENTICATED too, and no token cures it.
  return absl::StrContains(s.message(), "invalid auth token") ||
         absl::StrContains(s.message(), "revision of auth store is old");
}

inline absl::Status EtcdClient::Authenticate(const std::string& where) {
  detail::json::Json req = detail::json::Json::object();
  req["name"] = options_.user;
  req["password"] = options_.password;
  const std::string at =
      absl::StrCat(where, ": authenticate as user '", options_.user, "'");
  absl::StatusOr<detail::json::Json> res =
      Exchange(at, "/v3/auth/authenticate", req.dump(), "");
  if (!res.ok()) {
    // etcd says INVALID_ARGUMENT for a wrong user or password.
    if (absl::StrContains(res.status().message(), "authentication failed")) {
      return absl::UnauthenticatedError(res.status().message());
    }
    return res.status();
  }
  auto token = res->find("token");
  if (token == res->end() || !token->is_string() ||
      token->get_ref<const std::string&>().empty()) {
    return absl::InternalError(
        absl::StrCat(at, ": response: no token (is auth enabled in etcd?)"));
  }
  // etcd's tokens (simple, JWT) are short printable ASCII. Anything else
  // would be cut from the Authorization header by cpp-httplib (a CR LF:
  // the request then goes out without credentials) or cost every request
  // a header block etcd refuses. Not quoted: it is a credential.
  const std::string& value = token->get_ref<const std::string&>();
  if (value.size() > kMaxTokenBytes ||
      !std::all_of(value.begin(), value.end(),
                   [](char c) { return c > ' ' && c < '\x7f'; })) {
    return absl::InternalError(
        absl::StrCat(at, ": response: the token (", value.size(),
                     " bytes) is not printable ASCII of at most ",
                     kMaxTokenBytes, " bytes; not a token etcd issues"));
  }
  token_ = value;
  authentications_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

inline absl::StatusOr<std::string> EtcdClient::StreamToken(
    absl::string_view where) {
  if (options_.user.empty()) return std::string();
  detail::MutexLock l(&mu_);
  if (!token_.empty()) return token_;
  if (absl::Status s = EnsureHttp(where); !s.ok()) return s;
  if (absl::Status s = Authenticate(std::string(where)); !s.ok()) return s;
  return token_;
}

inline void EtcdClient::DropToken(const std::string& stale) {
  detail::MutexLock l(&mu_);
  if (token_ == stale) token_.clear();
}

}  // namespace etcd
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_CLIENT_SECURE_INL_HPP_
