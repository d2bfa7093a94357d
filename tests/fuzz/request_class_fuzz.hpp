// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the request-class metadata codec (`DecodeRequestClass`,
// `ParseCriticality`, `EncodeRequestClass`), which reads the
// x-degrade-class header a client sends, and the cohort hash
// (`CohortRotation`) that turns a client's user key into a cohort. Any
// bytes in: a class or an INVALID_ARGUMENT status. Beyond that it checks:
//
//   * an accepted class is within range (criticality 0..3, cohort < 128,
//     rank < kAdmitAllRank) and its encoding is exactly the input (the
//     decoder is strict: one text per class), which decodes to it again;
//   * a refusal quotes at most a bounded, printable piece of the input (no
//     control byte or broken UTF-8 reaches a log line), whatever its size;
//   * any RequestClass, in range or not, encodes to text the decoder
//     accepts, with the same rank (out-of-range fields clamp);
//   * a cohort is < 128 for any key, any period and any time, including
//     the infinite ones (no overflow in the period index).

#ifndef DEGRADE_TESTS_FUZZ_REQUEST_CLASS_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_REQUEST_CLASS_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/request_class.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

// Longest refusal: the fixed text plus at most 64 bytes of input, each
// escaped to at most 6 bytes ("\u00XX"), plus the length suffix, twice
// (the decoder quotes the whole text and ParseCriticality the name).
inline constexpr std::size_t kMaxRequestClassError = 1024;

inline void CheckInRange(const degrade::RequestClass& rc,
                         absl::string_view what) {
  const absl::Status valid = degrade::ValidateRequestClass(rc);
  DEGRADE_FUZZ_CHECK(valid.ok(), what, ": ", valid.ToString());
  DEGRADE_FUZZ_CHECK(rc.cohort < degrade::kNumCohorts, what);
  const int rank = degrade::Rank(rc);
  DEGRADE_FUZZ_CHECK(rank >= 0 && rank < degrade::kAdmitAllRank, rank);
}

inline void CheckRefusal(const absl::Status& s, absl::string_view prefix) {
  DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), s.ToString());
  DEGRADE_FUZZ_CHECK(absl::StartsWith(s.message(), prefix), s.message());
  DEGRADE_FUZZ_CHECK(s.message().size() <= kMaxRequestClassError,
                     s.message().size());
  DEGRADE_FUZZ_CHECK(IsPrintableUtf8(s.message()), s.message());
}

inline int FuzzRequestClass(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);

  // The whole input as the header's value.
  const absl::StatusOr<degrade::RequestClass> decoded =
      degrade::DecodeRequestClass(text);
  if (decoded.ok()) {
    CheckInRange(*decoded, "decoded");
    const std::string again = degrade::EncodeRequestClass(*decoded);
    DEGRADE_FUZZ_CHECK(again == text, again);
    const absl::StatusOr<degrade::RequestClass> twice =
        degrade::DecodeRequestClass(again);
    DEGRADE_FUZZ_CHECK(twice.ok() && *twice == *decoded, again);
  } else {
    CheckRefusal(decoded.status(), "request class \"");
  }

  // The whole input as a criticality name (configs and metric labels).
  const absl::StatusOr<degrade::Criticality> crit =
      degrade::ParseCriticality(text);
  if (crit.ok()) {
    DEGRADE_FUZZ_CHECK(
        static_cast<std::size_t>(*crit) < degrade::kNumCriticalities,
        static_cast<int>(*crit));
    DEGRADE_FUZZ_CHECK(degrade::CriticalityName(*crit) == text, text);
  } else {
    CheckRefusal(crit.status(), "criticality: \"");
  }

  // The first two bytes as a class, in range or not: its encoding decodes,
  // to a class of the same rank.
  if (size >= 2) {
    degrade::RequestClass rc;
    rc.criticality = static_cast<degrade::Criticality>(data[0] % 8);
    rc.cohort = data[1];
    const std::string encoded = degrade::EncodeRequestClass(rc);
    const absl::StatusOr<degrade::RequestClass> back =
        degrade::DecodeRequestClass(encoded);
    DEGRADE_FUZZ_CHECK(back.ok(), encoded, ": ", back.status().ToString());
    CheckInRange(*back, encoded);
    DEGRADE_FUZZ_CHECK(degrade::Rank(*back) == degrade::Rank(rc), encoded);
    if (degrade::ValidateRequestClass(rc).ok()) {
      DEGRADE_FUZZ_CHECK(*back == rc, encoded);
    }
  }

  // The first 17 bytes as a rotation period and a time (either may be
  // infinite), the rest as the user key.
  if (size >= 17) {
    int64_t period_ns = 0;
    int64_t now_ns = 0;
    std::memcpy(&period_ns, data + 1, sizeof(period_ns));
    std::memcpy(&now_ns, data + 9, sizeof(now_ns));
    const absl::Duration period = (data[0] & 1) != 0
                                      ? absl::InfiniteDuration()
                                      : absl::Nanoseconds(period_ns);
    const absl::Time now = (data[0] & 6) == 2   ? absl::InfinitePast()
                           : (data[0] & 6) == 4 ? absl::InfiniteFuture()
                                                : absl::FromUnixNanos(now_ns);
    const absl::StatusOr<degrade::CohortRotation> rotation =
        degrade::CohortRotation::Create(period);
    DEGRADE_FUZZ_CHECK(rotation.ok() == (period > absl::ZeroDuration()),
                       rotation.status().ToString());
    if (rotation.ok()) {
      const absl::string_view key = text.substr(17);
      const uint8_t cohort = rotation->CohortOf(key, now);
      DEGRADE_FUZZ_CHECK(cohort < degrade::kNumCohorts, int{cohort});
      DEGRADE_FUZZ_CHECK(rotation->CohortOf(key, now) == cohort, "unstable");
      if (period == absl::InfiniteDuration()) {
        DEGRADE_FUZZ_CHECK(rotation->PeriodIndex(now) == 0, "infinite period");
      }
    } else {
      CheckRefusal(rotation.status(), "cohort rotation: ");
    }
    const uint8_t hourly = degrade::UserCohort(text, now);
    DEGRADE_FUZZ_CHECK(hourly < degrade::kNumCohorts, int{hourly});
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_REQUEST_CLASS_FUZZ_HPP_
