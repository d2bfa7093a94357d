// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An adversarial review of degrade/grpc/server.hpp's rate limits (per
// caller, per class) over real gRPC calls on loopback: what a caller's
// own limit is charged for calls that another limit refused.
//
// Tests whose comment says "What happened (fixed since)" failed on the
// code they were written against and pass since the fixes. A test named
// DISABLED_ shows a defect that is still open: its comment
// states the condition, what should happen, what happens, and the line at
// fault.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/server.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

absl::Status CallAs(degrade::test::Echo::Stub& stub, const char* caller,
                    Criticality c) {
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ctx.AddMetadata(std::string(grpc::kCallerIdKey), caller);
  RequestClass rc;
  rc.criticality = c;
  grpc::SetRequestClass(&ctx, rc);
  degrade::test::EchoRequest request;
  degrade::test::EchoReply reply;
  const ::grpc::Status s = stub.Say(&ctx, request, &reply);
  return grpc::FromGrpcCall(s, ctx);
}

// Condition: a caller limited to 1/s with a burst of 2, and a class limit
// on SHEDDABLE calls of one every 2 s. The caller sends two SHEDDABLE
// calls (the second refused by the class limit, as another caller's
// traffic or its own could cause), then one CRITICAL call.
// Expected: a call another limit refused was never served and spends
// none of the caller's own budget (the rule WithFallback keeps for a call
// an open breaker rejects, and the converse of "a caller over its own
// limit spends nothing that other callers share"): the CRITICAL call is
// admitted, the caller having been served once out of a burst of 2.
// What happened (fixed since): the caller's permit is taken before the class
// limit (and admission) is asked and is not given back when they refuse
// (include/degrade/grpc/server.hpp:236-249; a KeyedRateLimiter has no
// GiveBack), so the CRITICAL call is refused by the caller's own limit. A
// client retrying while its class is limited, or while admission sheds,
// burns its own limit on calls never served and is then refused its
// critical calls too. Severity: low-medium.
TEST(GrpcRateLimitAttack3Test,
     ACallAnotherLimitRefusedSpendsNoneOfTheCallersBudget) {
  FakeClock clock;
  KeyedRateLimitSettings ks;
  ks.name = "per_caller";
  ks.rate = 1;
  ks.burst = 2;
  ks.max_keys = 64;
  ks.clock = &clock;
  ks.metrics = NoTelemetry();
  auto per_caller = grpc::CallerRateLimiter::Create(ks).value();
  RateLimitSettings cs;
  cs.name = "sheddable";
  cs.rate = 0.5;
  cs.burst = 1;
  cs.clock = &clock;
  cs.metrics = NoTelemetry();
  auto sheddable = RateLimiter::Create(cs).value();
  grpc::ServerOptions options;
  options.clock = &clock;
  options.per_caller = per_caller.get();
  options.per_class[static_cast<std::size_t>(Criticality::kSheddable)] =
      sheddable.get();
  degrade_test::EchoServer::Script script;
  script.handler = [&options](::grpc::ServerContext* ctx, const auto&, auto*) {
    grpc::ServerCall call(ctx, options);
    return call.Finish();
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  ::grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  auto stub = degrade::test::Echo::NewStub(
      degrade_test::LoopbackChannel(server.address(), args));

  ASSERT_TRUE(CallAs(*stub, "carol", Criticality::kSheddable).ok());
  const absl::Status by_class = CallAs(*stub, "carol", Criticality::kSheddable);
  ASSERT_EQ(by_class.code(), absl::StatusCode::kResourceExhausted);
  const absl::Status critical = CallAs(*stub, "carol", Criticality::kCritical);
  EXPECT_TRUE(critical.ok())
      << "refused by the caller's own limit after one call served: "
      << critical;
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
