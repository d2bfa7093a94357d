// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/metadata.hpp over real gRPC calls on loopback: the request
// class and the deadline go forward (and survive three hops), the trace and
// the level come back in the trailers, and every malformed or repeated
// value is an INVALID_ARGUMENT naming its key that changes nothing.

#include "degrade/grpc/metadata.hpp"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "echo_server.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;
using Handler = decltype(degrade_test::EchoServer::Script::handler);

// How much longer than the caller's budget a server may read: gRPC rounds
// the grpc-timeout header up to its unit.
constexpr absl::Duration kWireRounding = absl::Milliseconds(50);

std::unique_ptr<degrade::test::Echo::Stub> StubTo(const degrade_test::EchoServer& s) {
  return degrade::test::Echo::NewStub(
      degrade_test::LoopbackChannel(s.address()));
}

degrade_test::EchoServer::Script Handling(Handler h) {
  degrade_test::EchoServer::Script s;
  s.handler = std::move(h);
  return s;
}

// A server that records what ReadRequestClass() says of each call.
degrade_test::EchoServer::Script RecordingTheClass(
    std::optional<absl::StatusOr<std::optional<RequestClass>>>* seen) {
  return Handling([seen](::grpc::ServerContext* ctx, const auto&, auto*) {
    *seen = grpc::ReadRequestClass(*ctx);
    return ::grpc::Status::OK;
  });
}

// A call with a 10 s safety deadline unless `prepare` sets its own.
template <typename Prepare>
::grpc::Status CallWith(degrade::test::Echo::Stub& stub, ::grpc::ClientContext& ctx,
                        Prepare prepare) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  prepare(ctx);
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  return stub.Say(&ctx, request, &reply);
}

TEST(GrpcMetadataTest, TheRequestClassArrivesAsSent) {
  std::optional<absl::StatusOr<std::optional<RequestClass>>> seen;
  degrade_test::EchoServer server(RecordingTheClass(&seen));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);

  RequestClass rc;
  rc.criticality = Criticality::kSheddablePlus;
  rc.cohort = 17;
  ::grpc::ClientContext ctx;
  ASSERT_TRUE(CallWith(*stub, ctx, [&](::grpc::ClientContext& c) {
                grpc::SetRequestClass(&c, rc);
              }).ok());
  ASSERT_TRUE(seen.has_value() && seen->ok());
  ASSERT_TRUE(seen->value().has_value());
  EXPECT_EQ(*seen->value(), rc);

  ::grpc::ClientContext none;
  ASSERT_TRUE(CallWith(*stub, none, [](::grpc::ClientContext&) {}).ok());
  ASSERT_TRUE(seen->ok());
  EXPECT_FALSE(seen->value().has_value());  // the server picks its default
}

TEST(GrpcMetadataTest, AMalformedOrRepeatedRequestClassIsRefusedNamingTheKey) {
  std::optional<absl::StatusOr<std::optional<RequestClass>>> seen;
  degrade_test::EchoServer server(RecordingTheClass(&seen));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);

  for (const char* bad : {"CRITICAL", "critical:1", "SHEDDABLE:128", "", "CRITICAL:01"}) {
    ::grpc::ClientContext ctx;
    ASSERT_TRUE(CallWith(*stub, ctx, [&](::grpc::ClientContext& c) {
                  c.AddMetadata(std::string(grpc::kRequestClassKey), bad);
                }).ok());
    ASSERT_TRUE(seen.has_value());
    EXPECT_TRUE(absl::IsInvalidArgument(seen->status())) << bad;
    EXPECT_THAT(seen->status().message(), HasSubstr("degrade-request-class-v1")) << bad;
  }
  ::grpc::ClientContext twice;
  ASSERT_TRUE(CallWith(*stub, twice, [](::grpc::ClientContext& c) {
                grpc::SetRequestClass(&c, RequestClass{});
                grpc::SetRequestClass(&c, RequestClass{});
              }).ok());
  EXPECT_THAT(seen->status().message(), HasSubstr("more than once"));
}

TEST(GrpcMetadataTest, TheTraceAndLevelComeBackInTheTrailers) {
  degrade_test::EchoServer server(Handling(
      [](::grpc::ServerContext* ctx, const auto&, auto*) {
        DegradationTrace t;
        t.Add("rank", DegradeReason::kBreakerOpen);
        grpc::AttachTrace(ctx, t);
        grpc::AttachLevel(ctx, 2);
        return ::grpc::Status::OK;
      }));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);

  ::grpc::ClientContext ctx;
  ASSERT_TRUE(CallWith(*stub, ctx, [](::grpc::ClientContext&) {}).ok());
  DegradationTrace mine;
  mine.Add("features", DegradeReason::kTimeout);
  ASSERT_TRUE(grpc::MergeTrace(ctx, &mine).ok());
  EXPECT_EQ(mine.Encode(), "v1;features=timeout;rank=open");
  const auto level = grpc::ServerLevel(ctx);
  ASSERT_TRUE(level.ok());
  EXPECT_EQ(level->value_or(-1), 2);
}

TEST(GrpcMetadataTest, AMalformedTrailerIsReportedAndChangesNothing) {
  std::string trace_value;
  std::string level_value;
  degrade_test::EchoServer server(Handling(
      [&](::grpc::ServerContext* ctx, const auto&, auto*) {
        ctx->AddTrailingMetadata(std::string(grpc::kTraceKey), trace_value);
        ctx->AddTrailingMetadata(std::string(grpc::kLevelKey), level_value);
        return ::grpc::Status::OK;
      }));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);

  const std::pair<const char*, const char*> cases[] = {
      {"v2;rank=open", "-1"}, {"rank=open", "1001"}, {"v1;rank=", "2.0"},
      {"v1;;", ""},           {"garbage", "+3"},     {"v1;rank=open;rank=open", "0x2"}};
  for (const auto& [t, l] : cases) {
    trace_value = t;
    level_value = l;
    ::grpc::ClientContext ctx;
    ASSERT_TRUE(CallWith(*stub, ctx, [](::grpc::ClientContext&) {}).ok());
    DegradationTrace mine;
    mine.Add("features", DegradeReason::kTimeout);
    const absl::Status merged = grpc::MergeTrace(ctx, &mine);
    EXPECT_TRUE(absl::IsInvalidArgument(merged)) << t;
    EXPECT_THAT(merged.message(), HasSubstr("degrade-trace-v1")) << t;
    EXPECT_EQ(mine.Encode(), "v1;features=timeout") << t;  // untouched
    const auto level = grpc::ServerLevel(ctx);
    EXPECT_TRUE(absl::IsInvalidArgument(level.status())) << l;
    EXPECT_THAT(level.status().message(), HasSubstr("degrade-level-v1")) << l;
  }
}

TEST(GrpcMetadataTest, NoTrailersMeansNothingToMerge) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);
  ::grpc::ClientContext ctx;
  ASSERT_TRUE(CallWith(*stub, ctx, [](::grpc::ClientContext&) {}).ok());
  DegradationTrace mine;
  EXPECT_TRUE(grpc::MergeTrace(ctx, &mine).ok());
  EXPECT_EQ(mine.Encode(), "v1");
  const auto level = grpc::ServerLevel(ctx);
  ASSERT_TRUE(level.ok());
  EXPECT_FALSE(level->has_value());
}

TEST(GrpcMetadataTest, AFakeClockDeadlineGivesTheCallWhatIsLeft) {
  absl::Duration seen = absl::ZeroDuration();
  degrade_test::EchoServer server(Handling(
      [&](::grpc::ServerContext* ctx, const auto&, auto*) {
        seen = grpc::ReadDeadline(*ctx).remaining();
        return ::grpc::Status::OK;
      }));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);

  FakeClock clock;
  const Deadline d = Deadline::In(absl::Seconds(30), &clock);
  clock.Advance(absl::Seconds(25));  // 5 s left on the caller's clock
  ::grpc::ClientContext ctx;
  ASSERT_TRUE(CallWith(*stub, ctx, [&](::grpc::ClientContext& c) {
                grpc::SetDeadline(&c, d);
              }).ok());
  EXPECT_GT(seen, absl::Seconds(4));
  // gRPC sends the timeout rounded up to its wire units, so the server may
  // read a few ms more than the caller had (seen: 5.009 s of 5 s).
  EXPECT_LE(seen, absl::Seconds(5) + kWireRounding);

  // An infinite deadline sets none (the safety deadline stays); a call
  // without any deadline reads as infinite on the server.
  ::grpc::ClientContext infinite;
  ASSERT_TRUE(CallWith(*stub, infinite, [&](::grpc::ClientContext& c) {
                c.set_deadline(std::chrono::system_clock::time_point::max());
                grpc::SetDeadline(&c, Deadline::At(absl::InfiniteFuture(), &clock));
              }).ok());
  EXPECT_EQ(seen, absl::InfiniteDuration());
}

// A call whose deadline is already now races gRPC's deadline timer: gRPC
// usually fails it with DEADLINE_EXCEEDED, but on a loaded machine the
// server may get it first (seen in CI, and as an OK reply). Either way the
// server reads a deadline with no time left to spend. Call() (client.hpp)
// never starts such a call at all.
TEST(GrpcMetadataTest, AnExpiredDeadlineFailsTheCallAndLeavesTheServerNoTime) {
  std::atomic<int64_t> left_ms{-1};
  degrade_test::EchoServer server(Handling(
      [&](::grpc::ServerContext* ctx, const auto&, auto*) {
        left_ms = absl::ToInt64Milliseconds(grpc::ReadDeadline(*ctx).remaining());
        return ::grpc::Status::OK;
      }));
  ASSERT_TRUE(server.started());
  auto stub = StubTo(server);
  FakeClock clock;
  const Deadline d = Deadline::In(absl::Seconds(1), &clock);
  clock.Advance(absl::Seconds(2));
  ::grpc::ClientContext ctx;
  const ::grpc::Status s = CallWith(*stub, ctx, [&](::grpc::ClientContext& c) {
    grpc::SetDeadline(&c, d);
  });
  if (server.attempts() == 0) {
    EXPECT_EQ(s.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED);
  } else {
    EXPECT_LE(left_ms.load(), absl::ToInt64Milliseconds(kWireRounding));
  }
}

// front -> A -> B -> C: each middle hop forwards what it read.
class ThreeHops {
 public:
  explicit ThreeHops(Handler bottom)
      : c_(Handling(std::move(bottom))),
        b_(Handling(Forwarding(c_))),
        a_(Handling(Forwarding(b_))) {}

  bool started() const { return a_.started() && b_.started() && c_.started(); }
  const degrade_test::EchoServer& front_door() const { return a_; }

 private:
  // A handler that reads the class and deadline and calls `next` with them.
  static Handler Forwarding(const degrade_test::EchoServer& next) {
    auto stub = std::shared_ptr<degrade::test::Echo::Stub>(StubTo(next));
    return [stub](::grpc::ServerContext* ctx, const auto& request, auto* reply) {
      ::grpc::ClientContext down;
      grpc::SetDeadline(&down, grpc::ReadDeadline(*ctx));
      auto rc = grpc::ReadRequestClass(*ctx);
      if (rc.ok() && rc->has_value()) grpc::SetRequestClass(&down, **rc);
      return stub->Say(&down, request, reply);
    };
  }

  degrade_test::EchoServer c_;
  degrade_test::EchoServer b_;
  degrade_test::EchoServer a_;
};

TEST(GrpcMetadataTest, TheRequestClassSurvivesThreeHops) {
  std::optional<RequestClass> at_bottom;
  ThreeHops hops([&](::grpc::ServerContext* ctx, const auto&, auto*) {
    auto rc = grpc::ReadRequestClass(*ctx);
    if (rc.ok() && rc->has_value()) at_bottom = **rc;
    return ::grpc::Status::OK;
  });
  ASSERT_TRUE(hops.started());
  auto stub = StubTo(hops.front_door());

  RequestClass rc;
  rc.criticality = Criticality::kSheddable;
  rc.cohort = 99;
  ::grpc::ClientContext ctx;
  ASSERT_TRUE(CallWith(*stub, ctx, [&](::grpc::ClientContext& c) {
                grpc::SetRequestClass(&c, rc);
              }).ok());
  ASSERT_TRUE(at_bottom.has_value());
  EXPECT_EQ(*at_bottom, rc);
}

TEST(GrpcMetadataTest, ADeadlineSetAtTheFrontExpiresAtTheThirdHop) {
  // The bottom hop waits for its call to be cancelled, which only the
  // deadline set at the front can do; the 10 s cap keeps a broken
  // propagation from hanging the test (it then fails on the assertions).
  std::atomic<bool> cancelled_at_bottom{false};
  std::atomic<int64_t> budget_at_bottom_ms{-1};
  ::grpc::Status s;
  {
    ThreeHops hops([&](::grpc::ServerContext* ctx, const auto&, auto*) {
      budget_at_bottom_ms = absl::ToInt64Milliseconds(
          grpc::ReadDeadline(*ctx).remaining());
      const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!ctx->IsCancelled() && std::chrono::steady_clock::now() < cap) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      cancelled_at_bottom = ctx->IsCancelled();
      return ::grpc::Status::OK;
    });
    ASSERT_TRUE(hops.started());
    auto stub = StubTo(hops.front_door());

    ::grpc::ClientContext ctx;
    s = CallWith(*stub, ctx, [](::grpc::ClientContext& c) {
      grpc::SetDeadline(&c, Deadline::In(absl::Milliseconds(300)));
    });
  }  // the servers' shutdown waits for the bottom handler to finish
  EXPECT_EQ(s.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(cancelled_at_bottom);
  EXPECT_GE(budget_at_bottom_ms.load(), 0);  // it got there, with a budget
  EXPECT_LE(budget_at_bottom_ms.load(), 300 + absl::ToInt64Milliseconds(kWireRounding));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
