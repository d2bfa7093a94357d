// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/server.hpp over real gRPC calls on loopback: an admitted
// call runs and sends its trace and level; a shed call is answered with
// RESOURCE_EXHAUSTED and the shed's pushback, "do not retry" from the
// configured level on, which gRPC's own retry policy honours (one attempt
// at the server); a malformed request class is counted and served as the
// default class.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/server.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"
#include "support/notification.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

// Level 1 admits SHEDDABLE_PLUS and above, level 2 CRITICAL and above.
constexpr const char* kFloors = R"({
  "degradation": {
    "level1": {"trigger": {"queue_delay_ms": 10}, "admit": {"min": "SHEDDABLE_PLUS"}},
    "level2": {"trigger": {"queue_delay_ms": 20}, "admit": {"min": "CRITICAL"}}
  }
})";

class GrpcServerTest : public ::testing::Test {
 protected:
  GrpcServerTest() {
    ManagerOptions mo;
    mo.clock = &clock_;
    mo.metrics = NoTelemetry();
    manager_ =
        DegradationManager::Create(ParseDegradationConfig(kFloors).value(), mo)
            .value();
    AdmissionOptions ao;
    ao.manager = manager_.get();
    ao.clock = &clock_;
    ao.metrics = NoTelemetry();
    ao.retry_after = absl::Milliseconds(200);
    admission_ = AdmissionController::Create(ao).value();
    options_.admission = admission_.get();
    options_.manager = manager_.get();
    options_.no_retry_from_level = 2;
    options_.counters = &counters_;
  }

  // A server whose handler runs behind a ServerCall, counting the work it
  // did and recording the class it served.
  degrade_test::EchoServer::Script Service() {
    degrade_test::EchoServer::Script s;
    s.handler = [this](::grpc::ServerContext* ctx, const auto&, auto*) {
      grpc::ServerCall call(ctx, options_);
      if (!call.admitted()) return call.Finish();
      worked_.fetch_add(1);
      served_rank_ = Rank(call.request_class());
      call.trace().Add("rank", DegradeReason::kTimeout);
      return call.Finish(handler_status_);
    };
    return s;
  }

  std::unique_ptr<degrade::test::Echo::Stub> Stub(
      const degrade_test::EchoServer& s, bool grpc_retries = false) {
    ::grpc::ChannelArguments args;
    // gRPC's own retry policy, retrying RESOURCE_EXHAUSTED: only the
    // pushback can stop it.
    args.SetServiceConfigJSON(
        R"({"methodConfig":[{"name":[{"service":"degrade.test.Echo"}],)"
        R"("retryPolicy":{"maxAttempts":3,"initialBackoff":"0.001s",)"
        R"("maxBackoff":"0.001s","backoffMultiplier":1,)"
        R"("retryableStatusCodes":["RESOURCE_EXHAUSTED"]}}]})");
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, grpc_retries ? 1 : 0);
    return degrade::test::Echo::NewStub(
        degrade_test::LoopbackChannel(s.address(), args));
  }

  // One call as `rc` (or with raw class metadata); returns the status read
  // through the adapter, and the trailers' trace and level.
  struct Answer {
    absl::Status status;
    std::string trace;
    int level = -1;
  };
  Answer Call(degrade::test::Echo::Stub& stub, const RequestClass& rc,
              const char* raw_class = nullptr) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    if (raw_class != nullptr) {
      ctx.AddMetadata(std::string(grpc::kRequestClassKey), raw_class);
    } else {
      grpc::SetRequestClass(&ctx, rc);
    }
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub.Say(&ctx, request, &reply);
    Answer a;
    a.status = grpc::FromGrpcCall(s, ctx);
    DegradationTrace t;
    EXPECT_TRUE(grpc::MergeTrace(ctx, &t).ok());
    a.trace = t.Encode();
    a.level = grpc::ServerLevel(ctx).value().value_or(-1);
    return a;
  }

  static RequestClass Of(Criticality c) {
    RequestClass rc;
    rc.criticality = c;
    return rc;
  }

  FakeClock clock_;
  std::unique_ptr<DegradationManager> manager_;
  std::unique_ptr<AdmissionController> admission_;
  grpc::ServerCounters counters_;
  grpc::ServerOptions options_;
  std::atomic<int> worked_{0};
  absl::Status handler_status_;  // what the handler finishes with
  std::atomic<int> served_rank_{-1};
};

TEST_F(GrpcServerTest, AnAdmittedCallRunsAndSendsItsTraceAndLevel) {
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  const Answer a = Call(*stub, Of(Criticality::kSheddable));
  EXPECT_TRUE(a.status.ok()) << a.status;
  EXPECT_EQ(worked_.load(), 1);
  EXPECT_EQ(a.trace, "v1;rank=timeout");
  EXPECT_EQ(a.level, 0);
}

TEST_F(GrpcServerTest, AShedCallIsRefusedWithTheShedsRetryAfter) {
  ASSERT_TRUE(manager_->ForceLevel(1, absl::Minutes(10)).ok());
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  const Answer a = Call(*stub, Of(Criticality::kSheddable));
  EXPECT_EQ(a.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfterHint(a.status), absl::Milliseconds(200));
  EXPECT_EQ(worked_.load(), 0);  // the handler did no work
  EXPECT_EQ(a.level, 1);
  EXPECT_EQ(a.trace, "v1");

  // SHEDDABLE_PLUS still passes at level 1.
  EXPECT_TRUE(Call(*stub, Of(Criticality::kSheddablePlus)).status.ok());
  EXPECT_EQ(worked_.load(), 1);
  const GrpcServerStats st = counters_.stats();
  EXPECT_EQ(st.shed, 1u);
  EXPECT_EQ(st.accepted, 1u);
  EXPECT_EQ(st.shed_do_not_retry, 0u);  // below no_retry_from_level
}

TEST_F(GrpcServerTest, FromTheConfiguredLevelAShedSaysDoNotRetryAndGrpcObeys) {
  ASSERT_TRUE(manager_->ForceLevel(2, absl::Minutes(10)).ok());
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/true);

  const Answer a = Call(*stub, Of(Criticality::kSheddablePlus));
  EXPECT_EQ(a.status.code(), absl::StatusCode::kResourceExhausted);
  const auto hint = RetryAfterHint(a.status);
  ASSERT_TRUE(hint.has_value());
  EXPECT_LT(*hint, absl::ZeroDuration());
  EXPECT_EQ(server.attempts(), 1);  // gRPC's 3-attempt policy made no retry
  EXPECT_EQ(counters_.stats().shed_do_not_retry, 1u);

  // Below the level, the same policy does retry the shed: the pushback,
  // not the code, is what stops it.
  ASSERT_TRUE(manager_->ForceLevel(1, absl::Minutes(10)).ok());
  degrade_test::EchoServer below(Service());
  ASSERT_TRUE(below.started());
  auto retrying = Stub(below, /*grpc_retries=*/true);
  // A 200 ms pushback, three attempts: gRPC waits it out twice.
  EXPECT_EQ(Call(*retrying, Of(Criticality::kSheddable)).status.code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(below.attempts(), 3);
}

TEST_F(GrpcServerTest, AMalformedClassIsCountedAndServedAsTheDefault) {
  ASSERT_TRUE(manager_->ForceLevel(2, absl::Minutes(10)).ok());
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  // Served as CRITICAL (the default), which level 2 still admits.
  const Answer a = Call(*stub, {}, "SHEDDABLE:999");
  EXPECT_TRUE(a.status.ok()) << a.status;
  EXPECT_EQ(served_rank_.load(), Rank(Of(Criticality::kCritical)));
  EXPECT_EQ(counters_.stats().malformed_metadata, 1u);

  // A configured default applies too: SHEDDABLE is shed at level 2.
  options_.default_class = Of(Criticality::kSheddable);
  EXPECT_EQ(Call(*stub, {}, "garbage").status.code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(counters_.stats().malformed_metadata, 2u);
}

TEST_F(GrpcServerTest, WithoutAControllerEverythingIsAdmitted) {
  options_.admission = nullptr;
  ASSERT_TRUE(manager_->ForceLevel(2, absl::Minutes(10)).ok());
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  const Answer a = Call(*stub, Of(Criticality::kSheddable));
  EXPECT_TRUE(a.status.ok());
  EXPECT_EQ(a.level, 2);
}

// A call that waited past its deadline before its handler began (here the
// handler waits until the client has seen DEADLINE_EXCEEDED, as a call
// queued behind busy threads does) is not run: DEADLINE_EXCEEDED, counted
// as expired, and admission is never asked.
TEST_F(GrpcServerTest, ACallWhoseDeadlinePassedBeforeItsHandlerIsNotRun) {
  degrade_tests::Notification client_gave_up;
  std::atomic<bool> ran{false};
  std::atomic<int> code{-1};
  degrade_test::EchoServer::Script script;
  script.handler = [&](::grpc::ServerContext* ctx, const auto&, auto*) {
    client_gave_up.WaitForNotification();
    grpc::ServerCall call(ctx, options_);
    code.store(static_cast<int>(call.shed().code()));
    if (!call.admitted()) return call.Finish();
    ran.store(true);
    return call.Finish();
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(200));
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  EXPECT_EQ(stub->Say(&ctx, request, &reply).error_code(),
            ::grpc::StatusCode::DEADLINE_EXCEEDED);
  client_gave_up.Notify();
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (code.load() < 0 && absl::Now() < give_up)
    absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(code.load(), static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(ran.load());
  const GrpcServerStats st = counters_.stats();
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.accepted, 0u);
  EXPECT_EQ(st.shed, 0u);
  const AdmissionStats as = admission_->stats();
  uint64_t asked = 0;
  for (std::size_t c = 0; c < kNumCriticalities; ++c)
    asked += as.admitted[c] + as.shed[c];
  EXPECT_EQ(asked, 0u);
}

TEST_F(GrpcServerTest, TheRegistryRendersCallsByOutcomeUntilTheCountersGo) {
  MetricsRegistry registry;
  grpc::ServerCountersOptions co;
  co.name = "ranker";
  co.metrics = &registry;
  auto counters = std::make_unique<grpc::ServerCounters>(co);
  options_.counters = counters.get();
  ASSERT_TRUE(manager_->ForceLevel(2, absl::Minutes(10)).ok());
  degrade_test::EchoServer server(Service());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  EXPECT_TRUE(Call(*stub, Of(Criticality::kCritical)).status.ok());
  EXPECT_EQ(Call(*stub, Of(Criticality::kSheddable)).status.code(),
            absl::StatusCode::kResourceExhausted);  // shed, "do not retry"
  EXPECT_TRUE(Call(*stub, {}, "SHEDDABLE:999").status.ok());  // malformed
  handler_status_ = absl::InternalError("ranker broke");
  EXPECT_EQ(Call(*stub, Of(Criticality::kCritical)).status.code(),
            absl::StatusCode::kInternal);

  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_grpc_server_calls_total{grpc_server="ranker",outcome="accepted"})",
        3},
       {R"(degrade_grpc_server_calls_total{grpc_server="ranker",outcome="shed"})",
        1},
       {R"(degrade_grpc_server_shed_do_not_retry_total{grpc_server="ranker"})",
        1},
       {R"(degrade_grpc_server_handler_errors_total{grpc_server="ranker"})", 1},
       {R"(degrade_grpc_server_malformed_metadata_total{grpc_server="ranker"})",
        1}});

  options_.counters = nullptr;
  counters.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_grpc_server_").empty()) << text;
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
