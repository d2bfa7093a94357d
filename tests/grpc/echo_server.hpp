// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A real gRPC server on a free loopback port, in the test's own process,
// whose replies the test scripts: the status code, and a pushback trailer
// (grpc-retry-pushback-ms) when asked for. It counts the attempts that reach
// it, which is what the retry tests assert on: gRPC's retries happen inside
// the channel, invisible to the caller, and only the server sees them all.
// A real TCP port rather than an in-process channel, because gRPC 1.51's
// in-process channels have no retry filter at all.
//
// Thread safety: the script is set before calls are made; the count is
// atomic. The destructor shuts the server down, also when a test fails.

#ifndef DEGRADE_TESTS_GRPC_ECHO_SERVER_HPP_
#define DEGRADE_TESTS_GRPC_ECHO_SERVER_HPP_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/clock.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/grpc/status.hpp"
#include "echo.grpc.pb.h"

namespace degrade_test {

class EchoServer final : public degrade::test::Echo::Service {
 public:
  // What every call is answered with; OK replies echo the request.
  struct Script {
    ::grpc::StatusCode code = ::grpc::StatusCode::OK;
    std::optional<std::string> pushback;  // grpc-retry-pushback-ms
    // When set, the reply is degrade::grpc::ToGrpcReply(reply_with()), and
    // `code` and `pushback` are not used: the adapter's server side, with
    // whatever the handler does (a Retrier of its own, say) inside.
    std::function<absl::Status()> reply_with;
    // When set, the whole handler: what a test's middle or bottom hop does.
    std::function<::grpc::Status(::grpc::ServerContext*,
                                 const degrade::test::EchoRequest&,
                                 degrade::test::EchoReply*)>
        handler;
  };

  explicit EchoServer(Script script)
      : EchoServer(std::move(script), ::grpc::InsecureServerCredentials()) {}
  // Listening with `credentials` (TLS, mTLS).
  EchoServer(Script script,
             std::shared_ptr<::grpc::ServerCredentials> credentials)
      : script_(std::move(script)) {
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }

  ~EchoServer() override {
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(5));
    }
  }

  bool started() const { return server_ != nullptr && port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int attempts() const { return attempts_.load(); }
  // For in-process channels (benchmarks/grpc_benchmark.cpp).
  ::grpc::Server* server() const { return server_.get(); }

  ::grpc::Status Say(::grpc::ServerContext* context,
                     const degrade::test::EchoRequest* request,
                     degrade::test::EchoReply* reply) override {
    attempts_.fetch_add(1);
    if (script_.handler) return script_.handler(context, *request, reply);
    if (script_.reply_with) {
      return degrade::grpc::ToGrpcReply(script_.reply_with(), context);
    }
    if (script_.pushback.has_value()) {
      context->AddTrailingMetadata("grpc-retry-pushback-ms", *script_.pushback);
    }
    if (script_.code != ::grpc::StatusCode::OK) {
      return ::grpc::Status(script_.code, "scripted failure");
    }
    reply->set_text(request->text());
    return ::grpc::Status::OK;
  }

 private:
  const Script script_;
  int port_ = 0;
  std::atomic<int> attempts_{0};
  std::unique_ptr<::grpc::Server> server_;
};

// A script that answers every call with `code`.
inline EchoServer::Script Replying(::grpc::StatusCode code) {
  EchoServer::Script s;
  s.code = code;
  return s;
}

// The tests' breaker: named "echo", on `clock`, reporting nowhere.
inline degrade::BreakerSettings EchoBreakerSettings(const degrade::Clock* clock) {
  degrade::BreakerSettings s;
  s.name = "echo";
  s.clock = clock;
  s.metrics = degrade::NoTelemetry();
  return s;
}

// A channel to `address` that never goes through a proxy: gRPC follows
// http_proxy from the environment even to 127.0.0.1, and a developer's or
// CI machine's proxy must not fail these tests.
inline std::shared_ptr<::grpc::Channel> LoopbackChannel(
    const std::string& address, ::grpc::ChannelArguments args = {}) {
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return ::grpc::CreateCustomChannel(address, ::grpc::InsecureChannelCredentials(),
                                     args);
}

}  // namespace degrade_test

#endif  // DEGRADE_TESTS_GRPC_ECHO_SERVER_HPP_
