// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of rpc_stats.hpp: the defaults, the outcome names the metrics use,
// and ClassifyClientCall's table (the gRPC adapter's counting is tested
// against real servers in tests/grpc/).

#include "degrade/rpc_stats.hpp"

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "degrade/detail/status_payload.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(RpcStatsTest, DefaultsAreZero) {
  const GrpcClientStats c;
  for (uint64_t n : c.outcomes) EXPECT_EQ(n, 0u);
  EXPECT_EQ(c.malformed_trailers, 0u);
  const GrpcServerStats s;
  EXPECT_EQ(s.accepted, 0u);
  EXPECT_EQ(s.shed, 0u);
  EXPECT_EQ(s.shed_do_not_retry, 0u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.malformed_metadata, 0u);
}

TEST(RpcStatsTest, EveryOutcomeHasItsOwnLabel) {
  const char* const expected[kNumGrpcClientOutcomes] = {
      "accepted", "failed", "shed", "refused", "expired"};
  for (std::size_t i = 0; i < kNumGrpcClientOutcomes; ++i) {
    EXPECT_EQ(GrpcClientOutcomeName(static_cast<GrpcClientOutcome>(i)),
              expected[i]);
  }
}

TEST(RpcStatsTest, ClassifyClientCallSortsStatusesByWhoSaidNo) {
  struct Case {
    absl::Status status;
    GrpcClientOutcome want;
  };
  const Case cases[] = {
      {absl::OkStatus(), GrpcClientOutcome::kAccepted},
      {absl::UnavailableError("down"), GrpcClientOutcome::kFailed},
      {absl::DeadlineExceededError("slow"), GrpcClientOutcome::kFailed},
      {absl::InvalidArgumentError("bad"), GrpcClientOutcome::kFailed},
      // The server's shed arrives as RESOURCE_EXHAUSTED.
      {absl::ResourceExhaustedError("shed"), GrpcClientOutcome::kShed},
      // Local refusals: nothing was sent.
      {detail::WithReason(absl::UnavailableError("open"), detail::kReasonOpen),
       GrpcClientOutcome::kRefused},
      {detail::WithReason(absl::UnavailableError("busy"),
                          detail::kReasonTooMany),
       GrpcClientOutcome::kRefused},
      // The client's own throttler: a shed, but a local one.
      {ThrottledError("rank", "adaptive throttling"),
       GrpcClientOutcome::kRefused},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifyClientCall(c.status), c.want) << c.status;
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
