// Benchmarks of the gRPC adapter's client interceptor (issue 17's target:
// at most 1 us more per unary call than the plain channel, and at most 10%
// of the plain call), both over an in-process channel to the same server
// in this process, so the network is not what is measured:
//
//   BM_Grpc_Plain        a unary call on a plain in-process channel
//   BM_Grpc_Interceptor  the same call through MakeBreakerInterceptor: the
//                        method's breaker from a BreakerFamily, a permit,
//                        the outcome reported (closed breaker, OK replies)
//   BM_Grpc_BreakerPart  the interceptor's own work without gRPC (info)
//   BM_Grpc_NoopInterceptor  the same call through an interceptor that only
//                        proceeds: what gRPC's interception machinery costs
//                        before degrade's interceptor does anything
//
// One thread, wall-clock time per call. benchmarks/grpc_ratios.py turns the
// output into the comparison.

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "degrade/breaker_family.hpp"
#include "degrade/grpc/interceptor.hpp"
#include "degrade/telemetry.hpp"
#include "echo_server.hpp"

namespace {

using Family = degrade::BreakerFamily<std::string, degrade::grpc::Unit>;

// One server for the whole run; each benchmark makes its own channel.
degrade_test::EchoServer& Server() {
  static degrade_test::EchoServer* server =
      new degrade_test::EchoServer(degrade_test::EchoServer::Script{});
  if (!server->started()) {
    std::fprintf(stderr, "grpc_benchmark: the server did not start\n");
    std::abort();
  }
  return *server;
}

void RunCalls(benchmark::State& state, degrade::test::Echo::Stub& stub) {
  degrade::test::EchoRequest request;
  request.set_text("hi");
  for (auto _ : state) {
    ::grpc::ClientContext ctx;
    degrade::test::EchoReply reply;
    const ::grpc::Status s = stub.Say(&ctx, request, &reply);
    if (!s.ok()) {
      state.SkipWithError(s.error_message().c_str());
      break;
    }
    benchmark::DoNotOptimize(reply);
  }
}

void BM_Grpc_Plain(benchmark::State& state) {
  auto stub = degrade::test::Echo::NewStub(
      Server().server()->InProcessChannel(::grpc::ChannelArguments()));
  RunCalls(state, *stub);
}
BENCHMARK(BM_Grpc_Plain)->UseRealTime();

// A stub on an in-process channel through the one interceptor `factory`.
std::unique_ptr<degrade::test::Echo::Stub> InterceptedStub(
    std::unique_ptr<::grpc::experimental::ClientInterceptorFactoryInterface> factory) {
  std::vector<std::unique_ptr<::grpc::experimental::ClientInterceptorFactoryInterface>> f;
  f.push_back(std::move(factory));
  return degrade::test::Echo::NewStub(
      Server().server()->experimental().InProcessChannelWithInterceptors(
          ::grpc::ChannelArguments(), std::move(f)));
}

void BM_Grpc_Interceptor(benchmark::State& state) {
  Family family(degrade_test::EchoBreakerSettings(nullptr));
  auto stub = InterceptedStub(degrade::grpc::MakeBreakerInterceptor(family));
  RunCalls(state, *stub);
}
BENCHMARK(BM_Grpc_Interceptor)->UseRealTime();

// What the interceptor adds per call, without gRPC: the family's lookup,
// a permit, and the outcome reported.
void BM_Grpc_BreakerPart(benchmark::State& state) {
  Family family(degrade_test::EchoBreakerSettings(nullptr));
  const degrade::grpc::OutcomeTable table;
  for (auto _ : state) {
    auto breaker = family.Get(std::string("/degrade.test.Echo/Say"));
    auto permit = breaker->Allow();
    if (permit.ok()) permit->Done(absl::OkStatus(), table.Of(absl::OkStatus()));
    benchmark::DoNotOptimize(breaker);
  }
}
BENCHMARK(BM_Grpc_BreakerPart)->UseRealTime();

class Noop final : public ::grpc::experimental::Interceptor {
 public:
  void Intercept(::grpc::experimental::InterceptorBatchMethods* m) override {
    m->Proceed();
  }
};

class NoopFactory final
    : public ::grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  ::grpc::experimental::Interceptor* CreateClientInterceptor(
      ::grpc::experimental::ClientRpcInfo*) override {
    return new Noop();
  }
};

void BM_Grpc_NoopInterceptor(benchmark::State& state) {
  auto stub = InterceptedStub(std::make_unique<NoopFactory>());
  RunCalls(state, *stub);
}
BENCHMARK(BM_Grpc_NoopInterceptor)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
