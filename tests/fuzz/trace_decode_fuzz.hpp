// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the degradation-trace decoder (`DegradationTrace::Decode`),
// which reads a header off the network. Any bytes in: a trace or an
// INVALID_ARGUMENT status. Beyond that it checks:
//
//   * a decoded trace is sane (at most kCapacity distinct, valid entries,
//     depth = entries + dropped) and re-encodes to exactly the input, which
//     decodes to the same trace again;
//   * an error's message is bounded, whatever the input's size;
//   * the same bytes read as a sequence of `Add()` calls build a trace that
//     round-trips through Encode/Decode, and `EncodeTo` never writes a
//     partial encoding.

#ifndef DEGRADE_TESTS_FUZZ_TRACE_DECODE_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_TRACE_DECODE_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "degrade/stage_result.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

// Longest message Decode() may produce: the fixed text plus a token quoted
// and capped at 32 bytes (escaped, so up to 4 bytes each).
inline constexpr std::size_t kMaxTraceErrorMessage = 400;

inline void CheckSaneTrace(const degrade::DegradationTrace& t) {
  DEGRADE_FUZZ_CHECK(t.size() <= degrade::kTraceCapacity, t.size());
  DEGRADE_FUZZ_CHECK(t.depth() == t.size() + t.dropped(), t.depth());
  std::set<std::string> stages;
  for (const degrade::TraceEntry& e : t) {
    DEGRADE_FUZZ_CHECK(degrade::IsValidStageName(e.stage()), e.stage());
    DEGRADE_FUZZ_CHECK(e.reason() != degrade::DegradeReason::kNone, e.stage());
    DEGRADE_FUZZ_CHECK(stages.insert(std::string(e.stage())).second,
                       "duplicate stage ", e.stage());
    DEGRADE_FUZZ_CHECK(t.ReasonFor(e.stage()) == e.reason(), e.stage());
  }
  const std::string encoded = t.Encode();
  DEGRADE_FUZZ_CHECK(encoded.size() == t.EncodedSize(), encoded);
  DEGRADE_FUZZ_CHECK(
      encoded.size() <= degrade::DegradationTrace::kMaxEncodedSize, encoded);
  const absl::StatusOr<degrade::DegradationTrace> again =
      degrade::DegradationTrace::Decode(encoded);
  DEGRADE_FUZZ_CHECK(again.ok(), again.status().ToString());
  DEGRADE_FUZZ_CHECK(*again == t, encoded, " decodes to ", again->Encode());
  // A buffer one byte short gets nothing, never a truncated encoding.
  char buf[degrade::DegradationTrace::kMaxEncodedSize];
  DEGRADE_FUZZ_CHECK(t.EncodeTo(buf, encoded.size() - 1) == 0, encoded);
  DEGRADE_FUZZ_CHECK(t.EncodeTo(buf, sizeof(buf)) == encoded.size(), encoded);
}

inline int FuzzTraceDecode(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);

  const absl::StatusOr<degrade::DegradationTrace> decoded =
      degrade::DegradationTrace::Decode(text);
  if (decoded.ok()) {
    CheckSaneTrace(*decoded);
    // Decode accepts only canonical encodings, so the input comes back.
    DEGRADE_FUZZ_CHECK(decoded->Encode() == text, decoded->Encode());
    degrade::DegradationTrace merged;
    merged.Merge(*decoded);
    DEGRADE_FUZZ_CHECK(merged == *decoded, merged.Encode());
  } else {
    const absl::Status& s = decoded.status();
    DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), s.ToString());
    DEGRADE_FUZZ_CHECK(absl::StartsWith(s.message(), "degradation trace: "),
                       s.message());
    DEGRADE_FUZZ_CHECK(s.message().size() <= kMaxTraceErrorMessage,
                       s.message().size());
  }

  // The same bytes as Add() calls: [reason][length][length bytes of name]...
  // Any reason byte (in or out of the enumeration) and any name bytes.
  degrade::DegradationTrace built;
  std::size_t i = 0;
  while (i + 2 <= size) {
    const auto reason = static_cast<degrade::DegradeReason>(data[i] % 12);
    const std::size_t len = data[i + 1] % 20;
    i += 2;
    const std::size_t n = len < size - i ? len : size - i;
    const absl::string_view stage = text.substr(i, n);
    i += n;
    const std::size_t depth = built.depth();
    const bool named = built.Add(stage, reason);
    if (reason == degrade::DegradeReason::kNone) {
      DEGRADE_FUZZ_CHECK(!named && built.depth() == depth, "kNone recorded");
    } else if (named) {
      DEGRADE_FUZZ_CHECK(built.Contains(stage), stage);
    }
    CheckSaneTrace(built);
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_TRACE_DECODE_FUZZ_HPP_
