// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: default_features.hpp
// -----------------------------------------------------------------------------
//
// The feature stage's Plan B: the global average feature vector, computed
// offline (daily) and shipped next to the binary as a local JSON file,
//
//   {"dimension": 4, "values": [0.12, -0.5, 3, 1e-3]}
//
// served when the feature service fails. Never zeros: a zero vector scores
// every item the same. `DefaultFeatures` loads the file at start-up, reloads
// it when the offline job ships a new one, and never lets a bad file (or a
// vector of another dimension) replace the one serving; before its first
// successful load it refuses rather than hand out zeros, so a service can
// refuse to start without its Plan B.
//
//   auto defaults = degrade::DefaultFeatures::Load("/data/avg.json", 64);
//   if (!defaults.ok()) return defaults.status();  // no Plan B: don't start
//
//   absl::StatusOr<degrade::StageResult<std::vector<float>>> f =
//       degrade::WithFallback(feature_cb, "features",      // with_fallback.hpp
//                             [&] { return feature_client.Get(user); },
//                             (*defaults)->Fallback());
//
//   // When the offline job ships a new file:
//   absl::Status s = (*defaults)->Reload("/data/avg.json");  // old one kept
//                                                            // if bad
//
// Every error names the file and the fault: "default features: cannot open
// feature file '/data/avg.json': No such file or directory", or
// "default features: /data/avg.json: values[2] = 1e+300: is not a finite
// number within float range".
//
// Operators see it through its telemetry (`DefaultFeaturesOptions::metrics`,
// source_stats.hpp): the serving vector's age and dimension, and reloads
// accepted and refused.
//
//   degrade::DefaultFeaturesOptions o;
//   o.name = "avg_features";             // degrade_default_features_*
//   o.expected_dimension = 64;
//   auto defaults = degrade::DefaultFeatures::Load("/data/avg.json", o);
//
// Nothing here throws; the header compiles with -fno-exceptions.
//
// Thread safety: `ParseDefaultFeatures` is a pure function. `DefaultFeatures`
// is thread-safe; readers take a short lock only to copy a `shared_ptr`,
// never while a file is read or parsed.

#ifndef DEGRADE_DEFAULT_FEATURES_HPP_
#define DEGRADE_DEFAULT_FEATURES_HPP_

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/clock.hpp"
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

// The largest default-features file read, 16 MiB: a 100k-dimension vector
// written with full precision is about 2.5 MB. Anything bigger is the wrong
// file and is refused before it is fully read.
inline constexpr std::size_t kMaxDefaultFeaturesBytes = std::size_t{16} << 20;

// The largest dimension accepted, so a corrupt "dimension" can't make us
// reserve gigabytes.
inline constexpr std::size_t kMaxFeatureDimension =
    detail::kFeatureDimensionCap;

// DefaultFeaturesOptions
struct DefaultFeaturesOptions {
  // The dimension every load must have; 0 (the default): the first
  // successful load fixes it for later reloads, because the model consuming
  // the vector can't change shape.
  std::size_t expected_dimension = 0;
  // The largest file read; default kMaxDefaultFeaturesBytes.
  std::size_t max_file_bytes = kMaxDefaultFeaturesBytes;
  // Names the features in metrics. Default "default_features".
  std::string name = "default_features";
  // The clock for the serving vector's age; null means
  // `RealClock::Instance()`. REQUIRES: outlives the features.
  const Clock* clock = nullptr;
  // The telemetry the features report to (telemetry.hpp): with a
  // MetricsRegistry, degrade_default_features_* (age, dimension, reloads
  // accepted and refused) under `name`. nullptr means DefaultTelemetry()
  // (none unless SetDefaultTelemetry() was called); NoTelemetry() means
  // none even then. REQUIRES: outlives the features.
  Telemetry* metrics = nullptr;
};

// ParseDefaultFeatures()
//
// Parses the default-features format:
//
//   {"dimension": 4, "values": [0.12, -0.5, 3, 1e-3]}
//
// "dimension" is a positive integer; "values" a non-empty array of exactly
// "dimension" JSON numbers, each finite and within float range: one that
// rounds to a finite float, so `3.4028235e+38` (FLT_MAX's shortest spelling,
// as std::to_chars, Go and numpy print it) is FLT_MAX, and a value too small
// for a float becomes a (signed) zero or a float denormal. Other keys
// are ignored (the offline job may add "generated_at", "model", ...);
// duplicate keys are refused. If `expected_dimension` is non-zero,
// "dimension" must equal it. `source` names the text in messages (a path).
//
// Returns the vector, or INVALID_ARGUMENT naming the source, the JSON path,
// the offending value and the rule.
//
// Thread-safe.
absl::StatusOr<std::vector<float>> ParseDefaultFeatures(
    absl::string_view json_text, absl::string_view source_name = "<json>",
    std::size_t expected_dimension = 0);

// DefaultFeatures
//
// The feature stage's Plan B (see the file comment): a vector loaded from a
// file in the format of `ParseDefaultFeatures` (or installed with `Set`),
// reloaded atomically; a bad file never replaces a good vector (the previous
// one keeps serving and the call returns why), and before any successful
// load `Get()` refuses with FAILED_PRECONDITION rather than hand out zeros.
//
// Readers get a `shared_ptr<const std::vector<float>>` snapshot: a reload
// swaps the pointer under a short lock, so a reader holds either the whole
// old vector or the whole new one, never a mix, and keeps it alive as long
// as it needs.
//
// Thread-safe. Neither copyable nor movable.
class DefaultFeatures {
 public:
  using Snapshot = std::shared_ptr<const std::vector<float>>;

  // An empty instance, as `options` say (see DefaultFeaturesOptions).
  explicit DefaultFeatures(DefaultFeaturesOptions options)
      : expected_dimension_(options.expected_dimension),
        max_file_bytes_(options.max_file_bytes),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        name_(detail::Printable(options.name)),
        cell_(
            "default features: no vector has been loaded yet (refusing to "
            "serve zeros)") {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ =
        detail::Attach(options.metrics, &Telemetry::AttachComponent, view_);
  }
  // The same with only `expected_dimension` and `max_file_bytes` set.
  explicit DefaultFeatures(
      std::size_t expected_dimension = 0,
      std::size_t max_file_bytes = kMaxDefaultFeaturesBytes)
      : DefaultFeatures(Options(expected_dimension, max_file_bytes)) {}

  DefaultFeatures(const DefaultFeatures&) = delete;
  DefaultFeatures& operator=(const DefaultFeatures&) = delete;
  // First: no scrape may read the features while they go.
  ~DefaultFeatures() { telemetry_.reset(); }

  // DefaultFeatures::Load()
  //
  // A new instance loaded from `path`, or the load's error (see `Reload`).
  // Use it at start-up: a service without its default vector has no Plan B
  // for the feature stage.
  //
  // Thread-safe.
  static absl::StatusOr<std::unique_ptr<DefaultFeatures>> Load(
      const std::string& path, std::size_t expected_dimension = 0,
      std::size_t max_file_bytes = kMaxDefaultFeaturesBytes);
  static absl::StatusOr<std::unique_ptr<DefaultFeatures>> Load(
      const std::string& path, DefaultFeaturesOptions options);

  // DefaultFeatures::Reload()
  //
  // Reads and validates the file at `path` and, only if every check passes,
  // swaps it in. Otherwise the previous vector (if any) keeps serving and
  // the status names the feature file and the fault: the errno-derived
  // status for an unreadable file (NOT_FOUND, PERMISSION_DENIED, ...),
  // FAILED_PRECONDITION for a non-regular file, INVALID_ARGUMENT for a file
  // over the cap, an empty or malformed file, or a content error (see
  // `ParseDefaultFeatures`), or a dimension different from the one serving.
  //
  // Thread-safe; concurrent reloads are each applied atomically, in the
  // order their swaps happen.
  absl::Status Reload(const std::string& path);

  // DefaultFeatures::Set()
  //
  // Installs `values` directly (for vectors that come from somewhere other
  // than a file). The same rules apply: non-empty, finite, the expected
  // dimension. `source` names the origin in the error message.
  //
  // Thread-safe.
  absl::Status Set(std::vector<float> values,
                   absl::string_view source = "<Set>");

  // DefaultFeatures::Get()
  //
  // The current vector, or FAILED_PRECONDITION before any successful load
  // (never zeros). The snapshot stays valid and unchanged however many
  // reloads follow.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::StatusOr<Snapshot> Get() const { return cell_.Get(); }

  // DefaultFeatures::snapshot()
  //
  // The current vector, or null before any successful load.
  //
  // Thread-safe; may be stale the moment it returns.
  Snapshot snapshot() const { return cell_.snapshot(); }

  // DefaultFeatures::Fallback()
  //
  // A fallback for `WithFallback` on a `CircuitBreaker<std::vector<float>>`:
  // returns a copy of the current vector, or Get()'s FAILED_PRECONDITION
  // (so WithFallback returns `absl::StatusOr<StageResult<...>>`).
  //
  // Precondition: this object outlives the returned callable.
  // Thread-safe.
  auto Fallback() const {
    return
        [this]() -> absl::StatusOr<std::vector<float>> { return cell_.Copy(); };
  }

  // The dimension of the vector serving now, or 0 before any load.
  // Thread-safe; may be stale the moment it returns.
  std::size_t dimension() const {
    Snapshot s = snapshot();
    return s == nullptr ? 0 : s->size();
  }

  // How many loads (Reload, Set) succeeded / were refused. The same pair of
  // names as `HotList`'s.
  // Thread-safe; may be stale the moment it returns.
  uint64_t updates() const { return cell_.updates(); }
  uint64_t failures() const { return cell_.failures(); }
  // The names these counters had before (kept: same values).
  uint64_t reloads() const { return updates(); }
  uint64_t errors() const { return failures(); }

  // The status of the last load attempt (OK before any).
  // Thread-safe; may be stale the moment it returns.
  absl::Status last_status() const { return cell_.last_status(); }

  // Time since the serving vector was installed (by the features' clock),
  // or InfiniteDuration() before the first. Never negative: a clock stepped
  // back behind the install reads as zero. Thread-safe.
  absl::Duration age() const {
    const auto [serving, at] = cell_.snapshot_and_time();
    if (serving == nullptr) return absl::InfiniteDuration();
    return detail::ElapsedSince(clock_->Now(), at);
  }

  // The name in its metrics (DefaultFeaturesOptions::name).
  const std::string& name() const { return name_; }

  // Age, dimension and loads accepted and refused, as its telemetry reads
  // them (source_stats.hpp). Thread-safe; may be stale the moment it
  // returns.
  DefaultFeaturesStats stats() const {
    const auto cell = cell_.stats();
    DefaultFeaturesStats st;
    if (cell.snapshot != nullptr) {
      st.age = detail::ElapsedSince(clock_->Now(), cell.installed_at);
      st.dimension = cell.snapshot->size();
    }
    st.accepted = cell.updates;
    st.refused = cell.failures;
    st.last_ok = cell_.last_status().ok();
    return st;
  }

 private:
  static DefaultFeaturesOptions Options(std::size_t expected_dimension,
                                        std::size_t max_file_bytes) {
    DefaultFeaturesOptions o;
    o.expected_dimension = expected_dimension;
    o.max_file_bytes = max_file_bytes;
    return o;
  }
  absl::Status Install(std::vector<float> values, absl::string_view source);

  const std::size_t expected_dimension_;
  const std::size_t max_file_bytes_;
  const Clock* const clock_;
  const std::string name_;
  detail::SnapshotCell<std::vector<float>> cell_;

  // What the telemetry reads: a member, so the features have no virtual
  // functions of their own.
  const detail::OwnerView<DefaultFeatures, DefaultFeaturesStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details -------------------------------------------------

namespace detail {

// What errors call a default-features text or file.
inline constexpr absl::string_view kFeatureFile = "feature file";

}  // namespace detail

inline absl::StatusOr<std::vector<float>> ParseDefaultFeatures(
    absl::string_view json_text, absl::string_view source_name,
    std::size_t expected_dimension) {
  namespace json = detail::json;
  const std::string source = detail::Printable(source_name);
  absl::StatusOr<json::Json> parsed =
      json::ParseJsonDocument(json_text, source, detail::kFeatureFile);
  if (!parsed.ok()) return parsed.status();
  const json::Json& root = *parsed;
  if (!root.is_object()) {
    return json::WrongType(source, "(top level)", root,
                           "an object with \"dimension\" and \"values\"");
  }
  absl::StatusOr<std::size_t> dimension =
      detail::ReadFeatureDimension(source, root, expected_dimension);
  if (!dimension.ok()) return dimension.status();
  const auto values_it = root.find("values");
  if (values_it == root.end()) {
    return json::ErrorWithText(source, "values", "(missing)",
                               "the top-level object needs a \"values\" key");
  }
  std::vector<float> values;
  absl::Status read = detail::ReadFeatureValues(source, "values", *values_it,
                                                *dimension, &values);
  if (!read.ok()) return read;
  return values;
}

inline absl::StatusOr<std::unique_ptr<DefaultFeatures>> DefaultFeatures::Load(
    const std::string& path, std::size_t expected_dimension,
    std::size_t max_file_bytes) {
  return Load(path, Options(expected_dimension, max_file_bytes));
}

inline absl::StatusOr<std::unique_ptr<DefaultFeatures>> DefaultFeatures::Load(
    const std::string& path, DefaultFeaturesOptions options) {
  auto features = std::make_unique<DefaultFeatures>(std::move(options));
  absl::Status s = features->Reload(path);
  if (!s.ok()) return s;
  return features;
}

inline absl::Status DefaultFeatures::Reload(const std::string& path) {
  // Every error says "default features", so the log line tells which Plan B
  // lost its file.
  const auto prefixed = [](const absl::Status& s) {
    return detail::Reworded(s, absl::StrCat("default features: ", s.message()));
  };
  absl::StatusOr<std::string> content =
      detail::ReadFileCapped(path, max_file_bytes_, detail::kFeatureFile);
  if (!content.ok()) return cell_.Fail(prefixed(content.status()));
  absl::StatusOr<std::vector<float>> values =
      ParseDefaultFeatures(*content, path, expected_dimension_);
  if (!values.ok()) return cell_.Fail(prefixed(values.status()));
  return Install(*std::move(values), detail::Printable(path));
}

inline absl::Status DefaultFeatures::Set(std::vector<float> values,
                                         absl::string_view source) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return cell_.Fail(absl::InvalidArgumentError(
          absl::StrCat("default features: ", source, ": values[", i,
                       "] = ", values[i], " is not finite")));
    }
  }
  return Install(std::move(values), source);
}

inline absl::Status DefaultFeatures::Install(std::vector<float> values,
                                             absl::string_view source) {
  if (values.empty()) {
    return cell_.Fail(absl::InvalidArgumentError(
        absl::StrCat("default features: ", source, ": the vector is empty")));
  }
  // Built outside the lock; the lock covers only the check against the
  // serving vector and the pointer swap.
  auto fresh = std::make_shared<const std::vector<float>>(std::move(values));
  const std::size_t size = fresh->size();
  return cell_.Install(
      std::move(fresh), clock_->Now(),
      [this, size, source](const Snapshot& serving) -> absl::Status {
        const std::size_t want = expected_dimension_ != 0 ? expected_dimension_
                                 : serving != nullptr     ? serving->size()
                                                          : 0;
        if (want == 0 || size == want) return absl::OkStatus();
        return absl::InvalidArgumentError(absl::StrCat(
            "default features: ", source, ": dimension ", size,
            " does not match the dimension ", want, " being served"));
      });
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEFAULT_FEATURES_HPP_
