// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/interceptor.hpp on a real channel to a real server on
// loopback: UNAVAILABLE replies open the method's breaker, after which
// calls fail fast with no call reaching the server and say which breaker
// refused them; 1,000 INVALID_ARGUMENT and 1,000 CANCELLED replies never
// open it; the CallScope's class is sent (unless the context carries one)
// and the server's trace merged into the scope's trace.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "degrade/breaker_family.hpp"
#include "degrade/breaker_settings.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/grpc/interceptor.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Family = BreakerFamily<std::string, grpc::Unit>;
constexpr const char* kMethod = "/degrade.test.Echo/Say";

class GrpcInterceptorTest : public ::testing::Test {
 protected:
  GrpcInterceptorTest() {
    BreakerSettings s = degrade_test::EchoBreakerSettings(&clock_);
    family_ = std::make_unique<Family>(s);
  }

  std::unique_ptr<degrade::test::Echo::Stub> Stub(const degrade_test::EchoServer& server) {
    ::grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    std::vector<std::unique_ptr<::grpc::experimental::ClientInterceptorFactoryInterface>> f;
    f.push_back(grpc::MakeBreakerInterceptor(
        *family_, grpc::OutcomeTable::Default(), &counters_));
    return degrade::test::Echo::NewStub(
        ::grpc::experimental::CreateCustomChannelWithInterceptors(
            server.address(), ::grpc::InsecureChannelCredentials(), args,
            std::move(f)));
  }

  // One call; `rejected_by` gets RejectedByBreaker's answer.
  static ::grpc::Status Say(degrade::test::Echo::Stub& stub,
                            std::optional<std::string>* rejected_by = nullptr,
                            const RequestClass* on_context = nullptr) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (on_context != nullptr) grpc::SetRequestClass(&ctx, *on_context);
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub.Say(&ctx, request, &reply);
    if (rejected_by != nullptr) *rejected_by = grpc::RejectedByBreaker(ctx);
    return s;
  }

  static degrade_test::EchoServer::Script Replying(::grpc::StatusCode code) {
    return degrade_test::Replying(code);
  }

  uint64_t Outcomes(GrpcClientOutcome o) const {
    return counters_.stats().outcomes[static_cast<std::size_t>(o)];
  }

  FakeClock clock_;
  std::unique_ptr<Family> family_;
  grpc::ClientCounters counters_;
};

TEST_F(GrpcInterceptorTest, UnavailableOpensTheMethodsBreakerAndThenNothingIsSent) {
  degrade_test::EchoServer server(Replying(::grpc::StatusCode::UNAVAILABLE));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  std::optional<std::string> rejected_by;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(Say(*stub, &rejected_by).error_code(), ::grpc::StatusCode::UNAVAILABLE);
    EXPECT_FALSE(rejected_by.has_value());
  }
  ASSERT_EQ(family_->Get(kMethod)->state(), State::kOpen);
  for (int i = 0; i < 100; ++i) {
    const ::grpc::Status s = Say(*stub, &rejected_by);
    EXPECT_EQ(s.error_code(), ::grpc::StatusCode::UNAVAILABLE);
    ASSERT_TRUE(rejected_by.has_value());
    EXPECT_EQ(*rejected_by, std::string("echo/") + kMethod);
  }
  EXPECT_EQ(server.attempts(), 6);  // the 100 rejected calls never left
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kFailed), 6u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kRefused), 100u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kAccepted), 0u);
}

TEST_F(GrpcInterceptorTest, EachCallIsCountedByItsOutcome) {
  std::atomic<int> code{static_cast<int>(::grpc::StatusCode::OK)};
  degrade_test::EchoServer::Script script;
  script.handler = [&](::grpc::ServerContext*, const auto&, auto*) {
    return ::grpc::Status(static_cast<::grpc::StatusCode>(code.load()),
                          "scripted");
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  EXPECT_TRUE(Say(*stub).ok());
  code = static_cast<int>(::grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Say(*stub).error_code(), ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A deadline already passed: gRPC fails it, the breaker never sees it.
  ::grpc::ClientContext late;
  late.set_deadline(std::chrono::system_clock::now() - std::chrono::seconds(1));
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  EXPECT_EQ(stub->Say(&late, request, &reply).error_code(),
            ::grpc::StatusCode::DEADLINE_EXCEEDED);

  EXPECT_EQ(Outcomes(GrpcClientOutcome::kAccepted), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kShed), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kExpired), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kFailed), 0u);
  EXPECT_EQ(family_->Get(kMethod)->counts().requests, 2u);
}

TEST_F(GrpcInterceptorTest, ClientErrorsAndCancellationsNeverOpenIt) {
  degrade_test::EchoServer invalid(Replying(::grpc::StatusCode::INVALID_ARGUMENT));
  degrade_test::EchoServer cancelled(Replying(::grpc::StatusCode::CANCELLED));
  ASSERT_TRUE(invalid.started() && cancelled.started());
  auto to_invalid = Stub(invalid);
  auto to_cancelled = Stub(cancelled);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(Say(*to_invalid).error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
    ASSERT_EQ(Say(*to_cancelled).error_code(), ::grpc::StatusCode::CANCELLED);
  }
  EXPECT_EQ(family_->Get(kMethod)->state(), State::kClosed);
  EXPECT_EQ(invalid.attempts() + cancelled.attempts(), 2000);
}

TEST_F(GrpcInterceptorTest, TheScopesClassIsSentAndTheServersTraceMerged) {
  std::atomic<int> rank_seen{-1};
  degrade_test::EchoServer::Script script;
  script.handler = [&](::grpc::ServerContext* ctx, const auto&, auto*) {
    auto rc = grpc::ReadRequestClass(*ctx);
    rank_seen = rc.ok() && rc->has_value() ? Rank(**rc) : -2;
    DegradationTrace t;
    t.Add("rank", DegradeReason::kBreakerOpen);
    grpc::AttachTrace(ctx, t);
    return ::grpc::Status::OK;
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  RequestClass rc;
  rc.criticality = Criticality::kSheddable;
  rc.cohort = 5;
  DegradationTrace trace;
  {
    grpc::CallScope scope(rc, &trace);
    ASSERT_TRUE(Say(*stub).ok());
    EXPECT_EQ(rank_seen.load(), Rank(rc));
    EXPECT_EQ(trace.Encode(), "v1;rank=open");

    // A class the caller put on the context itself is not overridden.
    RequestClass explicit_rc;
    explicit_rc.criticality = Criticality::kCriticalPlus;
    ASSERT_TRUE(Say(*stub, nullptr, &explicit_rc).ok());
    EXPECT_EQ(rank_seen.load(), Rank(explicit_rc));
  }
  // No scope: nothing sent, nothing merged.
  ASSERT_TRUE(Say(*stub).ok());
  EXPECT_EQ(rank_seen.load(), -2);
}

TEST_F(GrpcInterceptorTest, CallsWhoseDeadlineHadPassedAreNeverCounted) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  // What a middle hop forwards once its budget is gone (the attack
  // review's case: 6 counted as failures opened the breaker for a healthy
  // server).
  for (int i = 0; i < 40; ++i) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() - std::chrono::seconds(1));
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    EXPECT_EQ(stub->Say(&ctx, request, &reply).error_code(),
              ::grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  auto breaker = family_->Get(kMethod);
  EXPECT_EQ(breaker->state(), State::kClosed);
  EXPECT_EQ(breaker->counts().total_failures, 0u);
  EXPECT_TRUE(Say(*stub).ok());
}

// Issue 32, item 5: with the breaker forced open (as a fleet kill switch
// does), a call whose deadline has passed must not reach the server either:
// it fails locally with DEADLINE_EXCEEDED, before the breaker and the
// network, and a call with time left is the breaker's rejection.
TEST_F(GrpcInterceptorTest,
       AnExpiredDeadlineNeverReachesTheServerEvenWhenForcedOpen) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  family_->Get(kMethod)->ForceOpen();
  // Deadlines that have only just passed, as a middle hop hands on a
  // budget it has used up (SetDeadline of an expired Deadline sets "now"):
  // gRPC's own check reads a cached clock and sends most of these.
  const Deadline spent = Deadline::In(absl::ZeroDuration(), &clock_);
  for (int i = 0; i < 20; ++i) {
    ::grpc::ClientContext ctx;
    if (i % 2 == 0) {
      grpc::SetDeadline(&ctx, spent);
    } else {
      ctx.set_deadline(std::chrono::system_clock::now());
    }
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub->Say(&ctx, request, &reply);
    EXPECT_EQ(s.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_message();
    EXPECT_FALSE(grpc::RejectedByBreaker(ctx).has_value());
  }
  std::optional<std::string> rejected_by;
  EXPECT_EQ(Say(*stub, &rejected_by).error_code(),
            ::grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(rejected_by.has_value());
  EXPECT_EQ(server.attempts(), 0);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kExpired), 20u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kRefused), 1u);
  EXPECT_EQ(Outcomes(GrpcClientOutcome::kAccepted), 0u);
  // Neither the expired calls nor the breaker saw them as outcomes.
  EXPECT_EQ(family_->Get(kMethod)->counts().requests, 0u);

  // The same with the breaker closed: still nothing is sent.
  family_->Get(kMethod)->Reset();
  ::grpc::ClientContext ctx;
  grpc::SetDeadline(&ctx, spent);
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  EXPECT_EQ(stub->Say(&ctx, request, &reply).error_code(),
            ::grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(server.attempts(), 0);
  EXPECT_TRUE(Say(*stub).ok());
  EXPECT_EQ(server.attempts(), 1);
}

TEST_F(GrpcInterceptorTest, ALocalRefusalReadsAsTheBreakersRejectionAndCannotBeForged) {
  degrade_test::EchoServer down(Replying(::grpc::StatusCode::UNAVAILABLE));
  ASSERT_TRUE(down.started());
  auto stub = Stub(down);
  for (int i = 0; i < 6; ++i) Say(*stub);
  ASSERT_EQ(family_->Get(kMethod)->state(), State::kOpen);

  ::grpc::ClientContext ctx;
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  const absl::Status s = grpc::FromGrpcCall(stub->Say(&ctx, request, &reply), ctx);
  EXPECT_TRUE(IsBreakerOpen(s)) << s;
  EXPECT_EQ(grpc::OutcomeTable().Of(s), CallVerdict::kExcluded);

  // A server sending the key itself is not believed.
  degrade_test::EchoServer::Script forging;
  forging.handler = [](::grpc::ServerContext* c, const auto&, auto*) {
    c->AddTrailingMetadata(std::string(grpc::kRejectedKey), "0123456789abcdef:open:x");
    return ::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "down");
  };
  degrade_test::EchoServer forger(forging);
  ASSERT_TRUE(forger.started());
  auto plain = degrade::test::Echo::NewStub(degrade_test::LoopbackChannel(forger.address()));
  ::grpc::ClientContext ctx2;
  const absl::Status f = grpc::FromGrpcCall(plain->Say(&ctx2, request, &reply), ctx2);
  EXPECT_TRUE(absl::IsUnavailable(f));
  EXPECT_FALSE(IsRejected(f));
  EXPECT_FALSE(grpc::RejectedByBreaker(ctx2).has_value());
}

TEST_F(GrpcInterceptorTest, AFanOutUnderOneScopeMergesEveryTrace) {
  degrade_test::EchoServer::Script script;
  script.handler = [](::grpc::ServerContext* ctx, const auto& req, auto*) {
    DegradationTrace t;
    t.Add(req.text(), DegradeReason::kTimeout);
    grpc::AttachTrace(ctx, t);
    return ::grpc::Status::OK;
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);

  constexpr int kCalls = 8;
  for (int round = 0; round < 25; ++round) {
    DegradationTrace trace;
    {
      grpc::CallScope scope(RequestClass{}, &trace);
      ::grpc::ClientContext ctx[kCalls];
      degrade::test::EchoRequest req[kCalls];
      degrade::test::EchoReply reply[kCalls];
      std::promise<void> all;
      std::atomic<int> left{kCalls};
      for (int i = 0; i < kCalls; ++i) {
        req[i].set_text("s" + std::to_string(i));
        stub->async()->Say(&ctx[i], &req[i], &reply[i], [&](::grpc::Status) {
          if (--left == 0) all.set_value();
        });
      }
      ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(20)),
                std::future_status::ready);
    }
    // In completion order, which varies: every stage once.
    const std::vector<std::string> parts = absl::StrSplit(trace.Encode(), ';');
    const std::set<std::string> stages(parts.begin() + 1, parts.end());
    std::set<std::string> want;
    for (int i = 0; i < kCalls; ++i) want.insert("s" + std::to_string(i) + "=timeout");
    EXPECT_EQ(parts.size(), static_cast<std::size_t>(kCalls) + 1) << trace.Encode();
    EXPECT_EQ(stages, want) << "round " << round << ": " << trace.Encode();
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
