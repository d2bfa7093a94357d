// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/server.hpp
// -----------------------------------------------------------------------------
//
// The top and bottom of a gRPC handler behind degrade's overload control.
// gRPC C++ server interceptors cannot reject a call, so admission happens
// in the handler, first thing. A `ServerCall` built at the top:
//   * reads the caller's request class (metadata.hpp). A missing or
//     malformed one gets the configured default, and a malformed one is
//     counted;
//   * reads the caller's deadline;
//   * asks the AdmissionController to admit the class.
// `Finish()` at the bottom makes the reply:
//   * for a shed call, RESOURCE_EXHAUSTED with the shed's retry-after as
//     grpc-retry-pushback-ms. At or above a configured degradation level
//     it is -1, "do not retry": a server that deep in trouble wants no
//     retries at all, and gRPC's own retries honour it too;
//   * for an admitted call, the handler's status;
//   * either way, the handler's degradation trace and the manager's level
//     in the trailers.
//
//   grpc::Status Rank(grpc::ServerContext* ctx, const RankRequest* req,
//                     RankReply* reply) override {
//     degrade::grpc::ServerCall call(ctx, options_);
//     if (!call.admitted()) return call.Finish();
//     absl::Status s = ranker_.Rank(*req, call.deadline(), reply);
//     if (used_plan_b) call.trace().Add("rank", degrade::DegradeReason::kTimeout);
//     return call.Finish(s);
//   }
//
// Thread safety: a ServerCall belongs to one handler invocation, and so to
// one thread at a time. ServerOptions may be shared by every handler:
// what it points to is thread-safe (the controller, the manager, the
// counters).

#ifndef DEGRADE_GRPC_SERVER_HPP_
#define DEGRADE_GRPC_SERVER_HPP_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// ServerCountersOptions
struct ServerCountersOptions {
  // Names the counters in metrics (degrade_grpc_server_*{grpc_server=...}):
  // one per service, say "ranker". Default "grpc_server".
  std::string name = "grpc_server";
  // The telemetry the counters report to (telemetry.hpp): with a
  // MetricsRegistry, degrade_grpc_server_* under `name`. nullptr means
  // DefaultTelemetry() (none unless SetDefaultTelemetry() was called);
  // NoTelemetry() means none even then. REQUIRES: outlives the counters.
  Telemetry* metrics = nullptr;
};

// ServerCounters
//
// What the server side counts beyond the admission controller's own
// series (rpc_stats.hpp, GrpcServerStats): calls accepted and shed, sheds
// sent as "do not retry", handler errors, malformed request-class
// metadata. One per service, shared by its handlers through
// ServerOptions::counters.
//
// Thread-safe: counting is a relaxed add on the calling thread's own shard
// (no lock, no allocation: totals, not guards); `stats()` sums the shards,
// from any thread. Neither copyable nor movable (its telemetry holds its
// address).
class ServerCounters {
 public:
  // The counts kept, one slot each.
  enum Slot : std::size_t {
    kAccepted,
    kShed,
    kShedDoNotRetry,
    kFailed,
    kMalformedMetadata,
    kNumSlots
  };

  ServerCounters() : ServerCounters(ServerCountersOptions{}) {}
  explicit ServerCounters(ServerCountersOptions options)
      : name_(std::move(options.name)) {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ = ::degrade::detail::Attach(options.metrics,
                                           &Telemetry::AttachComponent, view_);
  }
  ServerCounters(const ServerCounters&) = delete;
  ServerCounters& operator=(const ServerCounters&) = delete;
  // First: no scrape may read the counters while they go.
  ~ServerCounters() { telemetry_.reset(); }

  // Counts one event. REQUIRES: slot < kNumSlots.
  void Count(Slot slot) { counts_.Add(slot); }

  const std::string& name() const { return name_; }
  // Totals so far; exact once the counting threads are done.
  GrpcServerStats stats() const {
    GrpcServerStats st;
    st.accepted = counts_.Load(kAccepted);
    st.shed = counts_.Load(kShed);
    st.shed_do_not_retry = counts_.Load(kShedDoNotRetry);
    st.failed = counts_.Load(kFailed);
    st.malformed_metadata = counts_.Load(kMalformedMetadata);
    return st;
  }

 private:
  const std::string name_;
  ::degrade::detail::ShardedCounts<kNumSlots> counts_;
  const ::degrade::detail::OwnerView<ServerCounters, GrpcServerStats> view_{
      this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ServerOptions
//
// Shared by every handler of a service. Every pointer must outlive the
// handlers using it.
struct ServerOptions {
  // Decides each call. nullptr admits everything (the trace and level are
  // still attached).
  AdmissionController* admission = nullptr;
  // Its level goes into the trailers, and decides "do not retry". nullptr
  // means no level is sent and sheds keep their own retry-after.
  const DegradationManager* manager = nullptr;
  // At or above this manager level a shed says "do not retry" (pushback
  // -1). Negative means never.
  int no_retry_from_level = -1;
  // The class of a call that sent none, or a malformed one. CRITICAL by
  // default: an unlabelled caller is not shed before labelled sheddable
  // traffic.
  RequestClass default_class{};
  // The clock the call's Deadline runs on. nullptr means the real clock.
  const Clock* clock = nullptr;
  // Where calls accepted and shed, handler errors, malformed metadata and
  // level-forced "do not retry" are counted. Optional.
  ServerCounters* counters = nullptr;
};

// ServerCall
//
// One handler invocation. Build it first thing in the handler; return its
// Finish() last. Not thread-safe; neither copyable nor movable (it keeps a
// pointer to the call's context).
class ServerCall {
 public:
  // Reads the metadata and decides admission. REQUIRES: `context` is the
  // handler's own, non-null.
  ServerCall(::grpc::ServerContext* context, const ServerOptions& options)
      : context_(context),
        options_(options),
        deadline_(ReadDeadline(*context, options.clock)),
        request_class_(options.default_class) {
    absl::StatusOr<std::optional<RequestClass>> rc = ReadRequestClass(*context);
    if (!rc.ok()) {
      metadata_error_ = rc.status();
      Count(ServerCounters::kMalformedMetadata);
    } else if (rc->has_value()) {
      request_class_ = **rc;
    }
    if (options.admission != nullptr) shed_ = options.admission->Admit(request_class_);
    Count(shed_.ok() ? ServerCounters::kAccepted : ServerCounters::kShed);
  }

  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  // Whether the handler should do the work. When false, return Finish().
  bool admitted() const { return shed_.ok(); }
  // The shed status when not admitted (a ShedError), else OK.
  const absl::Status& shed() const { return shed_; }
  // The caller's class, or the default (see metadata_error()).
  const RequestClass& request_class() const { return request_class_; }
  // The caller's deadline on options.clock; infinite when it set none.
  const Deadline& deadline() const { return deadline_; }
  // Why the request class metadata was not used, or OK.
  const absl::Status& metadata_error() const { return metadata_error_; }
  // The handler's degradation trace: what it served from Plan B, merged
  // with its own downstream calls' traces (MergeTrace). Sent by Finish().
  DegradationTrace& trace() { return trace_; }

  // The reply to return: for a shed call the shed (whatever `status`),
  // with its pushback, "do not retry" at or above no_retry_from_level;
  // otherwise `status`, with its retry-after hint as pushback if it has one.
  // Attaches the trace and the level. Call it once.
  ::grpc::Status Finish(const absl::Status& status = absl::OkStatus()) {
    absl::Status reply = admitted() ? status : shed_;
    const int level = options_.manager != nullptr ? options_.manager->level() : -1;
    if (!admitted() && options_.no_retry_from_level >= 0 &&
        level >= options_.no_retry_from_level) {
      reply = WithRetryAfter(std::move(reply), absl::Milliseconds(-1));
      Count(ServerCounters::kShedDoNotRetry);
    }
    if (admitted() && !status.ok()) Count(ServerCounters::kFailed);
    AttachTrace(context_, trace_);
    if (level >= 0) AttachLevel(context_, level);
    return ToGrpcReply(reply, context_);
  }

 private:
  void Count(ServerCounters::Slot slot) const {
    if (options_.counters != nullptr) options_.counters->Count(slot);
  }

  ::grpc::ServerContext* const context_;
  const ServerOptions options_;  // a copy: a temporary may be passed
  const Deadline deadline_;
  RequestClass request_class_;
  absl::Status metadata_error_;
  absl::Status shed_;
  DegradationTrace trace_;
};

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_SERVER_HPP_
