// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Retrying in two layers, degrade's Retrier and gRPC's own retry policy,
// against a real gRPC server on loopback that counts the attempts reaching
// it (docs/retries-and-hedging.md, "Composition"):
//   * gRPC's policy alone makes its 3 attempts (so it really is on);
//   * both layers, 3 attempts each, make 9: the multiplication to avoid;
//   * one owner (gRPC's retries off on the channel) makes exactly 3;
//   * a server's "do not retry" pushback stops both layers at 1 attempt,
//     also when it answers a shed (RESOURCE_EXHAUSTED) that gRPC's policy
//     would otherwise retry;
//   * a pushback of 250 ms makes the Retrier wait at least that long.
// The Retrier waits on a FakeClock; gRPC's own backoff is 1 ms of real
// time, and every call has a 10 s gRPC deadline so no test can hang.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/retry.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

// gRPC's retry policy for the test service: 3 attempts, 1 ms backoff.
std::string ServiceConfig(const std::string& codes) {
  return R"({"methodConfig":[{"name":[{"service":"degrade.test.Echo"}],)"
         R"("retryPolicy":{"maxAttempts":3,"initialBackoff":"0.001s",)"
         R"("maxBackoff":"0.001s","backoffMultiplier":1,)"
         R"("retryableStatusCodes":[)" +
         codes + "]}}]}";
}

class GrpcRetryInterplayTest : public ::testing::Test {
 protected:
  std::unique_ptr<degrade::test::Echo::Stub> Stub(
      const degrade_test::EchoServer& server, bool grpc_retries,
      const std::string& codes = R"("UNAVAILABLE")") {
    ::grpc::ChannelArguments args;
    args.SetServiceConfigJSON(ServiceConfig(codes));
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, grpc_retries ? 1 : 0);
    return degrade::test::Echo::NewStub(degrade_test::LoopbackChannel(server.address(), args));
  }

  // One attempt: a gRPC call read through the adapter.
  static absl::Status Say(degrade::test::Echo::Stub& stub) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    degrade::test::EchoRequest request;
    request.set_text("hi");
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub.Say(&ctx, request, &reply);
    return grpc::FromGrpcCall(s, ctx);
  }

  std::unique_ptr<Retrier> Retrier3() {
    RetrySettings p;
    p.name = "echo";
    p.max_attempts = 3;
    p.unbudgeted = true;  // the budget is not what these tests are about
    p.sleep = [this](absl::Duration d) {
      slept_.push_back(d);
      clock_.Advance(d);
    };
    p.metrics = NoTelemetry();
    return Retrier::Create(p).value();
  }

  absl::Status RetryThrough(degrade::test::Echo::Stub& stub, RetryRecord* rec) {
    auto retrier = Retrier3();
    return Retry(*retrier, Deadline::In(absl::Seconds(30), &clock_),
                 [&] { return Say(stub); }, rec);
  }

  static degrade_test::EchoServer::Script Unavailable(
      std::optional<std::string> pushback = std::nullopt) {
    degrade_test::EchoServer::Script s;
    s.code = ::grpc::StatusCode::UNAVAILABLE;
    s.pushback = std::move(pushback);
    return s;
  }

  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  std::vector<absl::Duration> slept_;
};

TEST_F(GrpcRetryInterplayTest, GrpcsOwnPolicyMakesItsThreeAttempts) {
  degrade_test::EchoServer server(Unavailable());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/true);

  EXPECT_EQ(Say(*stub).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.attempts(), 3);
}

TEST_F(GrpcRetryInterplayTest, RetryingInBothLayersMultipliesTheAttempts) {
  degrade_test::EchoServer server(Unavailable());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/true);

  RetryRecord rec;
  EXPECT_EQ(RetryThrough(*stub, &rec).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rec.attempts, 3);
  EXPECT_EQ(server.attempts(), 9);  // what one owner of retries avoids
}

TEST_F(GrpcRetryInterplayTest, OneOwnerWithGrpcRetriesOffMakesExactlyItsAttempts) {
  degrade_test::EchoServer server(Unavailable());
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/false);

  RetryRecord rec;
  EXPECT_EQ(RetryThrough(*stub, &rec).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rec.stop, RetryStop::kAttemptsExhausted);
  EXPECT_EQ(server.attempts(), 3);
}

TEST_F(GrpcRetryInterplayTest, DoNotRetryPushbackStopsBothLayersAtOneAttempt) {
  degrade_test::EchoServer server(Unavailable("-1"));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/true);

  RetryRecord rec;
  EXPECT_EQ(RetryThrough(*stub, &rec).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
  EXPECT_EQ(server.attempts(), 1);
  EXPECT_TRUE(slept_.empty());
}

TEST_F(GrpcRetryInterplayTest, AShedSayingDoNotRetryIsSentOnceEvenIfGrpcWouldRetryIt) {
  degrade_test::EchoServer::Script script;
  script.reply_with = [] { return ShedError("front", "level 3", absl::Milliseconds(-1)); };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  // gRPC's policy retries RESOURCE_EXHAUSTED here; the pushback overrides it.
  auto stub = Stub(server, /*grpc_retries=*/true,
                   R"("UNAVAILABLE","RESOURCE_EXHAUSTED")");

  RetryRecord rec;
  EXPECT_EQ(RetryThrough(*stub, &rec).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(server.attempts(), 1);
}

TEST_F(GrpcRetryInterplayTest, AServerThatRetriedItsDownstreamStopsItsCallersRetries) {
  // The middle layer retries its own (failing) downstream 3 times, then
  // tells its callers not to retry: ToGrpcReply sends that as pushback -1.
  int downstream_attempts = 0;
  FakeClock middle_clock;
  RetrySettings p;
  p.name = "middle";
  p.unbudgeted = true;
  p.tell_callers_not_to_retry = true;
  p.sleep = [&middle_clock](absl::Duration d) { middle_clock.Advance(d); };
  p.metrics = NoTelemetry();
  std::unique_ptr<Retrier> middle = Retrier::Create(p).value();
  degrade_test::EchoServer::Script script;
  script.reply_with = [&] {
    return Retry(*middle, Deadline::In(absl::Seconds(30), &middle_clock), [&] {
      ++downstream_attempts;
      return absl::UnavailableError("downstream down");
    });
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/true);

  RetryRecord rec;
  EXPECT_EQ(RetryThrough(*stub, &rec).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
  EXPECT_EQ(server.attempts(), 1);       // neither gRPC nor the caller resent
  EXPECT_EQ(downstream_attempts, 3);     // 3 at the bottom, not 27
}

TEST_F(GrpcRetryInterplayTest, ThePushbackIsTheLeastTheRetrierWaits) {
  degrade_test::EchoServer server(Unavailable("250"));
  ASSERT_TRUE(server.started());
  auto stub = Stub(server, /*grpc_retries=*/false);

  RetryRecord rec;
  EXPECT_FALSE(RetryThrough(*stub, &rec).ok());
  EXPECT_EQ(server.attempts(), 3);
  ASSERT_EQ(slept_.size(), 2u);
  for (const absl::Duration d : slept_) EXPECT_GE(d, absl::Milliseconds(250));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
