// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/server.hpp's rate limits over real gRPC calls on loopback: a
// limit per caller identity (degrade-caller-id, or a configured header) and
// a limit per criticality. A refused call is answered RESOURCE_EXHAUSTED
// with the limiter's exact retry-after as pushback, its handler does no
// work, and it is counted as rate_limited (by which limit) in the server's
// telemetry beside the limiters' own series. A missing or malformed
// identity is the one anonymous caller.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/server.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

class GrpcServerRateLimitTest : public ::testing::Test {
 protected:
  GrpcServerRateLimitTest() {
    KeyedRateLimitSettings ks;
    ks.name = "per_caller";
    ks.rate = 1;  // a permit a second per caller, 2 at once
    ks.burst = 2;
    ks.max_keys = 64;
    ks.clock = &clock_;
    ks.metrics = &registry_;
    per_caller_ = grpc::CallerRateLimiter::Create(ks).value();
    RateLimitSettings cs;
    cs.name = "sheddable";
    cs.rate = 0.5;  // one permit every 2 s
    cs.burst = 1;
    cs.clock = &clock_;
    cs.metrics = &registry_;
    sheddable_ = RateLimiter::Create(cs).value();
    grpc::ServerCountersOptions co;
    co.name = "ranker";
    co.metrics = &registry_;
    counters_ = std::make_unique<grpc::ServerCounters>(co);
    options_.clock = &clock_;
    options_.counters = counters_.get();
    options_.per_caller = per_caller_.get();
    options_.per_class[static_cast<std::size_t>(Criticality::kSheddable)] =
        sheddable_.get();
  }

  degrade_test::EchoServer::Script Service() {
    degrade_test::EchoServer::Script s;
    s.handler = [this](::grpc::ServerContext* ctx, const auto&, auto*) {
      grpc::ServerCall call(ctx, options_);
      {
        // The handler runs on a server thread; the test reads these after
        // the call returns.
        std::lock_guard<std::mutex> lock(mu_);
        last_caller_ = call.caller();
        last_rate_limited_ = call.rate_limited();
      }
      if (!call.admitted()) return call.Finish();
      worked_.fetch_add(1);
      return call.Finish();
    };
    return s;
  }

  std::unique_ptr<degrade::test::Echo::Stub> Stub(
      const degrade_test::EchoServer& s) {
    ::grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    return degrade::test::Echo::NewStub(
        degrade_test::LoopbackChannel(s.address(), args));
  }

  // One call; `caller` null sends no identity. Extra headers are added as
  // given (a repeated identity, a custom header).
  absl::Status Call(
      degrade::test::Echo::Stub& stub, const char* caller,
      Criticality c = Criticality::kCritical,
      std::vector<std::pair<std::string, std::string>> extra = {}) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    if (caller != nullptr) {
      ctx.AddMetadata(std::string(grpc::kCallerIdKey), caller);
    }
    for (const auto& [k, v] : extra) ctx.AddMetadata(k, v);
    RequestClass rc;
    rc.criticality = c;
    grpc::SetRequestClass(&ctx, rc);
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub.Say(&ctx, request, &reply);
    return grpc::FromGrpcCall(s, ctx);
  }

  FakeClock clock_;
  MetricsRegistry registry_;
  std::unique_ptr<grpc::CallerRateLimiter> per_caller_;
  std::unique_ptr<RateLimiter> sheddable_;
  std::unique_ptr<grpc::ServerCounters> counters_;
  grpc::ServerOptions options_;
  std::atomic<int> worked_{0};
  std::mutex mu_;
  std::string last_caller_;
  bool last_rate_limited_ = false;

  std::string LastCaller() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_caller_;
  }
  bool LastRateLimited() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_rate_limited_;
  }
};

TEST_F(GrpcServerRateLimitTest, OneCallerOverItsLimitIsRefusedOthersAreNot) {
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_TRUE(Call(*stub, "alice").ok());  // the burst of 2
  const absl::Status refused = Call(*stub, "alice");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  // The limiter's exact retry-after, as the pushback gRPC carries.
  EXPECT_EQ(RetryAfterHint(refused), absl::Seconds(1));
  EXPECT_TRUE(LastRateLimited());
  EXPECT_EQ(LastCaller(), "alice");
  EXPECT_EQ(worked_.load(), 2) << "the refused call did no work";

  EXPECT_TRUE(Call(*stub, "bob").ok()) << "a caller of its own";
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(Call(*stub, "alice").ok()) << "a permit came back";

  const GrpcServerStats st = counters_->stats();
  EXPECT_EQ(st.accepted, 4u);
  EXPECT_EQ(st.rate_limited_caller, 1u);
  EXPECT_EQ(st.rate_limited_class, 0u);
  EXPECT_EQ(st.shed, 0u) << "a rate limit's refusal is not an admission shed";
}

TEST_F(GrpcServerRateLimitTest, NoOrAMalformedIdentityIsTheAnonymousCaller) {
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  EXPECT_TRUE(Call(*stub, nullptr).ok());
  EXPECT_EQ(LastCaller(), "");
  // Too long: the same anonymous key, whose burst is now spent.
  const std::string too_long(grpc::kMaxCallerIdLength + 1, 'a');
  EXPECT_TRUE(Call(*stub, too_long.c_str()).ok());
  EXPECT_EQ(LastCaller(), "");
  EXPECT_EQ(Call(*stub, nullptr).code(), absl::StatusCode::kResourceExhausted);
  // Repeated: malformed too (one call, one caller).
  EXPECT_EQ(Call(*stub, "carol", Criticality::kCritical,
                 {{std::string(grpc::kCallerIdKey), "dave"}})
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(LastCaller(), "");
  // The longest valid identity is its own caller.
  const std::string longest(grpc::kMaxCallerIdLength, 'b');
  EXPECT_TRUE(Call(*stub, longest.c_str()).ok());
  EXPECT_EQ(LastCaller(), longest);

  const GrpcServerStats st = counters_->stats();
  EXPECT_EQ(st.malformed_caller, 2u);
  EXPECT_EQ(st.rate_limited_caller, 2u);
}

TEST_F(GrpcServerRateLimitTest, AConfiguredHeaderNamesTheCaller) {
  options_.caller_header = "x-tenant";
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  // degrade-caller-id is not read now: these are the tenant's calls.
  EXPECT_TRUE(
      Call(*stub, "ignored", Criticality::kCritical, {{"x-tenant", "acme"}})
          .ok());
  EXPECT_EQ(LastCaller(), "acme");
}

// gRPC delivers metadata keys in lower case: a setting in upper case
// ("X-Tenant") never matched, and every call was the anonymous caller.
TEST_F(GrpcServerRateLimitTest, AnUpperCaseHeaderSettingStillNamesTheCaller) {
  options_.caller_header = "X-Tenant";
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  EXPECT_TRUE(
      Call(*stub, "ignored", Criticality::kCritical, {{"x-tenant", "acme"}})
          .ok());
  EXPECT_EQ(LastCaller(), "acme");
}

TEST_F(GrpcServerRateLimitTest, AClassLimitRefusesOnlyItsClass) {
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  EXPECT_TRUE(Call(*stub, "alice", Criticality::kSheddable).ok());
  const absl::Status refused = Call(*stub, "bob", Criticality::kSheddable);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfterHint(refused), absl::Seconds(2));
  EXPECT_TRUE(Call(*stub, "bob", Criticality::kCritical).ok())
      << "no limit on CRITICAL";
  EXPECT_EQ(counters_->stats().rate_limited_class, 1u);

  // The caller's limit is asked first: a caller over its own limit spends
  // nothing of the class's.
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(Call(*stub, "carol").ok());
  EXPECT_TRUE(Call(*stub, "carol").ok());
  EXPECT_EQ(Call(*stub, "carol", Criticality::kSheddable).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(sheddable_->TryAcquire()) << "the class permit is still there";
  const GrpcServerStats st = counters_->stats();
  EXPECT_EQ(st.rate_limited_caller, 1u);
  EXPECT_EQ(st.rate_limited_class, 1u);
}

TEST_F(GrpcServerRateLimitTest, AdmissionIsAskedOnlyForCallsWithinTheLimits) {
  AdmissionOptions ao;
  ao.clock = &clock_;
  ao.metrics = NoTelemetry();
  auto admission = AdmissionController::Create(ao).value();
  options_.admission = admission.get();
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_FALSE(Call(*stub, "alice").ok());
  EXPECT_EQ(admission->stats()
                .admitted[static_cast<std::size_t>(Criticality::kCritical)],
            2u);
}

TEST_F(GrpcServerRateLimitTest, FromTheConfiguredLevelARefusalSaysDoNotRetry) {
  // Two levels, so that level 2 can be forced.
  constexpr const char* kTwoLevels = R"({
    "degradation": {
      "level1": {"trigger": {"queue_delay_ms": 10}},
      "level2": {"trigger": {"queue_delay_ms": 20}}
    }
  })";
  ManagerOptions mo;
  mo.clock = &clock_;
  mo.metrics = NoTelemetry();
  auto manager =
      DegradationManager::Create(ParseDegradationConfig(kTwoLevels).value(), mo)
          .value();
  ASSERT_TRUE(manager->ForceLevel(2, absl::Minutes(10)).ok());
  options_.manager = manager.get();
  options_.no_retry_from_level = 2;
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_TRUE(Call(*stub, "alice").ok());
  const absl::Status refused = Call(*stub, "alice");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  const auto hint = RetryAfterHint(refused);
  ASSERT_TRUE(hint.has_value());
  EXPECT_LT(*hint, absl::ZeroDuration()) << "a server that deep in trouble "
                                            "wants no retries at all";
  EXPECT_EQ(counters_->stats().shed_do_not_retry, 1u);
  options_.manager = nullptr;  // before the manager goes
}

TEST_F(GrpcServerRateLimitTest, TheRegistryShowsTheRefusalsAndTheLimiters) {
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_TRUE(Call(*stub, "alice").ok());
  EXPECT_FALSE(Call(*stub, "alice").ok());
  EXPECT_TRUE(Call(*stub, "bob", Criticality::kSheddable).ok());
  EXPECT_FALSE(Call(*stub, "carol", Criticality::kSheddable).ok());
  EXPECT_TRUE(Call(*stub, "x y").ok());  // malformed: the anonymous caller

  const std::string text = registry_.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_grpc_server_calls_total{grpc_server="ranker",outcome="accepted"})",
        4},
       {R"(degrade_grpc_server_calls_total{grpc_server="ranker",outcome="rate_limited"})",
        2},
       {R"(degrade_grpc_server_calls_total{grpc_server="ranker",outcome="shed"})",
        0},
       {R"(degrade_grpc_server_rate_limited_total{grpc_server="ranker",limit="caller"})",
        1},
       {R"(degrade_grpc_server_rate_limited_total{grpc_server="ranker",limit="class"})",
        1},
       {R"(degrade_grpc_server_malformed_caller_total{grpc_server="ranker"})",
        1},
       {R"(degrade_keyed_rate_limit_requests_total{rate_limiter="per_caller",result="refused"})",
        1},
       {R"(degrade_rate_limit_requests_total{rate_limiter="sheddable",result="refused"})",
        1}});
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
