// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A hostile review of the breaker interceptor's expired-deadline check: a
// call whose deadline has passed must never reach the network, whichever
// of gRPC's client APIs makes it (blocking, callback, completion queue),
// and with the breaker forced open it is still DEADLINE_EXCEEDED, never
// the breaker's refusal. Against a real server on a loopback port; the
// waits are for gRPC's own completion, bounded only so that a hang fails.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "degrade/breaker_family.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
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

class GrpcAttackTest : public ::testing::Test {
 protected:
  GrpcAttackTest() {
    family_ = std::make_unique<Family>(degrade_test::EchoBreakerSettings(&clock_));
  }
  std::unique_ptr<degrade::test::Echo::Stub> Stub(
      const degrade_test::EchoServer& server) {
    ::grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    std::vector<
        std::unique_ptr<::grpc::experimental::ClientInterceptorFactoryInterface>>
        f;
    f.push_back(grpc::MakeBreakerInterceptor(
        *family_, grpc::OutcomeTable::Default(), &counters_));
    return degrade::test::Echo::NewStub(
        ::grpc::experimental::CreateCustomChannelWithInterceptors(
            server.address(), ::grpc::InsecureChannelCredentials(), args,
            std::move(f)));
  }
  FakeClock clock_;
  std::unique_ptr<Family> family_;
  grpc::ClientCounters counters_;
};

// The callback API, with the breaker forced open and closed.
TEST_F(GrpcAttackTest, AnExpiredCallbackCallIsNeverSent) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  const Deadline spent = Deadline::In(absl::ZeroDuration(), &clock_);
  for (bool open : {true, false}) {
    if (open) family_->Get(kMethod)->ForceOpen();
    else family_->Get(kMethod)->Reset();
    for (int i = 0; i < 10; ++i) {
      ::grpc::ClientContext ctx;
      grpc::SetDeadline(&ctx, spent);
      degrade::test::EchoRequest request;
      degrade::test::EchoReply reply;
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      ::grpc::Status got;
      stub->async()->Say(&ctx, &request, &reply, [&](::grpc::Status s) {
        std::lock_guard<std::mutex> l(mu);
        got = std::move(s);
        done = true;
        cv.notify_all();
      });
      std::unique_lock<std::mutex> l(mu);
      ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return done; }));
      EXPECT_EQ(got.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED)
          << "open " << open << ": " << got.error_message();
      EXPECT_FALSE(grpc::RejectedByBreaker(ctx).has_value());
    }
  }
  EXPECT_EQ(server.attempts(), 0);
  EXPECT_EQ(family_->Get(kMethod)->counts().requests, 0u);
}

// The completion-queue API.
TEST_F(GrpcAttackTest, AnExpiredCompletionQueueCallIsNeverSent) {
  degrade_test::EchoServer server{degrade_test::EchoServer::Script{}};
  ASSERT_TRUE(server.started());
  auto stub = Stub(server);
  family_->Get(kMethod)->ForceOpen();
  ::grpc::CompletionQueue cq;
  for (int i = 0; i < 10; ++i) {
    ::grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() -
                     std::chrono::milliseconds(1));
    degrade::test::EchoRequest request;
    degrade::test::EchoReply reply;
    ::grpc::Status s;
    auto rpc = stub->AsyncSay(&ctx, request, &cq);
    rpc->Finish(&reply, &s, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    ASSERT_EQ(cq.AsyncNext(&tag, &ok,
                           std::chrono::system_clock::now() +
                               std::chrono::seconds(10)),
              ::grpc::CompletionQueue::GOT_EVENT);
    EXPECT_EQ(s.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_message();
    EXPECT_FALSE(grpc::RejectedByBreaker(ctx).has_value());
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  EXPECT_EQ(server.attempts(), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
