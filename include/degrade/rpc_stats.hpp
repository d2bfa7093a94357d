// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: rpc_stats.hpp
// -----------------------------------------------------------------------------
//
// What the gRPC adapter's client and server (grpc/client.hpp,
// grpc/server.hpp) report, as plain values, and the read-only views they
// offer a `Telemetry`. They live here, with no gRPC include, so that the
// metrics registry can write them without depending on gRPC: the adapter is
// optional, the registry is not.
//
// The questions they answer in an incident: are calls to a downstream
// failing, and how (`GrpcClientStats`: the server answered an error, shed
// the call, or we never sent it); is this server shedding, and are its
// callers sending garbage (`GrpcServerStats`). The vocabulary is the
// library's: *accepted* (served), *shed* (the server's overload control
// said no), *refused* (not sent: a breaker or throttler on this side said
// no).
//
//   degrade::grpc::ClientCountersOptions co;
//   co.name = "rank";                             // its metrics' label
//   degrade::grpc::ClientCounters counters(co);   // attaches to the default
//   opts.counters = &counters;                    // ClientOptions
//   ... degrade::grpc::Call<RankReply>(breaker, opts, deadline, rpc) ...
//   degrade::GrpcClientStats st = counters.stats();
//   if (st.outcomes[size_t(degrade::GrpcClientOutcome::kShed)] > 0) Warn();
//
//   degrade::GrpcClientOutcome o =
//       degrade::ClassifyClientCall(absl::ResourceExhaustedError("full"));
//   // o == GrpcClientOutcome::kShed
//
// Thread safety: the structs are plain values, `ClassifyClientCall` and the
// name functions are pure. A view's functions may be called from any thread
// while its attachment lives.

#ifndef DEGRADE_RPC_STATS_HPP_
#define DEGRADE_RPC_STATS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "degrade/stats_view.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// GrpcClientOutcome
//
// How one client call (grpc::Call or grpc::CallAsync) ended, each call
// exactly one.
enum class GrpcClientOutcome : uint8_t {
  kAccepted = 0,  // the server answered OK
  kFailed = 1,    // the server or the network answered another error
  kShed = 2,      // the server shed it (RESOURCE_EXHAUSTED)
  kRefused = 3,   // not sent: the breaker rejected it or the throttler refused
  kExpired = 4,   // not sent: its deadline had passed before it started
};
inline constexpr std::size_t kNumGrpcClientOutcomes = 5;

// "accepted", "failed", "shed", "refused", "expired": the metric label.
constexpr absl::string_view GrpcClientOutcomeName(GrpcClientOutcome o) {
  switch (o) {
    case GrpcClientOutcome::kAccepted:
      return "accepted";
    case GrpcClientOutcome::kFailed:
      return "failed";
    case GrpcClientOutcome::kShed:
      return "shed";
    case GrpcClientOutcome::kRefused:
      return "refused";
    case GrpcClientOutcome::kExpired:
      return "expired";
  }
  return "unknown";
}

// ClassifyClientCall(status)
//
// The outcome of a call that was offered to the breaker and ended with
// `status`: OK is accepted; a breaker's rejection (IsRejected, including
// the interceptor's) or a local throttler's refusal (IsThrottled) is
// refused, as nothing was sent; RESOURCE_EXHAUSTED is the server's shed;
// anything else failed. A deadline that had passed before the call is not
// seen here (the caller knows it never started the call). Pure.
inline GrpcClientOutcome ClassifyClientCall(const absl::Status& status) {
  if (status.ok()) return GrpcClientOutcome::kAccepted;
  if (IsRejected(status) || IsThrottled(status)) {
    return GrpcClientOutcome::kRefused;
  }
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    return GrpcClientOutcome::kShed;
  }
  return GrpcClientOutcome::kFailed;
}

// GrpcClientStats
//
// A snapshot of one ClientCounters: totals since it was built.
struct GrpcClientStats {
  // Calls by outcome, indexed by GrpcClientOutcome.
  std::array<uint64_t, kNumGrpcClientOutcomes> outcomes{};
  // Replies whose degrade-trace-v1 trailer was malformed or repeated (the
  // caller's trace was left as it was).
  uint64_t malformed_trailers = 0;
};

// GrpcServerStats
//
// A snapshot of one ServerCounters: totals since it was built.
struct GrpcServerStats {
  // Calls the admission controller let through (or all, without one).
  uint64_t accepted = 0;
  // Calls shed at admission (answered RESOURCE_EXHAUSTED).
  uint64_t shed = 0;
  // Of the refused ones (shed or rate-limited), those answered "do not
  // retry" (pushback -1) because the manager's level was at or above
  // ServerOptions::no_retry_from_level.
  uint64_t shed_do_not_retry = 0;
  // Accepted calls whose handler finished with an error.
  uint64_t failed = 0;
  // Calls whose request-class metadata was malformed or repeated; they
  // were served as the default class.
  uint64_t malformed_metadata = 0;
  // Calls refused by ServerOptions::per_caller (RESOURCE_EXHAUSTED with
  // the caller's retry-after); not in `shed`.
  uint64_t rate_limited_caller = 0;
  // Calls refused by ServerOptions::per_class; not in `shed`.
  uint64_t rate_limited_class = 0;
  // Calls whose caller identity was malformed or repeated; they were
  // limited as the anonymous caller.
  uint64_t malformed_caller = 0;
  // Claims the trust policy lowered (ServerOptions::trust), by the
  // criticality claimed (indexed by Criticality; a SHEDDABLE claim only by
  // its cohort, below an unlabelled call's). The calls were served at
  // their cap, so they are also in the counts above.
  std::array<uint64_t, 4> class_capped{};
  // Calls whose deadline had passed before their handler began: answered
  // DEADLINE_EXCEEDED, not run, not in `accepted` or `shed`.
  uint64_t expired = 0;
};

// What a Telemetry may read of a gRPC client's or server's counters while
// attached (StatsView).
using GrpcClientView = StatsView<GrpcClientStats>;
using GrpcServerView = StatsView<GrpcServerStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RPC_STATS_HPP_
