// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the gRPC adapter's client and server
// counters (grpc/client.hpp, grpc/server.hpp), read through their views in
// rpc_stats.hpp: degrade_grpc_client_* and degrade_grpc_server_*
// (docs/metrics.md lists them). Nothing here includes gRPC: the registry
// writes the plain stats, and only a service that builds the adapter ever
// attaches one.
//
//   detail::WriteGrpcClientMetrics(view.stats(), w.component(), w);
//
// Every outcome has a series from the start, so a rate() over an outcome
// that has not happened yet is 0, not absent.
//
// Thread safety: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_METRICS_RPC_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_RPC_METRICS_HPP_

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "degrade/metric_writer.hpp"
#include "degrade/rpc_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// degrade_grpc_client_*.
inline void WriteGrpcClientMetrics(const GrpcClientStats& st,
                                   const std::string& name, MetricWriter& w) {
  const std::string label = "grpc_client";
  for (std::size_t i = 0; i < kNumGrpcClientOutcomes; ++i) {
    w.Counter("degrade_grpc_client_calls_total",
              "gRPC client calls by outcome: accepted (OK), failed (another "
              "error), shed (the server's RESOURCE_EXHAUSTED), refused (not "
              "sent: breaker or throttler), expired (not sent: deadline "
              "passed).",
              {{label, name},
               {"outcome", std::string(GrpcClientOutcomeName(
                               static_cast<GrpcClientOutcome>(i)))}},
              static_cast<double>(st.outcomes[i]));
  }
  w.Counter("degrade_grpc_client_malformed_trailers_total",
            "Replies whose degrade-trace-v1 trailer was malformed or repeated "
            "(the caller's trace was left as it was).",
            {{label, name}}, static_cast<double>(st.malformed_trailers));
}

// degrade_grpc_server_*.
inline void WriteGrpcServerMetrics(const GrpcServerStats& st,
                                   const std::string& name, MetricWriter& w) {
  const std::string label = "grpc_server";
  constexpr absl::string_view kCallsHelp =
      "gRPC server calls by admission outcome: accepted (the handler ran), "
      "shed by admission or rate_limited (per caller or per class; both "
      "answered RESOURCE_EXHAUSTED), or expired (the deadline had passed "
      "before the handler began; DEADLINE_EXCEEDED, not run).";
  w.Counter("degrade_grpc_server_calls_total", kCallsHelp,
            {{label, name}, {"outcome", "accepted"}},
            static_cast<double>(st.accepted));
  w.Counter("degrade_grpc_server_calls_total", kCallsHelp,
            {{label, name}, {"outcome", "shed"}}, static_cast<double>(st.shed));
  w.Counter(
      "degrade_grpc_server_calls_total", kCallsHelp,
      {{label, name}, {"outcome", "rate_limited"}},
      static_cast<double>(st.rate_limited_caller + st.rate_limited_class));
  w.Counter("degrade_grpc_server_calls_total", kCallsHelp,
            {{label, name}, {"outcome", "expired"}},
            static_cast<double>(st.expired));
  constexpr absl::string_view kLimitedHelp =
      "gRPC server calls refused by a rate limit, by which: caller (the "
      "per-caller limit) or class (the limit of the call's criticality).";
  w.Counter("degrade_grpc_server_rate_limited_total", kLimitedHelp,
            {{label, name}, {"limit", "caller"}},
            static_cast<double>(st.rate_limited_caller));
  w.Counter("degrade_grpc_server_rate_limited_total", kLimitedHelp,
            {{label, name}, {"limit", "class"}},
            static_cast<double>(st.rate_limited_class));
  w.Counter("degrade_grpc_server_shed_do_not_retry_total",
            "Refused calls (shed or rate-limited) answered \"do not retry\" "
            "(pushback -1) because the manager's level was at or above "
            "no_retry_from_level.",
            {{label, name}}, static_cast<double>(st.shed_do_not_retry));
  w.Counter("degrade_grpc_server_handler_errors_total",
            "Accepted calls whose handler finished with an error.",
            {{label, name}}, static_cast<double>(st.failed));
  w.Counter("degrade_grpc_server_malformed_metadata_total",
            "Calls whose degrade-request-class-v1 metadata was malformed or "
            "repeated; they were served as the default class.",
            {{label, name}}, static_cast<double>(st.malformed_metadata));
  w.Counter("degrade_grpc_server_malformed_caller_total",
            "Calls whose degrade-caller-id (or configured caller header) was "
            "malformed or repeated; they were limited as the anonymous "
            "caller.",
            {{label, name}}, static_cast<double>(st.malformed_caller));
  constexpr absl::string_view kCappedHelp =
      "Calls whose claimed request class was above what the trust policy "
      "lets their peer claim; served at the cap. By the class claimed.";
  constexpr std::array<absl::string_view, 4> kClaimed = {
      "CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"};
  for (std::size_t c = 0; c < kClaimed.size(); ++c) {
    w.Counter("degrade_grpc_server_class_capped_total", kCappedHelp,
              {{label, name}, {"claimed", std::string(kClaimed[c])}},
              static_cast<double>(st.class_capped[c]));
  }
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_RPC_METRICS_HPP_
