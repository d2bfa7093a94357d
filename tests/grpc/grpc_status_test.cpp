// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/grpc/status.hpp: codes and messages cross both ways unchanged, a
// code one side lacks reads as UNKNOWN, the pushback trailer is read as
// gRPC reads it, and over a real loopback call a server's shed with a
// retry-after reaches the client as a RESOURCE_EXHAUSTED with the same hint.

#include "degrade/grpc/status.hpp"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/status.hpp"
#include "echo_server.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

TEST(GrpcStatusTest, EveryCodeAndItsMessageCrossBothWaysUnchanged) {
  for (int code = 0; code <= 16; ++code) {
    const absl::Status a(static_cast<absl::StatusCode>(code), "why it failed");
    const ::grpc::Status g = grpc::ToGrpcStatus(a);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    const absl::Status back = grpc::FromGrpcStatus(g);
    EXPECT_EQ(back.code(), a.code()) << code;
    EXPECT_EQ(back.message(), code == 0 ? "" : "why it failed") << code;
  }
}

TEST(GrpcStatusTest, ACodeTheOtherSideLacksIsUnknown) {
  // 20: past gRPC's 16 but inside what its unscoped enum may hold (0-31),
  // so building the status is defined behaviour.
  const absl::Status from = grpc::FromGrpcStatus(
      ::grpc::Status(static_cast<::grpc::StatusCode>(20), "from the future"));
  EXPECT_EQ(from.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(from.message(), HasSubstr("gRPC status code 20"));
  EXPECT_THAT(from.message(), HasSubstr("from the future"));

  // 17, the first past the last code, both ways; and a negative Abseil
  // code (Abseil's enum is an int, so any value is defined).
  EXPECT_EQ(grpc::FromGrpcStatus(
                ::grpc::Status(static_cast<::grpc::StatusCode>(17), "x"))
                .code(),
            absl::StatusCode::kUnknown);
  for (const int code : {17, 99, -1}) {
    const ::grpc::Status to =
        grpc::ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(code), "x"));
    EXPECT_EQ(to.error_code(), ::grpc::StatusCode::UNKNOWN) << code;
  }
}

TEST(GrpcStatusTest, ALongMessageIsCutAtACharacterBoundary) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "\xE2\x82\xAC";  // U+20AC, 3 bytes
  const ::grpc::Status g = grpc::ToGrpcStatus(absl::UnavailableError(text));
  const std::string& m = g.error_message();
  EXPECT_LE(m.size(), grpc::kMaxMessageBytes + 16);
  EXPECT_THAT(m, ::testing::EndsWith(" [truncated]"));
  const std::string kept = m.substr(0, m.size() - std::string(" [truncated]").size());
  EXPECT_EQ(kept.size() % 3, 0u);  // whole characters only
  EXPECT_EQ(grpc::ToGrpcStatus(absl::UnavailableError("short")).error_message(),
            "short");
}

TEST(GrpcStatusTest, PushbackIsReadAsGrpcReadsIt) {
  EXPECT_EQ(grpc::ParsePushback("250"), absl::Milliseconds(250));
  EXPECT_EQ(grpc::ParsePushback("0"), absl::ZeroDuration());
  // Negative, garbage, empty and overflowing values all mean "do not
  // retry" (gRPC A6), never "retry at once".
  for (const char* v : {"-1", "-250", "soon", "", "1.5", "99999999999999999999"}) {
    EXPECT_LT(grpc::ParsePushback(v), absl::ZeroDuration()) << v;
  }
  // Up to an hour is a wait; beyond, a peer asking for (say) INT64_MAX ms
  // would park a caller without a deadline for ever: "do not retry".
  EXPECT_EQ(grpc::ParsePushback("3600000"), absl::Hours(1));
  EXPECT_LT(grpc::ParsePushback("3600001"), absl::ZeroDuration());
  EXPECT_LT(grpc::ParsePushback("9223372036854775807"), absl::ZeroDuration());
}

class GrpcStatusCallTest : public ::testing::Test {
 protected:
  // One call to `server`, read through FromGrpcCall.
  absl::Status Call(const degrade_test::EchoServer& server) {
    auto channel = degrade_test::LoopbackChannel(server.address());
    auto stub = degrade::test::Echo::NewStub(channel);
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    degrade::test::EchoRequest request;
    request.set_text("hi");
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub->Say(&ctx, request, &reply);
    return grpc::FromGrpcCall(s, ctx);
  }
};

TEST_F(GrpcStatusCallTest, AServersShedReachesTheClientWithItsRetryAfter) {
  degrade_test::EchoServer::Script script;
  script.reply_with = [] { return ShedError("front", "over its limit", absl::Milliseconds(250)); };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());

  const absl::Status s = Call(server);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("over its limit"));
  EXPECT_EQ(RetryAfterHint(s), absl::Milliseconds(250));
  // The remote shed is not this process's: only the hint crosses.
  EXPECT_FALSE(IsShed(s));
}

TEST_F(GrpcStatusCallTest, AShedThatSaysDoNotRetryArrivesAsDoNotRetry) {
  degrade_test::EchoServer::Script script;
  script.reply_with = [] { return ShedError("front", "level 3", absl::Milliseconds(-1)); };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());

  const std::optional<absl::Duration> hint = RetryAfterHint(Call(server));
  ASSERT_TRUE(hint.has_value());
  EXPECT_LT(*hint, absl::ZeroDuration());
}

TEST_F(GrpcStatusCallTest, ALongShedMessageStillArrivesWithItsDoNotRetry) {
  // 8,000 bytes would pass gRPC's 8 KB header limit uncut: the client
  // would see "metadata size exceeds limit" and lose the pushback.
  degrade_test::EchoServer::Script script;
  script.reply_with = [] {
    return ShedError("front", std::string(8000, 'x'), absl::Milliseconds(-1));
  };
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());

  const absl::Status s = Call(server);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("[truncated]"));
  const std::optional<absl::Duration> hint = RetryAfterHint(s);
  ASSERT_TRUE(hint.has_value());
  EXPECT_LT(*hint, absl::ZeroDuration());
}

TEST_F(GrpcStatusCallTest, NoTrailerNoHintAndSuccessCarriesNone) {
  degrade_test::EchoServer::Script failing;
  failing.code = ::grpc::StatusCode::UNAVAILABLE;
  degrade_test::EchoServer plain(failing);
  ASSERT_TRUE(plain.started());
  const absl::Status s = Call(plain);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RetryAfterHint(s), std::nullopt);

  degrade_test::EchoServer::Script ok_with_trailer;
  ok_with_trailer.pushback = "100";
  degrade_test::EchoServer ok(ok_with_trailer);
  ASSERT_TRUE(ok.started());
  EXPECT_TRUE(Call(ok).ok());
}

TEST_F(GrpcStatusCallTest, AMalformedPushbackMeansDoNotRetry) {
  degrade_test::EchoServer::Script script;
  script.code = ::grpc::StatusCode::UNAVAILABLE;
  script.pushback = "in a while";
  degrade_test::EchoServer server(script);
  ASSERT_TRUE(server.started());
  const std::optional<absl::Duration> hint = RetryAfterHint(Call(server));
  ASSERT_TRUE(hint.has_value());
  EXPECT_LT(*hint, absl::ZeroDuration());
}

TEST(GrpcStatusTest, ToGrpcReplyWithoutAHintAddsNoTrailerAndToleratesNoContext) {
  // A null context (a handler's helper called outside a call) is not a
  // crash: the status still converts.
  const ::grpc::Status g = grpc::ToGrpcReply(
      ShedError("front", "busy", absl::Milliseconds(5)), nullptr);
  EXPECT_EQ(g.error_code(), ::grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
