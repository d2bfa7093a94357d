// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// metrics_server's optional parts (metrics_server.cpp), each pass's own:
//
//   * --nvml PATH: an NvmlGpuSource loaded from PATH ("gpu0"), read every
//     kGpuReadEvery-th request, for the degrade_gpu_source_* series. The
//     integration test gives it the test suite's fake NVML
//     (tests/support/fake_nvml.cpp); a real libnvidia-ml.so.1 works too.
//   * --grpc (only when built with degrade::grpc, DEGRADE_METRICS_SERVER_GRPC):
//     a GrpcRoundTrip, an in-process gRPC server on 127.0.0.1 (a port of the
//     kernel's choosing) serving grpc_recsys' Features service
//     (examples/grpc_recsys/recsys.proto) behind a degrade::grpc::ServerCall
//     with an AdmissionController of its own ("features", following the
//     pass's manager, so its sheds are not counted twice with the front
//     door's), and a channel to it through which
//     the driver sends one degrade::grpc::Call per request with the
//     request's class, for the degrade_grpc_client_* and
//     degrade_grpc_server_* series. Every kMalformedEvery-th call also
//     carries a malformed request class (a second, raw value), which the
//     server counts and serves as its default class.

#ifndef DEGRADE_EXAMPLES_METRICS_SERVER_EXTRAS_HPP_
#define DEGRADE_EXAMPLES_METRICS_SERVER_EXTRAS_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/gpu_signal.hpp"
#include "degrade/telemetry.hpp"

#if DEGRADE_METRICS_SERVER_GRPC
#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/grpc/client.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/grpc/server.hpp"
#include "degrade/request_class.hpp"
#include "recsys.grpc.pb.h"
#include "recsys/pipeline.hpp"
#endif

namespace metrics_server {

// The GPU is read once every this many requests (a read is one NVML call).
inline constexpr uint64_t kGpuReadEvery = 50;

// The GPU source of `library`, device 0, named "gpu0", reporting to
// `metrics`. Load()'s errors (gpu_signal.hpp) name the library.
inline absl::StatusOr<std::unique_ptr<degrade::NvmlGpuSource>> LoadGpu(
    const std::string& library, degrade::Telemetry* metrics) {
  degrade::GpuSourceOptions o;
  o.library = library;
  o.name = "gpu0";
  o.metrics = metrics;
  return degrade::NvmlGpuSource::Load(std::move(o));
}

#if DEGRADE_METRICS_SERVER_GRPC

// Every this many gRPC calls, one carries a malformed request class.
inline constexpr uint64_t kMalformedEvery = 20;

// A gRPC server and a client of it in one process (see the file comment).
// Send() is called by one thread (the driver's); the server's handlers run
// on gRPC's threads. Neither copyable nor movable: the service and the
// counters are pointed to.
class GrpcRoundTrip {
 public:
  // Starts the server and connects to it. `manager`, `clock` and
  // `metrics` must outlive the returned object; its destructor shuts the
  // server down first.
  static absl::StatusOr<std::unique_ptr<GrpcRoundTrip>> Start(
      const degrade::DegradationManager* manager, const degrade::Clock* clock,
      degrade::Telemetry* metrics) {
    degrade::AdmissionOptions ao;
    ao.name = "features";
    ao.manager = manager;
    ao.clock = clock;
    ao.metrics = metrics;
    absl::StatusOr<std::unique_ptr<degrade::AdmissionController>> admission =
        degrade::AdmissionController::Create(ao);
    if (!admission.ok()) return admission.status();
    std::unique_ptr<GrpcRoundTrip> rt(
        new GrpcRoundTrip(std::move(*admission), manager, metrics));
    if (absl::Status s = rt->Listen(); !s.ok()) return s;
    return rt;
  }

  GrpcRoundTrip(const GrpcRoundTrip&) = delete;
  GrpcRoundTrip& operator=(const GrpcRoundTrip&) = delete;

  // The server goes first, so that no handler runs while what it uses (the
  // admission controller, the manager, the counters) is destroyed.
  ~GrpcRoundTrip() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(1));
      server_->Wait();
    }
  }

  // One unary Features.Get for `user` as class `rc`, through the breaker
  // and the client counters. The reply is not used: only the call's
  // outcome is counted.
  void Send(uint64_t user, const degrade::RequestClass& rc) {
    const bool malformed = ++calls_ % kMalformedEvery == 0;
    degrade::DegradationTrace trace;
    degrade::grpc::ClientOptions co;
    co.request_class = rc;
    co.trace = &trace;
    co.counters = &client_counters_;
    grpc_recsys::FeatureRequest request;
    request.set_user(user);
    (void)degrade::grpc::Call<grpc_recsys::FeatureReply>(
        breaker_, co, degrade::Deadline::In(absl::Seconds(1)),
        [&](::grpc::ClientContext* ctx, grpc_recsys::FeatureReply* reply) {
          if (malformed) {
            ctx->AddMetadata(std::string(degrade::grpc::kRequestClassKey),
                             "NOT_A_CLASS:x");
          }
          return stub_->Get(ctx, request, reply);
        });
  }

 private:
  // The in-process demo's personalised features, behind its own admission
  // controller: at level 3 sheddable classes are shed here too.
  class FeatureService final : public grpc_recsys::Features::Service {
   public:
    explicit FeatureService(degrade::grpc::ServerOptions options)
        : options_(options) {}
    ::grpc::Status Get(::grpc::ServerContext* ctx,
                       const grpc_recsys::FeatureRequest* req,
                       grpc_recsys::FeatureReply* reply) override {
      degrade::grpc::ServerCall call(ctx, options_);
      if (!call.admitted()) return call.Finish();
      for (std::size_t i = 0; i < recsys::kFeatureDim; ++i) {
        reply->add_values(0.25f + 0.5f * recsys::Unit(req->user() * 7 + i));
      }
      return call.Finish();
    }

   private:
    const degrade::grpc::ServerOptions options_;
  };

  GrpcRoundTrip(std::unique_ptr<degrade::AdmissionController> admission,
                const degrade::DegradationManager* manager,
                degrade::Telemetry* metrics)
      : admission_(std::move(admission)),
        server_counters_(ServerCountersFor(metrics)),
        client_counters_(ClientCountersFor(metrics)),
        breaker_(BreakerFor()),
        service_(ServiceOptions(admission_.get(), manager, &server_counters_)) {
  }

  static degrade::grpc::ServerCountersOptions ServerCountersFor(
      degrade::Telemetry* metrics) {
    degrade::grpc::ServerCountersOptions o;
    o.name = "features";
    o.metrics = metrics;
    return o;
  }
  static degrade::grpc::ClientCountersOptions ClientCountersFor(
      degrade::Telemetry* metrics) {
    degrade::grpc::ClientCountersOptions o;
    o.name = "features";
    o.metrics = metrics;
    return o;
  }
  // Not in the pass's registry: the scrape test expects exactly the
  // pipeline's four breakers. Sheds are excluded (the default table).
  static degrade::BreakerSettings BreakerFor() {
    degrade::BreakerSettings s;
    s.name = "features_rpc";
    s.metrics = degrade::NoTelemetry();
    degrade::grpc::OutcomeTable::Default().ApplyTo(s);
    return s;
  }
  // At level 3 a shed also says "do not retry".
  static degrade::grpc::ServerOptions ServiceOptions(
      degrade::AdmissionController* admission,
      const degrade::DegradationManager* manager,
      degrade::grpc::ServerCounters* counters) {
    degrade::grpc::ServerOptions o;
    o.admission = admission;
    o.manager = manager;
    o.no_retry_from_level = 3;
    o.counters = counters;
    return o;
  }

  absl::Status Listen() {
    ::grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port <= 0) {
      return absl::UnavailableError(
          "gRPC: could not listen on 127.0.0.1 (gRPC's log says why)");
    }
    ::grpc::ChannelArguments args;
    // Loopback never goes through a proxy; degrade owns failure handling.
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    const std::string address = absl::StrCat("127.0.0.1:", port);
    channel_ = ::grpc::CreateCustomChannel(
        address, ::grpc::InsecureChannelCredentials(), args);
    if (!channel_->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::seconds(5))) {
      return absl::UnavailableError(
          absl::StrCat("gRPC: could not connect to ", address));
    }
    stub_ = grpc_recsys::Features::NewStub(channel_);
    return absl::OkStatus();
  }

  std::unique_ptr<degrade::AdmissionController> admission_;
  degrade::grpc::ServerCounters server_counters_;
  degrade::grpc::ClientCounters client_counters_;
  degrade::CircuitBreaker<grpc_recsys::FeatureReply> breaker_;
  FeatureService service_;
  std::unique_ptr<::grpc::Server> server_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<grpc_recsys::Features::Stub> stub_;
  uint64_t calls_ = 0;
};

#endif  // DEGRADE_METRICS_SERVER_GRPC

}  // namespace metrics_server

#endif  // DEGRADE_EXAMPLES_METRICS_SERVER_EXTRAS_HPP_
