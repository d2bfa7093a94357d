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
#include "degrade/grpc/metadata.hpp"
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

// How the middle tier makes its downstream call's context.
enum class Child {
  kFromServerContext,  // gRPC's own ClientContext::FromServerContext
  kPropagatedContext,  // degrade::grpc::PropagatedContext (metadata.hpp)
};

// The middle tier: waits until its own caller's deadline has passed (and
// the server call is cancelled), then calls `bottom` through the breaker
// interceptor with the deadline propagated from its own call.
degrade_test::EchoServer::Script Middle(Family* family,
                                        grpc::ClientCounters* counters,
                                        const std::string* bottom,
                                        ::grpc::PropagationOptions options,
                                        Child how, Downstream* seen) {
  degrade_test::EchoServer::Script s;
  s.handler = [=](::grpc::ServerContext* ctx, const degrade::test::EchoRequest&,
                  degrade::test::EchoReply*) {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    // Cancelled is not enough: the top gives up at its own deadline and
    // resets the stream, which can arrive before this server's copy of the
    // deadline (taken from grpc-timeout on arrival, so a little later) has
    // passed. Wait for both, so the downstream call's deadline has passed.
    while ((!ctx->IsCancelled() ||
            ctx->deadline() > std::chrono::system_clock::now()) &&
           std::chrono::steady_clock::now() < give_up) {
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
        how == Child::kPropagatedContext
            ? grpc::PropagatedContext(*ctx, options)
            : ::grpc::ClientContext::FromServerContext(*ctx, options);
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

// Five calls from the top, each with a 20 ms deadline the middle tier
// outlives before it calls the bottom (breaker forced open or not); what
// the middle's downstream calls ended with, once all five have.
void RunExpiredMiddle(bool open, Child how, Family* family,
                      degrade_test::EchoServer* bottom, Downstream* seen) {
  if (open) family->Get(kMethod)->ForceOpen();
  grpc::ClientCounters counters;
  const std::string bottom_address = bottom->address();
  // Deadline propagation only: cancellation propagation would cancel the
  // child at once, whatever the interceptor does with the deadline.
  ::grpc::PropagationOptions options;
  options.disable_cancellation_propagation();
  degrade_test::EchoServer middle{
      Middle(family, &counters, &bottom_address, options, how, seen)};
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
      std::lock_guard<std::mutex> l(seen->mu);
      if (seen->codes.size() == 5) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Item 5's fix answers a call whose deadline has passed locally, "first,
// with no permit and no breaker outcome", reading ClientContext::deadline().
// A context made by gRPC's FromServerContext leaves that unset (infinite):
// gRPC 1.51 applies the propagated deadline inside its core when the call
// is created, keeps the parent call in a private member, and has no public
// accessor for the core call's deadline, so no interceptor can see it.
// PropagatedContext() (metadata.hpp) makes the same context with the
// deadline also set on it: the middle tier whose caller has given up then
// gets DEADLINE_EXCEEDED for its downstream call, locally, with no permit,
// whether the breaker is closed or forced open (a fleet kill switch).
TEST(GrpcPropagatedDeadlineAttack, AnExpiredPropagatedDeadlineTakesNoPermit) {
  for (const bool open : {false, true}) {
    SCOPED_TRACE(open ? "breaker forced open" : "breaker closed");
    FakeClock clock;
    Family family(degrade_test::EchoBreakerSettings(&clock));
    degrade_test::EchoServer bottom{degrade_test::EchoServer::Script{}};
    ASSERT_TRUE(bottom.started());
    Downstream seen;
    RunExpiredMiddle(open, Child::kPropagatedContext, &family, &bottom, &seen);
    std::lock_guard<std::mutex> l(seen.mu);
    ASSERT_EQ(seen.codes.size(), 5u);
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

// The limit, pinned: with FromServerContext alone the interceptor cannot
// see the propagated deadline (above), so the call takes a permit (and,
// forced open, gets the breaker's refusal). What still holds, by gRPC's
// own doing: nothing reaches the bottom, the call fails, and its failure
// (CANCELLED on 1.51) is the caller's, never a breaker failure.
TEST(GrpcPropagatedDeadlineAttack,
     AnExpiredDeadlineFromServerContextAloneStillNeverReachesTheNetwork) {
  FakeClock clock;
  Family family(degrade_test::EchoBreakerSettings(&clock));
  degrade_test::EchoServer bottom{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(bottom.started());
  Downstream seen;
  RunExpiredMiddle(false, Child::kFromServerContext, &family, &bottom, &seen);
  std::lock_guard<std::mutex> l(seen.mu);
  ASSERT_EQ(seen.codes.size(), 5u);
  for (std::size_t i = 0; i < seen.codes.size(); ++i) {
    ASSERT_TRUE(seen.parent_expired[i]) << "call " << i;
    EXPECT_NE(seen.codes[i], ::grpc::StatusCode::OK) << "call " << i;
  }
  EXPECT_EQ(bottom.attempts(), 0) << "expired calls reached the bottom";
  EXPECT_EQ(family.Get(kMethod)->counts().total_failures, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
