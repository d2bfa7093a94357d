// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The demo's trust boundary. The servers serve mutual TLS only, with
// certificates one CA signed (made per run in the run's own directory), and
// trust only the front end: its certificate names front.grpc-recsys, and a
// TrustPolicy on every server lets that name, and no other, claim
// CRITICAL_PLUS (server.cpp). The front assigns the class of each request;
// a batch job holding a certificate of its own that claims CRITICAL_PLUS
// is served at CRITICAL, and only the chaos driver's certificate may change
// a server's state (Control/SetLatency). CheckTrust() shows all of that
// against the real servers, and the test asserts it.

#ifndef DEGRADE_EXAMPLES_GRPC_RECSYS_TRUST_HPP_
#define DEGRADE_EXAMPLES_GRPC_RECSYS_TRUST_HPP_

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "recsys.grpc.pb.h"
#include "tls_certificates.hpp"

namespace grpc_recsys {

// The paths of one run's certificates.
struct DemoTls {
  std::string dir;  // what the servers get as --tls-dir
  tls_certificates::TestCert ca, server, front, chaos, batch;
};

// Makes the run's CA and certificates in `dir`/tls. FAILED_PRECONDITION
// when the openssl command is missing.
inline absl::StatusOr<DemoTls> MakeDemoTls(const std::string& dir) {
  if (!tls_certificates::HaveOpenssl()) {
    return absl::FailedPreconditionError(
        "the demo's servers run mutual TLS with certificates made by the "
        "openssl command, which is not installed (Debian: openssl)");
  }
  DemoTls t;
  t.dir = dir + "/tls";
  if (::mkdir(t.dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("cannot create ", t.dir));
  }
  absl::StatusOr<tls_certificates::TestCert> c =
      tls_certificates::MakeTestCa(t.dir, "ca");
  if (!c.ok()) return c.status();
  t.ca = *c;
  const struct {
    const char* name;
    const char* sans;
    tls_certificates::TestCert* into;
  } leaves[] = {{"server", "DNS:localhost,IP:127.0.0.1", &t.server},
                {"front", "DNS:front.grpc-recsys", &t.front},
                {"chaos", "DNS:chaos.grpc-recsys", &t.chaos},
                {"batch", "DNS:batch.grpc-recsys", &t.batch}};
  for (const auto& leaf : leaves) {
    c = tls_certificates::MakeTestLeaf(t.dir, t.ca, leaf.name, leaf.sans);
    if (!c.ok()) return c.status();
    *leaf.into = *c;
  }
  return t;
}

// Channel credentials presenting `client`'s certificate (nullptr: plain).
inline std::shared_ptr<::grpc::ChannelCredentials> ClientCredentials(
    const DemoTls* tls, const tls_certificates::TestCert& client) {
  if (tls == nullptr) return ::grpc::InsecureChannelCredentials();
  ::grpc::SslCredentialsOptions o;
  o.pem_root_certs = tls_certificates::ReadWholeFile(tls->ca.cert);
  o.pem_private_key = tls_certificates::ReadWholeFile(client.key);
  o.pem_cert_chain = tls_certificates::ReadWholeFile(client.cert);
  return ::grpc::SslCredentials(o);
}

// A channel to 127.0.0.1:`port` with `credentials`, checking the server's
// certificate against the name it carries ("localhost").
inline std::shared_ptr<::grpc::Channel> DemoChannel(
    int port, std::shared_ptr<::grpc::ChannelCredentials> credentials,
    ::grpc::ChannelArguments args = {}) {
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetSslTargetNameOverride("localhost");
  return ::grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                     std::move(credentials), args);
}

// What the servers did with each kind of caller.
struct TrustReport {
  // The class a features call claiming CRITICAL_PLUS was served at, as the
  // server's grpc-recsys-served-class trailer says ("" when it failed).
  std::string front_served;
  std::string batch_served;
  // A client with no certificate; the batch job asking Control/SetLatency.
  absl::StatusCode no_certificate = absl::StatusCode::kOk;
  absl::StatusCode batch_control = absl::StatusCode::kOk;
};

namespace detail {

inline std::string ServedClass(int port,
                               std::shared_ptr<::grpc::ChannelCredentials> c) {
  auto channel = DemoChannel(port, std::move(c));
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  degrade::RequestClass claim;
  claim.criticality = degrade::Criticality::kCriticalPlus;
  degrade::grpc::SetRequestClass(&ctx, claim);
  FeatureRequest req;
  req.set_user(7);
  FeatureReply reply;
  if (!Features::Stub(channel).Get(&ctx, req, &reply).ok()) return "";
  const auto& trailers = ctx.GetServerTrailingMetadata();
  auto it = trailers.find("grpc-recsys-served-class");
  if (it == trailers.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

inline absl::StatusCode ControlAnswer(
    int port, std::shared_ptr<::grpc::ChannelCredentials> c) {
  auto channel = DemoChannel(port, std::move(c));
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  LatencyRequest req;
  LatencyReply reply;
  return degrade::grpc::FromGrpcStatus(
             Control::Stub(channel).SetLatency(&ctx, req, &reply))
      .code();
}

}  // namespace detail

// Calls the features server at `port` as the front, as the batch job and
// with no certificate, and asks its Control service as the batch job.
inline TrustReport CheckTrust(const DemoTls& tls, int port) {
  TrustReport r;
  r.front_served =
      detail::ServedClass(port, ClientCredentials(&tls, tls.front));
  r.batch_served =
      detail::ServedClass(port, ClientCredentials(&tls, tls.batch));
  ::grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = tls_certificates::ReadWholeFile(tls.ca.cert);
  r.no_certificate =
      detail::ControlAnswer(port, ::grpc::SslCredentials(no_cert));
  r.batch_control =
      detail::ControlAnswer(port, ClientCredentials(&tls, tls.batch));
  return r;
}

inline void PrintTrust(std::FILE* out, const TrustReport& r) {
  std::fprintf(out, "\n== trust: who may claim what (features server) ==\n");
  std::fprintf(out, "  %-34s %s\n", "front.grpc-recsys claims CRITICAL_PLUS",
               r.front_served.empty() ? "failed" : r.front_served.c_str());
  std::fprintf(out, "  %-34s %s\n", "batch.grpc-recsys claims CRITICAL_PLUS",
               r.batch_served.empty() ? "failed" : r.batch_served.c_str());
  std::fprintf(out, "  %-34s %s\n", "a client with no certificate",
               absl::StatusCodeToString(r.no_certificate).c_str());
  std::fprintf(out, "  %-34s %s\n", "batch.grpc-recsys sets latency",
               absl::StatusCodeToString(r.batch_control).c_str());
}

}  // namespace grpc_recsys

#endif  // DEGRADE_EXAMPLES_GRPC_RECSYS_TRUST_HPP_
