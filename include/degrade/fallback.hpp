// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: fallback.hpp
// -----------------------------------------------------------------------------
//
// Plan B for each stage of a recommendation request, as combinators around
// the user's own calls. Each stage keeps serving when its dependency fails,
// with a lossy answer that is tagged as degraded (`StageResult::is_default()`
// and a `DegradationTrace` entry naming the stage and why), so the ranker can
// down-weight it, logs can keep it out of training, and dashboards can count
// how many layers a request lost.
//
//   Stage          Plan B (this header)
//   ------------   -------------------------------------------------------
//   features       `DefaultFeatures`: the global average feature vector,
//                  computed offline and shipped as a local JSON file. Never
//                  zeros: a zero vector scores every item the same.
//   recall         `HotList<Item>`: the top-N (200) hot items from the last
//                  good snapshot, refreshed in the background.
//   ranking        `OrderByRecallScore` / `RankOrFallback`: skip the model,
//                  order by recall score.
//   re-ranking     `DedupOnly` / `RerankOrFallback`: only remove duplicates.
//
// All of them are built on `WithFallback`, which runs a call through a
// `CircuitBreaker<T>` and turns any failure (breaker open, too many half-open
// trials, the call's error, an exception it threw) into the fallback value:
//
//   degrade::CircuitBreaker<std::vector<float>> feature_cb(settings);
//   auto defaults = degrade::DefaultFeatures::Load("/data/avg.json", 64);
//   if (!defaults.ok()) { /* refuse to start: there is no Plan B */ }
//
//   absl::StatusOr<degrade::StageResult<std::vector<float>>> f =
//       degrade::WithFallback(feature_cb, "features",
//                             [&] { return feature_client.Get(user); },
//                             (*defaults)->Fallback());
//   // f->is_default() is true and f->trace() is "v1;features=open" while
//   // the feature service's breaker is open.
//
//   degrade::StageResult<std::vector<Item>> ranked = degrade::RankOrFallback(
//       f->trace(), rank_cb, "rank",
//       [&](const std::vector<Item>& c) { return ranker.Rank(c); },
//       std::move(recalled), [](const Item& i) { return i.recall_score; });
//   // ranked.trace() carries the features entry too: traces flow stage to
//   // stage.
//
// The fallback may be a value, a no-argument callable, or a callable taking
// the failure's `const absl::Status&`. A fallback that itself can fail
// (returns `absl::StatusOr<T>`, as `DefaultFeatures::Fallback()` does before
// its first successful load) makes `WithFallback` return
// `absl::StatusOr<StageResult<T>>`; otherwise it returns `StageResult<T>`.
//
// Nothing here throws. Exceptions thrown by the wrapped call are caught by
// the breaker and counted as failures; the fallback and the key/score/id
// functions are expected not to throw (they are the last line of defence, and
// catching there would need a third answer). The header compiles with
// -fno-exceptions.
//
// Thread safety: the free functions are thread-safe when the callables they
// are given are. `DefaultFeatures` and `HotList` are thread-safe; their
// readers take a short lock only to copy a `shared_ptr`, never while a file
// is parsed or a source is queried.

#ifndef DEGRADE_FALLBACK_HPP_
#define DEGRADE_FALLBACK_HPP_

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/metrics.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"
#include "nlohmann/json.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {

// What a fallback of type `Fb` produces for `T`: the callable's result, or
// `T` for a plain value.
template <typename T, typename Fb>
auto InvokeFallback(Fb& fb, const absl::Status& failure) {
  if constexpr (std::is_invocable_v<Fb&, const absl::Status&>) {
    return std::invoke(fb, failure);
  } else if constexpr (std::is_invocable_v<Fb&>) {
    (void)failure;
    return std::invoke(fb);
  } else {
    static_assert(std::is_constructible_v<T, Fb&>,
                  "WithFallback: the fallback must be a value convertible to "
                  "T, a callable taking no arguments or const absl::Status&, "
                  "returning T or absl::StatusOr<T>");
    (void)failure;
    return T(fb);
  }
}

template <typename T, typename Fb>
using FallbackOutput =
    decltype(InvokeFallback<T>(std::declval<Fb&>(), absl::Status()));

template <typename T, typename Fb>
inline constexpr bool kFallibleFallback =
    kIsStatusOrOf<FallbackOutput<T, Fb>, T>;

template <typename T, typename Fb>
using WithFallbackResult =
    std::conditional_t<kFallibleFallback<T, Fb>, absl::StatusOr<StageResult<T>>,
                       StageResult<T>>;

// The shared body of every WithFallback overload. `upstream` may be null.
template <typename T, typename Call, typename Fb>
WithFallbackResult<T, Fb> RunWithFallback(const DegradationTrace* upstream,
                                          CircuitBreaker<T>& breaker,
                                          absl::string_view stage, Call& call,
                                          Fb& fallback) {
  absl::StatusOr<T> fresh = breaker.Execute(call);
  if (fresh.ok()) {
    // The happy path: no allocation beyond the value itself, no lock beyond
    // what the breaker takes.
    return upstream == nullptr
               ? StageResult<T>::Fresh(*std::move(fresh))
               : StageResult<T>::From(*upstream, *std::move(fresh));
  }
  const absl::Status& failure = fresh.status();
  const DegradeReason reason = ReasonFromStatus(failure);
  if constexpr (kFallibleFallback<T, Fb>) {
    absl::StatusOr<T> plan_b = InvokeFallback<T>(fallback, failure);
    if (!plan_b.ok()) {
      // Both plans failed: say both causes, and keep the fallback's code,
      // which describes why there is no answer at all.
      return Reworded(
          plan_b.status(),
          absl::StrCat(
              "stage '", stage, "': the call failed (", failure.ToString(),
              ") and so did its fallback: ", plan_b.status().message()));
    }
    StageResult<T> r =
        StageResult<T>::Fallback(*std::move(plan_b), stage, reason);
    if (upstream != nullptr) r.MergeUpstream(*upstream);
    return r;
  } else {
    StageResult<T> r = StageResult<T>::Fallback(
        T(InvokeFallback<T>(fallback, failure)), stage, reason);
    if (upstream != nullptr) r.MergeUpstream(*upstream);
    return r;
  }
}

}  // namespace detail

// WithFallback()
//
// Runs `call` through `breaker.Execute` (so it is admitted or rejected by the
// breaker, its outcome is counted, and an exception it throws becomes a
// failure). On success returns `StageResult<T>::Fresh(value)`. On any failure
// returns `StageResult<T>::Fallback(fallback_value, stage,
// ReasonFromStatus(status))`, where `fallback` is one of:
//
//   * a callable `(const absl::Status& failure) -> T or StatusOr<T>`,
//   * a callable `() -> T or StatusOr<T>`,
//   * a value convertible to `T` (copied on each failure).
//
// If the fallback returns `absl::StatusOr<T>`, the result is
// `absl::StatusOr<StageResult<T>>`: the fallback's error, its message naming
// the stage and both causes, when both plans fail.
//
// Preconditions: `stage` is a valid stage name (`IsValidStageName`; an
// invalid one is counted as dropped in the trace, not recorded). `call` takes
// no arguments and returns `T` or `absl::StatusOr<T>`. `fallback` must not
// throw.
//
// Thread-safe if `call` and `fallback` are.
template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback) {
  return detail::RunWithFallback<T>(nullptr, breaker, stage, call, fallback);
}

// WithFallback(upstream, ...)
//
// As above, with the upstream stage's trace merged in (upstream entries
// first, see `StageResult::MergeUpstream`), so a request's trace accumulates
// every stage that degraded. A fresh result carries the upstream trace but
// is not `is_default()`.
template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(
    const DegradationTrace& upstream, CircuitBreaker<T>& breaker,
    absl::string_view stage, Call&& call, Fallback fallback) {
  return detail::RunWithFallback<T>(&upstream, breaker, stage, call, fallback);
}

// WithFallback(upstream_result, ...)
//
// As above, taking the upstream trace from a `StageResult<U>`.
template <typename U, typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(
    const StageResult<U>& upstream, CircuitBreaker<T>& breaker,
    absl::string_view stage, Call&& call, Fallback fallback) {
  return detail::RunWithFallback<T>(&upstream.trace(), breaker, stage, call,
                                    fallback);
}

// ---- The file reader shared by DefaultFeatures and HotList ----

namespace detail {

// Reads the file at `path` (at most `max_bytes`; `kind` says what the file
// is), prefixing any error with `what` so the caller's log line says which
// fallback it belongs to.
inline absl::StatusOr<std::string> ReadFallbackFile(const std::string& path,
                                                    std::size_t max_bytes,
                                                    absl::string_view kind,
                                                    absl::string_view what) {
  absl::StatusOr<std::string> content = ReadFileCapped(path, max_bytes, kind);
  if (!content.ok()) {
    return Reworded(content.status(),
                    absl::StrCat(what, ": ", content.status().message()));
  }
  return content;
}

}  // namespace detail

// ---- DefaultFeatures ----

// The largest default-features file read, 16 MiB: a 100k-dimension vector
// written with full precision is about 2.5 MB. Anything bigger is the wrong
// file and is refused before it is fully read.
inline constexpr std::size_t kMaxDefaultFeaturesBytes = std::size_t{16} << 20;

// The largest dimension accepted, so a corrupt "dimension" can't make us
// reserve gigabytes.
inline constexpr std::size_t kMaxFeatureDimension = std::size_t{1} << 24;

// ParseDefaultFeatures()
//
// Parses the default-features format:
//
//   {"dimension": 4, "values": [0.12, -0.5, 3, 1e-3]}
//
// "dimension" is a positive integer; "values" a non-empty array of exactly
// "dimension" JSON numbers, each finite and within float range. Other keys
// are ignored (the offline job may add "generated_at", "model", ...);
// duplicate keys are refused. If `expected_dimension` is non-zero,
// "dimension" must equal it. `source` names the text in messages (a path).
//
// Returns the vector, or INVALID_ARGUMENT naming the source, the JSON path,
// the offending value and the rule.
//
// Thread-safe.
inline absl::StatusOr<std::vector<float>> ParseDefaultFeatures(
    absl::string_view json_text, absl::string_view source_name = "<json>",
    std::size_t expected_dimension = 0) {
  namespace cj = detail::json;
  const std::string source = detail::Printable(source_name);
  absl::StatusOr<cj::Json> parsed =
      cj::ParseJsonDocument(json_text, source, "feature file");
  if (!parsed.ok()) return parsed.status();
  const cj::Json& root = *parsed;
  if (!root.is_object()) {
    return cj::WrongType(source, "(top level)", root,
                         "an object with \"dimension\" and \"values\"");
  }
  const auto dim_it = root.find("dimension");
  if (dim_it == root.end()) {
    return cj::ErrorWithText(source, "dimension", "(missing)",
                             "the top-level object needs a \"dimension\" key");
  }
  if (!dim_it->is_number_integer()) {
    return cj::WrongType(source, "dimension", *dim_it, "a positive integer");
  }
  // nlohmann stores non-negative integers as unsigned; a negative one is
  // signed.
  if (!dim_it->is_number_unsigned() || dim_it->get<uint64_t>() == 0 ||
      dim_it->get<uint64_t>() > kMaxFeatureDimension) {
    return cj::Error(source, "dimension", *dim_it,
                     absl::StrCat("must be in 1..", kMaxFeatureDimension));
  }
  const auto dimension = static_cast<std::size_t>(dim_it->get<uint64_t>());
  if (expected_dimension != 0 && dimension != expected_dimension) {
    return cj::Error(
        source, "dimension", *dim_it,
        absl::StrCat("the model expects dimension ", expected_dimension));
  }
  const auto values_it = root.find("values");
  if (values_it == root.end()) {
    return cj::ErrorWithText(source, "values", "(missing)",
                             "the top-level object needs a \"values\" key");
  }
  if (!values_it->is_array()) {
    return cj::WrongType(source, "values", *values_it, "an array of numbers");
  }
  if (values_it->empty()) {
    return cj::ErrorWithText(source, "values", "[]",
                             "is empty; a default vector needs values");
  }
  if (values_it->size() != dimension) {
    return cj::ErrorWithText(
        source, "values", absl::StrCat("(", values_it->size(), " values)"),
        absl::StrCat("has ", values_it->size(), " values but \"dimension\" is ",
                     dimension));
  }
  std::vector<float> values;
  values.reserve(dimension);
  for (std::size_t i = 0; i < dimension; ++i) {
    const cj::Json& v = (*values_it)[i];
    const std::string path = cj::AppendIndex("values", i);
    if (!v.is_number()) return cj::WrongType(source, path, v, "a number");
    const double d = v.get<double>();
    // A float overflow would become inf and poison every score; the JSON
    // parser already refuses literals beyond double range (1e400).
    if (!std::isfinite(d) || std::fabs(d) > static_cast<double>(FLT_MAX)) {
      return cj::Error(source, path, v,
                       "is not a finite number within float range");
    }
    values.push_back(static_cast<float>(d));
  }
  return values;
}

// DefaultFeatures
//
// The feature stage's Plan B: the global average feature vector, computed
// offline (daily) and shipped next to the binary as a JSON file in the
// format of `ParseDefaultFeatures`. It is loaded at start-up and reloaded
// when the offline job ships a new one; a bad file never replaces a good
// vector (the previous one keeps serving and the call returns why), and
// before any successful load `Get()` refuses with FAILED_PRECONDITION rather
// than hand out zeros, which would score every item the same.
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

  // An empty instance. `expected_dimension` (0: any) is the dimension every
  // load must have; with 0, the first successful load fixes it for later
  // reloads, because the model consuming the vector can't change shape.
  // `max_file_bytes` caps the file read.
  explicit DefaultFeatures(
      std::size_t expected_dimension = 0,
      std::size_t max_file_bytes = kMaxDefaultFeaturesBytes)
      : expected_dimension_(expected_dimension),
        max_file_bytes_(max_file_bytes) {}

  DefaultFeatures(const DefaultFeatures&) = delete;
  DefaultFeatures& operator=(const DefaultFeatures&) = delete;

  // DefaultFeatures::Load()
  //
  // A new instance loaded from `path`, or the load's error (see `Reload`).
  // Use it at start-up: a service without its default vector has no Plan B
  // for the feature stage.
  //
  // Thread-safe.
  static absl::StatusOr<std::unique_ptr<DefaultFeatures>> Load(
      const std::string& path, std::size_t expected_dimension = 0,
      std::size_t max_file_bytes = kMaxDefaultFeaturesBytes) {
    auto features =
        std::make_unique<DefaultFeatures>(expected_dimension, max_file_bytes);
    absl::Status s = features->Reload(path);
    if (!s.ok()) return s;
    return features;
  }

  // DefaultFeatures::Reload()
  //
  // Reads and validates the file at `path` and, only if every check passes,
  // swaps it in. Otherwise the previous vector (if any) keeps serving and
  // the status names the file and the fault: the errno-derived status for an
  // unreadable file (NOT_FOUND, PERMISSION_DENIED, ...), FAILED_PRECONDITION
  // for a non-regular file, INVALID_ARGUMENT for a file over the cap, an
  // empty or malformed file, or a content error (see
  // `ParseDefaultFeatures`), or a dimension different from the one serving.
  //
  // Thread-safe; concurrent reloads are each applied atomically, in the
  // order their swaps happen.
  absl::Status Reload(const std::string& path) {
    absl::StatusOr<std::string> content = detail::ReadFallbackFile(
        path, max_file_bytes_, "feature file", "default features");
    if (!content.ok()) return Reject(content.status());
    absl::StatusOr<std::vector<float>> values =
        ParseDefaultFeatures(*content, path, expected_dimension_);
    if (!values.ok()) {
      return Reject(detail::Reworded(
          values.status(),
          absl::StrCat("default features: ", values.status().message())));
    }
    return Install(std::move(*values), detail::Printable(path));
  }

  // DefaultFeatures::Set()
  //
  // Installs `values` directly (for vectors that come from somewhere other
  // than a file). The same rules apply: non-empty, finite, the expected
  // dimension. `source` names the origin in the error message.
  //
  // Thread-safe.
  absl::Status Set(std::vector<float> values,
                   absl::string_view source = "<Set>") {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        return Reject(absl::InvalidArgumentError(
            absl::StrCat("default features: ", source, ": values[", i,
                         "] = ", values[i], " is not finite")));
      }
    }
    return Install(std::move(values), source);
  }

  // DefaultFeatures::Get()
  //
  // The current vector, or FAILED_PRECONDITION before any successful load
  // (never zeros). The snapshot stays valid and unchanged however many
  // reloads follow.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::StatusOr<Snapshot> Get() const {
    Snapshot s = snapshot();
    if (s == nullptr) {
      return absl::FailedPreconditionError(
          "default features: no vector has been loaded yet (refusing to "
          "serve zeros)");
    }
    return s;
  }

  // DefaultFeatures::snapshot()
  //
  // The current vector, or null before any successful load.
  //
  // Thread-safe; may be stale the moment it returns.
  Snapshot snapshot() const {
    detail::MutexLock lock(&mu_);
    return values_;
  }

  // DefaultFeatures::Fallback()
  //
  // A fallback for `WithFallback` on a `CircuitBreaker<std::vector<float>>`:
  // returns a copy of the current vector, or Get()'s FAILED_PRECONDITION
  // (so WithFallback returns `absl::StatusOr<StageResult<...>>`).
  //
  // Precondition: this object outlives the returned callable.
  // Thread-safe.
  auto Fallback() const {
    return [this]() -> absl::StatusOr<std::vector<float>> {
      absl::StatusOr<Snapshot> s = Get();
      if (!s.ok()) return s.status();
      return std::vector<float>(**s);
    };
  }

  // The dimension of the vector serving now, or 0 before any load.
  // Thread-safe; may be stale the moment it returns.
  std::size_t dimension() const {
    Snapshot s = snapshot();
    return s == nullptr ? 0 : s->size();
  }

  // How many loads succeeded / were refused.
  // Thread-safe; may be stale the moment it returns.
  uint64_t reloads() const {
    detail::MutexLock lock(&mu_);
    return reloads_;
  }
  uint64_t errors() const {
    detail::MutexLock lock(&mu_);
    return errors_;
  }
  // The status of the last load attempt (OK before any).
  absl::Status last_status() const {
    detail::MutexLock lock(&mu_);
    return last_status_;
  }

 private:
  absl::Status Reject(absl::Status status) {
    detail::MutexLock lock(&mu_);
    ++errors_;
    last_status_ = status;
    return status;
  }

  absl::Status Install(std::vector<float> values, absl::string_view source) {
    if (values.empty()) {
      return Reject(absl::InvalidArgumentError(
          absl::StrCat("default features: ", source, ": the vector is empty")));
    }
    // Built outside the lock; the lock covers only the checks against the
    // serving vector and the pointer swap.
    auto fresh = std::make_shared<const std::vector<float>>(std::move(values));
    detail::MutexLock lock(&mu_);
    const std::size_t want = expected_dimension_ != 0 ? expected_dimension_
                             : values_ != nullptr     ? values_->size()
                                                      : 0;
    if (want != 0 && fresh->size() != want) {
      ++errors_;
      last_status_ = absl::InvalidArgumentError(absl::StrCat(
          "default features: ", source, ": dimension ", fresh->size(),
          " does not match the dimension ", want, " being served"));
      return last_status_;
    }
    values_ = std::move(fresh);
    ++reloads_;
    last_status_ = absl::OkStatus();
    return last_status_;
  }

  const std::size_t expected_dimension_;
  const std::size_t max_file_bytes_;
  mutable detail::Mutex mu_;
  Snapshot values_ ABSL_GUARDED_BY(mu_);
  uint64_t reloads_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_status_ ABSL_GUARDED_BY(mu_);
};

// ---- HotList ----

// The largest hot-list baseline file read, 16 MiB.
inline constexpr std::size_t kMaxHotListBytes = std::size_t{16} << 20;

// HotListOptions
//
// Settings for `HotList<Item>`.
template <typename Item>
struct HotListOptions {
  // How many items a snapshot keeps (the first `top_n` of what is
  // published). Default 200, the article's; 0 is treated as 1.
  std::size_t top_n = 200;
  // Where `RefreshOnce()` and the background thread get a new list, e.g. a
  // Redis ZREVRANGE (`redis::HotListSource::SourceFor`, in the optional
  // degrade/redis/hot_list_source.hpp). May be empty (snapshots are then only
  // pushed with `Publish`). Runs outside every lock; it may block for as long
  // as it needs, readers are not affected.
  std::function<absl::StatusOr<std::vector<Item>>()> source;
  // The clock for `age()`; null means `RealClock::Instance()`. Must outlive
  // the list.
  const Clock* clock = nullptr;
  // Names the list in messages and metrics.
  std::string name = "hot_list";
  // Where the list exports degrade_hot_list_* (its snapshot's age, size and
  // refresh results); it registers under `name`. nullptr means
  // MetricsRegistry::Default().
  MetricsRegistry* metrics = nullptr;
};

// HotList<Item>
//
// The recall stage's Plan B: the global hot list, the top N items from the
// latest good snapshot. Snapshots are pushed (`Publish`) or pulled from
// `HotListOptions::source` by `RefreshOnce()` or a background thread
// (`Start(period)`, hourly in the article). A failed or empty refresh keeps
// the previous snapshot and is reported; `age()` tells how old the serving
// snapshot is, so a dashboard can alarm on a list that stopped refreshing.
//
//   degrade::HotListOptions<std::string> o;
//   o.source = [&] { return redis.TopItems(500); };
//   degrade::HotList<std::string> hot(std::move(o));
//   hot.LoadBaseline("/data/hot_baseline.json").IgnoreError();  // ["a","b"]
//   hot.Start(absl::Hours(1));
//   auto recalled = degrade::WithFallback(recall_cb, "recall", call,
//                                         hot.Fallback());
//
// Thread-safe. Neither copyable nor movable (the background thread holds
// its address). The destructor stops the thread.
template <typename Item>
class HotList {
 public:
  using Snapshot = std::shared_ptr<const std::vector<Item>>;
  using Source = std::function<absl::StatusOr<std::vector<Item>>()>;

  explicit HotList(HotListOptions<Item> options = {})
      : top_n_(options.top_n == 0 ? 1 : options.top_n),
        source_(std::move(options.source)),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        name_(detail::Printable(options.name)) {
    MetricsRegistry& registry = options.metrics != nullptr
                                    ? *options.metrics
                                    : MetricsRegistry::Default();
    registration_ = registry.Register("hot_list", name_,
                                      [this](MetricWriter& w) { Collect(w); });
  }

  HotList(const HotList&) = delete;
  HotList& operator=(const HotList&) = delete;

  ~HotList() {
    Stop();
    registration_.Reset();
  }

  // HotList::Publish()
  //
  // Makes `items` (truncated to top_n) the serving snapshot, taken now. An
  // empty list is refused with FAILED_PRECONDITION and the previous
  // snapshot kept: an empty hot list is no Plan B.
  //
  // Thread-safe.
  absl::Status Publish(std::vector<Item> items) {
    if (items.empty()) {
      return Record(absl::FailedPreconditionError(absl::StrCat(
          name_, ": refusing an empty snapshot; keeping the previous one")));
    }
    if (items.size() > top_n_) {
      // erase, not resize: Item need not be default-constructible.
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(top_n_),
                  items.end());
    }
    items.shrink_to_fit();
    auto fresh = std::make_shared<const std::vector<Item>>(std::move(items));
    const absl::Time now = clock_->Now();
    detail::MutexLock lock(&mu_);
    snapshot_ = std::move(fresh);
    taken_at_ = now;
    ++refreshes_;
    last_status_ = absl::OkStatus();
    return last_status_;
  }

  // HotList::RefreshOnce()
  //
  // Calls the source (outside every lock) and publishes its list. A source
  // error, an exception it throws, or an empty list keeps the previous
  // snapshot; the status (naming the list) is returned and kept in
  // `last_status()`. FAILED_PRECONDITION if there is no source.
  //
  // Thread-safe.
  absl::Status RefreshOnce() {
    if (!source_) {
      return Record(absl::FailedPreconditionError(
          absl::StrCat(name_, ": no source to refresh from")));
    }
    absl::StatusOr<std::vector<Item>> items = CallSource();
    if (!items.ok()) {
      return Record(detail::Reworded(
          items.status(), absl::StrCat(name_,
                                       ": refresh failed, keeping the previous "
                                       "snapshot: ",
                                       items.status().message())));
    }
    return Publish(*std::move(items));
  }

  // HotList::Start()
  //
  // Starts (or restarts) a background thread calling `RefreshOnce()` now
  // and then every `period` (clamped to [1 ms, 1 year]), until `Stop()` or
  // destruction. It sleeps on a condition variable between refreshes, so
  // Stop() wakes it at once.
  //
  // Thread-safe. Must not be called from the source.
  void Start(absl::Duration period) {
    // Failures are kept in last_status() / failures().
    worker_.Restart(period, [this] { RefreshOnce().IgnoreError(); });
  }

  // HotList::Stop()
  //
  // Stops the background thread, waiting for a refresh in progress to end.
  // No-op if it is not running.
  //
  // Thread-safe. Must not be called from the source.
  void Stop() { worker_.Stop(); }

  // HotList::LoadBaseline()
  //
  // Publishes a baseline read from a JSON array of item ids, e.g.
  // `["i1", "i2"]` or `[101, 102]` — for use at start-up, before the first
  // refresh. Available when `Item` is `std::string` or `int64_t`. Errors name
  // the file and the fault (unreadable, over kMaxHotListBytes, malformed, not
  // an array, an element of the wrong type, empty); the previous snapshot
  // is kept.
  //
  // Thread-safe.
  absl::Status LoadBaseline(const std::string& path) {
    static_assert(
        std::is_same_v<Item, std::string> || std::is_same_v<Item, int64_t>,
        "HotList::LoadBaseline(path) reads string or int64_t ids; "
        "for other items pass a parse function");
    return LoadBaseline(path,
                        [](absl::string_view text, const std::string& source) {
                          return ParseIds(text, source);
                        });
  }

  // HotList::LoadBaseline(path, parse)
  //
  // As above, with the file's text turned into items by
  // `parse(absl::string_view text, const std::string& path) ->
  // absl::StatusOr<std::vector<Item>>`, which must not throw.
  //
  // Thread-safe.
  template <typename Parse>
  absl::Status LoadBaseline(const std::string& path, Parse&& parse) {
    absl::StatusOr<std::string> content = detail::ReadFallbackFile(
        path, kMaxHotListBytes, "hot-list file", name_);
    if (!content.ok()) return Record(content.status());
    absl::StatusOr<std::vector<Item>> items = std::invoke(
        parse, absl::string_view(*content), detail::Printable(path));
    if (!items.ok()) {
      return Record(detail::Reworded(
          items.status(),
          absl::StrCat(name_, ": baseline: ", items.status().message())));
    }
    if (items->empty()) {
      return Record(absl::FailedPreconditionError(
          absl::StrCat(name_, ": baseline ", detail::Printable(path),
                       " has no items; keeping the previous snapshot")));
    }
    return Publish(*std::move(items));
  }

  // HotList::snapshot()
  //
  // The serving snapshot (at most top_n items), or null before the first
  // successful publish.
  //
  // Thread-safe; never waits for a refresh; may be stale the moment it
  // returns.
  Snapshot snapshot() const {
    detail::MutexLock lock(&mu_);
    return snapshot_;
  }

  // HotList::Get()
  //
  // The serving snapshot, or FAILED_PRECONDITION before the first one.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::StatusOr<Snapshot> Get() const {
    Snapshot s = snapshot();
    if (s == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(name_, ": no snapshot has been published yet"));
    }
    return s;
  }

  // HotList::Fallback()
  //
  // A fallback for `WithFallback` on a `CircuitBreaker<std::vector<Item>>`:
  // a copy of the serving snapshot, or Get()'s error.
  //
  // Precondition: this list outlives the returned callable. Thread-safe.
  auto Fallback() const {
    return [this]() -> absl::StatusOr<std::vector<Item>> {
      absl::StatusOr<Snapshot> s = Get();
      if (!s.ok()) return s.status();
      return std::vector<Item>(**s);
    };
  }

  // HotList::age()
  //
  // Time since the serving snapshot was taken (by the list's clock), or
  // `absl::InfiniteDuration()` before the first one.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::Duration age() const {
    absl::Time taken;
    {
      detail::MutexLock lock(&mu_);
      if (snapshot_ == nullptr) return absl::InfiniteDuration();
      taken = taken_at_;
    }
    return clock_->Now() - taken;
  }

  // The status of the last publish/refresh/baseline attempt (OK before any).
  // Thread-safe; may be stale the moment it returns.
  absl::Status last_status() const {
    detail::MutexLock lock(&mu_);
    return last_status_;
  }
  // Successful publishes and failed attempts so far.
  uint64_t refreshes() const {
    detail::MutexLock lock(&mu_);
    return refreshes_;
  }
  uint64_t failures() const {
    detail::MutexLock lock(&mu_);
    return failures_;
  }
  std::size_t top_n() const { return top_n_; }
  const std::string& name() const { return name_; }

 private:
  absl::Status Record(absl::Status status) {
    detail::MutexLock lock(&mu_);
    ++failures_;
    last_status_ = status;
    return status;
  }

  void Collect(MetricWriter& w) const {
    const std::string& name = w.component();
    std::size_t items = 0;
    uint64_t refreshes = 0;
    uint64_t failures = 0;
    {
      detail::MutexLock lock(&mu_);
      items = snapshot_ != nullptr ? snapshot_->size() : 0;
      refreshes = refreshes_;
      failures = failures_;
    }
    const absl::Duration age = this->age();
    w.Gauge("degrade_hot_list_age_seconds",
            "Age of the hot list's serving snapshot; +Inf before the first "
            "one. A rising age means refreshes are failing.",
            {{"hot_list", name}},
            age == absl::InfiniteDuration()
                ? std::numeric_limits<double>::infinity()
                : absl::ToDoubleSeconds(age));
    w.Gauge("degrade_hot_list_items", "Items in the serving snapshot.",
            {{"hot_list", name}}, static_cast<double>(items));
    constexpr absl::string_view kRefreshesHelp =
        "Hot-list snapshot updates by result: ok (published) or failed (the "
        "previous snapshot kept serving).";
    w.Counter("degrade_hot_list_refreshes_total", kRefreshesHelp,
              {{"hot_list", name}, {"result", "ok"}},
              static_cast<double>(refreshes));
    w.Counter("degrade_hot_list_refreshes_total", kRefreshesHelp,
              {{"hot_list", name}, {"result", "failed"}},
              static_cast<double>(failures));
  }

  absl::StatusOr<std::vector<Item>> CallSource() {
    return detail::InvokeCatching<std::vector<Item>>(source_, "hot list",
                                                     name_);
  }

  static absl::StatusOr<std::vector<Item>> ParseIds(absl::string_view text,
                                                    const std::string& source) {
    namespace cj = detail::json;
    absl::StatusOr<cj::Json> parsed =
        cj::ParseJsonDocument(text, source, "hot-list file");
    if (!parsed.ok()) return parsed.status();
    const cj::Json& root = *parsed;
    const char* const wanted = std::is_same_v<Item, std::string>
                                   ? "an array of string ids"
                                   : "an array of integer ids";
    if (!root.is_array())
      return cj::WrongType(source, "(top level)", root, wanted);
    std::vector<Item> items;
    items.reserve(root.size());
    for (std::size_t i = 0; i < root.size(); ++i) {
      const cj::Json& v = root[i];
      const std::string path = cj::AppendIndex("", i);
      if constexpr (std::is_same_v<Item, std::string>) {
        if (!v.is_string())
          return cj::WrongType(source, path, v, "a string id");
        items.push_back(v.get<std::string>());
      } else {
        if (!v.is_number_integer()) {
          return cj::WrongType(source, path, v, "an integer id");
        }
        if (v.is_number_unsigned() &&
            v.get<uint64_t>() >
                static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return cj::Error(source, path, v, "is out of int64 range");
        }
        items.push_back(v.get<int64_t>());
      }
    }
    return items;
  }

  const std::size_t top_n_;
  const Source source_;
  const Clock* const clock_;
  const std::string name_;

  mutable detail::Mutex mu_;
  Snapshot snapshot_ ABSL_GUARDED_BY(mu_);
  absl::Time taken_at_ ABSL_GUARDED_BY(mu_);
  uint64_t refreshes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_status_ ABSL_GUARDED_BY(mu_);

  // Last, so that it stops before anything its refreshes touch is destroyed.
  detail::PeriodicWorker worker_;
  MetricsRegistry::Registration registration_;
};

// ---- Ranking and re-ranking fallbacks ----

// OrderByRecallScore()
//
// The ranking stage's Plan B: `candidates` ordered by `score_of(candidate)`
// (convertible to double), highest first; ties keep their recall order
// (stable). NaN scores go last, so a bad score can't break the sort's
// ordering contract.
//
// Thread-safe if `score_of` is. `score_of` must not throw.
template <typename Candidate, typename ScoreOf>
std::vector<Candidate> OrderByRecallScore(std::vector<Candidate> candidates,
                                          ScoreOf score_of) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&score_of](const Candidate& a, const Candidate& b) {
                     const double sa = static_cast<double>(score_of(a));
                     const double sb = static_cast<double>(score_of(b));
                     if (std::isnan(sa)) return false;
                     if (std::isnan(sb)) return true;
                     return sa > sb;
                   });
  return candidates;
}

// DedupOnly()
//
// The re-ranking stage's Plan B: `items` in their order with repeated ids
// removed, the first occurrence winning. `id_of(item)` returns an id with a
// `std::hash` specialisation and `==`; ids are copied into a set.
//
// Thread-safe if `id_of` is. `id_of` must not throw.
template <typename Item, typename IdOf>
std::vector<Item> DedupOnly(std::vector<Item> items, IdOf id_of) {
  using Id = std::decay_t<std::invoke_result_t<IdOf&, const Item&>>;
  // std::unordered_set rather than absl::flat_hash_set: the latter needs a
  // compiled Abseil library that degrade::degrade does not link, and this is
  // the fallback path, not the hot one.
  std::unordered_set<Id> seen;
  seen.reserve(items.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!seen.insert(std::invoke(id_of, items[i])).second) continue;
    if (kept != i) items[kept] = std::move(items[i]);
    ++kept;
  }
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(kept), items.end());
  return items;
}

namespace detail {

// Runs `stage_call(items)` through the breaker; on failure applies
// `plan_b(std::move(items))`. `upstream` may be null.
template <typename Item, typename StageCall, typename PlanB>
StageResult<std::vector<Item>> RunListStage(
    const DegradationTrace* upstream,
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    StageCall& stage_call, std::vector<Item> items, PlanB plan_b) {
  // The call sees `items` by const reference, so they are still ours to
  // fall back on.
  auto call = [&stage_call, &items] { return std::invoke(stage_call, items); };
  auto fallback = [&items, &plan_b]() -> std::vector<Item> {
    return plan_b(std::move(items));
  };
  return RunWithFallback<std::vector<Item>>(upstream, breaker, stage, call,
                                            fallback);
}

}  // namespace detail

// RankOrFallback()
//
// Runs `rank_call(const std::vector<Candidate>&)` (returning the ranked
// `std::vector<Candidate>` or a StatusOr of it) through `breaker`; on any
// failure returns the candidates ordered by `OrderByRecallScore(score_of)`,
// tagged `stage`. The overload taking `upstream` merges that trace in.
//
// Thread-safe if the callables are.
template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    CircuitBreaker<std::vector<Candidate>>& breaker, absl::string_view stage,
    RankCall&& rank_call, std::vector<Candidate> candidates, ScoreOf score_of) {
  return detail::RunListStage<Candidate>(
      nullptr, breaker, stage, rank_call, std::move(candidates),
      [&score_of](std::vector<Candidate> c) {
        return OrderByRecallScore(std::move(c), score_of);
      });
}

template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    const DegradationTrace& upstream,
    CircuitBreaker<std::vector<Candidate>>& breaker, absl::string_view stage,
    RankCall&& rank_call, std::vector<Candidate> candidates, ScoreOf score_of) {
  return detail::RunListStage<Candidate>(
      &upstream, breaker, stage, rank_call, std::move(candidates),
      [&score_of](std::vector<Candidate> c) {
        return OrderByRecallScore(std::move(c), score_of);
      });
}

// RerankOrFallback()
//
// Runs `rerank_call(const std::vector<Item>&)` through `breaker`; on any
// failure returns `DedupOnly(items, id_of)`, tagged `stage`. The overload
// taking `upstream` merges that trace in.
//
// Thread-safe if the callables are.
template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    RerankCall&& rerank_call, std::vector<Item> items, IdOf id_of) {
  return detail::RunListStage<Item>(
      nullptr, breaker, stage, rerank_call, std::move(items),
      [&id_of](std::vector<Item> v) { return DedupOnly(std::move(v), id_of); });
}

template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    const DegradationTrace& upstream,
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    RerankCall&& rerank_call, std::vector<Item> items, IdOf id_of) {
  return detail::RunListStage<Item>(
      &upstream, breaker, stage, rerank_call, std::move(items),
      [&id_of](std::vector<Item> v) { return DedupOnly(std::move(v), id_of); });
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_FALLBACK_HPP_
