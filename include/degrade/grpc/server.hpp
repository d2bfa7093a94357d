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
//     counted. A claimed class is capped by `ServerOptions::trust`
//     (trust_policy.hpp), from what the transport proved about the peer
//     (an mTLS certificate's names, its address): by default no caller
//     may claim more than CRITICAL, so CRITICAL_PLUS is for the peers a
//     rule names. A claim above the cap is lowered to it and counted;
//     the default is capped the same way (uncounted), so a peer pinned
//     below it gains nothing by claiming nothing;
//   * reads the caller's deadline. A call whose deadline passed before
//     its handler began (it waited in gRPC's queue, or behind busy
//     threads) is not admitted: DEADLINE_EXCEEDED, counted as expired,
//     spending no permit and asking no admission, because the caller has
//     already given up and the work would be thrown away;
//   * with a per-caller limit (a KeyedRateLimiter), reads the caller's
//     identity from `caller_header` (kCallerIdKey, "degrade-caller-id", by
//     default) and spends one of that caller's permits; a call without
//     one, or with a malformed one, is the anonymous caller "", which all
//     such calls share (omitting the header is no way round the limit);
//   * with a limit for the call's criticality (a RateLimiter), spends one
//     of that class's permits;
//   * asks the AdmissionController to admit the class.
// The identity header is only as trustworthy as the network it came over:
// any client that can reach the server can name itself anyone, so a
// per-caller limit keeps honest callers apart but does not stop one that
// lies (send it through an authenticating proxy, or use the class limit).
// `Finish()` at the bottom makes the reply:
//   * for a refused call (a rate limit's or the admission controller's),
//     RESOURCE_EXHAUSTED with the refusal's retry-after as
//     grpc-retry-pushback-ms (for a rate limit, exactly when the caller's
//     next permit comes). At or above a configured degradation level
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
//     if (used_plan_b) call.trace().Add("rank",
//     degrade::DegradeReason::kTimeout); return call.Finish(s);
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

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/request_class.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trust_policy.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// Request metadata naming the caller, for ServerOptions::per_caller: an
// opaque identity of 1 to kMaxCallerIdLength printable ASCII bytes (a
// service account, a tenant). Not authenticated: see the file comment.
inline constexpr absl::string_view kCallerIdKey = "degrade-caller-id";
inline constexpr std::size_t kMaxCallerIdLength = 128;

// The per-caller rate limit's key type: the caller identity.
using CallerRateLimiter = KeyedRateLimiter<std::string>;

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
// What the server side counts beyond the admission controller's and the
// rate limiters' own series (rpc_stats.hpp, GrpcServerStats): calls
// accepted, shed and refused by a rate limit (per caller, per class),
// refusals sent as "do not retry", handler errors, malformed request-class
// and caller metadata. One per service, shared by its handlers through
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
    kRateLimitedCaller,
    kRateLimitedClass,
    kMalformedCaller,
    // Claims lowered by the trust policy, by the class claimed (a claim of
    // SHEDDABLE only by its cohort, below an unlabelled call's).
    kCappedCriticalPlus,
    kCappedCritical,
    kCappedSheddablePlus,
    kCappedSheddable,
    kExpired,
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
    st.rate_limited_caller = counts_.Load(kRateLimitedCaller);
    st.rate_limited_class = counts_.Load(kRateLimitedClass);
    st.malformed_caller = counts_.Load(kMalformedCaller);
    st.expired = counts_.Load(kExpired);
    for (std::size_t c = 0; c < kNumCriticalities; ++c) {
      st.class_capped[c] = counts_.Load(kCappedCriticalPlus + c);
    }
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
  // The most important class each caller may claim (trust_policy.hpp),
  // and the most important it is served at: a call that claims nothing
  // gets default_class capped by the same policy.
  // The default caps every peer at CRITICAL; name the front ends allowed
  // CRITICAL_PLUS (by mTLS name or address), or ask for TrustPolicy::
  // TrustAll() on a back end only trusted front ends can reach. A peer
  // trusted no further than `others` is never ranked above an unlabelled
  // call, whatever default_class is.
  TrustPolicy trust;
  // The clock the call's Deadline runs on. nullptr means the real clock.
  const Clock* clock = nullptr;
  // Where calls accepted, shed and rate-limited, handler errors, malformed
  // metadata and level-forced "do not retry" are counted. Optional.
  ServerCounters* counters = nullptr;
  // A limit per caller: one permit of the caller's key (the identity sent
  // as `caller_header`, "" when none or malformed) per call. nullptr: none.
  // Asked before the class limit and admission, so a caller over its own
  // limit spends nothing that other callers share.
  CallerRateLimiter* per_caller = nullptr;
  // The metadata key the identity is read from: kCallerIdKey, or a header
  // a trusted proxy in front sets (compared in lower case, as gRPC delivers
  // keys).
  std::string caller_header = std::string(kCallerIdKey);
  // A limit per request class: per_class[criticality] (nullptr: none) is
  // asked for one permit per call of that criticality (after the caller's
  // limit, before admission). One limiter may serve several classes.
  std::array<RateLimiter*, kNumCriticalities> per_class{};
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
        manager_(options.manager),
        no_retry_from_level_(options.no_retry_from_level),
        counters_(options.counters),
        deadline_(ReadDeadline(*context, options.clock)),
        request_class_(options.default_class) {
    absl::StatusOr<std::optional<RequestClass>> rc = ReadRequestClass(*context);
    if (!rc.ok()) {
      metadata_error_ = rc.status();
      Count(ServerCounters::kMalformedMetadata);
    }
    const bool claimed = rc.ok() && rc->has_value();
    if (claimed) request_class_ = **rc;
    // The default is capped too: a peer pinned below it must not escape
    // the pin by claiming nothing, or something malformed. And a peer the
    // policy trusts no further than `others` gains nothing by claiming: its
    // claim never ranks above an unlabelled call's, however low the server
    // set its default class (criticality or cohort). The peer is read only
    // when the policy tells peers apart.
    const TrustPolicy& trust = options.trust;
    if (!trust.trusts_all()) {
      const Criticality cap =
          trust.CapFor(trust.reads_peer() ? PeerOf(*context) : PeerIdentity());
      RequestClass admitted = request_class_;
      if (static_cast<int>(admitted.criticality) < static_cast<int>(cap)) {
        admitted.criticality = cap;
      }
      if (claimed && cap == trust.others() &&
          trust.others() != Criticality::kCriticalPlus) {
        RequestClass floor = options.default_class;
        if (static_cast<int>(floor.criticality) < static_cast<int>(cap)) {
          floor.criticality = cap;
        }
        if (Rank(admitted) < Rank(floor)) admitted = floor;
      }
      const bool lowered = admitted != request_class_;
      request_class_ = admitted;
      if (lowered && claimed) {
        claimed_ = **rc;
        Count(static_cast<ServerCounters::Slot>(
            ServerCounters::kCappedCriticalPlus +
            std::min<std::size_t>(
                static_cast<std::size_t>(claimed_->criticality),
                kNumCriticalities - 1)));
      }
    }
    if (deadline_.expired()) {
      shed_ = absl::DeadlineExceededError(
          "gRPC server: the caller's deadline had passed before the handler "
          "began; the call was not run");
      refused_by_ = ServerCounters::kExpired;
      Count(ServerCounters::kExpired);
      return;
    }
    if (options.per_caller != nullptr) {
      ReadCaller(*context, options.caller_header);
      shed_ = options.per_caller->Admit(caller_);
      if (!shed_.ok()) refused_by_ = ServerCounters::kRateLimitedCaller;
    }
    const auto criticality =
        static_cast<std::size_t>(request_class_.criticality);
    RateLimiter* const class_limit = criticality < kNumCriticalities
                                         ? options.per_class[criticality]
                                         : nullptr;
    if (shed_.ok() && class_limit != nullptr) {
      shed_ = class_limit->Admit();
      if (!shed_.ok()) {
        refused_by_ = ServerCounters::kRateLimitedClass;
        // A call not served spends none of its caller's budget.
        if (options.per_caller != nullptr)
          options.per_caller->GiveBack(caller_, 1);
      }
    }
    if (shed_.ok() && options.admission != nullptr) {
      shed_ = options.admission->Admit(request_class_);
      if (!shed_.ok()) {
        refused_by_ = ServerCounters::kShed;
        if (options.per_caller != nullptr)
          options.per_caller->GiveBack(caller_, 1);
        if (class_limit != nullptr) class_limit->GiveBack(1);
      }
    }
    Count(shed_.ok() ? ServerCounters::kAccepted : refused_by_);
  }

  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  // Whether the handler should do the work. When false, return Finish().
  bool admitted() const { return shed_.ok(); }
  // The refusal when not admitted (a ShedError; IsRateLimited when a rate
  // limit refused; DEADLINE_EXCEEDED when the deadline had passed on
  // arrival), else OK.
  const absl::Status& shed() const { return shed_; }
  // Whether a rate limit (per caller or per class) refused the call.
  bool rate_limited() const {
    return refused_by_ == ServerCounters::kRateLimitedCaller ||
           refused_by_ == ServerCounters::kRateLimitedClass;
  }
  // The identity the per-caller limit was asked for ("" for the anonymous
  // caller, and when there is no per-caller limit).
  const std::string& caller() const { return caller_; }
  // The class the call is admitted by: the caller's claim, or the default
  // when it sent none or a malformed one (see metadata_error()), capped by
  // the trust policy either way.
  const RequestClass& request_class() const { return request_class_; }
  // The class the caller claimed when the trust policy lowered it, else
  // nullopt.
  const std::optional<RequestClass>& claimed_class() const { return claimed_; }
  // The caller's deadline on options.clock; infinite when it set none.
  const Deadline& deadline() const { return deadline_; }
  // Why the request class metadata was not used, or OK.
  const absl::Status& metadata_error() const { return metadata_error_; }
  // The handler's degradation trace: what it served from Plan B, merged
  // with its own downstream calls' traces (MergeTrace). Sent by Finish().
  DegradationTrace& trace() { return trace_; }

  // The reply to return: for a refused call the refusal (whatever
  // `status`), with its pushback, "do not retry" at or above
  // no_retry_from_level; otherwise `status`, with its retry-after hint as
  // pushback if it has one. Attaches the trace and the level. Call it once.
  ::grpc::Status Finish(const absl::Status& status = absl::OkStatus()) {
    absl::Status reply = admitted() ? status : shed_;
    const int level = manager_ != nullptr ? manager_->level() : -1;
    if (!admitted() && refused_by_ != ServerCounters::kExpired &&
        no_retry_from_level_ >= 0 && level >= no_retry_from_level_) {
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
    if (counters_ != nullptr) counters_->Count(slot);
  }

  // The caller's identity, or "" (counted when it was malformed: sent
  // twice, empty, too long, or not printable ASCII).
  void ReadCaller(const ::grpc::ServerContext& context,
                  absl::string_view header) {
    // gRPC delivers metadata keys in lower case: an upper-case setting
    // ("X-Tenant") would never match and every call would be the anonymous
    // caller, so it is lowered (copied only when it needs it).
    std::string lowered;
    if (std::any_of(header.begin(), header.end(),
                    [](char c) { return absl::ascii_isupper(c); })) {
      lowered = absl::AsciiStrToLower(header);
      header = lowered;
    }
    auto value =
        ::degrade::detail::grpc::OneValue(context.client_metadata(), header);
    if (value.ok() && !value->has_value()) return;
    bool good = value.ok() && !(*value)->empty() &&
                (*value)->size() <= kMaxCallerIdLength;
    if (good) {
      for (char c : **value) {
        if (c < 0x21 || c > 0x7e) good = false;
      }
    }
    if (!good) {
      Count(ServerCounters::kMalformedCaller);
      return;
    }
    caller_.assign((*value)->data(), (*value)->size());
  }

  ::grpc::ServerContext* const context_;
  // What Finish() needs of the options, copied (a temporary may be passed;
  // copying the whole options would allocate their caller_header per call).
  const DegradationManager* const manager_;
  const int no_retry_from_level_;
  ServerCounters* const counters_;
  const Deadline deadline_;
  RequestClass request_class_;
  std::optional<RequestClass> claimed_;
  absl::Status metadata_error_;
  absl::Status shed_;
  ServerCounters::Slot refused_by_ = ServerCounters::kNumSlots;
  std::string caller_;
  DegradationTrace trace_;
};

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_SERVER_HPP_
