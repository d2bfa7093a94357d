// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/outcome.hpp
// -----------------------------------------------------------------------------
//
// Which gRPC replies a circuit breaker counts against a backend. A breaker
// shared by every caller of a method must open when the backend is sick.
// It must not open because one caller sent a bad request, gave up on its
// own call, or was shed by an overloaded server. So every status code gets
// one of three outcomes:
//   * success;
//   * failure: counts towards a trip;
//   * excluded: counts as neither.
//
// The default table (docs/grpc.md):
//   * OK is the only success.
//   * UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN and DATA_LOSS are
//     failures: the backend could not answer.
//   * Every other code is excluded:
//     - the caller's own errors (INVALID_ARGUMENT, NOT_FOUND,
//       PERMISSION_DENIED, ...);
//     - CANCELLED (the caller gave up);
//     - RESOURCE_EXHAUSTED: a shed feeds client-side throttling
//       (throttle.hpp), not the breaker.
//
//   degrade::grpc::OutcomeTable table = degrade::grpc::OutcomeTable::Default();
//   table.Set(absl::StatusCode::kUnimplemented, degrade::CallVerdict::kFailure);
//   degrade::BreakerSettings s;
//   s.name = "rank";
//   table.ApplyTo(s);                     // sets is_successful, is_excluded
//   degrade::CircuitBreaker<RankReply> breaker(s);
//   auto r = breaker.Execute([&]() -> absl::StatusOr<RankReply> {
//     grpc::Status st = stub->Rank(&ctx, req, &reply);
//     if (!st.ok()) return degrade::grpc::FromGrpcCall(st, ctx);
//     return reply;
//   });
//
// Thread safety: an OutcomeTable is a plain value. Of() and the predicates
// ApplyTo() installs only read it, from any thread. Set() must not race
// with them.

#ifndef DEGRADE_GRPC_OUTCOME_HPP_
#define DEGRADE_GRPC_OUTCOME_HPP_

#include <array>
#include <cstddef>

#include "absl/status/status.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// OutcomeTable
//
// One verdict per gRPC status code (0 OK to 16 UNAUTHENTICATED). A code
// outside them, which FromGrpcStatus() never produces, is a failure: an
// unknown answer from the backend is not the caller's fault.
class OutcomeTable {
 public:
  static constexpr std::size_t kCodes = 17;

  // The table in the file comment; Default() says so at the call site.
  OutcomeTable() {
    verdicts_.fill(CallVerdict::kExcluded);
    verdicts_[0] = CallVerdict::kSuccess;
    for (const absl::StatusCode c :
         {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
          absl::StatusCode::kInternal, absl::StatusCode::kUnknown,
          absl::StatusCode::kDataLoss}) {
      verdicts_[static_cast<std::size_t>(c)] = CallVerdict::kFailure;
    }
  }
  static OutcomeTable Default() { return OutcomeTable(); }

  // Sets the verdict of `code`. kDefault reads as kFailure, and so does a
  // code outside the seventeen: the table cannot fall back to anything.
  // Not thread-safe against readers; set up the table before sharing it.
  OutcomeTable& Set(absl::StatusCode code, CallVerdict verdict) {
    const int c = static_cast<int>(code);
    if (c >= 0 && c < static_cast<int>(kCodes)) {
      verdicts_[static_cast<std::size_t>(c)] =
          verdict == CallVerdict::kDefault ? CallVerdict::kFailure : verdict;
    }
    return *this;
  }

  // The verdict for `status`: kSuccess, kFailure or kExcluded, never
  // kDefault. A breaker's rejection (IsRejected: a call the interceptor
  // refused without sending) and a local shed or throttle (IsShed) are
  // excluded whatever their code: the backend never saw them. Thread-safe.
  CallVerdict Of(const absl::Status& status) const {
    if (IsRejected(status) || IsShed(status)) return CallVerdict::kExcluded;
    const int c = static_cast<int>(status.code());
    if (c < 0 || c >= static_cast<int>(kCodes)) return CallVerdict::kFailure;
    return verdicts_[static_cast<std::size_t>(c)];
  }

  // Makes `settings` classify statuses by this table: is_excluded and
  // is_successful are replaced by predicates holding a copy of it. A
  // classify_result already set still runs first, as always.
  void ApplyTo(BreakerSettings& settings) const {
    const OutcomeTable copy = *this;
    settings.is_excluded = [copy](const absl::Status& s) {
      return copy.Of(s) == CallVerdict::kExcluded;
    };
    settings.is_successful = [copy](const absl::Status& s) {
      return copy.Of(s) == CallVerdict::kSuccess;
    };
  }

 private:
  std::array<CallVerdict, kCodes> verdicts_{};
};

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_OUTCOME_HPP_
