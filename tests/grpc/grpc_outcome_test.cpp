// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/outcome.hpp: the default table is the documented one, code
// by code; overrides take; and a breaker classified by it, calling a real
// gRPC server on loopback, never opens on 1,000 INVALID_ARGUMENT and 1,000
// CANCELLED replies, and opens on UNAVAILABLE.

#include "degrade/grpc/outcome.hpp"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <set>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(GrpcOutcomeTest, TheDefaultTableIsTheDocumentedOne) {
  const std::set<absl::StatusCode> failures = {
      absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
      absl::StatusCode::kInternal, absl::StatusCode::kUnknown,
      absl::StatusCode::kDataLoss};
  const grpc::OutcomeTable t = grpc::OutcomeTable::Default();
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    const CallVerdict want = c == 0                  ? CallVerdict::kSuccess
                             : failures.count(code) ? CallVerdict::kFailure
                                                    : CallVerdict::kExcluded;
    EXPECT_EQ(t.Of(absl::Status(code, "x")), want) << absl::StatusCodeToString(code);
  }
  // The three the issue names: a client's own error, a cancellation and a
  // shed never count against the backend.
  EXPECT_EQ(t.Of(absl::InvalidArgumentError("bad")), CallVerdict::kExcluded);
  EXPECT_EQ(t.Of(absl::CancelledError("gave up")), CallVerdict::kExcluded);
  EXPECT_EQ(t.Of(ShedError("rank", "busy", absl::Milliseconds(5))),
            CallVerdict::kExcluded);
}

TEST(GrpcOutcomeTest, OverridesTakeAndNothingReadsAsDefault) {
  grpc::OutcomeTable t;
  t.Set(absl::StatusCode::kUnimplemented, CallVerdict::kFailure)
      .Set(absl::StatusCode::kInternal, CallVerdict::kExcluded)
      .Set(absl::StatusCode::kNotFound, CallVerdict::kDefault);
  EXPECT_EQ(t.Of(absl::UnimplementedError("x")), CallVerdict::kFailure);
  EXPECT_EQ(t.Of(absl::InternalError("x")), CallVerdict::kExcluded);
  EXPECT_EQ(t.Of(absl::NotFoundError("x")), CallVerdict::kFailure);
  // A code outside gRPC's seventeen is ignored by Set and a failure to Of.
  t.Set(static_cast<absl::StatusCode>(40), CallVerdict::kSuccess);
  EXPECT_EQ(t.Of(absl::Status(static_cast<absl::StatusCode>(40), "x")),
            CallVerdict::kFailure);
  EXPECT_EQ(t.Of(absl::OkStatus()), CallVerdict::kSuccess);
}

class GrpcOutcomeBreakerTest : public ::testing::Test {
 protected:
  GrpcOutcomeBreakerTest() {
    BreakerSettings s = degrade_test::EchoBreakerSettings(&clock_);
    grpc::OutcomeTable::Default().ApplyTo(s);
    breaker_ = std::make_unique<CircuitBreaker<int>>(s);
  }

  static std::unique_ptr<degrade::test::Echo::Stub> Stub(
      const degrade_test::EchoServer& server) {
    return degrade::test::Echo::NewStub(degrade_test::LoopbackChannel(server.address()));
  }

  // One call through the breaker on `stub`.
  absl::Status Call(degrade::test::Echo::Stub& stub) {
    return breaker_
        ->Execute([&]() -> absl::StatusOr<int> {
          ::grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(10));
          degrade::test::EchoRequest request;
          degrade::test::EchoReply reply;
          const ::grpc::Status st = stub.Say(&ctx, request, &reply);
          if (!st.ok()) return grpc::FromGrpcCall(st, ctx);
          return 1;
        })
        .status();
  }

  static degrade_test::EchoServer::Script Replying(::grpc::StatusCode code) {
    return degrade_test::Replying(code);
  }

  FakeClock clock_;
  std::unique_ptr<CircuitBreaker<int>> breaker_;
};

TEST_F(GrpcOutcomeBreakerTest, ClientErrorsAndCancellationsNeverOpenIt) {
  degrade_test::EchoServer invalid(Replying(::grpc::StatusCode::INVALID_ARGUMENT));
  degrade_test::EchoServer cancelled(Replying(::grpc::StatusCode::CANCELLED));
  ASSERT_TRUE(invalid.started() && cancelled.started());
  auto to_invalid = Stub(invalid);
  auto to_cancelled = Stub(cancelled);

  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(absl::IsInvalidArgument(Call(*to_invalid))) << i;
    ASSERT_TRUE(absl::IsCancelled(Call(*to_cancelled))) << i;
  }
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(invalid.attempts(), 1000);
  EXPECT_EQ(cancelled.attempts(), 1000);
}

TEST_F(GrpcOutcomeBreakerTest, UnavailableOpensItAndThenNothingReachesTheServer) {
  degrade_test::EchoServer down(Replying(::grpc::StatusCode::UNAVAILABLE));
  ASSERT_TRUE(down.started());
  auto stub = Stub(down);

  // gobreaker's default rule: more than 5 consecutive failures.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(absl::IsUnavailable(Call(*stub)));
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_TRUE(IsRejected(Call(*stub)));
  EXPECT_EQ(down.attempts(), 6);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
