// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stage_result.hpp
// -----------------------------------------------------------------------------
//
// The degradation tag. A recommendation request walks feature service ->
// recall -> rank -> re-rank, and any hop may serve its Plan B. The response
// is then "lossy but available", and three consumers need to know how lossy:
// the next stage (the ranker down-weights default features), the impression
// log (a training pipeline drops degraded impressions) and dashboards (how
// many layers each request lost). A `StageResult<T>` is a stage's value plus
// that tag: `is_default()` says this stage served a fallback, and a
// `DegradationTrace` says which stages, this one and every one upstream,
// degraded and why.
//
//   degrade::StageResult<Features> features =
//       f.ok() ? degrade::StageResult<Features>::Fresh(*std::move(f))
//              : degrade::StageResult<Features>::Fallback(
//                    GlobalAverage(), "features",
//                    degrade::ReasonFromStatus(f.status()));
//   // The ranker sees what it was fed and carries the trace on.
//   auto ranked = degrade::StageResult<Ranked>::From(
//       features.trace(), Rank(features.value(), features.is_default()));
//   response.set_degradation(ranked.trace().Encode());  // "v1;features=open"
//
// A trace has a fixed capacity (`kTraceCapacity` entries of at most
// `kMaxStageNameLength` bytes), never allocates, and is trivially copyable,
// so tagging costs a ~140-byte copy per hop and nothing on the heap. A
// degradation that cannot be named (the trace is full, or the stage name is
// not valid) is still counted: `dropped()` and `depth()` include it, and the
// encoding carries it, so no layer is ever lost silently.
//
// Encoding (`Encode()` / `Decode()`), for an RPC header or a log field:
//
//   trace  = "v1" *( ";" entry ) [ ";+" count ]
//   entry  = stage "=" reason
//   stage  = 1*15( ALPHA / DIGIT / "_" / "." / "-" )
//   reason = "open" / "too_many" / "timeout" / "error" / "exception"
//          / "shed" / "upstream" / "invalid"
//   count  = %x31-39 *4DIGIT      ; 1..65535: dropped(), no leading zeros
//
// with at most `kTraceCapacity` entries and distinct (case-sensitive) stage
// names. The empty trace is "v1". Every trace has exactly one encoding, at
// most `kMaxEncodedSize` bytes, and `Decode()` accepts exactly the encodings
// `Encode()` can produce, so both directions round-trip. `Decode()` is meant
// for untrusted text: it refuses input longer than `kMaxDecodeInput` bytes and
// anything off the grammar with an INVALID_ARGUMENT naming the offset, the
// token and the cause. The encoding carries no length or checksum: text cut at
// a ';' (or inside the final "+count") is a shorter valid trace, so a transport
// that may truncate must frame the value itself.
//
// Thread safety: `DegradationTrace` and `StageResult` are plain values.
// Concurrent const access is safe; a mutation needs the caller's
// synchronisation, as for any value type. The free functions are thread-safe.
// Nothing here throws, and everything compiles with -fno-exceptions.

#ifndef DEGRADE_STAGE_RESULT_HPP_
#define DEGRADE_STAGE_RESULT_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// DegradeReason
//
// Why a stage degraded. `kNone` means it did not; it is never stored in a
// trace. The numeric values are not part of any wire format (the encoding
// uses `ReasonName()`), but are kept stable anyway for logs that print them.
enum class DegradeReason : uint8_t {
  kNone = 0,
  // The stage's circuit breaker was open (or forced open).
  kBreakerOpen = 1,
  // The stage's breaker was half-open and its trial calls were all taken.
  kTooManyRequests = 2,
  // The call ran past its deadline (or a fan-out's slowest shards did).
  kTimeout = 3,
  // The call returned an error.
  kError = 4,
  // The call threw; the breaker caught it at the library boundary.
  kException = 5,
  // The degradation level switched the stage off (load shedding).
  kShed = 6,
  // The stage ran, but on degraded inputs.
  kUpstream = 7,
  // The call returned a value that failed validation.
  kInvalid = 8,
};

// Returns the short, stable token for `reason` used in encodings and logs:
// "none", "open", "too_many", "timeout", "error", "exception", "shed",
// "upstream", "invalid"; "unknown" for a value outside the enumeration.
// The tokens never change: stored impression logs are decoded with them.
inline absl::string_view ReasonName(DegradeReason reason) {
  switch (reason) {
    case DegradeReason::kNone:
      return "none";
    case DegradeReason::kBreakerOpen:
      return "open";
    case DegradeReason::kTooManyRequests:
      return "too_many";
    case DegradeReason::kTimeout:
      return "timeout";
    case DegradeReason::kError:
      return "error";
    case DegradeReason::kException:
      return "exception";
    case DegradeReason::kShed:
      return "shed";
    case DegradeReason::kUpstream:
      return "upstream";
    case DegradeReason::kInvalid:
      return "invalid";
  }
  return "unknown";
}

// Sets `*reason` to the degradation reason whose `ReasonName()` is `token`
// and returns true; returns false (leaving `*reason` alone) for any other
// token, including "none" and "unknown", which name no degradation.
// REQUIRES: `reason != nullptr`.
inline bool ParseReasonName(absl::string_view token, DegradeReason* reason) {
  for (uint8_t v = static_cast<uint8_t>(DegradeReason::kBreakerOpen);
       v <= static_cast<uint8_t>(DegradeReason::kInvalid); ++v) {
    const auto r = static_cast<DegradeReason>(v);
    if (ReasonName(r) == token) {
      *reason = r;
      return true;
    }
  }
  return false;
}

// Maps a status from a dependency call to the reason its stage degraded.
// degrade's own statuses are recognised by their payload (see status.hpp),
// never by message or code, so a backend that itself returns UNAVAILABLE is
// an error, not an open breaker:
//   OK -> kNone; IsBreakerOpen -> kBreakerOpen; IsTooManyRequests ->
//   kTooManyRequests; IsCallableException -> kException; DEADLINE_EXCEEDED
//   -> kTimeout; any other non-OK status -> kError.
inline DegradeReason ReasonFromStatus(const absl::Status& status) {
  if (status.ok()) return DegradeReason::kNone;
  if (IsBreakerOpen(status)) return DegradeReason::kBreakerOpen;
  if (IsTooManyRequests(status)) return DegradeReason::kTooManyRequests;
  if (IsCallableException(status)) return DegradeReason::kException;
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return DegradeReason::kTimeout;
  }
  return DegradeReason::kError;
}

// Fixed sizes of a trace. The capacity covers the four stages of a
// recommendation chain twice over; the name length keeps an entry at 17
// bytes while fitting names like "feature-service".
inline constexpr std::size_t kTraceCapacity = 8;
inline constexpr std::size_t kMaxStageNameLength = 15;
// Decode() refuses longer input before looking at it. Far above the longest
// valid encoding (`kMaxEncodedSize`), so the limit only bounds hostile input.
inline constexpr std::size_t kMaxDecodeInput = 1024;

namespace detail {

inline constexpr absl::string_view kTraceVersion = "v1";
// The longest reason token, "exception".
inline constexpr std::size_t kMaxReasonNameLength = 9;
// The most a trace can count as dropped; `count` in the grammar.
inline constexpr uint16_t kMaxDropped = 65535;
inline constexpr std::size_t kMaxDroppedDigits = 5;

inline bool IsStageNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Shows untrusted bytes in a message: escaped (so a NUL or a newline can't
// cut or forge a log line) and capped (so a 1 KiB token doesn't become a
// 4 KiB message).
inline std::string QuoteForMessage(absl::string_view bytes) {
  constexpr std::size_t kShown = 32;
  if (bytes.size() <= kShown) return absl::CHexEscape(bytes);
  return absl::StrCat(absl::CHexEscape(bytes.substr(0, kShown)), "...");
}

// Returns an empty string if `name` is a valid stage name, else the cause.
inline std::string StageNameProblem(absl::string_view name) {
  if (name.empty()) return "the stage name is empty";
  if (name.size() > kMaxStageNameLength) {
    return absl::StrCat("the stage name is ", name.size(),
                        " bytes, more than the ", kMaxStageNameLength,
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

}  // namespace detail

// True when `name` can name a stage in a trace: 1 to `kMaxStageNameLength`
// bytes from [A-Za-z0-9_.-]. The alphabet keeps the encoding free of its own
// separators (';', '=', '+') and safe in an HTTP/gRPC header value.
inline bool IsValidStageName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxStageNameLength) return false;
  for (char c : name) {
    if (!detail::IsStageNameChar(c)) return false;
  }
  return true;
}

// Returns OK for a valid stage name, else INVALID_ARGUMENT naming the name and
// the cause. Meant for start-up checks of configured stage names, so that a
// bad one is caught before `Add()` has to count it as dropped.
inline absl::Status ValidateStageName(absl::string_view name) {
  std::string problem = detail::StageNameProblem(name);
  if (problem.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("stage name '",
                                                 detail::QuoteForMessage(name),
                                                 "' is invalid: ", problem));
}

// TraceEntry
//
// One named degradation: a stage and why it degraded. Only a
// `DegradationTrace` makes them. A plain, trivially copyable value; `stage()`
// points into the entry, so it is valid as long as the entry (and the trace
// holding it) is.
class TraceEntry {
 public:
  TraceEntry() = default;

  absl::string_view stage() const { return absl::string_view(name_, size_); }
  // Never `kNone`.
  DegradeReason reason() const { return reason_; }

  friend bool operator==(const TraceEntry& a, const TraceEntry& b) {
    return a.reason_ == b.reason_ && a.stage() == b.stage();
  }
  friend bool operator!=(const TraceEntry& a, const TraceEntry& b) {
    return !(a == b);
  }

 private:
  friend class DegradationTrace;

  // REQUIRES: `IsValidStageName(stage)`, `reason != kNone`.
  TraceEntry(absl::string_view stage, DegradeReason reason)
      : size_(static_cast<uint8_t>(stage.size())), reason_(reason) {
    std::memcpy(name_, stage.data(), stage.size());
  }

  // Not NUL-terminated: `size_` says how much is used. Left uninitialised
  // by the default constructor: a trace only reads the entries it filled,
  // and not zeroing 136 bytes is most of what a fresh StageResult costs.
  char name_[kMaxStageNameLength];
  uint8_t size_;
  DegradeReason reason_;
};

// DegradationTrace
//
// Which stages degraded and why, in the order they were recorded. Fixed
// capacity, no allocation, trivially copyable.
//
// Rules, chosen so that the trace answers "how many layers did this request
// lose, and which" without ever under-counting:
// - A stage appears at most once. Recording it again keeps the first reason:
//   the first is the root cause (a breaker opening), later ones are usually
//   its echo (the same stage seen again through a merged upstream trace).
// - A degradation that cannot get an entry, because the trace is full or the
//   stage name is not valid (see `IsValidStageName`), is counted in
//   `dropped()`. `depth()` = entries + dropped; `overflowed()` says some were
//   dropped. Dropped counts are summed by `Merge()`, so when two merged
//   traces share an upstream that itself dropped some, `dropped()` is an
//   upper bound; the named entries are always exact.
//
// Thread safety: a value type; see the file comment.
class DegradationTrace {
 public:
  static constexpr std::size_t kCapacity = kTraceCapacity;
  // The longest encoding: every entry with a 15-byte name and "exception",
  // then ";+65535".
  static constexpr std::size_t kMaxEncodedSize =
      detail::kTraceVersion.size() +
      kTraceCapacity *
          (1 + kMaxStageNameLength + 1 + detail::kMaxReasonNameLength) +
      2 + detail::kMaxDroppedDigits;

  DegradationTrace() = default;

  // Records that `stage` degraded for `reason`. Returns true when `stage` is
  // named in the trace afterwards: newly added, or already there (its first
  // reason is kept). Returns false when the degradation could only be
  // counted in `dropped()` (the trace is full, or `stage` is not a valid
  // stage name), and for `reason == kNone`, which records nothing. A reason
  // outside the enumeration (a bad cast) is recorded as `kError`, so that
  // every entry has a token to encode.
  bool Add(absl::string_view stage, DegradeReason reason) {
    if (reason == DegradeReason::kNone) return false;
    if (static_cast<uint8_t>(reason) >
        static_cast<uint8_t>(DegradeReason::kInvalid)) {
      reason = DegradeReason::kError;
    }
    if (!IsValidStageName(stage)) {
      CountDropped(1);
      return false;
    }
    if (Find(stage) != nullptr) return true;
    if (size_ == kCapacity) {
      CountDropped(1);
      return false;
    }
    entries_[size_++] = TraceEntry(stage, reason);
    return true;
  }

  // Appends `other`'s entries after this trace's, in their order, skipping
  // stages already named here (the first reason wins); entries that no
  // longer fit are counted as dropped. Adds `other.dropped()` (saturating).
  // Merging a trace into itself is allowed; it doubles `dropped()`.
  void Merge(const DegradationTrace& other) {
    // A copy, so that merging a trace into itself iterates a stable source.
    const DegradationTrace src = other;
    for (const TraceEntry& e : src) {
      if (Find(e.stage()) != nullptr) continue;
      if (size_ == kCapacity) {
        CountDropped(1);
        continue;
      }
      entries_[size_++] = e;
    }
    CountDropped(src.dropped_);
  }

  // Forgets everything.
  void Clear() { *this = DegradationTrace(); }

  // How many stages degraded: named entries plus dropped ones.
  std::size_t depth() const { return size_ + std::size_t{dropped_}; }
  // No stage degraded.
  bool empty() const { return depth() == 0; }
  // The number of named entries, at most `kCapacity`.
  std::size_t size() const { return size_; }
  // Degradations that have no entry: the trace was full or the stage name
  // was invalid. Saturates at 65535.
  std::size_t dropped() const { return dropped_; }
  // Some degradation was counted without a name.
  bool overflowed() const { return dropped_ != 0; }

  // Whether `stage` is named in the trace (exact, case-sensitive match).
  bool Contains(absl::string_view stage) const {
    return Find(stage) != nullptr;
  }
  // The reason recorded for `stage`, or `kNone` if it is not named here.
  DegradeReason ReasonFor(absl::string_view stage) const {
    const TraceEntry* e = Find(stage);
    return e == nullptr ? DegradeReason::kNone : e->reason();
  }

  // The named entries, in the order they were recorded.
  const TraceEntry* begin() const { return entries_; }
  const TraceEntry* end() const { return entries_ + size_; }
  absl::Span<const TraceEntry> entries() const {
    return absl::Span<const TraceEntry>(entries_, size_);
  }

  // The length of `Encode()`'s result, at most `kMaxEncodedSize`.
  std::size_t EncodedSize() const {
    std::size_t n = detail::kTraceVersion.size();
    for (const TraceEntry& e : *this) {
      n += 1 + e.stage().size() + 1 + ReasonName(e.reason()).size();
    }
    if (dropped_ != 0) n += 2 + DigitCount(dropped_);
    return n;
  }

  // Writes the encoding (see the file comment) into `buf`, without a
  // terminating NUL, and returns its length. If `n < EncodedSize()` (or
  // `buf` is null) writes nothing and returns 0: a truncated encoding would
  // decode as a different trace. A buffer of `kMaxEncodedSize` bytes always
  // suffices, so a caller can encode onto the stack without allocating.
  std::size_t EncodeTo(char* buf, std::size_t n) const {
    const std::size_t need = EncodedSize();
    if (buf == nullptr || n < need) return 0;
    char* p = buf;
    const auto put = [&p](absl::string_view s) {
      std::memcpy(p, s.data(), s.size());
      p += s.size();
    };
    put(detail::kTraceVersion);
    for (const TraceEntry& e : *this) {
      put(";");
      put(e.stage());
      put("=");
      put(ReasonName(e.reason()));
    }
    if (dropped_ != 0) {
      put(";+");
      const std::size_t digits = DigitCount(dropped_);
      unsigned v = dropped_;
      for (std::size_t i = digits; i > 0; --i) {
        p[i - 1] = static_cast<char>('0' + v % 10);
        v /= 10;
      }
      p += digits;
    }
    return static_cast<std::size_t>(p - buf);
  }

  // Appends the encoding to `*out`. REQUIRES: `out != nullptr`.
  void AppendTo(std::string* out) const {
    char buf[kMaxEncodedSize];
    out->append(buf, EncodeTo(buf, sizeof(buf)));
  }

  // The encoding, e.g. "v1;features=open;recall=timeout", or "v1" if empty.
  std::string Encode() const {
    char buf[kMaxEncodedSize];
    return std::string(buf, EncodeTo(buf, sizeof(buf)));
  }

  // Parses an encoding made by `Encode()`. Strict, because the text comes off
  // the network or out of a log: anything `Encode()` would not produce
  // (another version, a missing '=', an empty or over-long stage name, a byte
  // outside the stage alphabet, an unknown reason, a repeated stage, more
  // than `kCapacity` entries, an empty token from a trailing or doubled ';',
  // a count that is zero, has leading zeros, exceeds 65535 or is not last,
  // input over `kMaxDecodeInput` bytes) is INVALID_ARGUMENT, naming the
  // offset and token (escaped) and the cause. Reads only within `text`.
  static absl::StatusOr<DegradationTrace> Decode(absl::string_view text) {
    if (text.size() > kMaxDecodeInput) {
      return absl::InvalidArgumentError(
          absl::StrCat("degradation trace: the input is ", text.size(),
                       " bytes, more than the ", kMaxDecodeInput, " allowed"));
    }
    const std::size_t first_end = std::min(text.find(';'), text.size());
    const absl::string_view version = text.substr(0, first_end);
    if (version != detail::kTraceVersion) {
      return DecodeError(
          0, version,
          absl::StrCat("bad version (expected '", detail::kTraceVersion, "')"));
    }
    DegradationTrace trace;
    std::size_t pos = first_end;  // at a ';' or at the end
    while (pos < text.size()) {
      const std::size_t start = pos + 1;
      const std::size_t end = std::min(text.find(';', start), text.size());
      const absl::string_view token = text.substr(start, end - start);
      if (token.empty()) {
        return DecodeError(start, token,
                           end == text.size()
                               ? "empty token: trailing ';'"
                               : "empty token: duplicate ';' separators");
      }
      if (token[0] == '+') {
        if (end != text.size()) {
          return DecodeError(start, token,
                             "the '+count' token must be the last one");
        }
        absl::Status s = ParseDropped(start, token, &trace.dropped_);
        if (!s.ok()) return s;
        break;
      }
      const std::size_t eq = token.find('=');
      if (eq == absl::string_view::npos) {
        return DecodeError(start, token,
                           "missing '=' between stage and reason");
      }
      const absl::string_view stage = token.substr(0, eq);
      const absl::string_view reason_token = token.substr(eq + 1);
      std::string problem = detail::StageNameProblem(stage);
      if (!problem.empty()) return DecodeError(start, token, problem);
      DegradeReason reason = DegradeReason::kNone;
      if (!ParseReasonName(reason_token, &reason)) {
        return DecodeError(
            start + eq + 1, reason_token,
            reason_token.empty()
                ? std::string("empty reason")
                : absl::StrCat("unknown reason token (expected one of open, "
                               "too_many, timeout, error, exception, shed, "
                               "upstream, invalid)"));
      }
      if (trace.Contains(stage)) {
        return DecodeError(start, token, "duplicate stage");
      }
      if (trace.size_ == kCapacity) {
        return DecodeError(
            start, token,
            absl::StrCat("too many entries (at most ", kCapacity, ")"));
      }
      trace.entries_[trace.size_++] = TraceEntry(stage, reason);
      pos = end;
    }
    return trace;
  }

  // Equal when the entries (in order) and the dropped counts are.
  friend bool operator==(const DegradationTrace& a, const DegradationTrace& b) {
    if (a.size_ != b.size_ || a.dropped_ != b.dropped_) return false;
    for (std::size_t i = 0; i < a.size_; ++i) {
      if (a.entries_[i] != b.entries_[i]) return false;
    }
    return true;
  }
  friend bool operator!=(const DegradationTrace& a, const DegradationTrace& b) {
    return !(a == b);
  }

 private:
  const TraceEntry* Find(absl::string_view stage) const {
    for (const TraceEntry& e : *this) {
      if (e.stage() == stage) return &e;
    }
    return nullptr;
  }

  void CountDropped(std::size_t n) {
    const std::size_t sum = std::size_t{dropped_} + n;
    dropped_ = static_cast<uint16_t>(
        sum > detail::kMaxDropped ? detail::kMaxDropped : sum);
  }

  static std::size_t DigitCount(unsigned v) {
    std::size_t digits = 1;
    while (v >= 10) {
      v /= 10;
      ++digits;
    }
    return digits;
  }

  static absl::Status DecodeError(std::size_t offset, absl::string_view token,
                                  absl::string_view cause) {
    return absl::InvalidArgumentError(
        absl::StrCat("degradation trace: at offset ", offset, ", token '",
                     detail::QuoteForMessage(token), "': ", cause));
  }

  // Parses "+N" (N in 1..65535, decimal, no leading zeros): the canonical
  // form, so that each trace has one encoding.
  static absl::Status ParseDropped(std::size_t offset, absl::string_view token,
                                   uint16_t* dropped) {
    const absl::string_view digits = token.substr(1);
    if (digits.empty()) {
      return DecodeError(offset, token, "'+' is not followed by a count");
    }
    if (digits.size() > detail::kMaxDroppedDigits) {
      return DecodeError(offset, token, "the dropped count is more than 65535");
    }
    uint32_t v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        return DecodeError(offset, token,
                           "the dropped count is not a decimal number");
      }
      v = v * 10 + static_cast<uint32_t>(c - '0');
    }
    if (digits[0] == '0') {
      return DecodeError(offset, token,
                         "the dropped count is zero or has a leading zero");
    }
    if (v > detail::kMaxDropped) {
      return DecodeError(offset, token, "the dropped count is more than 65535");
    }
    *dropped = static_cast<uint16_t>(v);
    return absl::OkStatus();
  }

  TraceEntry entries_[kCapacity];  // only [0, size_) are meaningful
  uint8_t size_ = 0;
  uint16_t dropped_ = 0;
};

static_assert(std::is_trivially_copyable<DegradationTrace>::value,
              "a trace must be cheap to copy from stage to stage");
static_assert(DegradationTrace::kMaxEncodedSize < kMaxDecodeInput,
              "every valid encoding must be accepted by Decode()");

// StageResult<T>
//
// A stage's value with its degradation tag. Made by the factories; a value
// type that owns nothing beyond `T` (for a trivially copyable `T` it is
// trivially copyable, and never touches the heap).
//
//   Fresh(v)                  the stage's own answer, no degradation seen
//   Fallback(v, stage, why)   the stage served its Plan B
//   From(upstream, v)         a fresh answer computed from degraded inputs:
//                             carries their trace, is not itself a default
//
// Thread safety: a value type; see the file comment.
template <typename T>
class StageResult {
 public:
  using value_type = T;

  // A result that is not a default and has an empty trace.
  static StageResult Fresh(T value) { return StageResult(std::move(value)); }

  // A fallback served by `stage` because of `reason`: `is_default()` is
  // true and the trace names `stage` (subject to `DegradationTrace::Add`'s
  // rules: an invalid stage name is counted as dropped, and `kNone`
  // records nothing though the result is still a default).
  static StageResult Fallback(T value, absl::string_view stage,
                              DegradeReason reason) {
    StageResult r(std::move(value), true, DegradationTrace());
    r.trace_.Add(stage, reason);
    return r;
  }

  // A result computed from inputs whose trace was `upstream`: not a default
  // itself, but it carries every layer lost upstream to the next stage.
  static StageResult From(const DegradationTrace& upstream, T value) {
    return StageResult(std::move(value), false, upstream);
  }

  // The value. The rvalue overloads move it out, for the last stage.
  const T& value() const& { return value_; }
  T& value() & { return value_; }
  T&& value() && { return std::move(value_); }
  const T&& value() const&& { return std::move(value_); }

  // True when this stage served a fallback (not when only an upstream
  // stage did: read `trace()` for that).
  bool is_default() const { return is_default_; }
  // True when this stage or any stage upstream degraded.
  bool degraded() const { return is_default_ || !trace_.empty(); }

  const DegradationTrace& trace() const { return trace_; }
  // For recording a degradation that is not a fallback, such as a fan-out
  // that returned partial results: `mutable_trace()->Add("recall", kTimeout)`.
  DegradationTrace* mutable_trace() { return &trace_; }

  // Marks this result as `stage`'s fallback after the fact: sets
  // `is_default()` and records the entry. Returns what `Add()` returns.
  bool MarkDefault(absl::string_view stage, DegradeReason reason) {
    is_default_ = true;
    return trace_.Add(stage, reason);
  }

  // Folds in the trace of an input. The upstream entries go first, since
  // those stages ran first, and where both name a stage the upstream reason
  // wins (it is the root cause). Returns `*this` for chaining.
  StageResult& MergeUpstream(const DegradationTrace& upstream) {
    DegradationTrace merged = upstream;
    merged.Merge(trace_);
    trace_ = merged;
    return *this;
  }
  // Same, for an input's result: only its trace is read, never its value.
  template <typename U>
  StageResult& MergeUpstream(const StageResult<U>& upstream) {
    return MergeUpstream(upstream.trace());
  }

 private:
  StageResult(T value, bool is_default, const DegradationTrace& trace)
      : value_(std::move(value)), is_default_(is_default), trace_(trace) {}
  // The happy path builds its empty trace in place instead of copying one:
  // it is most of a fresh result's size.
  // (`trace_` is default-initialised, not value-initialised: `trace_()`
  // would zero all of its entries first.)
  explicit StageResult(T value)
      : value_(std::move(value)), is_default_(false) {}

  T value_;
  bool is_default_;
  DegradationTrace trace_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STAGE_RESULT_HPP_
