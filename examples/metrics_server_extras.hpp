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
//   * LastGoodTier (always): a fallback `Ladder` (ladder.hpp) over a
//     simulated user feature store, with its LastGoodCache, Coalescer,
//     RecoveryRamp and SegmentDefaults, driven once per request on the
//     pass's clock, for the degrade_ladder_*, degrade_stale_age_seconds,
//     degrade_cache_*, degrade_coalesce_*, degrade_recovery_ramp_* and
//     degrade_segment_defaults_* series. Its store follows a script of its
//     own (see the class), so that every pass, held phase or not, serves
//     fresh, stale and default values and ramps back after an outage.

#ifndef DEGRADE_EXAMPLES_METRICS_SERVER_EXTRAS_HPP_
#define DEGRADE_EXAMPLES_METRICS_SERVER_EXTRAS_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/coalesce.hpp"
#include "degrade/gpu_signal.hpp"
#include "degrade/ladder.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"

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
#include "degrade/trust_policy.hpp"
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

// The last-known-good tier in front of a simulated user feature store.
//
// The store follows a script of its own on the pass's clock, a cycle of
// kLadderCycle from the first request: up for 4 s, down (UNAVAILABLE) for
// 3 s, then up again, so that each cycle shows the whole ladder: fresh
// values written through; during the outage the breaker opens and each
// user is served their own cached value (stale) or, not cached, the
// segment's average ("US" and "DE" are in the set) or the global one
// ("FR" is not); when the store returns, the breaker's next trial closes
// it and the recovery ramp lets live calls back at a rising rate, the rest
// served stale. The cache holds at most 128 of the 200 users it sees (and
// 16 KiB), so lookups miss and values are evicted for room; values older
// than stale_if_error (4 s) are too old, and a sweep each cycle evicts
// those past max_age (6 s).
//
// Every kJoinEvery-th request, while its store call is in flight, a second
// request for the same user arrives: it joins the call through the
// coalescer and, with a coalesce_wait of 0, leaves at once and is served
// down the ladder (joined, timed out). It is sent from within the call, so
// the join happens on every run, without a second thread or a sleep.
//
// Each cycle reloads the segment set (accepted) and, halfway, tries one
// with a vector of the wrong dimension (refused: the old set serves on).
//
// One thread (the driver's) calls Serve(). Neither copyable nor movable:
// the ladder points at its parts.
class LastGoodTier {
 public:
  using Features = std::vector<float>;
  using FeatureLadder = degrade::Ladder<uint64_t, Features>;

  static constexpr absl::Duration kLadderCycle = absl::Seconds(10);
  static constexpr uint64_t kLadderUsers = 200;
  static constexpr uint64_t kJoinEvery = 25;
  static constexpr std::size_t kDim = 8;

  // `clock` and `metrics` must outlive the returned object.
  static absl::StatusOr<std::unique_ptr<LastGoodTier>> Start(
      const degrade::Clock* clock, degrade::Telemetry* metrics) {
    std::unique_ptr<LastGoodTier> t(new LastGoodTier(clock));
    if (absl::Status s = t->Build(metrics); !s.ok()) return s;
    return t;
  }

  LastGoodTier(const LastGoodTier&) = delete;
  LastGoodTier& operator=(const LastGoodTier&) = delete;

  // One request for `user`'s features. Every rung can answer (the global
  // default is always there), so the result is not looked at: the ladder
  // counts what it served.
  void Serve(uint64_t user) {
    const absl::Time now = clock_->Now();
    if (!started_) {
      started_ = true;
      start_ = now;
    }
    absl::Duration into;
    const int64_t cycle = absl::IDivDuration(
        std::max(now - start_, absl::ZeroDuration()), kLadderCycle, &into);
    if (cycle != cycle_) {
      cycle_ = cycle;
      refused_ = false;
      (void)segments_->Set(Segments(kDim), "cycle");
      cache_->SweepExpired();
    }
    if (!refused_ && into >= kLadderCycle / 2) {
      refused_ = true;
      (void)segments_->Set(Segments(kDim - 1), "wrong-dimension");
    }
    store_up_ = into < absl::Seconds(4) || into >= absl::Seconds(7);
    const uint64_t key = user % kLadderUsers;
    const bool join = ++requests_ % kJoinEvery == 0;
    (void)ladder_->Get(key, SegmentOf(key), [this, key, join] {
      if (join) {
        // The second request, while this call is in flight.
        (void)ladder_->Get(key, SegmentOf(key),
                           [this, key] { return Store(key); });
      }
      return Store(key);
    });
  }

 private:
  explicit LastGoodTier(const degrade::Clock* clock) : clock_(clock) {}

  absl::Status Build(degrade::Telemetry* metrics) {
    // Not in the pass's registry: the scrape test expects exactly the
    // pipeline's four breakers.
    degrade::BreakerSettings b;
    b.name = "user_features";
    b.clock = clock_;
    b.metrics = degrade::NoTelemetry();
    b.ready_to_trip = degrade::trip::ConsecutiveFailures(5);
    b.timeout = absl::Seconds(1);
    breaker_ = std::make_unique<degrade::CircuitBreaker<Features>>(b);
    degrade::LastGoodCacheSettings c;
    c.name = "user_features";
    c.max_entries = 128;
    c.max_bytes = 16 << 10;
    c.stale_if_error = absl::Seconds(4);
    c.max_age = absl::Seconds(6);
    c.clock = clock_;
    c.metrics = metrics;
    absl::StatusOr<std::unique_ptr<FeatureLadder::Cache>> cache =
        FeatureLadder::Cache::Create(c);
    if (!cache.ok()) return cache.status();
    cache_ = *std::move(cache);
    degrade::CoalescerSettings cs;
    cs.name = "user_features";
    cs.clock = clock_;
    cs.metrics = metrics;
    absl::StatusOr<std::unique_ptr<FeatureLadder::Shared>> coalescer =
        FeatureLadder::Shared::Create(cs);
    if (!coalescer.ok()) return coalescer.status();
    coalescer_ = *std::move(coalescer);
    degrade::RecoveryRampSettings r;
    r.name = "user_features";
    r.period = absl::Seconds(2);
    r.rate_window = absl::Seconds(2);
    r.clock = clock_;
    r.metrics = metrics;
    absl::StatusOr<std::unique_ptr<degrade::RecoveryRamp>> ramp =
        degrade::RecoveryRamp::Create(r);
    if (!ramp.ok()) return ramp.status();
    ramp_ = *std::move(ramp);
    degrade::SegmentDefaultsOptions so;
    so.name = "user_features";
    so.expected_dimension = kDim;
    so.clock = clock_;
    so.metrics = metrics;
    absl::StatusOr<std::unique_ptr<degrade::SegmentDefaults>> segments =
        degrade::SegmentDefaults::Create(so);
    if (!segments.ok()) return segments.status();
    segments_ = *std::move(segments);
    if (absl::Status s = segments_->Set(Segments(kDim), "start"); !s.ok()) {
      return s;
    }
    FeatureLadder::Rungs rungs;
    rungs.breaker = breaker_.get();
    rungs.cache = cache_.get();
    rungs.coalescer = coalescer_.get();
    rungs.ramp = ramp_.get();
    const degrade::SegmentDefaults* set = segments_.get();
    rungs.segment = [set](absl::string_view segment) -> FeatureLadder::Value {
      return set->Find(segment);
    };
    rungs.global = [this] { return global_; };
    degrade::LadderSettings ls;
    ls.name = "user_features";
    ls.coalesce_wait = absl::ZeroDuration();
    ls.clock = clock_;
    ls.metrics = metrics;
    absl::StatusOr<std::unique_ptr<FeatureLadder>> ladder =
        FeatureLadder::Create(ls, std::move(rungs));
    if (!ladder.ok()) return ladder.status();
    ladder_ = *std::move(ladder);
    return absl::OkStatus();
  }

  static absl::string_view SegmentOf(uint64_t key) {
    static constexpr absl::string_view kSegments[] = {"US", "DE", "FR"};
    return kSegments[key % 3];
  }

  // The set the offline job ships: "US" and "DE", `dim` wide.
  static degrade::SegmentVectors Segments(std::size_t dim) {
    degrade::SegmentVectors v;
    v["US"] = Features(dim, 0.3f);
    v["DE"] = Features(dim, 0.2f);
    return v;
  }

  absl::StatusOr<Features> Store(uint64_t key) const {
    if (!store_up_) return absl::UnavailableError("user feature store down");
    Features f(kDim);
    for (std::size_t i = 0; i < kDim; ++i) {
      f[i] = static_cast<float>((key * 31 + i) % 97) / 97.0f;
    }
    return f;
  }

  const degrade::Clock* const clock_;
  const FeatureLadder::Value global_ =
      std::make_shared<const Features>(kDim, 0.25f);
  // Declared before the ladder that points at them, so destroyed after it.
  std::unique_ptr<degrade::CircuitBreaker<Features>> breaker_;
  std::unique_ptr<FeatureLadder::Cache> cache_;
  std::unique_ptr<FeatureLadder::Shared> coalescer_;
  std::unique_ptr<degrade::RecoveryRamp> ramp_;
  std::unique_ptr<degrade::SegmentDefaults> segments_;
  std::unique_ptr<FeatureLadder> ladder_;
  bool started_ = false;
  absl::Time start_;
  int64_t cycle_ = -1;
  bool refused_ = false;
  bool store_up_ = true;
  uint64_t requests_ = 0;
};

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
    // The caller is this process's own front end, over loopback: it may
    // claim any class (docs/security.md on trusting a peer by address).
    degrade::TrustPolicySettings trust;
    trust.addresses = {{"127.0.0.1", degrade::Criticality::kCriticalPlus}};
    o.trust = degrade::TrustPolicy::Create(std::move(trust)).value();
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
