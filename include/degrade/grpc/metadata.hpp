// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/metadata.hpp
// -----------------------------------------------------------------------------
//
// What degrade carries across a gRPC hop, and how. Forward, on the request:
//   * the caller's request class, so every hop sheds the same traffic
//     first;
//   * the caller's deadline, as the call's own gRPC deadline, so a budget
//     set at the front expires at the back.
// Back, in the trailers:
//   * the server's degradation trace, so the front's trace names what
//     degraded anywhere below it;
//   * the server's degradation level.
//
// Keys are lower-case and versioned like the trace's own "v1"
// (docs/grpc.md). Everything read from the wire is decoded strictly and
// never trusted: a malformed value is an INVALID_ARGUMENT naming the key,
// which the caller counts and otherwise ignores. Never a crash, never a
// partial merge.
//
//   // Client, before the call:
//   grpc::ClientContext ctx;
//   degrade::grpc::SetDeadline(&ctx, deadline);
//   degrade::grpc::SetRequestClass(&ctx, rc);
//   grpc::Status s = stub->Rank(&ctx, req, &reply);
//   absl::Status merged = degrade::grpc::MergeTrace(ctx, &trace);
//
//   // Server, at the top of a handler:
//   degrade::RequestClass rc = degrade::grpc::ReadRequestClass(*ctx).value_or({});
//   degrade::Deadline deadline = degrade::grpc::ReadDeadline(*ctx);
//   ...
//   degrade::grpc::AttachTrace(ctx, trace);   // before returning
//
// Thread safety: each function touches only the context it is given, which
// gRPC lets one thread use at a time; the rest is pure.

#ifndef DEGRADE_GRPC_METADATA_HPP_
#define DEGRADE_GRPC_METADATA_HPP_

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/request_class.hpp"
#include "degrade/trust_policy.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// Request metadata: the caller's request class, "<CRITICALITY>:<cohort>"
// (request_class.hpp EncodeRequestClass).
inline constexpr absl::string_view kRequestClassKey = "degrade-request-class-v1";
// Trailers: the server's degradation trace (degradation_trace.hpp Encode),
// and its manager's level, a decimal integer.
inline constexpr absl::string_view kTraceKey = "degrade-trace-v1";
inline constexpr absl::string_view kLevelKey = "degrade-level-v1";

}  // namespace grpc
namespace detail {
namespace grpc {

// The value of `key` among `md`, or nullopt when absent. A key sent more
// than once is malformed (one caller, one class; one server, one trace):
// the second value is reported as an error by the callers.
template <typename Multimap>
absl::StatusOr<std::optional<absl::string_view>> OneValue(const Multimap& md,
                                                          absl::string_view key) {
  const auto range = md.equal_range(::grpc::string_ref(key.data(), key.size()));
  if (range.first == range.second) return std::optional<absl::string_view>();
  auto next = range.first;
  if (++next != range.second) {
    return absl::InvalidArgumentError(
        absl::StrCat("gRPC metadata '", key, "': sent more than once"));
  }
  return std::optional<absl::string_view>(
      absl::string_view(range.first->second.data(), range.first->second.size()));
}

// The IP in gRPC's peer text (ServerContext::peer()): "ipv4:10.0.0.7:5100"
// -> "10.0.0.7"; "ipv6:[::1]:5100" -> "::1", possibly with a zone inside
// the brackets; "" for anything else (a Unix socket, an in-process
// channel). gRPC writes the peer as a URI, and 1.51 percent-encodes the
// brackets too ("ipv6:%5B::1%5D:5100"), so the text is decoded first:
// read as it came, no IPv6 address rule could ever match.
inline std::string PeerAddress(absl::string_view text) {
  if (absl::ConsumePrefix(&text, "ipv4:")) {
    return std::string(text.substr(0, text.rfind(':')));
  }
  if (!absl::ConsumePrefix(&text, "ipv6:")) return std::string();
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      int byte = 0;
      for (std::size_t k = i + 1; k <= i + 2; ++k) {
        const char c = absl::ascii_tolower(static_cast<unsigned char>(text[k]));
        byte = byte * 16 + (c <= '9' ? c - '0' : c - 'a' + 10);
      }
      decoded.push_back(static_cast<char>(byte));
      i += 2;
    } else {
      decoded.push_back(text[i]);
    }
  }
  absl::string_view host = decoded;
  if (absl::ConsumePrefix(&host, "[")) host = host.substr(0, host.find(']'));
  return std::string(host);
}

// `status` with the key it came from in front of its message.
inline absl::Status NamingKey(absl::string_view key, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("gRPC metadata '", key, "': ", status.message()));
}

}  // namespace grpc
}  // namespace detail
namespace grpc {

// SetDeadline(context, deadline)
//
// Makes `deadline` the call's gRPC deadline: the time it has left on its
// own clock, from now on the system clock, so a FakeClock deadline in a
// test and a real one in production both give the call what is left. An
// infinite deadline sets none; an expired one sets a time already past.
// gRPC does not stop such a call by itself: 1.51 sent it and passed on the
// server's answer (OK included). What keeps an expired call off the network
// is degrade's check before it starts: Call() and CallAsync() (client.hpp)
// never start one, and the breaker interceptor (interceptor.hpp) answers
// it DEADLINE_EXCEEDED locally. A call made with neither is on its own.
// Touches only `context`, before the call starts.
inline void SetDeadline(::grpc::ClientContext* context, const Deadline& deadline) {
  if (deadline.when() == absl::InfiniteFuture()) return;
  const absl::Duration left = deadline.remaining();
  const auto now = std::chrono::system_clock::now();
  // Capped at a day: a longer "deadline" is a mistake, and far-future
  // time_points overflow gRPC's own conversion.
  const absl::Duration capped = std::min(left, absl::Hours(24));
  context->set_deadline(now + absl::ToChronoNanoseconds(capped));
}

// SetRequestClass(context, rc)
//
// Sends `rc` as kRequestClassKey. Touches only `context`, before the call.
inline void SetRequestClass(::grpc::ClientContext* context, const RequestClass& rc) {
  context->AddMetadata(std::string(kRequestClassKey), EncodeRequestClass(rc));
}

// ReadRequestClass(context)
//
// The caller's request class: nullopt when it sent none (the server picks
// a default; RequestClass{} is CRITICAL), INVALID_ARGUMENT naming the key
// when it sent a malformed one or more than one. Touches only `context`.
inline absl::StatusOr<std::optional<RequestClass>> ReadRequestClass(
    const ::grpc::ServerContext& context) {
  auto value =
      detail::grpc::OneValue(context.client_metadata(), kRequestClassKey);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<RequestClass>();
  absl::StatusOr<RequestClass> rc = DecodeRequestClass(**value);
  if (!rc.ok()) return detail::grpc::NamingKey(kRequestClassKey, rc.status());
  return std::optional<RequestClass>(*rc);
}

// PeerOf(context)
//
// What the transport proved about the caller, for a TrustPolicy: with a
// verified client certificate (mTLS), `authenticated` and the
// certificate's subject alternative names (its common name when it has
// none); always the peer's IP (from context.peer(), "ipv4:10.0.0.7:5100"
// -> "10.0.0.7", "ipv6:[::1]:5100" or "ipv6:%5B::1%5D:5100" -> "::1",
// with a zone "fe80::1%eth0"; empty for a Unix socket or an in-process
// channel). Touches only `context`.
// REQUIRES, for the names to mean anything: the server's credentials
// verify client certificates (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_
// CERTIFICATE_AND_VERIFY, or ..._REQUEST_CLIENT_CERTIFICATE_AND_VERIFY).
// gRPC calls a peer authenticated whenever it presented a certificate, so
// with a *_BUT_DONT_VERIFY setting any self-made certificate's names come
// back here as `authenticated`, and PeerOf cannot tell.
inline PeerIdentity PeerOf(const ::grpc::ServerContextBase& context) {
  PeerIdentity peer;
  const std::shared_ptr<const ::grpc::AuthContext> auth =
      context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    peer.authenticated = true;
    for (const char* property :
         {"x509_subject_alternative_name", "x509_common_name"}) {
      for (const ::grpc::string_ref& v : auth->FindPropertyValues(property)) {
        peer.names.emplace_back(v.data(), v.size());
      }
      if (!peer.names.empty()) break;
    }
  }
  peer.address = ::degrade::detail::grpc::PeerAddress(context.peer());
  return peer;
}

// ReadDeadline(context[, clock])
//
// The caller's deadline as a Deadline on `clock` (the real clock by
// default): the time the call has left, from now on `clock`. A call
// without a deadline gets an infinite one. Hand it to the handler's own
// downstream calls (SetDeadline) so the budget holds across hops. Touches
// only `context` (a ServerContext, or a CallbackServerContext).
inline Deadline ReadDeadline(const ::grpc::ServerContextBase& context,
                             const Clock* clock = nullptr) {
  const auto when = context.deadline();
  if (when == std::chrono::system_clock::time_point::max()) {
    return Deadline::At(absl::InfiniteFuture(), clock);
  }
  const auto now = std::chrono::system_clock::now();
  if (when <= now) return Deadline::In(absl::ZeroDuration(), clock);
  // raw-time-ok: when > now, and both are within the clock's range
  return Deadline::In(absl::FromChrono(when - now), clock);
}

// PropagatedContext(server_context[, options])
//
// ClientContext::FromServerContext(server_context, options), with the
// propagated deadline also set on the new context itself
// (SetDeadline(ReadDeadline(server_context))) when `options` propagate it
// (gRPC's default). Use it, not FromServerContext alone, for a downstream
// call made through the breaker interceptor (interceptor.hpp): gRPC 1.51
// applies a propagated deadline inside its core, when the call is created,
// and shows it nowhere an interceptor can read. FromServerContext leaves
// ClientContext::deadline() unset (infinite) and keeps the parent call in
// a private member, and the core call (ClientContext::c_call()) has no
// public deadline accessor. So the interceptor cannot tell that such a
// call's deadline has passed: it would take a breaker permit for it (and,
// with the breaker open, answer the breaker's UNAVAILABLE instead of
// DEADLINE_EXCEEDED). With the deadline set here as well, the interceptor
// answers an expired one DEADLINE_EXCEEDED locally, taking no permit. gRPC
// sends the earlier of the two deadlines, which are the same instant give
// or take the time between the two clock reads. Touches only the new
// context; `server_context` is read.
inline std::unique_ptr<::grpc::ClientContext> PropagatedContext(
    const ::grpc::ServerContextBase& server_context,
    ::grpc::PropagationOptions options = ::grpc::PropagationOptions()) {
  std::unique_ptr<::grpc::ClientContext> child =
      ::grpc::ClientContext::FromServerContext(server_context, options);
  if ((options.c_bitmask() & GRPC_PROPAGATE_DEADLINE) != 0) {
    SetDeadline(child.get(), ReadDeadline(server_context));
  }
  return child;
}

// AttachTrace(context, trace) / AttachLevel(context, level)
//
// Send the handler's degradation trace and its manager's level in the
// trailers. Call each at most once per call, before the handler returns.
// Touch only `context`.
inline void AttachTrace(::grpc::ServerContext* context, const DegradationTrace& trace) {
  context->AddTrailingMetadata(std::string(kTraceKey), trace.Encode());
}
inline void AttachLevel(::grpc::ServerContext* context, int level) {
  context->AddTrailingMetadata(std::string(kLevelKey), absl::StrCat(level));
}

// MergeTrace(context, into)
//
// Merges the server's trace, when it sent one, into `into`: OK when it
// sent none or one that decodes; INVALID_ARGUMENT naming the key (and
// `into` unchanged) when it is malformed or sent twice: count it and carry
// on. REQUIRES: the call on `context` has finished. Touches only `context`
// and `into`.
inline absl::Status MergeTrace(const ::grpc::ClientContext& context,
                               DegradationTrace* into) {
  auto value =
      detail::grpc::OneValue(context.GetServerTrailingMetadata(), kTraceKey);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return absl::OkStatus();
  absl::StatusOr<DegradationTrace> trace = DegradationTrace::Decode(**value);
  if (!trace.ok()) return detail::grpc::NamingKey(kTraceKey, trace.status());
  into->Merge(*trace);
  return absl::OkStatus();
}

// ServerLevel(context)
//
// The server's degradation level: nullopt when it sent none,
// INVALID_ARGUMENT naming the key when it is not a decimal integer in
// [0, 1000] or was sent twice. REQUIRES: the call has finished.
inline absl::StatusOr<std::optional<int>> ServerLevel(
    const ::grpc::ClientContext& context) {
  auto value =
      detail::grpc::OneValue(context.GetServerTrailingMetadata(), kLevelKey);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<int>();
  int level = 0;
  const absl::string_view text = **value;
  const bool digits_only =
      !text.empty() && text.size() <= 4 &&
      text.find_first_not_of("0123456789") == absl::string_view::npos;
  if (!digits_only || !absl::SimpleAtoi(text, &level) || level > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gRPC metadata '", kLevelKey, "': not a level in [0, 1000]"));
  }
  return std::optional<int>(level);
}

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_METADATA_HPP_
