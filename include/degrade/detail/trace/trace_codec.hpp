// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The wire codec of a degradation trace: the grammar's constants, the stage
// name alphabet, and the encoder and decoder. degradation_trace.hpp is the
// public face (`DegradationTrace::Encode` / `Decode` forward here) and owns
// the grammar's description:
//
//   trace  = "v1" *( ";" entry ) [ ";+" count ]
//   entry  = stage "=" reason [ "/" tier ]
//   stage  = 1*15( ALPHA / DIGIT / "_" / "." / "-" )
//   reason = "open" / "too_many" / "timeout" / "error" / "exception"
//          / "shed" / "upstream" / "invalid" / "rate_limited"
//   tier   = "stale-1m" / "stale-10m" / "stale-1h" / "stale-old"
//          / "segment" / "global"
//   count  = %x31-39 *4DIGIT      ; 1..65535, no leading zeros
//
// with at most 8 entries and distinct stage names. The codec knows nothing of
// `DegradationTrace`: it encodes `TraceFields` (views of the entries and the
// dropped count) and decodes into them, so it is tested on its own
// (tests/detail/trace/trace_codec_test.cpp). Pure functions, thread-safe;
// nothing allocates except an error message, nothing throws.

#ifndef DEGRADE_DETAIL_TRACE_TRACE_CODEC_HPP_
#define DEGRADE_DETAIL_TRACE_TRACE_CODEC_HPP_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "degrade/degrade_reason.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// ---- The grammar ------------------------------------------------------------

inline constexpr absl::string_view kTraceVersion = "v1";
// At most this many entries. The public name is kTraceCapacity.
inline constexpr std::size_t kTraceMaxEntries = 8;
// A stage name is 1 to this many bytes. The public name is
// kMaxStageNameLength.
inline constexpr std::size_t kTraceMaxStageName = 15;
// Longer input is refused before it is looked at. The public name is
// kMaxDecodeInput.
inline constexpr std::size_t kTraceMaxInput = 1024;
// The longest reason token, "rate_limited" (checked below against every
// reason's name).
inline constexpr std::size_t kMaxReasonNameLength = 12;
constexpr bool ReasonNamesFitTheMaximum() {
  for (DegradeReason r : kAllDegradeReasons) {
    if (ReasonName(r).size() > kMaxReasonNameLength) return false;
  }
  return true;
}
static_assert(ReasonNamesFitTheMaximum(),
              "kMaxReasonNameLength bounds every reason token");
// The longest tier token, "stale-old"/"stale-10m" (checked below).
inline constexpr std::size_t kMaxTierNameLength = 9;
constexpr bool TierNamesFitTheMaximum() {
  for (FallbackTier t : kAllFallbackTiers) {
    if (TierName(t).size() > kMaxTierNameLength) return false;
  }
  return true;
}
static_assert(TierNamesFitTheMaximum(),
              "kMaxTierNameLength bounds every tier token");
// The most a trace can count as dropped; `count` in the grammar.
inline constexpr uint16_t kMaxDropped = 65535;
inline constexpr std::size_t kMaxDroppedDigits = 5;
// The longest encoding: every entry with a 15-byte name, "rate_limited" and
// a nine-byte tier, then ";+65535".
inline constexpr std::size_t kTraceMaxEncodedSize =
    kTraceVersion.size() +
    kTraceMaxEntries * (1 + kTraceMaxStageName + 1 + kMaxReasonNameLength + 1 +
                        kMaxTierNameLength) +
    2 + kMaxDroppedDigits;
static_assert(kTraceMaxEncodedSize < kTraceMaxInput,
              "every valid encoding must be accepted by the decoder");

// One entry as the codec sees it. `stage` is borrowed: from the trace being
// encoded, or from the text being decoded.
struct TraceEntryView {
  absl::string_view stage;
  DegradeReason reason = DegradeReason::kNone;
  FallbackTier tier = FallbackTier::kUnspecified;
};

// What a trace says, as the codec reads and writes it: the named entries
// (`entries[0, size)`) and the dropped count. The stages are borrowed from
// the trace being encoded or from the text being decoded.
struct TraceFields {
  std::array<TraceEntryView, kTraceMaxEntries> entries{};
  std::size_t size = 0;
  uint16_t dropped = 0;

  absl::Span<const TraceEntryView> named() const {
    return absl::Span<const TraceEntryView>(entries.data(), size);
  }
};

// ---- Stage names ------------------------------------------------------------

// The stage alphabet [A-Za-z0-9_.-]: none of the encoding's own separators
// (';', '=', '+'), and safe in an HTTP/gRPC header value.
constexpr bool IsStageNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Shows untrusted bytes in a message: escaped (so a NUL or a newline can't
// cut or forge a log line) and capped (so a 1 KiB token doesn't become a
// 4 KiB message).
inline std::string QuoteForMessage(absl::string_view bytes);

// Returns an empty string if `name` is a valid stage name, else the cause.
inline std::string StageNameProblem(absl::string_view name);

// ---- Encoding ---------------------------------------------------------------

// The number of decimal digits of `v` (1 for 0).
constexpr std::size_t DigitCount(unsigned v);

// The length of the encoding of `fields`, at most kTraceMaxEncodedSize.
// REQUIRES: every named entry has a valid stage name and a reason in
// kAllDegradeReasons, no stage repeats, and `fields.size <=
// kTraceMaxEntries` (what a DegradationTrace guarantees).
inline std::size_t TraceEncodedSize(const TraceFields& fields);

// Writes the encoding into `buf` (no terminating NUL) and returns its
// length; writes nothing and returns 0 when `buf` is null or `n` is less
// than `TraceEncodedSize()`. REQUIRES: as for TraceEncodedSize.
inline std::size_t EncodeTraceTo(const TraceFields& fields, char* buf,
                                 std::size_t n);

// ---- Decoding ---------------------------------------------------------------

// INVALID_ARGUMENT "degradation trace: at offset <offset>, token '<token>':
// <cause>", the token escaped and capped.
inline absl::Status TraceDecodeError(std::size_t offset,
                                     absl::string_view token,
                                     absl::string_view cause);

// Parses the final "+N" token found at `offset` (N in 1..65535, decimal, no
// leading zeros: the canonical form, so that each trace has one encoding).
// REQUIRES: `token` starts with '+'; `dropped != nullptr`.
inline absl::Status ParseTraceDropped(std::size_t offset,
                                      absl::string_view token,
                                      uint16_t* dropped);

// Parses `text` into `*out`. Strict: anything the encoder would not produce
// is INVALID_ARGUMENT naming the offset, the token (escaped) and the cause
// (see DegradationTrace::Decode for the list). Reads only within `text`; on
// error `*out` holds what was parsed before it. REQUIRES: `out != nullptr`.
inline absl::Status DecodeTrace(absl::string_view text, TraceFields* out);

// ---- Implementation details -------------------------------------------------

inline std::string QuoteForMessage(absl::string_view bytes) {
  constexpr std::size_t kShown = 32;
  if (bytes.size() <= kShown) return absl::CHexEscape(bytes);
  return absl::StrCat(absl::CHexEscape(bytes.substr(0, kShown)), "...");
}

inline std::string StageNameProblem(absl::string_view name) {
  if (name.empty()) return "the stage name is empty";
  if (name.size() > kTraceMaxStageName) {
    return absl::StrCat("the stage name is ", name.size(),
                        " bytes, more than the ", kTraceMaxStageName,
                        " allowed");
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!IsStageNameChar(name[i])) {
      return absl::StrCat("the stage name has the byte '",
                          absl::CHexEscape(name.substr(i, 1)), "' at index ", i,
                          ", outside [A-Za-z0-9_.-]");
    }
  }
  return std::string();
}

constexpr std::size_t DigitCount(unsigned v) {
  std::size_t digits = 1;
  while (v >= 10) {
    v /= 10;
    ++digits;
  }
  return digits;
}

inline std::size_t TraceEncodedSize(const TraceFields& fields) {
  std::size_t n = kTraceVersion.size();
  for (const TraceEntryView& e : fields.named()) {
    n += 1 + e.stage.size() + 1 + ReasonName(e.reason).size();
    if (e.tier != FallbackTier::kUnspecified) n += 1 + TierName(e.tier).size();
  }
  if (fields.dropped != 0) n += 2 + DigitCount(fields.dropped);
  return n;
}

inline std::size_t EncodeTraceTo(const TraceFields& fields, char* buf,
                                 std::size_t n) {
  const std::size_t need = TraceEncodedSize(fields);
  if (buf == nullptr || n < need) return 0;
  char* p = buf;
  const auto put = [&p](absl::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put(kTraceVersion);
  for (const TraceEntryView& e : fields.named()) {
    put(";");
    put(e.stage);
    put("=");
    put(ReasonName(e.reason));
    if (e.tier != FallbackTier::kUnspecified) {
      put("/");
      put(TierName(e.tier));
    }
  }
  if (fields.dropped != 0) {
    put(";+");
    unsigned v = fields.dropped;
    const std::size_t digits = DigitCount(v);
    for (std::size_t i = digits; i > 0; --i) {
      p[i - 1] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    p += digits;
  }
  return static_cast<std::size_t>(p - buf);
}

inline absl::Status TraceDecodeError(std::size_t offset,
                                     absl::string_view token,
                                     absl::string_view cause) {
  return absl::InvalidArgumentError(
      absl::StrCat("degradation trace: at offset ", offset, ", token '",
                   QuoteForMessage(token), "': ", cause));
}

inline absl::Status ParseTraceDropped(std::size_t offset,
                                      absl::string_view token,
                                      uint16_t* dropped) {
  const absl::string_view digits = token.substr(1);
  if (digits.empty()) {
    return TraceDecodeError(offset, token, "'+' is not followed by a count");
  }
  if (digits.size() > kMaxDroppedDigits) {
    return TraceDecodeError(offset, token,
                            "the dropped count is more than 65535");
  }
  uint32_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return TraceDecodeError(offset, token,
                              "the dropped count is not a decimal number");
    }
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (digits[0] == '0') {
    return TraceDecodeError(offset, token,
                            "the dropped count is zero or has a leading zero");
  }
  if (v > kMaxDropped) {
    return TraceDecodeError(offset, token,
                            "the dropped count is more than 65535");
  }
  *dropped = static_cast<uint16_t>(v);
  return absl::OkStatus();
}

inline absl::Status DecodeTrace(absl::string_view text, TraceFields* out) {
  if (text.size() > kTraceMaxInput) {
    return absl::InvalidArgumentError(
        absl::StrCat("degradation trace: the input is ", text.size(),
                     " bytes, more than the ", kTraceMaxInput, " allowed"));
  }
  const std::size_t first_end = std::min(text.find(';'), text.size());
  const absl::string_view version = text.substr(0, first_end);
  if (version != kTraceVersion) {
    return TraceDecodeError(
        0, version,
        absl::StrCat("bad version (expected '", kTraceVersion, "')"));
  }
  std::size_t pos = first_end;  // at a ';' or at the end
  while (pos < text.size()) {
    const std::size_t start = pos + 1;
    const std::size_t end = std::min(text.find(';', start), text.size());
    // raw-time-ok: string offsets, not times
    const absl::string_view token = text.substr(start, end - start);
    if (token.empty()) {
      return TraceDecodeError(start, token,
                              end == text.size()
                                  ? "empty token: trailing ';'"
                                  : "empty token: duplicate ';' separators");
    }
    if (token[0] == '+') {
      if (end != text.size()) {
        return TraceDecodeError(start, token,
                                "the '+count' token must be the last one");
      }
      return ParseTraceDropped(start, token, &out->dropped);
    }
    const std::size_t eq = token.find('=');
    if (eq == absl::string_view::npos) {
      return TraceDecodeError(start, token,
                              "missing '=' between stage and reason");
    }
    const absl::string_view stage = token.substr(0, eq);
    absl::string_view reason_token = token.substr(eq + 1);
    FallbackTier tier = FallbackTier::kUnspecified;
    const std::size_t slash = reason_token.find('/');
    if (slash != absl::string_view::npos) {
      const absl::string_view tier_token = reason_token.substr(slash + 1);
      if (!ParseTierName(tier_token, &tier)) {
        std::string cause = "unknown fallback tier (expected one of ";
        for (FallbackTier t : kAllFallbackTiers) {
          if (t != kAllFallbackTiers.front()) cause += ", ";
          absl::StrAppend(&cause, TierName(t));
        }
        cause += ")";
        return TraceDecodeError(start + eq + 1 + slash + 1, tier_token, cause);
      }
      reason_token = reason_token.substr(0, slash);
    }
    const std::string problem = StageNameProblem(stage);
    if (!problem.empty()) return TraceDecodeError(start, token, problem);
    DegradeReason reason = DegradeReason::kNone;
    if (!ParseReasonName(reason_token, &reason)) {
      if (reason_token.empty()) {
        return TraceDecodeError(start + eq + 1, reason_token, "empty reason");
      }
      std::string cause = "unknown reason token (expected one of ";
      for (DegradeReason r : kAllDegradeReasons) {
        if (r != kAllDegradeReasons.front()) cause += ", ";
        absl::StrAppend(&cause, ReasonName(r));
      }
      cause += ")";
      return TraceDecodeError(start + eq + 1, reason_token, cause);
    }
    const absl::Span<const TraceEntryView> named = out->named();
    if (std::any_of(
            named.begin(), named.end(),
            [stage](const TraceEntryView& e) { return e.stage == stage; })) {
      return TraceDecodeError(start, token, "duplicate stage");
    }
    if (out->size == kTraceMaxEntries) {
      return TraceDecodeError(
          start, token,
          absl::StrCat("too many entries (at most ", kTraceMaxEntries, ")"));
    }
    out->entries[out->size++] = TraceEntryView{stage, reason, tier};
    pos = end;
  }
  return absl::OkStatus();
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_TRACE_TRACE_CODEC_HPP_
