// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A second hostile review of the breaker interceptor's expired-deadline
// check (issue 32, item 5), from a middle tier: a handler whose own
// caller's deadline has passed makes its downstream call with gRPC's own
// deadline propagation (ClientContext::FromServerContext), the way gRPC
// servers commonly hand their budget on. Against real servers on loopback
// ports; the waits are for gRPC's own events (the server call's
// cancellation at its deadline), bounded only so that a hang fails.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "degrade/breaker_family.hpp"
#include "degrade/clock.hpp"
#include "degrade/grpc/interceptor.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/rpc_stats.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Family = BreakerFamily<std::string, grpc::Unit>;
constexpr const char* kMethod = "/degrade.test.Echo/Say";

// What the middle tier saw of its downstream call.
struct Downstream {
  std::mutex mu;
  std::vector<::grpc::StatusCode> codes;
  std::vector<bool> parent_expired;
};

// The middle tier: waits until its own caller's deadline has passed (the
// server call is then cancelled), then calls `bottom` through the breaker
// interceptor with the deadline propagated from its own call.
degrade_test::EchoServer::Script Middle(Family* family,
                                        grpc::ClientCounters* counters,
                                        const std::string* bottom,
                                        ::grpc::PropagationOptions options,
                                        Downstream* seen) {
  degrade_test::EchoServer::Script s;
  s.handler = [=](::grpc::ServerContext* ctx, const degrade::test::EchoRequest&,
                  degrade::test::EchoReply*) {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx->IsCancelled() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const bool expired = ctx->deadline() <= std::chrono::system_clock::now();
    ::grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    std::vector<std::unique_ptr<
        ::grpc::experimental::ClientInterceptorFactoryInterface>>
        f;
    f.push_back(grpc::MakeBreakerInterceptor(
        *family, grpc::OutcomeTable::Default(), counters));
    auto stub = degrade::test::Echo::NewStub(
        ::grpc::experimental::CreateCustomChannelWithInterceptors(
            *bottom, ::grpc::InsecureChannelCredentials(), args, std::move(f)));
    std::unique_ptr<::grpc::ClientContext> child =
        ::grpc::ClientContext::FromServerContext(*ctx, options);
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    const ::grpc::Status st = stub->Say(child.get(), request, &reply);
    {
      std::lock_guard<std::mutex> l(seen->mu);
      seen->codes.push_back(st.error_code());
      seen->parent_expired.push_back(expired);
    }
    return ::grpc::Status::OK;
  };
  return s;
}

// Item 5's fix answers a call whose deadline has passed locally, "first,
// with no permit and no breaker outcome" (interceptor.hpp:160-167), but it
// reads only ClientContext::deadline(), which is unset (infinite) on a
// context made by FromServerContext: gRPC applies the propagated deadline
// inside the call. So a middle tier whose caller has given up makes its
// downstream call as an ordinary one. gRPC 1.51 did not send it (the
// bottom saw nothing) but ended it CANCELLED, after the interceptor had
// taken a breaker permit for it: every such call is an admitted request
// (in half-open, a trial slot while it lasts), and with the breaker forced
// open (a fleet kill switch) it is answered as the breaker's refusal
// (UNAVAILABLE, counted rejected), where an explicit expired deadline gets
// DEADLINE_EXCEEDED and touches no breaker. Low: nothing reaches the
// network. Expected: the interceptor sees the propagated deadline too and
// answers DEADLINE_EXCEEDED locally, with no permit, in both states.
TEST(GrpcPropagatedDeadlineAttack,
     DISABLED_AnExpiredPropagatedDeadlineTakesNoPermit) {
  for (const bool open : {false, true}) {
    SCOPED_TRACE(open ? "breaker forced open" : "breaker closed");
    FakeClock clock;
    Family family(degrade_test::EchoBreakerSettings(&clock));
    if (open) family.Get(kMethod)->ForceOpen();
    grpc::ClientCounters counters;
    degrade_test::EchoServer bottom{degrade_test::EchoServer::Script{}};
    ASSERT_TRUE(bottom.started());
    const std::string bottom_address = bottom.address();
    Downstream seen;
    // Deadline propagation only: cancellation propagation would cancel the
    // child at once, whatever the interceptor does with the deadline.
    ::grpc::PropagationOptions options;
    options.disable_cancellation_propagation();
    degrade_test::EchoServer middle{
        Middle(&family, &counters, &bottom_address, options, &seen)};
    ASSERT_TRUE(middle.started());
    auto top = degrade::test::Echo::NewStub(
        degrade_test::LoopbackChannel(middle.address()));
    for (int i = 0; i < 5; ++i) {
      ::grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(20));
      degrade::test::EchoRequest request;
      degrade::test::EchoReply reply;
      const ::grpc::Status st = top->Say(&ctx, request, &reply);
      EXPECT_EQ(st.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED);
    }
    // The middle's handlers finish after their callers gave up: wait for
    // their reports (gRPC's own events; bounded so that a hang fails).
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      {
        std::lock_guard<std::mutex> l(seen.mu);
        if (seen.codes.size() == 5) break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), give_up);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard<std::mutex> l(seen.mu);
    for (std::size_t i = 0; i < seen.codes.size(); ++i) {
      ASSERT_TRUE(seen.parent_expired[i]) << "call " << i;
      EXPECT_EQ(seen.codes[i], ::grpc::StatusCode::DEADLINE_EXCEEDED)
          << "call " << i;
    }
    EXPECT_EQ(bottom.attempts(), 0) << "expired calls reached the bottom";
    EXPECT_EQ(family.Get(kMethod)->counts().requests, 0u)
        << "the breaker admitted calls whose deadline had passed";
    EXPECT_EQ(family.Get(kMethod)->counts().total_failures, 0u);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
