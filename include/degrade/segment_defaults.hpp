// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: segment_defaults.hpp
// -----------------------------------------------------------------------------
//
// The feature stage's middle rung. When the feature store fails and the
// user has no last-known-good value, the global average (`DefaultFeatures`)
// scores everyone alike; the average of the user's segment (country x
// platform x activity decile, say) is much closer to the user. An offline
// job computes one vector per segment and ships them as one local JSON file,
//
//   {"dimension": 4, "segments": {"US|ios|3": [0.1, 2, -0.5, 1e-3],
//                                 "DE|android|0": [0.3, 1, 0, 0.25]}}
//
// and `SegmentDefaults` serves it exactly as `DefaultFeatures` serves the
// global vector: loaded at start-up, reloaded when a new file ships, a bad
// file (malformed, a vector of another dimension, a non-finite number, an
// empty, over-long or repeated segment id, too many segments, too big)
// never replaces the set serving, and every refusal names the file, the
// segment and the fault. What a request's segment is stays the caller's.
//
//   degrade::SegmentDefaultsOptions o;
//   o.expected_dimension = 64;       // the model's, as DefaultFeatures'
//   auto segments = degrade::SegmentDefaults::Load("/data/seg.json", o);
//   if (!segments.ok()) return segments.status();
//
//   // Per request, after the store and the user's last good value failed:
//   std::shared_ptr<const std::vector<float>> v =
//       (*segments)->Find(SegmentOf(request));       // "US|ios|3"
//   if (v == nullptr) v = global->snapshot();  // unknown: DefaultFeatures
//
//   absl::Status s = (*segments)->Reload("/data/seg.json");  // old set kept
//                                                           // if bad
//
// A lookup neither copies the vector nor allocates: the whole set is one
// immutable snapshot and `Find` hands out a pointer into it that keeps it
// alive; a reload swaps the snapshot, so a reader sees the old set or the
// new one, never a mix. Operators see its age, size and lookups through
// `SegmentDefaultsOptions::metrics` (degrade_segment_defaults_*).
//
// Nothing here throws; the header compiles with -fno-exceptions.
//
// Thread safety: `ParseSegmentDefaults` and `ValidateSegmentDefaultsOptions`
// are pure functions. `SegmentDefaults` is thread-safe; readers take a short
// lock only to copy a `shared_ptr`, never while a file is read or parsed.

#ifndef DEGRADE_SEGMENT_DEFAULTS_HPP_
#define DEGRADE_SEGMENT_DEFAULTS_HPP_

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/fallback/feature_vector.hpp"
#include "degrade/detail/fallback/snapshot_cell.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/source_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest segment file read by default, 128 MiB: 100,000 segments of
// 64 floats written with full precision are about 85 MB. Anything bigger is
// refused before it is fully read.
inline constexpr std::size_t kMaxSegmentDefaultsBytes = std::size_t{128} << 20;
// The default cap on segments in one set.
inline constexpr std::size_t kMaxSegments = 100'000;
// The default cap on a segment id's length, in bytes.
inline constexpr std::size_t kMaxSegmentIdBytes = 128;

// The largest values the two caps above may be set to: beyond them a
// setting is a typo, not a plan.
inline constexpr std::size_t kMaxSegmentsLimit = std::size_t{1} << 24;
inline constexpr std::size_t kMaxSegmentIdBytesLimit = std::size_t{1} << 16;

// Segment id -> its average vector. Looked up by `absl::string_view`
// without building a string.
using SegmentVectors = absl::flat_hash_map<std::string, std::vector<float>>;

// SegmentDefaultsOptions
struct SegmentDefaultsOptions {
  // The dimension of every vector; 0 (the default): the first successful
  // load fixes it for later reloads. Set it to the model's dimension (the
  // same as the paired DefaultFeatures').
  std::size_t expected_dimension = 0;
  // The largest file read; 1 or more.
  std::size_t max_file_bytes = kMaxSegmentDefaultsBytes;
  // The most segments one set may hold; 1..kMaxSegmentsLimit.
  std::size_t max_segments = kMaxSegments;
  // The longest segment id, in bytes; 1..kMaxSegmentIdBytesLimit.
  std::size_t max_segment_id_bytes = kMaxSegmentIdBytes;
  // Names the set in metrics (label `segment_defaults`).
  std::string name = "segment_defaults";
  // The clock for the serving set's age; null means `RealClock::Instance()`.
  // REQUIRES: outlives the set.
  const Clock* clock = nullptr;
  // The telemetry it reports to (telemetry.hpp): with a MetricsRegistry,
  // degrade_segment_defaults_* under `name`. nullptr means
  // DefaultTelemetry(); NoTelemetry() means none. REQUIRES: outlives the
  // set.
  Telemetry* metrics = nullptr;
};

// ValidateSegmentDefaultsOptions()
//
// OK, or INVALID_ARGUMENT naming the setting, its value and the range it
// must be in (see SegmentDefaultsOptions). Thread-safe.
absl::Status ValidateSegmentDefaultsOptions(
    const SegmentDefaultsOptions& options);

// ParseSegmentDefaults()
//
// Parses the segment-defaults format:
//
//   {"dimension": 4, "segments": {"US|ios|3": [0.1, 2, -0.5, 1e-3], ...}}
//
// "dimension" is as in `ParseDefaultFeatures` (and must equal
// `options.expected_dimension` when that is non-zero); "segments" a
// non-empty object of at most `options.max_segments` keys, each a segment id
// of 1..`options.max_segment_id_bytes` bytes whose value is an array of
// exactly "dimension" numbers, each rounding to a finite float. Repeated ids
// are refused, as any repeated key; other top-level keys are ignored. Text
// over `options.max_file_bytes` is refused before it is parsed. `source`
// names the text in messages (a path).
//
// Returns the vectors, or INVALID_ARGUMENT naming the source, the JSON path
// (`segments["US|ios|3"][2]`), the offending value and the rule.
//
// Thread-safe.
absl::StatusOr<SegmentVectors> ParseSegmentDefaults(
    absl::string_view json_text, absl::string_view source_name = "<json>",
    const SegmentDefaultsOptions& options = SegmentDefaultsOptions());

// SegmentDefaults
//
// Per-segment average vectors (see the file comment), loaded from a file in
// the format of `ParseSegmentDefaults` (or installed with `Set`), reloaded
// atomically as one set. A bad file never replaces a good set (the previous
// one keeps serving and the call returns why); before the first successful
// load every `Find` returns null and `Load` fails, so a service can refuse
// to start without it.
//
// Options that `ValidateSegmentDefaultsOptions` refuses leave an instance
// that refuses every load with that status (`Create` and `Load` return it
// up front).
//
// Thread-safe. Neither copyable nor movable.
class SegmentDefaults {
 public:
  using Snapshot = std::shared_ptr<const std::vector<float>>;

  // An empty instance, as `options` say.
  explicit SegmentDefaults(SegmentDefaultsOptions options = {})
      : options_status_(ValidateSegmentDefaultsOptions(options)),
        options_(Limits(options)),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        name_(detail::Printable(options.name)),
        cell_("segment defaults: no segment set has been loaded yet") {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ =
        detail::Attach(options.metrics, &Telemetry::AttachComponent, view_);
  }

  SegmentDefaults(const SegmentDefaults&) = delete;
  SegmentDefaults& operator=(const SegmentDefaults&) = delete;
  // First: no scrape may read the set while it goes.
  ~SegmentDefaults() { telemetry_.reset(); }

  // SegmentDefaults::Create()
  //
  // An empty instance, or INVALID_ARGUMENT if `options` are invalid.
  // Thread-safe.
  static absl::StatusOr<std::unique_ptr<SegmentDefaults>> Create(
      SegmentDefaultsOptions options = {});

  // SegmentDefaults::Load()
  //
  // A new instance loaded from `path`, or the options' or the load's error
  // (see `Reload`). Thread-safe.
  static absl::StatusOr<std::unique_ptr<SegmentDefaults>> Load(
      const std::string& path, SegmentDefaultsOptions options = {});

  // SegmentDefaults::Reload()
  //
  // Reads and validates the file at `path` and, only if every check passes,
  // swaps the whole set in. Otherwise the previous set (if any) keeps
  // serving and the status names the segment file and the fault: the
  // errno-derived status for an unreadable file (NOT_FOUND, ...),
  // FAILED_PRECONDITION for a non-regular file, INVALID_ARGUMENT for a file
  // over `max_file_bytes`, an empty or malformed file, a content error (see
  // `ParseSegmentDefaults`), or a dimension other than the one serving.
  //
  // Thread-safe; concurrent reloads are each applied atomically, in the
  // order their swaps happen.
  absl::Status Reload(const std::string& path);

  // SegmentDefaults::Set()
  //
  // Installs `segments` directly (for sets that come from somewhere other
  // than a file), with the file's rules: at least one segment and at most
  // `max_segments`, ids of 1..`max_segment_id_bytes` bytes, every vector
  // non-empty, finite and of one dimension (the expected or serving one).
  // `source` names the origin in the error message.
  //
  // Thread-safe.
  absl::Status Set(SegmentVectors segments, absl::string_view source = "<Set>");

  // SegmentDefaults::Find()
  //
  // The serving vector of `segment`, or null when the set has no such
  // segment or nothing has been loaded (the caller falls to the global
  // tier). Neither copies the vector nor allocates: the pointer shares
  // ownership of the whole set it came from, which stays valid and
  // unchanged however many reloads follow. Counted in `stats()`.
  //
  // Thread-safe; may be stale the moment it returns.
  Snapshot Find(absl::string_view segment) const {
    std::shared_ptr<const Table> table = cell_.snapshot();
    if (table != nullptr) {
      const auto it = table->vectors.find(segment);
      if (it != table->vectors.end()) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        // Aliasing: points at one vector, owns the set.
        return Snapshot(table, &it->second);
      }
    }
    unknown_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }

  // Whether a set is serving. Thread-safe; may be stale the moment it
  // returns.
  bool loaded() const { return cell_.snapshot() != nullptr; }

  // The dimension of every serving vector, or 0 before any load (to check
  // against the paired DefaultFeatures::dimension()). Thread-safe; may be
  // stale the moment it returns.
  std::size_t dimension() const {
    const std::shared_ptr<const Table> t = cell_.snapshot();
    return t == nullptr ? 0 : t->dimension;
  }

  // How many segments serve, or 0 before any load. Thread-safe; may be
  // stale the moment it returns.
  std::size_t segments() const {
    const std::shared_ptr<const Table> t = cell_.snapshot();
    return t == nullptr ? 0 : t->vectors.size();
  }

  // How many loads (Reload, Set) succeeded / were refused, and the status
  // of the latest (OK before any). Thread-safe; may be stale the moment
  // they return.
  uint64_t updates() const { return cell_.updates(); }
  uint64_t failures() const { return cell_.failures(); }
  absl::Status last_status() const { return cell_.last_status(); }

  // Time since the serving set was installed (by its clock), or
  // InfiniteDuration() before the first. Never negative: a clock stepped
  // back behind the install reads as zero. Thread-safe.
  absl::Duration age() const {
    const auto [serving, at] = cell_.snapshot_and_time();
    if (serving == nullptr) return absl::InfiniteDuration();
    return detail::ElapsedSince(clock_->Now(), at);
  }

  // The name in its metrics (SegmentDefaultsOptions::name).
  const std::string& name() const { return name_; }

  // Age, size, loads and lookups, as its telemetry reads them
  // (source_stats.hpp). Thread-safe; may be stale the moment it returns.
  SegmentDefaultsStats stats() const {
    const auto cell = cell_.stats();
    SegmentDefaultsStats st;
    if (cell.snapshot != nullptr) {
      st.age = detail::ElapsedSince(clock_->Now(), cell.installed_at);
      st.dimension = cell.snapshot->dimension;
      st.segments = cell.snapshot->vectors.size();
    }
    st.accepted = cell.updates;
    st.refused = cell.failures;
    st.last_ok = cell_.last_status().ok();
    st.lookups_hit = hits_.load(std::memory_order_relaxed);
    st.lookups_unknown = unknown_.load(std::memory_order_relaxed);
    return st;
  }

 private:
  // One immutable set: what a reload swaps.
  struct Table {
    std::size_t dimension = 0;
    SegmentVectors vectors;
  };

  // The options without what only the constructor reads.
  static SegmentDefaultsOptions Limits(const SegmentDefaultsOptions& o) {
    SegmentDefaultsOptions limits;
    limits.expected_dimension = o.expected_dimension;
    limits.max_file_bytes = o.max_file_bytes;
    limits.max_segments = o.max_segments;
    limits.max_segment_id_bytes = o.max_segment_id_bytes;
    return limits;
  }
  absl::Status Install(SegmentVectors segments, absl::string_view source);

  const absl::Status options_status_;
  const SegmentDefaultsOptions options_;
  const Clock* const clock_;
  const std::string name_;
  detail::SnapshotCell<Table> cell_;
  // Bumped by every reader: a line of their own, away from the cell's lock.
  alignas(detail::kCacheLine) mutable std::atomic<uint64_t> hits_{0};
  mutable std::atomic<uint64_t> unknown_{0};

  const detail::OwnerView<SegmentDefaults, SegmentDefaultsStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details -------------------------------------------------

namespace detail {

// What errors call a segment-defaults text or file.
inline constexpr absl::string_view kSegmentFile = "segment file";

// `id` (the key at `path`) against the id rules, or INVALID_ARGUMENT naming
// `source`, the path and the rule. `value` is the id's vector, rendered.
inline absl::Status CheckSegmentId(absl::string_view source,
                                   absl::string_view path, absl::string_view id,
                                   absl::string_view value,
                                   std::size_t max_id_bytes) {
  if (id.empty()) {
    return json::ErrorWithText(
        source, path, value,
        "has an empty segment id; every segment needs a name");
  }
  if (id.size() > max_id_bytes) {
    return json::ErrorWithText(
        source, path, value,
        absl::StrCat("has a segment id of ", id.size(), " bytes; at most ",
                     max_id_bytes, " are accepted (max_segment_id_bytes)"));
  }
  return absl::OkStatus();
}

inline absl::Status CheckSegmentCount(absl::string_view source,
                                      absl::string_view value, std::size_t n,
                                      std::size_t max_segments) {
  if (n == 0) {
    return json::ErrorWithText(source, "segments", value,
                               "has no segments; a set needs at least one");
  }
  if (n > max_segments) {
    return json::ErrorWithText(
        source, "segments", value,
        absl::StrCat("has ", n, " segments; at most ", max_segments,
                     " are accepted (max_segments)"));
  }
  return absl::OkStatus();
}

}  // namespace detail

inline absl::Status ValidateSegmentDefaultsOptions(
    const SegmentDefaultsOptions& options) {
  const auto bad = [&](absl::string_view setting, std::size_t value,
                       std::size_t lo, std::size_t hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment defaults '", detail::Printable(options.name), "': ", setting,
        " = ", value, ": must be in ", lo, "..", hi));
  };
  if (options.expected_dimension > detail::kFeatureDimensionCap) {
    return bad("expected_dimension", options.expected_dimension, 0,
               detail::kFeatureDimensionCap);
  }
  if (options.max_file_bytes == 0) {
    return bad("max_file_bytes", 0, 1, SIZE_MAX);
  }
  if (options.max_segments == 0 || options.max_segments > kMaxSegmentsLimit) {
    return bad("max_segments", options.max_segments, 1, kMaxSegmentsLimit);
  }
  if (options.max_segment_id_bytes == 0 ||
      options.max_segment_id_bytes > kMaxSegmentIdBytesLimit) {
    return bad("max_segment_id_bytes", options.max_segment_id_bytes, 1,
               kMaxSegmentIdBytesLimit);
  }
  return absl::OkStatus();
}

inline absl::StatusOr<SegmentVectors> ParseSegmentDefaults(
    absl::string_view json_text, absl::string_view source_name,
    const SegmentDefaultsOptions& options) {
  namespace json = detail::json;
  if (absl::Status s = ValidateSegmentDefaultsOptions(options); !s.ok()) {
    return s;
  }
  const std::string source = detail::Printable(source_name);
  if (json_text.size() > options.max_file_bytes) {
    return detail::FileTooLargeError(source, detail::kSegmentFile,
                                     options.max_file_bytes);
  }
  absl::StatusOr<json::Json> parsed =
      json::ParseJsonDocument(json_text, source, detail::kSegmentFile);
  if (!parsed.ok()) return parsed.status();
  const json::Json& root = *parsed;
  if (!root.is_object()) {
    return json::WrongType(source, "(top level)", root,
                           "an object with \"dimension\" and \"segments\"");
  }
  absl::StatusOr<std::size_t> dimension =
      detail::ReadFeatureDimension(source, root, options.expected_dimension);
  if (!dimension.ok()) return dimension.status();
  const auto segs = root.find("segments");
  if (segs == root.end()) {
    return json::ErrorWithText(source, "segments", "(missing)",
                               "the top-level object needs a \"segments\" key");
  }
  if (!segs->is_object()) {
    return json::WrongType(source, "segments", *segs,
                           "an object from segment id to vector");
  }
  if (absl::Status s = detail::CheckSegmentCount(
          source, json::Describe(*segs), segs->size(), options.max_segments);
      !s.ok()) {
    return s;
  }
  SegmentVectors out;
  out.reserve(segs->size());
  for (auto it = segs->begin(); it != segs->end(); ++it) {
    const std::string& id = it.key();
    const std::string path = json::AppendKey("segments", id);
    if (absl::Status s =
            detail::CheckSegmentId(source, path, id, json::Describe(*it),
                                   options.max_segment_id_bytes);
        !s.ok()) {
      return s;
    }
    std::vector<float> values;
    if (absl::Status s =
            detail::ReadFeatureValues(source, path, *it, *dimension, &values);
        !s.ok()) {
      return s;
    }
    out.emplace(id, std::move(values));
  }
  return out;
}

inline absl::StatusOr<std::unique_ptr<SegmentDefaults>> SegmentDefaults::Create(
    SegmentDefaultsOptions options) {
  if (absl::Status s = ValidateSegmentDefaultsOptions(options); !s.ok()) {
    return s;
  }
  return std::make_unique<SegmentDefaults>(std::move(options));
}

inline absl::StatusOr<std::unique_ptr<SegmentDefaults>> SegmentDefaults::Load(
    const std::string& path, SegmentDefaultsOptions options) {
  absl::StatusOr<std::unique_ptr<SegmentDefaults>> segments =
      Create(std::move(options));
  if (!segments.ok()) return segments.status();
  absl::Status s = (*segments)->Reload(path);
  if (!s.ok()) return s;
  return segments;
}

inline absl::Status SegmentDefaults::Reload(const std::string& path) {
  if (!options_status_.ok()) return cell_.Fail(options_status_);
  // Every error says "segment defaults", so the log line tells which rung
  // of the ladder lost its file.
  const auto prefixed = [](const absl::Status& s) {
    return detail::Reworded(s, absl::StrCat("segment defaults: ", s.message()));
  };
  absl::StatusOr<std::string> content = detail::ReadFileCapped(
      path, options_.max_file_bytes, detail::kSegmentFile);
  if (!content.ok()) return cell_.Fail(prefixed(content.status()));
  absl::StatusOr<SegmentVectors> segments =
      ParseSegmentDefaults(*content, path, options_);
  if (!segments.ok()) return cell_.Fail(prefixed(segments.status()));
  return Install(*std::move(segments), detail::Printable(path));
}

inline absl::Status SegmentDefaults::Set(SegmentVectors segments,
                                         absl::string_view source) {
  namespace json = detail::json;
  if (!options_status_.ok()) return cell_.Fail(options_status_);
  const std::string name = detail::Printable(source);
  const auto fail = [&](const absl::Status& s) {
    return cell_.Fail(
        detail::Reworded(s, absl::StrCat("segment defaults: ", s.message())));
  };
  if (absl::Status s = detail::CheckSegmentCount(
          name, absl::StrCat("(", segments.size(), " segments)"),
          segments.size(), options_.max_segments);
      !s.ok()) {
    return fail(s);
  }
  // One dimension for all: the expected one, else the first seen (the
  // serving one is checked at the swap).
  std::size_t want = options_.expected_dimension;
  std::string first;
  for (const auto& [id, values] : segments) {
    const std::string path = json::AppendKey("segments", id);
    const std::string shown = absl::StrCat("(", values.size(), " values)");
    if (absl::Status s = detail::CheckSegmentId(name, path, id, shown,
                                                options_.max_segment_id_bytes);
        !s.ok()) {
      return fail(s);
    }
    if (values.empty()) {
      return fail(json::ErrorWithText(
          name, path, "[]", "is empty; a default vector needs values"));
    }
    if (want == 0) {
      want = values.size();
      first = path;
    }
    if (values.size() != want) {
      return fail(json::ErrorWithText(
          name, path, shown,
          first.empty() ? absl::StrCat("has dimension ", values.size(),
                                       " but expected_dimension is ", want)
                        : absl::StrCat("has dimension ", values.size(), " but ",
                                       first, " has ", want)));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        return fail(json::ErrorWithText(name, json::AppendIndex(path, i),
                                        absl::StrCat(values[i]),
                                        "is not finite"));
      }
    }
  }
  return Install(std::move(segments), name);
}

inline absl::Status SegmentDefaults::Install(SegmentVectors segments,
                                             absl::string_view source) {
  // Built outside the lock; the lock covers only the check against the
  // serving set and the pointer swap. Callers checked it is non-empty and
  // of one dimension.
  auto fresh = std::make_shared<Table>();
  fresh->dimension = segments.begin()->second.size();
  fresh->vectors = std::move(segments);
  const std::size_t size = fresh->dimension;
  return cell_.Install(
      std::move(fresh), clock_->Now(),
      [this, size,
       source](const std::shared_ptr<const Table>& serving) -> absl::Status {
        const std::size_t want = options_.expected_dimension != 0
                                     ? options_.expected_dimension
                                 : serving != nullptr ? serving->dimension
                                                      : 0;
        if (want == 0 || size == want) return absl::OkStatus();
        return absl::InvalidArgumentError(absl::StrCat(
            "segment defaults: ", source, ": dimension ", size,
            " does not match the dimension ", want, " being served"));
      });
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_SEGMENT_DEFAULTS_HPP_
