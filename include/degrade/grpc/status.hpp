// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: grpc/status.hpp
// -----------------------------------------------------------------------------
//
// The gRPC status boundary: a gRPC reply as the `absl::Status` every degrade
// component reads, and back, with the server's retry pushback carried
// across. gRPC and Abseil number their codes the same way (0 OK to 16
// UNAUTHENTICATED), so the code and the message cross unchanged; what needs
// care is `grpc-retry-pushback-ms`, the trailer a server sends to say "wait
// this long before retrying" or, negative, "do not retry" (gRPC A6).
//
// On the client, FromGrpcCall() copies the pushback into the status's
// retry-after payload (status.hpp WithRetryAfter), which a Retrier honours:
// it waits at least that long, and never retries after "do not retry". On
// the server, ToGrpcReply() turns a shed (status.hpp ShedError) or any
// status with a retry-after hint into the reply and the pushback trailer,
// which gRPC's own retries honour too.
//
//   // Client: one attempt of a Retry loop.
//   grpc::ClientContext ctx;
//   EchoReply reply;
//   grpc::Status s = stub->Echo(&ctx, request, &reply);
//   absl::Status status = degrade::grpc::FromGrpcCall(s, ctx);
//
//   // Server, at the top of a handler:
//   if (absl::Status admit = admission.Admit(rc); !admit.ok()) {
//     return degrade::grpc::ToGrpcReply(admit, context);  // with pushback
//   }
//
// One owner of retries per call: when degrade's Retrier retries a method,
// turn gRPC's retries off for that channel (GRPC_ARG_ENABLE_RETRIES = 0), or
// three attempts of ours over three of gRPC's make nine at the server
// (docs/retries-and-hedging.md, "Composition"; tests/grpc/).
//
// Thread safety: every function here is pure, or touches only the context
// it is given (which gRPC lets one thread use at a time).

#ifndef DEGRADE_GRPC_STATUS_HPP_
#define DEGRADE_GRPC_STATUS_HPP_

#include <cstddef>
#include <cstdint>
#include <random>
#include <optional>
#include <string>
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/status_payload.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace grpc {

// The trailer gRPC's retry policy reads (gRPC A6): a decimal number of
// milliseconds to wait before the next attempt; negative or unparseable
// means "do not retry".
inline constexpr absl::string_view kRetryPushbackKey = "grpc-retry-pushback-ms";

// FromGrpcStatus(s)
//
// The same code and message as an absl::Status. A code outside gRPC's 17
// (a peer speaking a newer protocol) reads as UNKNOWN, naming the number.
// Pure; thread-safe.
inline absl::Status FromGrpcStatus(const ::grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  const int code = static_cast<int>(s.error_code());
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat("gRPC status code ", code, ": ",
                                           s.error_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), s.error_message());
}

// The longest status message ToGrpcStatus() sends, in bytes. gRPC sends
// the message percent-encoded in a header, and a client refuses headers
// over 8 KB: the whole reply, its code and its pushback, would be lost
// for a long message (non-ASCII text triples in size). 1 KB encodes to at
// most 3 KB.
inline constexpr std::size_t kMaxMessageBytes = 1024;

}  // namespace grpc
namespace detail {
namespace grpc {

// `message` cut to kMaxMessageBytes at a UTF-8 character boundary, saying
// so.
inline std::string CappedMessage(absl::string_view message) {
  if (message.size() <= ::degrade::grpc::kMaxMessageBytes)
    return std::string(message);
  std::size_t end = ::degrade::grpc::kMaxMessageBytes;
  // Back up over continuation bytes (10xxxxxx) to a character's start.
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) {
    --end;
  }
  return absl::StrCat(message.substr(0, end), " [truncated]");
}

}  // namespace grpc
}  // namespace detail
namespace grpc {

// ToGrpcStatus(s)
//
// The same code and message as a ::grpc::Status, the message capped at
// kMaxMessageBytes; payloads do not cross (ToGrpcReply() carries the one
// that matters, the retry-after). An Abseil code gRPC lacks reads as
// UNKNOWN. Pure; thread-safe.
inline ::grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return ::grpc::Status::OK;
  const int code = static_cast<int>(s.code());
  if (code < 0 || code > static_cast<int>(::grpc::StatusCode::UNAUTHENTICATED)) {
    return ::grpc::Status(::grpc::StatusCode::UNKNOWN,
                          detail::grpc::CappedMessage(s.message()));
  }
  return ::grpc::Status(static_cast<::grpc::StatusCode>(code),
                        detail::grpc::CappedMessage(s.message()));
}

// The longest pushback honoured as a wait: a server asking for more than
// an hour is read as "do not retry". A caller with no deadline would
// otherwise sleep as long as any peer says (INT64_MAX ms is 292 million
// years), and no server that wants a retry means one an hour later.
inline constexpr absl::Duration kMaxPushback = absl::Hours(1);

// ParsePushback(value)
//
// A pushback trailer's value as gRPC reads it: a non-negative decimal
// integer is that many milliseconds; anything else, negative numbers and
// garbage alike, is "do not retry" (a negative duration), which is what
// gRPC's own retry code does with it. Above kMaxPushback it is "do not
// retry" too. Pure; thread-safe.
inline absl::Duration ParsePushback(absl::string_view value) {
  int64_t ms = 0;
  if (!absl::SimpleAtoi(value, &ms) || ms < 0) return absl::Milliseconds(-1);
  const absl::Duration wait = absl::Milliseconds(ms);
  return wait > kMaxPushback ? absl::Milliseconds(-1) : wait;
}

// The trailer degrade's breaker interceptor (interceptor.hpp) puts on a
// call it refused without sending: "<token>:<open|too_many>:<breaker>".
// The token is this process's, drawn at random once, so a server cannot
// make its own UNAVAILABLE pass for a local refusal by sending the key.
inline constexpr absl::string_view kRejectedKey = "degrade-rejected-v1";

}  // namespace grpc
namespace detail {
namespace grpc {

inline const std::string& RejectionToken() {
  static const std::string token = [] {
    std::random_device rd;
    const uint64_t hi = rd();
    const uint64_t lo = rd();
    return absl::StrCat(absl::Hex((hi << 32) ^ lo ^
                                  reinterpret_cast<uintptr_t>(&rd), absl::kZeroPad16));
  }();
  return token;
}

// What the interceptor sends for a refusal by `breaker` (too_many: a
// half-open breaker's trial slots were taken; otherwise it was open).
inline std::string RejectionTrailer(bool too_many, absl::string_view breaker) {
  return absl::StrCat(RejectionToken(), too_many ? ":too_many:" : ":open:", breaker);
}

struct LocalRejection {
  bool too_many = false;
  std::string breaker;
};

// The refusal `context`'s trailers record, if this process's interceptor
// made it.
inline std::optional<LocalRejection> LocalRejectionOf(
    const ::grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto it =
      trailers.find(::grpc::string_ref(::degrade::grpc::kRejectedKey.data(),
                                       ::degrade::grpc::kRejectedKey.size()));
  if (it == trailers.end()) return std::nullopt;
  absl::string_view v(it->second.data(), it->second.size());
  const std::string& token = RejectionToken();
  if (v.size() <= token.size() || v.substr(0, token.size()) != token ||
      v[token.size()] != ':') {
    return std::nullopt;  // not ours: a server sent the key
  }
  v.remove_prefix(token.size() + 1);
  LocalRejection r;
  if (absl::ConsumePrefix(&v, "too_many:")) {
    r.too_many = true;
  } else if (!absl::ConsumePrefix(&v, "open:")) {
    return std::nullopt;
  }
  r.breaker = std::string(v);
  return r;
}

}  // namespace grpc
}  // namespace detail
namespace grpc {

// RejectedByBreaker(context)
//
// The name of the breaker whose interceptor refused the call without
// sending it, or nullopt when the call went to the server (or a server
// sent the key itself). REQUIRES: the call finished.
inline std::optional<std::string> RejectedByBreaker(const ::grpc::ClientContext& context) {
  std::optional<detail::grpc::LocalRejection> r =
      detail::grpc::LocalRejectionOf(context);
  if (!r.has_value()) return std::nullopt;
  return std::move(r->breaker);
}

// FromGrpcCall(s, context)
//
// FromGrpcStatus(s), with the server's pushback trailer, when it sent one,
// as the status's retry-after hint. Only a failed call carries a hint (gRPC
// ignores pushback on success too). A call the breaker interceptor refused
// without sending reads as that breaker's rejection (IsRejected: a breaker
// above does not count it, a Retrier does not retry it). REQUIRES: the call
// on `context` has finished (its trailers have arrived). Touches only
// `context`.
inline absl::Status FromGrpcCall(const ::grpc::Status& s,
                                 const ::grpc::ClientContext& context) {
  absl::Status out = FromGrpcStatus(s);
  if (out.ok()) return out;
  if (std::optional<detail::grpc::LocalRejection> r =
          detail::grpc::LocalRejectionOf(context)) {
    return ::degrade::detail::WithReason(
        std::move(out), r->too_many ? ::degrade::detail::kReasonTooMany
                                    : ::degrade::detail::kReasonOpen);
  }
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto it = trailers.find(
      ::grpc::string_ref(kRetryPushbackKey.data(), kRetryPushbackKey.size()));
  if (it == trailers.end()) return out;
  return WithRetryAfter(
      std::move(out),
      ParsePushback(absl::string_view(it->second.data(), it->second.size())));
}

// ToGrpcReply(status, context)
//
// The reply a handler returns for `status`: ToGrpcStatus(status), and when
// the status carries a retry-after hint (a ShedError with one, or
// degrade::WithRetryAfter()), the pushback trailer on `context`: the hint's
// milliseconds, or -1 for "do not retry". Call it once per call, before
// the handler returns. Touches only `context`.
inline ::grpc::Status ToGrpcReply(const absl::Status& status,
                                  ::grpc::ServerContext* context) {
  if (const std::optional<absl::Duration> wait = RetryAfterHint(status);
      wait.has_value() && context != nullptr) {
    const int64_t ms =
        *wait < absl::ZeroDuration() ? -1 : absl::ToInt64Milliseconds(*wait);
    context->AddTrailingMetadata(std::string(kRetryPushbackKey),
                                 absl::StrCat(ms));
  }
  return ToGrpcStatus(status);
}

}  // namespace grpc
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GRPC_STATUS_HPP_
