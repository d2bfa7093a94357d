// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/client.hpp against real gRPC servers on loopback: an open
// breaker and an expired deadline fail without a call reaching the server;
// the request class goes out and the server's trace comes back (a malformed
// one counted, not merged); a server that refuses everything is throttled
// locally and never opens the breaker.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/grpc/client.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/throttle.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Reply = degrade::test::EchoReply;

class GrpcClientTest : public ::testing::Test {
 protected:
  GrpcClientTest() {
    BreakerSettings s = degrade_test::EchoBreakerSettings(&clock_);
    grpc::OutcomeTable::Default().ApplyTo(s);
    breaker_ = std::make_unique<CircuitBreaker<Reply>>(s);
    options_.counters = &counters_;
  }

  static std::unique_ptr<degrade::test::Echo::Stub> Stub(const degrade_test::EchoServer& s) {
    return degrade::test::Echo::NewStub(
        degrade_test::LoopbackChannel(s.address()));
  }

  CircuitBreaker<Reply>::Result Say(degrade::test::Echo::Stub& stub,
                                    absl::Duration budget = absl::Seconds(10)) {
    degrade::test::EchoRequest request;
    request.set_text("hi");
    return grpc::Call<Reply>(*breaker_, options_, Deadline::In(budget, &clock_),
                             [&](::grpc::ClientContext* ctx, Reply* reply) {
                               return stub.Say(ctx, request, reply);
                             });
  }

  static degrade_test::EchoServer::Script Replying(::grpc::StatusCode code) {
    return degrade_test::Replying(code);
  }

  uint64_t Outcomes(GrpcClientOutcome o) const {
    return counters_.stats().outcomes[static_cast<std::size_t>(o)];
  }

  FakeClock clock_;
  std::unique_ptr<CircuitBreaker<Reply>> breaker_;
  grpc::ClientCounters counters_;
  grpc::ClientOptions options_;
};

TEST_F(GrpcClientTest, ASuccessReturnsTheReply) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  const auto r = Say(*stub);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.value().text(), "hi");
}

TEST_F(GrpcClientTest, AnOpenBreakerFailsFastWithNoCallReachingTheServer) {
  degrade_test::EchoServer server(Replying(::grpc::StatusCode::UNAVAILABLE));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  for (int i = 0; i < 6; ++i) EXPECT_TRUE(absl::IsUnavailable(Say(*stub).status()));
  ASSERT_EQ(breaker_->state(), State::kOpen);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(IsRejected(Say(*stub).status()));
  EXPECT_EQ(server.attempts(), 6);
}

TEST_F(GrpcClientTest, AnExpiredDeadlineNeverReachesTheServerOrTheBreaker) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  const auto r = Say(*stub, absl::ZeroDuration());
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_EQ(server.attempts(), 0);
  EXPECT_EQ(breaker_->counts().requests, 0u);
}

TEST_F(GrpcClientTest, TheClassGoesOutAndTheServersTraceComesBack) {
  std::atomic<int> rank_seen{-1};
  std::string trailer = "v1;rank=open";
  degrade_test::EchoServer::Script script;
  script.handler = [&](::grpc::ServerContext* ctx, const auto&, auto*) {
    auto rc = grpc::ReadRequestClass(*ctx);
    if (rc.ok() && rc->has_value()) rank_seen = Rank(**rc);
    ctx->AddTrailingMetadata(std::string(grpc::kTraceKey), trailer);
    return ::grpc::Status::OK;
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  DegradationTrace trace;
  trace.Add("features", DegradeReason::kTimeout);
  options_.trace = &trace;
  options_.request_class.criticality = Criticality::kSheddablePlus;
  options_.request_class.cohort = 3;
  ASSERT_TRUE(Say(*stub).ok());
  EXPECT_EQ(rank_seen.load(), Rank(options_.request_class));
  EXPECT_EQ(trace.Encode(), "v1;features=timeout;rank=open");

  trailer = "v1;rank=exploded";  // malformed: counted, not merged
  ASSERT_TRUE(Say(*stub).ok());
  EXPECT_EQ(trace.Encode(), "v1;features=timeout;rank=open");
  EXPECT_EQ(counters_.stats().malformed_trailers, 1u);
}

TEST_F(GrpcClientTest, ARefusingServerIsThrottledLocallyAndNeverOpensTheBreaker) {
  degrade_test::EchoServer server(Replying(::grpc::StatusCode::RESOURCE_EXHAUSTED));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  ThrottleSettings ts;
  ts.clock = &clock_;
  ts.metrics = NoTelemetry();
  auto throttler = AdaptiveThrottler::Create(ts).value();
  options_.throttler = throttler.get();

  int throttled = 0;
  for (int i = 0; i < 300; ++i) {
    const absl::Status s = Say(*stub).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    if (IsThrottled(s)) ++throttled;
  }
  EXPECT_EQ(breaker_->state(), State::kClosed);  // RESOURCE_EXHAUSTED is excluded
  EXPECT_GT(throttled, 150);                       // most never left the client
  EXPECT_EQ(server.attempts(), 300 - throttled);
  // Counted as refused here (never sent), shed by the server otherwise.
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kRefused),
            static_cast<uint64_t>(throttled));
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kShed),
            static_cast<uint64_t>(300 - throttled));
}

TEST_F(GrpcClientTest, EveryCallIsCountedOnceByItsOutcome) {
  std::atomic<int> code{static_cast<int>(::grpc::StatusCode::OK)};
  degrade_test::EchoServer::Script script;
  script.handler = [&](::grpc::ServerContext*, const auto&, auto*) {
    return ::grpc::Status(static_cast<::grpc::StatusCode>(code.load()),
                          "scripted");
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  ASSERT_TRUE(Say(*stub).ok());
  code = static_cast<int>(::grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Say(*stub).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(
      absl::IsDeadlineExceeded(Say(*stub, absl::ZeroDuration()).status()));
  code = static_cast<int>(::grpc::StatusCode::UNAVAILABLE);
  uint64_t failed = 0;
  while (breaker_->state() != State::kOpen && failed < 20) {
    EXPECT_TRUE(absl::IsUnavailable(Say(*stub).status()));
    ++failed;
  }
  ASSERT_EQ(breaker_->state(), State::kOpen);
  EXPECT_TRUE(IsRejected(Say(*stub).status()));

  EXPECT_EQ(Outcomes(GrpcClientOutcome::kAccepted), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kShed), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kExpired), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kFailed), failed);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kRefused), 1u);
  EXPECT_EQ(server.attempts(), static_cast<int>(2 + failed));
}

TEST_F(GrpcClientTest, TheRegistryRendersCallsByOutcomeUntilTheCountersGo) {
  MetricsRegistry registry;
  grpc::ClientCountersOptions co;
  co.name = "rank";
  co.metrics = &registry;
  auto counters = std::make_unique<grpc::ClientCounters>(co);
  options_.counters = counters.get();
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  ASSERT_TRUE(Say(*stub).ok());
  ASSERT_TRUE(Say(*stub).ok());
  EXPECT_FALSE(Say(*stub, absl::ZeroDuration()).ok());

  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_grpc_client_calls_total{grpc_client="rank",outcome="accepted"})",
        2},
       {R"(degrade_grpc_client_calls_total{grpc_client="rank",outcome="failed"})",
        0},
       {R"(degrade_grpc_client_calls_total{grpc_client="rank",outcome="shed"})",
        0},
       {R"(degrade_grpc_client_calls_total{grpc_client="rank",outcome="refused"})",
        0},
       {R"(degrade_grpc_client_calls_total{grpc_client="rank",outcome="expired"})",
        1},
       {R"(degrade_grpc_client_malformed_trailers_total{grpc_client="rank"})",
        0}});
  EXPECT_NE(text.find("# TYPE degrade_grpc_client_calls_total counter"),
            std::string::npos);

  options_.counters = nullptr;
  counters.reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_grpc_client_").empty()) << text;
}

// ---- CallAsync: the callback stub ----------------------------------------

class GrpcCallAsyncTest : public GrpcClientTest {
 protected:
  // Starts one callback call and waits (bounded by its 10 s gRPC deadline)
  // for `done`; `on_caller_thread` says whether done ran before CallAsync
  // returned.
  CircuitBreaker<Reply>::Result SayAsync(degrade::test::Echo::Stub& stub,
                                         bool* on_caller_thread = nullptr,
                                         bool throw_in_start = false) {
    degrade::test::EchoRequest request;
    request.set_text("hi");
    std::promise<CircuitBreaker<Reply>::Result> result;
    auto future = result.get_future();
    std::atomic<bool> returned{false};
    std::atomic<bool> early{false};
    grpc::CallAsync<Reply>(
        *breaker_, options_, Deadline::In(absl::Seconds(10), &clock_),
        [&](::grpc::ClientContext* ctx, Reply* reply, ::grpc::ClientUnaryReactor* reactor) {
          if (throw_in_start) throw std::runtime_error("no stub");
          stub.async()->Say(ctx, &request, reply, reactor);
        },
        [&](CircuitBreaker<Reply>::Result r) {
          early = !returned.load();
          result.set_value(std::move(r));
        });
    returned = true;
    EXPECT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    if (on_caller_thread != nullptr) *on_caller_thread = early.load();
    return future.get();
  }
};

TEST_F(GrpcCallAsyncTest, ASuccessArrivesWithItsReplyAndTrace) {
  degrade_test::EchoServer::Script script;
  script.handler = [](::grpc::ServerContext* ctx, const auto& req, auto* reply) {
    DegradationTrace t;
    t.Add("rank", DegradeReason::kTimeout);
    grpc::AttachTrace(ctx, t);
    reply->set_text(req.text());
    return ::grpc::Status::OK;
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  DegradationTrace trace;
  options_.trace = &trace;

  const auto r = SayAsync(*stub);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.value().text(), "hi");
  EXPECT_EQ(trace.Encode(), "v1;rank=timeout");
  // Counted on gRPC's thread, before `done` ran.
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kAccepted), 1u);
}

TEST_F(GrpcCallAsyncTest, AnOpenBreakerAnswersOnTheCallersThreadAndSendsNothing) {
  degrade_test::EchoServer server(Replying(::grpc::StatusCode::UNAVAILABLE));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(absl::IsUnavailable(SayAsync(*stub).status()));
  ASSERT_EQ(breaker_->state(), State::kOpen);

  bool on_caller_thread = false;
  EXPECT_TRUE(IsRejected(SayAsync(*stub, &on_caller_thread).status()));
  EXPECT_TRUE(on_caller_thread);
  EXPECT_EQ(server.attempts(), 6);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kFailed), 6u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kRefused), 1u);
}

TEST_F(GrpcCallAsyncTest, AThrowingStartIsAFailureAndReportedOnce) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  const auto r = SayAsync(*stub, nullptr, /*throw_in_start=*/true);
  EXPECT_TRUE(IsCallableException(r.status())) << r.status();
  EXPECT_EQ(breaker_->counts().total_failures, 1u);
  EXPECT_EQ(server.attempts(), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
