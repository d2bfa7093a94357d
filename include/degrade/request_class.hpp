// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: request_class.hpp
// -----------------------------------------------------------------------------
//
// What a request is worth when there is not room for all of them: a
// `Criticality` (the four classes of Google's SRE book, chapter 21) and a
// user *cohort* (0-127, WeChat DAGOR's user priority). Overload control sheds
// the lowest criticality first and, inside one criticality, the highest
// cohorts first. The cohort is a stable hash of a user key, so every process
// of a fan-out that sees the same user in the same hour gives it the same
// cohort and sheds (or serves) that user's sub-requests together: a request
// is then either answered whole or refused whole, instead of failing because
// one of its eight sub-calls happened to be shed. The hash rotates every
// `period` (an hour by default) so that the same users are not always the
// ones refused.
//
// `Rank()` folds a class into one number, 0 (most important) to 511, which
// is what admission thresholds compare: a threshold T admits the ranks below
// T. The text form travels in RPC metadata and is decoded strictly.
//
//   auto rotation = degrade::CohortRotation::Create(absl::Hours(1)).value();
//   degrade::RequestClass rc;
//   rc.criticality = degrade::Criticality::kSheddablePlus;   // a prefetch
//   rc.cohort = rotation.CohortOf(user_id, clock.Now());
//   metadata["x-degrade-class"] = degrade::EncodeRequestClass(rc);  // "SHEDDABLE_PLUS:17"
//   ...
//   absl::StatusOr<degrade::RequestClass> got =
//       degrade::DecodeRequestClass(metadata["x-degrade-class"]);
//   if (!got.ok()) { /* INVALID_ARGUMENT: treat as the default class */ }
//
// Thread safety: plain values and pure functions.

#ifndef DEGRADE_REQUEST_CLASS_HPP_
#define DEGRADE_REQUEST_CLASS_HPP_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Criticality
//
// In the order they are shed last to first. kCritical is the default: it is
// what production traffic is unless someone says otherwise, so an unlabelled
// request is never the first to go.
enum class Criticality : uint8_t {
  kCriticalPlus = 0,   // the few requests whose failure is an incident
  kCritical = 1,       // interactive production traffic (the default)
  kSheddablePlus = 2,  // partial unavailability expected (prefetch, batch)
  kSheddable = 3,      // routinely unavailable (background, best effort)
};

inline constexpr std::size_t kNumCriticalities = 4;
inline constexpr int kNumCohorts = 128;
// The rank after the least important one: a threshold that admits all.
inline constexpr int kAdmitAllRank = static_cast<int>(kNumCriticalities) * kNumCohorts;

// "CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE": the SRE book's
// spelling, used in configs, metadata, metrics labels and logs.
inline absl::string_view CriticalityName(Criticality c) {
  switch (c) {
    case Criticality::kCriticalPlus:
      return "CRITICAL_PLUS";
    case Criticality::kCritical:
      return "CRITICAL";
    case Criticality::kSheddablePlus:
      return "SHEDDABLE_PLUS";
    case Criticality::kSheddable:
      return "SHEDDABLE";
  }
  return "UNKNOWN_CRITICALITY";
}

inline std::ostream& operator<<(std::ostream& os, Criticality c) {
  return os << CriticalityName(c);
}

// ParseCriticality(text)
//
// The inverse of CriticalityName(), exactly (case and all): anything else is
// INVALID_ARGUMENT naming the text, so a typo in a config or a header is
// refused rather than read as some class.
inline absl::StatusOr<Criticality> ParseCriticality(absl::string_view text) {
  for (std::size_t i = 0; i < kNumCriticalities; ++i) {
    const auto c = static_cast<Criticality>(i);
    if (text == CriticalityName(c)) return c;
  }
  // The text often comes from a client (a metadata header): escaped, so a
  // newline or an escape sequence cannot forge a log line, and cut at a
  // UTF-8 boundary.
  return absl::InvalidArgumentError(absl::StrCat(
      "criticality: \"", detail::Abbreviated(text, 64),
      "\" is not one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE"));
}

// RequestClass
//
// A criticality and a cohort. REQUIRES (checked by ValidateRequestClass and
// by the decoder, clamped by Rank): cohort < 128.
struct RequestClass {
  Criticality criticality = Criticality::kCritical;
  uint8_t cohort = 0;
};

inline bool operator==(const RequestClass& a, const RequestClass& b) {
  return a.criticality == b.criticality && a.cohort == b.cohort;
}
inline bool operator!=(const RequestClass& a, const RequestClass& b) {
  return !(a == b);
}

// OK, or INVALID_ARGUMENT naming the field and the value.
inline absl::Status ValidateRequestClass(const RequestClass& rc) {
  if (static_cast<std::size_t>(rc.criticality) >= kNumCriticalities) {
    return absl::InvalidArgumentError(
        absl::StrCat("request class: criticality ",
                     static_cast<int>(rc.criticality), " is not one of 0..3"));
  }
  if (rc.cohort >= kNumCohorts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request class: cohort ", static_cast<int>(rc.cohort),
        " is out of range [0, 127]"));
  }
  return absl::OkStatus();
}

// Rank(rc)
//
// criticality * 128 + cohort: 0 is the most important request, 511 the
// least. An out-of-range field is clamped to the least important value, so a
// corrupted class can only ever be shed earlier, never admitted ahead of
// valid traffic.
constexpr int Rank(RequestClass rc) {
  const int c = static_cast<int>(rc.criticality) < static_cast<int>(kNumCriticalities)
                    ? static_cast<int>(rc.criticality)
                    : static_cast<int>(kNumCriticalities) - 1;
  const int u = rc.cohort < kNumCohorts ? rc.cohort : kNumCohorts - 1;
  return c * kNumCohorts + u;
}

// The rank that admits every class of `c` and, below it, nothing of a less
// important criticality: the threshold of "admit CRITICAL and above" is
// FloorRank(kCritical, 128).
constexpr int FloorRank(Criticality lowest_admitted, int cohorts_admitted = kNumCohorts) {
  return static_cast<int>(lowest_admitted) * kNumCohorts +
         (cohorts_admitted < 0 ? 0
          : cohorts_admitted > kNumCohorts ? kNumCohorts
                                           : cohorts_admitted);
}

// EncodeRequestClass(rc) / DecodeRequestClass(text)
//
// The metadata form: "<CRITICALITY>:<cohort>", e.g. "SHEDDABLE_PLUS:17".
// Decoding is strict: the name exactly as CriticalityName() spells it, one
// colon, and a cohort of one to three decimal digits in [0, 127] (no sign,
// no spaces, no leading zeros but "0" itself). Anything else is
// INVALID_ARGUMENT quoting (at most 64 bytes of) the text, escaped (no
// control byte or broken UTF-8 sequence reaches a log line); the decoder
// never reads past `text` and never crashes.
inline std::string EncodeRequestClass(RequestClass rc) {
  const int rank = Rank(rc);
  return absl::StrCat(
      CriticalityName(static_cast<Criticality>(rank / kNumCohorts)), ":",
      rank % kNumCohorts);
}

inline absl::StatusOr<RequestClass> DecodeRequestClass(absl::string_view text) {
  const auto bad = [text](absl::string_view why) {
    // Client text: escaped and cut at a UTF-8 boundary (see ParseCriticality).
    return absl::InvalidArgumentError(absl::StrCat(
        "request class \"", detail::Abbreviated(text, 64), "\": ", why));
  };
  const std::size_t colon = text.find(':');
  if (colon == absl::string_view::npos) {
    return bad("expected <CRITICALITY>:<cohort>, e.g. CRITICAL:0");
  }
  absl::StatusOr<Criticality> c = ParseCriticality(text.substr(0, colon));
  if (!c.ok()) return bad(c.status().message());
  const absl::string_view digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 3 ||
      (digits.size() > 1 && digits[0] == '0')) {
    return bad("the cohort must be a decimal number in [0, 127]");
  }
  int cohort = 0;
  for (const char ch : digits) {
    if (ch < '0' || ch > '9') {
      return bad("the cohort must be a decimal number in [0, 127]");
    }
    cohort = cohort * 10 + (ch - '0');
  }
  if (cohort >= kNumCohorts) return bad("the cohort is out of range [0, 127]");
  RequestClass rc;
  rc.criticality = *c;
  rc.cohort = static_cast<uint8_t>(cohort);
  return rc;
}

// CohortRotation
//
// Maps a user key to a cohort that is stable for one rotation period and
// reshuffled at the next. The period's index is counted from the Unix epoch
// (floor(unix time / period)), so every process with the same period
// agrees on it without talking to any other; the hash is FNV-1a finished by
// SplitMix64, the same on every compiler and standard library (std::hash and
// absl::Hash are not: both may differ between processes).
//
// Thread-compatible value; CohortOf() is const and pure.
class CohortRotation {
 public:
  // REQUIRES: period > 0 (InfiniteDuration(): never reshuffle). Anything
  // else is INVALID_ARGUMENT.
  static absl::StatusOr<CohortRotation> Create(absl::Duration period = absl::Hours(1)) {
    if (!(period > absl::ZeroDuration())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cohort rotation: period ", absl::FormatDuration(period),
          " must be positive (InfiniteDuration() never reshuffles)"));
    }
    return CohortRotation(period);
  }

  absl::Duration period() const { return period_; }

  // The index of the period `now` falls in; 0 for an infinite period. Times
  // at the extremes (InfinitePast/InfiniteFuture) fall in the first and last
  // periods, with no overflow.
  int64_t PeriodIndex(absl::Time now) const {
    if (period_ == absl::InfiniteDuration()) return 0;
    absl::Duration rem;
    // raw-time-ok: an instant as a Duration since the epoch (absl saturates)
    const int64_t q = absl::IDivDuration(now - absl::UnixEpoch(), period_, &rem);
    // Floor, not truncation, before the epoch; IDivDuration saturates at the
    // extremes, so the floor step must not go below the minimum.
    return rem < absl::ZeroDuration() && q != INT64_MIN ? q - 1 : q;
  }

  uint8_t CohortOf(absl::string_view user_key, absl::Time now) const {
    const uint64_t h = detail::StableHash(user_key) ^
                       detail::SplitMix64Step(static_cast<uint64_t>(PeriodIndex(now)));
    return static_cast<uint8_t>(detail::SplitMix64Step(h) % kNumCohorts);
  }

 private:
  explicit CohortRotation(absl::Duration period) : period_(period) {}
  absl::Duration period_;
};

// UserCohort(user_key, now)
//
// CohortRotation with the default hour: the cohort every process gives
// `user_key` at `now`.
inline uint8_t UserCohort(absl::string_view user_key, absl::Time now) {
  return CohortRotation::Create(absl::Hours(1))->CohortOf(user_key, now);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REQUEST_CLASS_HPP_
