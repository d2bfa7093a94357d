// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/interceptor.hpp
// -----------------------------------------------------------------------------
//
// A client interceptor that puts every method of a channel behind its own
// circuit breaker, so no call site can forget to. Install it once, where
// the channel is made. Each call then goes through these steps:
//   * It asks the method's breaker (from a BreakerFamily keyed by the
//     method's full name, "/pkg.Service/Method") for a permit.
//   * When the breaker is open, the interceptor hijacks the call: it
//     answers UNAVAILABLE at once, with the trailer degrade-rejected-v1
//     naming the breaker, and nothing touches the network.
//     `RejectedByBreaker(context)` tells the caller so, and FromGrpcCall()
//     (so Call() and a Retrier) reads it as the breaker's rejection
//     (IsRejected), not as the server's UNAVAILABLE. The trailer carries a
//     per-process token: a server sending the key is not believed.
//   * A call whose deadline had passed before it started never reaches the
//     network: the interceptor hijacks it and answers DEADLINE_EXCEEDED at
//     once, before the breaker (so an open or forced-open breaker changes
//     nothing for it). It takes no permit and is not a breaker outcome:
//     the caller's budget ran out, not the backend. gRPC itself does not
//     stop such a call (1.51 sent it, and the server answered). The
//     deadline read is ClientContext::deadline(): one propagated by
//     ClientContext::FromServerContext alone is applied inside gRPC's core
//     and cannot be seen here, so make a downstream call's context with
//     PropagatedContext() (metadata.hpp), which sets it on the context too.
//   * Otherwise the call proceeds, and the arriving status is reported to
//     the permit, classified by an OutcomeTable (outcome.hpp). A client's
//     INVALID_ARGUMENT or CANCELLED never opens the breaker for everyone.
//   * The request class and the trace come from a `CallScope` the caller
//     opens on its thread (metadata.hpp has the keys). The class is sent
//     unless the context already carries one. The server's trace is merged
//     into the scope's trace when the status arrives.
//   * With `ClientCounters` (client.hpp), each call is counted by outcome
//     as Call() counts it: accepted, failed, shed, refused (the breaker
//     hijacked it), expired (its deadline had passed before it started).
//
// What an interceptor cannot do: set the call's deadline. gRPC fixes it
// when the call starts, before interceptors run. Call
// SetDeadline(&context, deadline) first, or use Call() (client.hpp), which
// does that and the rest for synchronous stubs.
//
//   degrade::BreakerFamily<std::string, degrade::grpc::Unit>
//   breakers(settings);
//   std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
//   f; f.push_back(degrade::grpc::MakeBreakerInterceptor(breakers)); auto
//   channel = grpc::experimental::CreateCustomChannelWithInterceptors(
//       target, grpc::InsecureChannelCredentials(), args, std::move(f));
//   ...
//   degrade::grpc::CallScope scope(rc, &trace);   // on the request's thread
//   grpc::ClientContext ctx;
//   degrade::grpc::SetDeadline(&ctx, deadline);
//   grpc::Status s = stub->Rank(&ctx, req, &reply);
//
// Thread safety: the factory and the family are shared by every call and
// thread-safe. One interceptor belongs to one call. A CallScope is
// per-thread. Its trace is written when the call's status arrives, on
// whatever thread gRPC uses for that, so a trace must not be touched by
// anything else until the call has finished.

#ifndef DEGRADE_GRPC_INTERCEPTOR_HPP_
#define DEGRADE_GRPC_INTERCEPTOR_HPP_

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_interceptor.h>
#include <grpcpp/support/interceptor.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/breaker_family.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/grpc/client.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/request_class.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// The value type of the interceptor's breakers: an interceptor sees
// statuses, never replies.
struct Unit {};

// CallScope
//
// What the interceptor sends and merges for the calls this thread starts
// while the scope lives. Scopes nest; the innermost wins. Merges into the
// trace are serialised, so several calls may be in flight under one scope
// (a fan-out); read the trace once they have all finished.
// REQUIRES: the scope (and its trace) outlives every call started under
// it. Not copyable; destroy it on the thread that built it.
class CallScope {
 public:
  explicit CallScope(const RequestClass& rc, DegradationTrace* trace = nullptr)
      : rc_(rc), trace_(trace), outer_(Current()) {
    Current() = this;
  }
  ~CallScope() { Current() = outer_; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  // The innermost scope of this thread, or nullptr.
  static const CallScope* Innermost() { return Current(); }

  const RequestClass& request_class() const { return rc_; }
  DegradationTrace* trace() const { return trace_; }

  // Merges `context`'s server trace into trace(), one call at a time. A
  // malformed trace is ignored. Thread-safe.
  void MergeFrom(const ::grpc::ClientContext& context) const {
    if (trace_ == nullptr) return;
    ::degrade::detail::MutexLock lock(&mu_);
    (void)MergeTrace(context, trace_);
  }

 private:
  static const CallScope*& Current() {
    static thread_local const CallScope* current = nullptr;
    return current;
  }

  const RequestClass rc_;
  DegradationTrace* const trace_;
  const CallScope* const outer_;
  mutable ::degrade::detail::Mutex mu_;
};

}  // namespace grpc
namespace detail {
namespace grpc {

template <typename Family>
class BreakerInterceptor final : public ::grpc::experimental::Interceptor {
 public:
  BreakerInterceptor(std::shared_ptr<typename Family::Breaker> breaker,
                     const ::degrade::grpc::OutcomeTable& table,
                     ::grpc::ClientContext* context,
                     ::degrade::grpc::ClientCounters* counters)
      : breaker_(std::move(breaker)),
        table_(table),
        context_(context),
        counters_(counters) {}

  void Intercept(::grpc::experimental::InterceptorBatchMethods* m) override {
    using Hook = ::grpc::experimental::InterceptionHookPoints;
    bool hijack = false;
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
      Scope(m);
      // A call whose deadline had passed before it started fails on its
      // caller's budget, not the backend's health: it is answered here,
      // first, with no permit and no breaker outcome (as Call() never
      // starts it). gRPC would send it (1.51 did, and got answers), so
      // hijacking it is what keeps it off the network, whatever the
      // breaker's state.
      expired_ = context_ != nullptr &&
                 context_->deadline() <= std::chrono::system_clock::now();
      if (expired_) {
        hijack = true;
      } else {
        absl::StatusOr<Permit> permit = breaker_->Allow();
        if (!permit.ok()) {
          rejected_ = true;
          hijack = true;
          rejection_ = RejectionTrailer(IsTooManyRequests(permit.status()),
                                        breaker_->name());
        } else {
          permit_.emplace(std::move(*permit));
        }
      }
    }
    if (rejected_ || expired_) {
      // The hijacked call's answer, filled in where gRPC asks for it.
      if (m->QueryInterceptionHookPoint(Hook::PRE_RECV_MESSAGE)) {
        m->FailHijackedRecvMessage();
      }
      if (m->QueryInterceptionHookPoint(Hook::PRE_RECV_STATUS)) {
        if (expired_) {
          *m->GetRecvStatus() = ::grpc::Status(
              ::grpc::StatusCode::DEADLINE_EXCEEDED,
              absl::StrCat("gRPC call through '", breaker_->name(),
                           "': the deadline had passed before it started; "
                           "it was not sent"));
          CountCall(counters_, GrpcClientOutcome::kExpired);
        } else {
          *m->GetRecvStatus() =
              ::grpc::Status(::grpc::StatusCode::UNAVAILABLE,
                             absl::StrCat("circuit breaker '", breaker_->name(),
                                          "' is open: the call was not sent"));
          // Valid until the call object goes, which outlives the caller's
          // reads of the context: the value lives in this interceptor.
          m->GetRecvTrailingMetadata()->emplace(
              ::grpc::string_ref(::degrade::grpc::kRejectedKey.data(),
                                 ::degrade::grpc::kRejectedKey.size()),
              ::grpc::string_ref(rejection_));
          CountCall(counters_, GrpcClientOutcome::kRefused);
        }
      }
    } else if (m->QueryInterceptionHookPoint(Hook::POST_RECV_STATUS)) {
      const absl::Status s =
          ::degrade::grpc::FromGrpcStatus(*m->GetRecvStatus());
      if (permit_.has_value()) {
        permit_->Done(s, table_.Of(s));
        permit_.reset();
      }
      if (scope_ != nullptr && context_ != nullptr) scope_->MergeFrom(*context_);
      CountCall(counters_, ClassifyClientCall(s));
    }
    if (hijack) {
      m->Hijack();
    } else {
      m->Proceed();
    }
  }

 private:
  // Sends the calling thread's request class, unless the caller already
  // put one on the context, and remembers its scope for the trace.
  void Scope(::grpc::experimental::InterceptorBatchMethods* m) {
    const ::degrade::grpc::CallScope* scope =
        ::degrade::grpc::CallScope::Innermost();
    if (scope == nullptr) return;
    scope_ = scope;
    auto* md = m->GetSendInitialMetadata();
    if (md != nullptr &&
        md->count(std::string(::degrade::grpc::kRequestClassKey)) == 0) {
      md->emplace(std::string(::degrade::grpc::kRequestClassKey),
                  EncodeRequestClass(scope->request_class()));
    }
  }

  const std::shared_ptr<typename Family::Breaker> breaker_;
  const ::degrade::grpc::OutcomeTable table_;
  ::grpc::ClientContext* const context_;
  ::degrade::grpc::ClientCounters* const counters_;  // may be null
  std::optional<Permit> permit_;
  const ::degrade::grpc::CallScope* scope_ = nullptr;
  std::string rejection_;  // the degrade-rejected-v1 value, when rejected
  bool rejected_ = false;
  // The deadline had passed before the call started: hijacked, not sent.
  bool expired_ = false;
};

template <typename Family>
class BreakerInterceptorFactory final
    : public ::grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  BreakerInterceptorFactory(Family& family, ::degrade::grpc::OutcomeTable table,
                            ::degrade::grpc::ClientCounters* counters)
      : family_(family), table_(table), counters_(counters) {}

  ::grpc::experimental::Interceptor* CreateClientInterceptor(
      ::grpc::experimental::ClientRpcInfo* info) override {
    const char* method = info->method();
    return new BreakerInterceptor<Family>(
        family_.Get(method != nullptr ? std::string(method) : std::string()),
        table_, info->client_context(), counters_);
  }

 private:
  Family& family_;
  const ::degrade::grpc::OutcomeTable table_;
  ::degrade::grpc::ClientCounters* const counters_;
};

}  // namespace grpc
}  // namespace detail
namespace grpc {

// MakeBreakerInterceptor(family[, table[, counters]])
//
// The interceptor factory for a channel: one breaker per method from
// `family`, outcomes classified by `table`, every call counted by outcome
// in `counters` when given (a channel's calls are one downstream; do not
// hand the same counters to Call() on that channel too, or each call is
// counted twice). REQUIRES: `family` and `counters` outlive the channel.
// Its breakers' names are "<settings.name>/<method>".
template <typename Family>
std::unique_ptr<::grpc::experimental::ClientInterceptorFactoryInterface>
MakeBreakerInterceptor(Family& family,
                       OutcomeTable table = OutcomeTable::Default(),
                       ClientCounters* counters = nullptr) {
  return std::make_unique<detail::grpc::BreakerInterceptorFactory<Family>>(
      family, table, counters);
}

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_INTERCEPTOR_HPP_
