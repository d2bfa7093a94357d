// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The payload degrade puts on the statuses it makes on its own behalf, and
// the helpers that read and keep it. degrade/status.hpp is the public face
// (IsBreakerOpen() and friends); every header that builds or rewords such a
// status includes this one.

#ifndef DEGRADE_DETAIL_STATUS_PAYLOAD_HPP_
#define DEGRADE_DETAIL_STATUS_PAYLOAD_HPP_

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The payload type URL under which degrade records why it produced a status.
// status.hpp publishes it to users as kStatusPayloadUrl.
inline constexpr absl::string_view kReasonPayloadUrl =
    "type.degrade.dev/degrade.Reason";

inline bool HasReason(const absl::Status& status, absl::string_view reason) {
  if (status.ok()) return false;
  const auto payload = status.GetPayload(kReasonPayloadUrl);
  return payload.has_value() && *payload == reason;
}

inline absl::Status WithReason(absl::Status status, absl::string_view reason) {
  status.SetPayload(kReasonPayloadUrl, absl::Cord(reason));
  return status;
}

inline constexpr absl::string_view kReasonOpen = "breaker_open";
inline constexpr absl::string_view kReasonTooMany = "too_many_requests";
inline constexpr absl::string_view kReasonException = "callable_exception";
inline constexpr absl::string_view kReasonShed = "shed";

// `status` with `message` in place of its message, keeping its code and
// payloads, so predicates such as IsCallableException() still hold after a
// layer adds context. An OK status stays OK (it has no message).
inline absl::Status Reworded(const absl::Status& status,
                             absl::string_view message) {
  if (status.ok()) return status;
  absl::Status out(status.code(), message);
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& p) {
    out.SetPayload(url, p);
  });
  return out;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_STATUS_PAYLOAD_HPP_
