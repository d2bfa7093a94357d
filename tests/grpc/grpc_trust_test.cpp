// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// ServerOptions::trust over real gRPC channels: mutual TLS with
// certificates the test makes, a front end whose certificate a rule names
// and a batch client whose certificate it does not. The front end's
// CRITICAL_PLUS is believed; the batch client's is lowered to CRITICAL,
// counted and exported, and shed when only CRITICAL_PLUS is admitted; a
// client whose certificate another CA signed never reaches the handler.
// Without mTLS, the default policy caps every claim at CRITICAL, and an
// address rule is what lets a loopback front end through.

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/server.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/request_class.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trust_policy.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"
#include "support/test_certs.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using degrade_tests::ReadWholeFile;
using degrade_tests::TestCert;

// Level 1 admits CRITICAL_PLUS only.
constexpr const char* kOnlyCriticalPlus = R"({
  "degradation": {
    "level1": {"trigger": {"queue_delay_ms": 10}, "admit": {"min": "CRITICAL_PLUS"}}
  }
})";

class GrpcTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!degrade_tests::HaveOpenssl()) GTEST_SKIP() << "no openssl command";
    const std::string d = dir_.Path("");
    ca_ = degrade_tests::MakeTestCa(d, "mesh-ca").value();
    foreign_ca_ = degrade_tests::MakeTestCa(d, "other-ca").value();
    server_ = degrade_tests::MakeTestLeaf(d, ca_, "server",
                                          "DNS:localhost,IP:127.0.0.1")
                  .value();
    front_ = degrade_tests::MakeTestLeaf(
                 d, ca_, "front", "DNS:front.mesh,URI:spiffe://mesh/front")
                 .value();
    batch_ =
        degrade_tests::MakeTestLeaf(d, ca_, "batch", "DNS:batch.mesh").value();
    // Names front.mesh, but signed by a CA the server does not trust.
    forged_ =
        degrade_tests::MakeTestLeaf(d, foreign_ca_, "forged", "DNS:front.mesh")
            .value();

    ManagerOptions mo;
    mo.clock = &clock_;
    mo.metrics = NoTelemetry();
    manager_ = DegradationManager::Create(
                   ParseDegradationConfig(kOnlyCriticalPlus).value(), mo)
                   .value();
    AdmissionOptions ao;
    ao.manager = manager_.get();
    ao.clock = &clock_;
    ao.metrics = NoTelemetry();
    admission_ = AdmissionController::Create(ao).value();
    options_.admission = admission_.get();
    options_.counters = &counters_;
    TrustPolicySettings ts;
    ts.peers = {{"front.mesh", Criticality::kCriticalPlus}};
    options_.trust = TrustPolicy::Create(ts).value();
  }

  degrade_test::EchoServer::Script Service() {
    degrade_test::EchoServer::Script s;
    s.handler = [this](::grpc::ServerContext* ctx, const auto&, auto*) {
      grpc::ServerCall call(ctx, options_);
      {
        std::lock_guard<std::mutex> l(mu_);
        served_ = call.request_class();
        claimed_ = call.claimed_class();
        peer_ = grpc::PeerOf(*ctx);
      }
      if (!call.admitted()) return call.Finish();
      handled_.fetch_add(1);
      return call.Finish();
    };
    return s;
  }

  std::shared_ptr<::grpc::ServerCredentials> MutualTls() const {
    ::grpc::SslServerCredentialsOptions o(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    o.pem_root_certs = ReadWholeFile(ca_.cert);
    o.pem_key_cert_pairs.push_back(
        {ReadWholeFile(server_.key), ReadWholeFile(server_.cert)});
    return ::grpc::SslServerCredentials(o);
  }

  std::unique_ptr<degrade::test::Echo::Stub> TlsStub(
      const degrade_test::EchoServer& s, const TestCert& client) const {
    ::grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadWholeFile(ca_.cert);
    o.pem_private_key = ReadWholeFile(client.key);
    o.pem_cert_chain = ReadWholeFile(client.cert);
    ::grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    args.SetSslTargetNameOverride("localhost");
    return degrade::test::Echo::NewStub(::grpc::CreateCustomChannel(
        s.address(), ::grpc::SslCredentials(o), args));
  }

  static absl::Status Claim(degrade::test::Echo::Stub& stub,
                            Criticality criticality) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    RequestClass rc;
    rc.criticality = criticality;
    rc.cohort = 9;
    grpc::SetRequestClass(&ctx, rc);
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    return grpc::FromGrpcCall(stub.Say(&ctx, request, &reply), ctx);
  }

  RequestClass served() {
    std::lock_guard<std::mutex> l(mu_);
    return served_;
  }
  std::optional<RequestClass> claimed() {
    std::lock_guard<std::mutex> l(mu_);
    return claimed_;
  }
  PeerIdentity peer() {
    std::lock_guard<std::mutex> l(mu_);
    return peer_;
  }

  degrade_tests::TempDir dir_{"grpc_trust"};
  TestCert ca_, foreign_ca_, server_, front_, batch_, forged_;
  FakeClock clock_;
  std::unique_ptr<DegradationManager> manager_;
  std::unique_ptr<AdmissionController> admission_;
  grpc::ServerCounters counters_{[] {
    grpc::ServerCountersOptions o;
    o.name = "trust";
    o.metrics = NoTelemetry();
    return o;
  }()};
  grpc::ServerOptions options_;
  std::atomic<int> handled_{0};
  std::mutex mu_;
  RequestClass served_;
  std::optional<RequestClass> claimed_;
  PeerIdentity peer_;
};

TEST_F(GrpcTrustTest, TheNamedFrontEndMayClaimCriticalPlus) {
  degrade_test::EchoServer server(Service(), MutualTls());
  ASSERT_TRUE(server.started());
  auto stub = TlsStub(server, front_);
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCriticalPlus);
  EXPECT_EQ(served().cohort, 9);
  EXPECT_FALSE(claimed().has_value());
  const PeerIdentity p = peer();
  EXPECT_TRUE(p.authenticated);
  EXPECT_NE(std::find(p.names.begin(), p.names.end(), "front.mesh"),
            p.names.end());
  EXPECT_EQ(p.address, "127.0.0.1");
  const auto st = counters_.stats();
  EXPECT_EQ(st.class_capped[0] + st.class_capped[1] + st.class_capped[2], 0u);
}

TEST_F(GrpcTrustTest, AnotherAuthenticatedPeerIsLoweredToCriticalAndCounted) {
  degrade_test::EchoServer server(Service(), MutualTls());
  ASSERT_TRUE(server.started());
  auto stub = TlsStub(server, batch_);
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCritical);
  EXPECT_EQ(served().cohort, 9);  // the cohort is kept
  ASSERT_TRUE(claimed().has_value());
  EXPECT_EQ(claimed()->criticality, Criticality::kCriticalPlus);
  EXPECT_TRUE(peer().authenticated);
  // A claim at or below the cap is untouched and not counted.
  ASSERT_TRUE(Claim(*stub, Criticality::kSheddablePlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kSheddablePlus);
  EXPECT_FALSE(claimed().has_value());
  const auto st = counters_.stats();
  EXPECT_EQ(st.class_capped[0], 1u);
  EXPECT_EQ(st.class_capped[1], 0u);
  EXPECT_EQ(st.accepted, 2u);

  // The operator sees it.
  MetricsRegistry registry;
  grpc::ServerCountersOptions o;
  o.name = "ranker";
  o.metrics = &registry;
  grpc::ServerCounters exported(o);
  options_.counters = &exported;
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  const std::string text = registry.RenderPrometheus();
  bool found = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    found = found || (absl::StartsWith(
                          line, "degrade_grpc_server_class_capped_total{") &&
                      absl::StrContains(line, "claimed=\"CRITICAL_PLUS\"") &&
                      absl::StrContains(line, "grpc_server=\"ranker\"") &&
                      absl::EndsWith(line, "} 1"));
  }
  EXPECT_TRUE(found) << text;
  options_.counters = &counters_;
}

TEST_F(GrpcTrustTest, UnderOverloadAForgedClaimIsShedAndTheFrontEndsIsNot) {
  degrade_test::EchoServer server(Service(), MutualTls());
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(manager_->ForceLevel(1, absl::Hours(1)).ok());
  auto front = TlsStub(server, front_);
  auto batch = TlsStub(server, batch_);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(Claim(*front, Criticality::kCriticalPlus).ok());
    EXPECT_EQ(Claim(*batch, Criticality::kCriticalPlus).code(),
              absl::StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(handled_.load(), 20);
  EXPECT_EQ(counters_.stats().class_capped[0], 20u);
}

TEST_F(GrpcTrustTest, ACertificateFromAnotherCaNeverReachesTheHandler) {
  degrade_test::EchoServer server(Service(), MutualTls());
  ASSERT_TRUE(server.started());
  auto stub = TlsStub(server, forged_);
  const absl::Status s = Claim(*stub, Criticality::kCriticalPlus);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(server.attempts(), 0);
}

TEST_F(GrpcTrustTest, WithoutTlsTheDefaultPolicyCapsEveryClaimAtCritical) {
  grpc::ServerOptions defaults;  // no trust configured: the safe default
  defaults.counters = &counters_;
  options_ = defaults;
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = degrade::test::Echo::NewStub(
      degrade_test::LoopbackChannel(server.address()));
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCritical);
  EXPECT_FALSE(peer().authenticated);
  EXPECT_EQ(peer().address, "127.0.0.1");
  ASSERT_TRUE(Claim(*stub, Criticality::kCritical).ok());
  EXPECT_EQ(served().criticality, Criticality::kCritical);
  EXPECT_EQ(counters_.stats().class_capped[0], 1u);
}

TEST_F(GrpcTrustTest, AnAddressRuleOrTrustAllLetsALoopbackFrontEndThrough) {
  TrustPolicySettings ts;
  ts.addresses = {{"127.0.0.1", Criticality::kCriticalPlus}};
  options_.trust = TrustPolicy::Create(ts).value();
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = degrade::test::Echo::NewStub(
      degrade_test::LoopbackChannel(server.address()));
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCriticalPlus);
  options_.trust = TrustPolicy::TrustAll();
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCriticalPlus);
  // A name rule needs a certificate: over plain TCP no peer has names.
  TrustPolicySettings by_name;
  by_name.peers = {{"front.mesh", Criticality::kCriticalPlus}};
  options_.trust = TrustPolicy::Create(by_name).value();
  ASSERT_TRUE(Claim(*stub, Criticality::kCriticalPlus).ok());
  EXPECT_EQ(served().criticality, Criticality::kCritical);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
