// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/client.hpp
// -----------------------------------------------------------------------------
//
// One synchronous gRPC call behind degrade: the glue every feature, recall
// and rank client would otherwise write by hand around `stub->Method()`.
// `Call()` does the following, in order:
//   1. A call whose Deadline has passed fails with DEADLINE_EXCEEDED
//      without touching the network or the breaker.
//   2. The throttler, if given, may refuse it locally. That is a shed,
//      never a breaker failure.
//   3. The breaker runs the RPC. Open, it rejects without touching the
//      network; the OutcomeTable the breaker was set up with
//      (outcome.hpp) decides what counts.
//   4. The call's gRPC deadline is what the Deadline has left, and the
//      request class goes with it (metadata.hpp).
//   5. When the status arrives, the server's pushback becomes the status's
//      retry-after (status.hpp), and the server's trace is merged into the
//      caller's. A malformed trace is counted and ignored.
//   6. The throttler learns whether the server accepted.
// Wrap Call() in a Retrier (retry.hpp) for retries: each attempt is one
// Call(). Turn gRPC's own retries off on that channel (docs/grpc.md).
//
//   degrade::grpc::ClientOptions opts;
//   opts.request_class = rc;
//   opts.trace = &trace;
//   auto r = degrade::grpc::Call<RankReply>(
//       rank_breaker, opts, deadline,
//       [&](grpc::ClientContext* ctx, RankReply* reply) {
//         return stub->Rank(ctx, request, reply);
//       });
//   if (!r.ok()) { /* r.status(): IsRejected, IsShed, UNAVAILABLE, ... */ }
//
// Thread safety: Call() may run on many threads at once with the same
// breaker, throttler and ClientCounters (all thread-safe). ClientOptions'
// trace is written by the calling thread: give each request its own trace.

#ifndef DEGRADE_GRPC_CLIENT_HPP_
#define DEGRADE_GRPC_CLIENT_HPP_

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/throttle.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// ClientCountersOptions
struct ClientCountersOptions {
  // Names the counters in metrics (degrade_grpc_client_*{grpc_client=...}):
  // one per downstream, say "rank". Default "grpc_client".
  std::string name = "grpc_client";
  // The telemetry the counters report to (telemetry.hpp): with a
  // MetricsRegistry, degrade_grpc_client_* under `name`. nullptr means
  // DefaultTelemetry() (none unless SetDefaultTelemetry() was called);
  // NoTelemetry() means none even then. REQUIRES: outlives the counters.
  Telemetry* metrics = nullptr;
};

// ClientCounters
//
// What Call() and CallAsync() count beyond the breaker's and throttler's
// own series: every call by outcome (rpc_stats.hpp, GrpcClientOutcome) and
// malformed trace trailers. Share one per downstream among all the calls
// to it, through ClientOptions::counters.
//
// Thread-safe: counting is a relaxed add on the calling thread's own shard
// (no lock, no allocation); `stats()` sums the shards, from any thread.
// Neither copyable nor movable (its telemetry holds its address).
class ClientCounters {
 public:
  ClientCounters() : ClientCounters(ClientCountersOptions{}) {}
  explicit ClientCounters(ClientCountersOptions options)
      : name_(std::move(options.name)) {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ = ::degrade::detail::Attach(options.metrics,
                                           &Telemetry::AttachComponent, view_);
  }
  ClientCounters(const ClientCounters&) = delete;
  ClientCounters& operator=(const ClientCounters&) = delete;
  // First: no scrape may read the counters while they go.
  ~ClientCounters() { telemetry_.reset(); }

  // Counts one call that ended as `outcome`.
  void Count(GrpcClientOutcome outcome) {
    counts_.Add(static_cast<std::size_t>(outcome));
  }
  // Counts one reply whose trace trailer could not be merged.
  void CountMalformedTrailer() { counts_.Add(kMalformedSlot); }

  const std::string& name() const { return name_; }
  // Totals so far; exact once the counting threads are done.
  GrpcClientStats stats() const {
    GrpcClientStats st;
    for (std::size_t i = 0; i < kNumGrpcClientOutcomes; ++i) {
      st.outcomes[i] = counts_.Load(i);
    }
    st.malformed_trailers = counts_.Load(kMalformedSlot);
    return st;
  }

 private:
  static constexpr std::size_t kMalformedSlot = kNumGrpcClientOutcomes;

  const std::string name_;
  ::degrade::detail::ShardedCounts<kNumGrpcClientOutcomes + 1> counts_;
  const ::degrade::detail::OwnerView<ClientCounters, GrpcClientStats> view_{
      this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ClientOptions
//
// Per call, or shared by calls that differ only in what they pass.
struct ClientOptions {
  // Sent as degrade-request-class-v1.
  RequestClass request_class{};
  // The caller's trace, into which the server's is merged. nullptr means
  // the server's trace is not read.
  DegradationTrace* trace = nullptr;
  // Client-side throttling for this downstream (throttle.hpp). Optional.
  AdaptiveThrottler* throttler = nullptr;
  // Where the call's outcome and a malformed trailer are counted.
  // Optional; shared by the calls to one downstream.
  ClientCounters* counters = nullptr;
};

}  // namespace grpc
namespace detail {
namespace grpc {

inline void CountCall(::degrade::grpc::ClientCounters* counters,
                      GrpcClientOutcome outcome) {
  if (counters != nullptr) counters->Count(outcome);
}

}  // namespace grpc
}  // namespace detail
namespace grpc {

// Call<Reply>(breaker, options, deadline, rpc)
//
// Runs `rpc(context, &reply)` (a `::grpc::Status` from a synchronous stub
// method) as one call through `breaker`, as the file comment describes,
// and returns the reply or the status: DEADLINE_EXCEEDED for a deadline
// already passed, the throttler's refusal (IsShed, IsThrottled), the
// breaker's rejection (IsRejected), or the RPC's status read through
// FromGrpcCall. A throwing `rpc` is the breaker's: IsCallableException.
// Thread-safe as the file comment says.
template <typename Reply, typename Rpc>
typename CircuitBreaker<Reply>::Result Call(CircuitBreaker<Reply>& breaker,
                                            const ClientOptions& options,
                                            const Deadline& deadline, Rpc&& rpc) {
  using Result = typename CircuitBreaker<Reply>::Result;
  if (deadline.expired()) {
    ::degrade::detail::grpc::CountCall(options.counters,
                                       GrpcClientOutcome::kExpired);
    return Result(absl::DeadlineExceededError(absl::StrCat(
        "gRPC call through '", breaker.name(), "': the deadline had passed")));
  }
  if (options.throttler != nullptr) {
    if (absl::Status t = options.throttler->Admit(); !t.ok()) {
      ::degrade::detail::grpc::CountCall(options.counters,
                                         GrpcClientOutcome::kRefused);
      return Result(t);
    }
  }
  Result r = breaker.Execute([&]() -> absl::StatusOr<Reply> {
    ::grpc::ClientContext context;
    SetDeadline(&context, deadline);
    SetRequestClass(&context, options.request_class);
    Reply reply;
    const ::grpc::Status s = rpc(&context, &reply);
    if (options.trace != nullptr && !MergeTrace(context, options.trace).ok() &&
        options.counters != nullptr) {
      options.counters->CountMalformedTrailer();
    }
    if (!s.ok()) return FromGrpcCall(s, context);
    return reply;
  });
  // A breaker's rejection never reached the server: it tells the throttler
  // nothing about what the server accepts.
  if (options.throttler != nullptr && !IsRejected(r.status())) {
    options.throttler->RecordStatus(r.status());
  }
  ::degrade::detail::grpc::CountCall(options.counters,
                                     ClassifyClientCall(r.status()));
  return r;
}

// CallAsync<Reply>(breaker, options, deadline, start, done)
//
// The same for a callback stub. `start(context, &reply, reactor)` starts
// the call with gRPC's reactor form, e.g.
//   [&](grpc::ClientContext* c, Reply* r, grpc::ClientUnaryReactor* reactor) {
//     stub->async()->Rank(c, &request, r, reactor);
//   }
// (CallAsync then calls reactor->StartCall()), and `done(result)` receives
// the Result exactly once:
//   * on the calling thread, before CallAsync returns, when the deadline
//     had passed, the throttler refused, or the breaker rejected;
//   * otherwise on the thread gRPC completes the call on.
// The reactor owns the context and the reply, and deletes itself once
// gRPC has finished with the call (OnDone, where gRPC allows it; deleting
// a context inside a std::function callback aborts gRPC), before `done`
// runs. `done` runs on gRPC's callback thread: it must not destroy the
// last channel of the process that has made callback calls (gRPC's
// callback completion queue goes with it, from under its own thread: a
// double free); hand such teardown to another thread. `options.trace` is merged into on that thread, so it must
// not be touched until `done` runs; `request` (captured by `start`) must
// live until then too. A `start` that throws is reported to the breaker as
// a failure and to `done` as IsCallableException. REQUIRES: `start` hands
// `reactor` to exactly one stub call (gRPC aborts on starting an unbound
// reactor), and does not throw after it has. Thread-safe as Call().
template <typename Reply, typename Start, typename Done>
void CallAsync(CircuitBreaker<Reply>& breaker, const ClientOptions& options,
               const Deadline& deadline, Start&& start, Done&& done) {
  using Result = typename CircuitBreaker<Reply>::Result;
  if (deadline.expired()) {
    ::degrade::detail::grpc::CountCall(options.counters,
                                       GrpcClientOutcome::kExpired);
    done(Result(absl::DeadlineExceededError(absl::StrCat(
        "gRPC call through '", breaker.name(), "': the deadline had passed"))));
    return;
  }
  if (options.throttler != nullptr) {
    if (absl::Status t = options.throttler->Admit(); !t.ok()) {
      ::degrade::detail::grpc::CountCall(options.counters,
                                         GrpcClientOutcome::kRefused);
      done(Result(t));
      return;
    }
  }
  absl::StatusOr<Permit> permit = breaker.Allow();
  if (!permit.ok()) {
    ::degrade::detail::grpc::CountCall(options.counters,
                                       GrpcClientOutcome::kRefused);
    done(Result(permit.status()));
    return;
  }
  // Everything the completion needs, owned by the reactor: the caller's
  // frame is gone by then.
  class InFlight final : public ::grpc::ClientUnaryReactor {
   public:
    InFlight(Permit p, const ClientOptions& o, std::decay_t<Done> d)
        : permit_(std::move(p)), options_(o), done_(std::move(d)) {}
    ::grpc::ClientContext context;
    Reply reply;

    void OnDone(const ::grpc::Status& s) override {
      const absl::Status status = s.ok() ? absl::OkStatus() : FromGrpcCall(s, context);
      permit_.Done(status);
      if (options_.trace != nullptr && !MergeTrace(context, options_.trace).ok() &&
          options_.counters != nullptr) {
        options_.counters->CountMalformedTrailer();
      }
      if (options_.throttler != nullptr) options_.throttler->RecordStatus(status);
      Result result = status.ok() ? Result(std::move(reply)) : Result(status);
      Finish(std::move(result));
    }
    // For a start() that threw: nothing reached gRPC.
    void Fail(const absl::Status& why) {
      permit_.Done(why);
      Finish(Result(why));
    }

   private:
    // The context goes before `done` runs: once `done` returns, the caller
    // may tear down the channel and gRPC itself, and a context destroyed
    // after that aborts inside gRPC.
    void Finish(Result result) {
      ::degrade::detail::grpc::CountCall(options_.counters,
                                         ClassifyClientCall(result.status()));
      std::decay_t<Done> done = std::move(done_);
      delete this;
      done(std::move(result));
    }

    Permit permit_;
    const ClientOptions options_;
    std::decay_t<Done> done_;
  };
  auto* call = new InFlight(std::move(*permit), options, std::forward<Done>(done));
  SetDeadline(&call->context, deadline);
  SetRequestClass(&call->context, options.request_class);
  const absl::Status started = ::degrade::detail::InvokeOr(
      [&] {
        start(&call->context, &call->reply,
              static_cast<::grpc::ClientUnaryReactor*>(call));
        return absl::OkStatus();
      },
      [&](absl::string_view what) {
        return CallableExceptionError(
            absl::StrCat("gRPC call through '", breaker.name(), "'"), what);
      });
  if (!started.ok()) {
    call->Fail(started);
    return;
  }
  call->StartCall();
}

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_CLIENT_HPP_
