// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degradation_trace.hpp
// -----------------------------------------------------------------------------
//
// Which stages of a request degraded, and why. A recommendation request
// walks feature service -> recall -> rank -> re-rank, and any hop may serve
// its Plan B; a `DegradationTrace` names each stage that did, with its
// `DegradeReason`, in the order they were recorded. It travels with the
// stage's value in a `StageResult<T>` (stage_result.hpp), and as text in an
// RPC header or a log field (`Encode()` / `Decode()`).
//
//   degrade::DegradationTrace trace;
//   trace.Add("features", degrade::DegradeReason::kBreakerOpen);
//   trace.Add("recall", degrade::DegradeReason::kTimeout);
//   header = trace.Encode();            // "v1;features=open;recall=timeout"
//
//   absl::StatusOr<degrade::DegradationTrace> upstream =
//       degrade::DegradationTrace::Decode(request.degradation());
//   if (!upstream.ok()) { /* log upstream.status(); treat as unknown */ }
//   if (upstream.ok() && upstream->Contains("features")) { /* ... */ }
//
// A trace has a fixed capacity (`kTraceCapacity` entries of at most
// `kMaxStageNameLength` bytes), never allocates, and is trivially copyable,
// so tagging costs a ~140-byte copy per hop and nothing on the heap. A
// degradation that cannot be named (the trace is full, or the stage name is
// not valid) is still counted: `dropped()` and `depth()` include it, and the
// encoding carries it, so no layer is ever lost silently.
//
// Encoding, for an RPC header or a log field:
//
//   trace  = "v1" *( ";" entry ) [ ";+" count ]
//   entry  = stage "=" reason [ "/" tier ]
//   stage  = 1*15( ALPHA / DIGIT / "_" / "." / "-" )
//   reason = "open" / "too_many" / "timeout" / "error" / "exception"
//          / "shed" / "upstream" / "invalid" / "rate_limited"
//   tier   = "stale-1m" / "stale-10m" / "stale-1h" / "stale-old"
//          / "segment" / "global"
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
// that may truncate must frame the value itself. The codec itself lives in
// degrade/detail/trace/trace_codec.hpp.
//
// Thread safety: `TraceEntry` and `DegradationTrace` are plain values.
// Concurrent const access is safe; a mutation needs the caller's
// synchronisation, as for any value type. The free functions are thread-safe.
// Nothing here throws, and everything compiles with -fno-exceptions.

#ifndef DEGRADE_DEGRADATION_TRACE_HPP_
#define DEGRADE_DEGRADATION_TRACE_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "degrade/degrade_reason.hpp"
#include "degrade/detail/trace/trace_codec.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Fixed sizes of a trace. The capacity covers the four stages of a
// recommendation chain twice over; the name length keeps an entry at 17
// bytes while fitting names like "feature-service".
inline constexpr std::size_t kTraceCapacity = detail::kTraceMaxEntries;
inline constexpr std::size_t kMaxStageNameLength = detail::kTraceMaxStageName;
// Decode() refuses longer input before looking at it. Far above the longest
// valid encoding (`kMaxEncodedSize`), so the limit only bounds hostile input.
inline constexpr std::size_t kMaxDecodeInput = detail::kTraceMaxInput;

// True when `name` can name a stage in a trace: 1 to `kMaxStageNameLength`
// bytes from [A-Za-z0-9_.-]. The alphabet keeps the encoding free of its own
// separators (';', '=', '+') and safe in an HTTP/gRPC header value.
inline bool IsValidStageName(absl::string_view name);

// Returns OK for a valid stage name, else INVALID_ARGUMENT naming the name and
// the cause. Meant for start-up checks of configured stage names, so that a
// bad one is caught before `Add()` has to count it as dropped.
inline absl::Status ValidateStageName(absl::string_view name);

// TraceEntry
//
// One named degradation: a stage, why it degraded and, for a fallback
// ladder, which rung it served (`tier()`). Only a `DegradationTrace` makes
// them. A plain, trivially copyable value; `stage()`
// points into the entry, so it is valid as long as the entry (and the trace
// holding it) is.
class TraceEntry {
 public:
  TraceEntry() = default;

  absl::string_view stage() const { return absl::string_view(name_, size_); }
  // Never `kNone`.
  DegradeReason reason() const { return reason_; }
  // `kUnspecified` unless the stage said which rung of a ladder it served.
  FallbackTier tier() const { return tier_; }

  friend bool operator==(const TraceEntry& a, const TraceEntry& b) {
    return a.reason_ == b.reason_ && a.tier_ == b.tier_ &&
           a.stage() == b.stage();
  }
  friend bool operator!=(const TraceEntry& a, const TraceEntry& b) {
    return !(a == b);
  }

 private:
  friend class DegradationTrace;

  // REQUIRES: `IsValidStageName(stage)`, `reason != kNone`.
  TraceEntry(absl::string_view stage, DegradeReason reason, FallbackTier tier)
      : size_(static_cast<uint8_t>(stage.size())),
        reason_(reason),
        tier_(tier) {
    std::memcpy(name_, stage.data(), stage.size());
  }

  // Not NUL-terminated: `size_` says how much is used. Left uninitialised
  // by the default constructor: a trace only reads the entries it filled,
  // and not zeroing 136 bytes is most of what a fresh StageResult costs.
  char name_[kMaxStageNameLength];
  uint8_t size_;
  DegradeReason reason_;
  FallbackTier tier_;
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
  // The longest encoding: every entry with a 15-byte name and
  // "rate_limited",
  // then ";+65535".
  static constexpr std::size_t kMaxEncodedSize = detail::kTraceMaxEncodedSize;

  DegradationTrace() = default;

  // Records that `stage` degraded for `reason`. Returns true when `stage` is
  // named in the trace afterwards: newly added, or already there (its first
  // reason is kept). Returns false when the degradation could only be
  // counted in `dropped()` (the trace is full, or `stage` is not a valid
  // stage name), and for `reason == kNone`, which records nothing. A reason
  // outside the enumeration (a bad cast) is recorded as `kError`, so that
  // every entry has a token to encode.
  bool Add(absl::string_view stage, DegradeReason reason) {
    return Add(stage, reason, FallbackTier::kUnspecified);
  }
  // Same, saying which rung of a fallback ladder the stage served. A tier
  // outside the enumeration is recorded as `kUnspecified`.
  bool Add(absl::string_view stage, DegradeReason reason, FallbackTier tier);

  // Appends `other`'s entries after this trace's, in their order, skipping
  // stages already named here (the first reason wins); entries that no
  // longer fit are counted as dropped. Adds `other.dropped()` (saturating).
  // Merging a trace into itself is allowed; it doubles `dropped()`.
  void Merge(const DegradationTrace& other);

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
  // The tier recorded for `stage`: `kUnspecified` if it is not named here
  // or said none.
  FallbackTier TierFor(absl::string_view stage) const {
    const TraceEntry* e = Find(stage);
    return e == nullptr ? FallbackTier::kUnspecified : e->tier();
  }

  // The named entries, in the order they were recorded.
  const TraceEntry* begin() const { return entries_; }
  const TraceEntry* end() const { return entries_ + size_; }
  absl::Span<const TraceEntry> entries() const {
    return absl::Span<const TraceEntry>(entries_, size_);
  }

  // The length of `Encode()`'s result, at most `kMaxEncodedSize`.
  std::size_t EncodedSize() const { return detail::TraceEncodedSize(Fields()); }

  // Writes the encoding (see the file comment) into `buf`, without a
  // terminating NUL, and returns its length. If `n < EncodedSize()` (or
  // `buf` is null) writes nothing and returns 0: a truncated encoding would
  // decode as a different trace. A buffer of `kMaxEncodedSize` bytes always
  // suffices, so a caller can encode onto the stack without allocating.
  std::size_t EncodeTo(char* buf, std::size_t n) const {
    return detail::EncodeTraceTo(Fields(), buf, n);
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
  static absl::StatusOr<DegradationTrace> Decode(absl::string_view text);

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
  // This trace as the codec reads it (views into the entries).
  detail::TraceFields Fields() const;
  const TraceEntry* Find(absl::string_view stage) const;
  void CountDropped(std::size_t n);

  // The counts come first and fill their four bytes (`reserved_` too), so
  // that the constructor's zeroing is one store the compiler can merge: a
  // fresh StageResult's trace costs that and nothing else (the entries stay
  // uninitialised until used).
  uint8_t size_ = 0;
  [[maybe_unused]] uint8_t reserved_ = 0;
  uint16_t dropped_ = 0;
  TraceEntry entries_[kCapacity];  // only [0, size_) are meaningful
};

static_assert(std::is_trivially_copyable<DegradationTrace>::value,
              "a trace must be cheap to copy from stage to stage");
static_assert(DegradationTrace::kMaxEncodedSize < kMaxDecodeInput,
              "every valid encoding must be accepted by Decode()");

// ---- Implementation details -------------------------------------------------

inline bool IsValidStageName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxStageNameLength) return false;
  for (char c : name) {
    if (!detail::IsStageNameChar(c)) return false;
  }
  return true;
}

inline absl::Status ValidateStageName(absl::string_view name) {
  std::string problem = detail::StageNameProblem(name);
  if (problem.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("stage name '",
                                                 detail::QuoteForMessage(name),
                                                 "' is invalid: ", problem));
}

inline bool DegradationTrace::Add(absl::string_view stage, DegradeReason reason,
                                  FallbackTier tier) {
  if (TierName(tier).empty()) tier = FallbackTier::kUnspecified;  // bad cast
  if (reason == DegradeReason::kNone) return false;
  if (!IsDegradeReason(reason)) reason = DegradeReason::kError;
  if (!IsValidStageName(stage)) {
    CountDropped(1);
    return false;
  }
  if (Find(stage) != nullptr) return true;
  if (size_ == kCapacity) {
    CountDropped(1);
    return false;
  }
  entries_[size_++] = TraceEntry(stage, reason, tier);
  return true;
}

inline void DegradationTrace::Merge(const DegradationTrace& other) {
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

inline absl::StatusOr<DegradationTrace> DegradationTrace::Decode(
    absl::string_view text) {
  detail::TraceFields decoded;
  const absl::Status s = detail::DecodeTrace(text, &decoded);
  if (!s.ok()) return s;
  // The codec checked every name, reason and count, and that no stage
  // repeats: the entries go in as they are.
  DegradationTrace trace;
  for (const detail::TraceEntryView& e : decoded.named()) {
    trace.entries_[trace.size_++] = TraceEntry(e.stage, e.reason, e.tier);
  }
  trace.dropped_ = decoded.dropped;
  return trace;
}

inline detail::TraceFields DegradationTrace::Fields() const {
  detail::TraceFields f;
  for (const TraceEntry& e : *this) {
    f.entries[f.size++] =
        detail::TraceEntryView{e.stage(), e.reason(), e.tier()};
  }
  f.dropped = dropped_;
  return f;
}

inline const TraceEntry* DegradationTrace::Find(absl::string_view stage) const {
  for (const TraceEntry& e : *this) {
    if (e.stage() == stage) return &e;
  }
  return nullptr;
}

inline void DegradationTrace::CountDropped(std::size_t n) {
  const std::size_t sum = std::size_t{dropped_} + n;
  dropped_ = static_cast<uint16_t>(
      sum > detail::kMaxDropped ? detail::kMaxDropped : sum);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADATION_TRACE_HPP_
