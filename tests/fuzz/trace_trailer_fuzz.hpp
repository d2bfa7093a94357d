// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: a degradation trace as it arrives from downstream, in a gRPC
// trailer or an HTTP header, and is merged into the caller's own. The gRPC
// adapter's `MergeTrace` (grpc/metadata.hpp) is `DegradationTrace::Decode`
// of the trailer's value and then `Merge` into the caller's trace; this
// target runs exactly that core, without gRPC. trace_decode_fuzz.hpp covers
// the decoder alone; this one covers what is done with what it accepts.
//
// The input is lines: the first is the caller's own trace (when there is
// only one line, the caller's trace is empty and that line is the trailer),
// each further line (at most 64) one downstream trailer, merged in turn, as
// a fan-out merges its sub-calls' trailers. Beyond "no crash" it checks:
//
//   * a trailer that does not decode is an INVALID_ARGUMENT with a bounded
//     message and leaves the caller's trace as it was;
//   * a merge is exactly the documented one: the caller's entries first,
//     unchanged (the first reason and tier win), then the trailer's new
//     stages in order until the capacity, the rest and both dropped counts
//     summed into dropped() (saturating); the merged trace stays within the
//     size caps (kCapacity entries, kMaxEncodedSize bytes);
//   * re-encoding is idempotent: the merged trace's encoding decodes to it,
//     and that re-encodes to the same bytes;
//   * merging again what is already there adds only its dropped count, and
//     `StageResult::MergeUpstream` puts the upstream's entries first;
//   * the same bytes read as Add() calls with tiers (in and out of the
//     enumeration) record a valid tier or none.

#ifndef DEGRADE_TESTS_FUZZ_TRACE_TRAILER_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_TRACE_TRAILER_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_trace.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/stage_result.hpp"
#include "fuzz/fuzz_support.hpp"
#include "fuzz/trace_decode_fuzz.hpp"

namespace degrade_fuzz {

inline constexpr std::size_t kMaxTrailerLines = 64;

inline std::size_t SaturatedDropped(std::size_t sum) {
  return sum > 65535 ? 65535 : sum;
}

// `into.Merge(from)` as the documentation describes it, entry by entry.
inline void CheckMerged(const degrade::DegradationTrace& into,
                        const degrade::DegradationTrace& from,
                        const degrade::DegradationTrace& merged) {
  CheckSaneTrace(merged);
  std::vector<degrade::TraceEntry> want(into.begin(), into.end());
  std::size_t overflow = 0;
  for (const degrade::TraceEntry& e : from) {
    if (into.Contains(e.stage())) continue;
    if (want.size() == degrade::kTraceCapacity) {
      ++overflow;
    } else {
      want.push_back(e);
    }
  }
  DEGRADE_FUZZ_CHECK(merged.size() == want.size(), merged.Encode());
  for (std::size_t i = 0; i < want.size(); ++i) {
    DEGRADE_FUZZ_CHECK(merged.entries()[i] == want[i], merged.Encode(), " #",
                       i);
  }
  DEGRADE_FUZZ_CHECK(
      merged.dropped() ==
          SaturatedDropped(into.dropped() + from.dropped() + overflow),
      merged.Encode());
  // The caller's stages keep their reason and tier; the trailer's keep theirs
  // where they got an entry.
  for (const degrade::TraceEntry& e : into) {
    DEGRADE_FUZZ_CHECK(merged.ReasonFor(e.stage()) == e.reason(), e.stage());
    DEGRADE_FUZZ_CHECK(merged.TierFor(e.stage()) == e.tier(), e.stage());
  }
  for (const degrade::TraceEntry& e : from) {
    if (into.Contains(e.stage()) || !merged.Contains(e.stage())) continue;
    DEGRADE_FUZZ_CHECK(merged.ReasonFor(e.stage()) == e.reason(), e.stage());
    DEGRADE_FUZZ_CHECK(merged.TierFor(e.stage()) == e.tier(), e.stage());
  }
  DEGRADE_FUZZ_CHECK(merged.depth() >= into.depth(), merged.Encode());

  // Re-encoding is idempotent.
  const std::string encoded = merged.Encode();
  const absl::StatusOr<degrade::DegradationTrace> again =
      degrade::DegradationTrace::Decode(encoded);
  DEGRADE_FUZZ_CHECK(again.ok(), encoded, ": ", again.status().ToString());
  DEGRADE_FUZZ_CHECK(*again == merged, encoded);
  DEGRADE_FUZZ_CHECK(again->Encode() == encoded, again->Encode());

  // Merging again what is there changes no entry; only dropped counts add.
  degrade::DegradationTrace twice = merged;
  twice.Merge(into);
  DEGRADE_FUZZ_CHECK(twice.size() == merged.size(), twice.Encode());
  DEGRADE_FUZZ_CHECK(
      twice.dropped() == SaturatedDropped(merged.dropped() + into.dropped()),
      twice.Encode());
  degrade::DegradationTrace self = merged;
  self.Merge(self);
  DEGRADE_FUZZ_CHECK(self.size() == merged.size(), self.Encode());
  DEGRADE_FUZZ_CHECK(self.dropped() == SaturatedDropped(2 * merged.dropped()),
                     self.Encode());
  degrade::DegradationTrace with_empty = merged;
  with_empty.Merge(degrade::DegradationTrace());
  DEGRADE_FUZZ_CHECK(with_empty == merged, with_empty.Encode());

  // A stage's own result folding in its input's trace: upstream first.
  degrade::StageResult<int> result = degrade::StageResult<int>::From(into, 0);
  result.MergeUpstream(from);
  degrade::DegradationTrace upstream_first = from;
  upstream_first.Merge(into);
  DEGRADE_FUZZ_CHECK(result.trace() == upstream_first, result.trace().Encode());
}

// What MergeTrace does with one trailer value: decode it and merge it into
// `*into`, or refuse it and leave `*into` alone.
inline absl::Status MergeTrailer(absl::string_view value,
                                 degrade::DegradationTrace* into) {
  const absl::StatusOr<degrade::DegradationTrace> trailer =
      degrade::DegradationTrace::Decode(value);
  if (!trailer.ok()) return trailer.status();
  CheckSaneTrace(*trailer);
  degrade::DegradationTrace merged = *into;
  merged.Merge(*trailer);
  CheckMerged(*into, *trailer, merged);
  *into = merged;
  return absl::OkStatus();
}

inline int FuzzTraceTrailer(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);

  std::vector<absl::string_view> lines;
  for (absl::string_view rest = text;;) {
    const std::size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == absl::string_view::npos || lines.size() > kMaxTrailerLines) break;
    rest.remove_prefix(nl + 1);
  }
  degrade::DegradationTrace own;
  std::size_t first_trailer = 0;
  if (lines.size() > 1) {
    const absl::StatusOr<degrade::DegradationTrace> mine =
        degrade::DegradationTrace::Decode(lines[0]);
    if (mine.ok()) own = *mine;
    first_trailer = 1;
  }
  for (std::size_t i = first_trailer; i < lines.size(); ++i) {
    const degrade::DegradationTrace before = own;
    const absl::Status s = MergeTrailer(lines[i], &own);
    if (!s.ok()) {
      DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), s.ToString());
      DEGRADE_FUZZ_CHECK(absl::StartsWith(s.message(), "degradation trace: "),
                         s.message());
      DEGRADE_FUZZ_CHECK(s.message().size() <= kMaxTraceErrorMessage,
                         s.message().size());
      DEGRADE_FUZZ_CHECK(own == before, "a refused trailer changed the trace");
    }
  }

  // The bytes as Add() calls with a tier:
  // [reason][tier][length][length bytes of name]...
  degrade::DegradationTrace built;
  std::size_t i = 0;
  while (i + 3 <= size) {
    const auto reason = static_cast<degrade::DegradeReason>(data[i] % 12);
    const auto tier = static_cast<degrade::FallbackTier>(data[i + 1] % 9);
    const std::size_t len = data[i + 2] % 20;
    i += 3;
    const std::size_t n = len < size - i ? len : size - i;
    const absl::string_view stage = text.substr(i, n);
    i += n;
    const bool existed = built.Contains(stage);
    const bool named = built.Add(stage, reason, tier);
    if (named && !existed) {
      const degrade::FallbackTier got = built.TierFor(stage);
      const bool valid = !degrade::TierName(tier).empty();
      DEGRADE_FUZZ_CHECK(
          got == (valid ? tier : degrade::FallbackTier::kUnspecified), stage,
          " tier ", static_cast<int>(got));
    }
    CheckSaneTrace(built);
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_TRACE_TRAILER_FUZZ_HPP_
