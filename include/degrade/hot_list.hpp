// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: hot_list.hpp
// -----------------------------------------------------------------------------
//
// The recall stage's Plan B: the global hot list, the top N (200) items of
// the last good snapshot, served when personalised recall fails. In the
// article it is computed offline every hour and read from Redis
// (redis/hot_list_source.hpp is that reader); `HotList<Item>` keeps the
// serving snapshot, refreshes it in the background, and never lets a failed,
// empty or malformed refresh replace it. Its `age()` says how old the serving
// snapshot is, so a dashboard can alarm on a list that stopped refreshing.
//
//   degrade::HotListOptions<std::string> o;
//   o.source = [&] { return redis.TopItems(500); };
//   degrade::HotList<std::string> hot(std::move(o));
//   hot.LoadBaseline("/data/hot_baseline.json").IgnoreError();  // ["a","b"]
//   hot.Start(absl::Hours(1));
//
//   auto recalled = degrade::WithFallback(recall_cb, "recall", call,
//                                         hot.Fallback());  //
//                                         with_fallback.hpp
//
// Every error names the list and the fault: "hot: refresh failed, keeping
// the previous snapshot: ...", "hot: cannot open hot-list file
// '/data/hot_baseline.json': No such file or directory".
//
// Nothing here throws: an exception thrown by the source is caught and
// reported as a failed refresh (`IsCallableException`). The header compiles
// with -fno-exceptions.
//
// Thread safety: `HotList` is thread-safe; readers take a short lock only to
// copy a `shared_ptr`, never while the source is queried or a file parsed.

#ifndef DEGRADE_HOT_LIST_HPP_
#define DEGRADE_HOT_LIST_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/fallback/snapshot_cell.hpp"
#include "degrade/detail/file_io.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/hot_list_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {

// What errors call a hot-list baseline text or file.
inline constexpr absl::string_view kHotListFile = "hot-list file";

}  // namespace detail

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
  // The telemetry the list reports to (telemetry.hpp): with a
  // MetricsRegistry, degrade_hot_list_* (its snapshot's age, size and refresh
  // results) under `name`. nullptr means DefaultTelemetry() (none unless
  // SetDefaultTelemetry() was called); NoTelemetry() means none even then.
  // REQUIRES: outlives the list.
  Telemetry* metrics = nullptr;
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
        name_(detail::Printable(options.name)),
        cell_(absl::StrCat(name_, ": no snapshot has been published yet")) {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ =
        detail::Attach(options.metrics, &Telemetry::AttachHotList, view_);
  }

  HotList(const HotList&) = delete;
  HotList& operator=(const HotList&) = delete;

  ~HotList() {
    Stop();
    telemetry_.reset();  // before anything its view reads
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
      return cell_.Fail(absl::FailedPreconditionError(absl::StrCat(
          name_, ": refusing an empty snapshot; keeping the previous one")));
    }
    if (items.size() > top_n_) {
      // erase, not resize: Item need not be default-constructible.
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(top_n_),
                  items.end());
    }
    items.shrink_to_fit();
    auto fresh = std::make_shared<const std::vector<Item>>(std::move(items));
    return cell_.Install(std::move(fresh), clock_->Now());
  }

  // HotList::RefreshOnce()
  //
  // Calls the source (outside every lock) and publishes its list. A source
  // error, an exception it throws, or an empty list keeps the previous
  // snapshot; the status (naming the list) is returned and kept in
  // `last_status()`. FAILED_PRECONDITION if there is no source, or when
  // called from the source itself (it would call the source again, without
  // end); that one changes nothing, not even `last_status()`.
  //
  // Thread-safe.
  absl::Status RefreshOnce() {
    if (detail::CallbackScope::Inside(this)) {
      return absl::FailedPreconditionError(absl::StrCat(
          name_, ": RefreshOnce() called from the list's own source"));
    }
    if (!source_) {
      return cell_.Fail(absl::FailedPreconditionError(
          absl::StrCat(name_, ": no source to refresh from")));
    }
    absl::StatusOr<std::vector<Item>> items = CallSource();
    if (!items.ok()) {
      return cell_.Fail(detail::Reworded(
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
  // and then every `period`, until `Stop()` or destruction. It sleeps on a
  // condition variable between refreshes, so Stop() wakes it at once.
  //
  // INVALID_ARGUMENT naming the list for a period outside [1 ms, 1 year]
  // (zero, negative and sub-millisecond ones would spin, infinity is not a
  // period: call RefreshOnce() for one refresh); a running refresher is left
  // as it was. RESOURCE_EXHAUSTED when the thread cannot be started (out of
  // threads or memory): no refresher runs then (a running one was stopped
  // first), the serving snapshot stays, and Start may be called again.
  // From the source on the list's own thread it cannot restart the thread
  // it runs on: the new period applies after this refresh, and it takes
  // back a Stop() made earlier in the same call.
  //
  // Thread-safe.
  absl::Status Start(absl::Duration period) {
    absl::Status valid = detail::CheckPeriod(name_, period);
    if (!valid.ok()) return valid;
    // Refresh failures are kept in last_status() / failures().
    absl::Status started =
        worker_.TryRestart(period, [this] { RefreshOnce().IgnoreError(); });
    if (started.ok()) return started;
    return absl::Status(started.code(),
                        absl::StrCat(name_, ": refresher ", started.message()));
  }

  // HotList::Stop()
  //
  // Stops the background thread, waiting for a refresh in progress to end.
  // No-op if it is not running. From the source on the list's own thread,
  // it stops after this refresh instead (the next Start() works).
  //
  // Thread-safe.
  void Stop() { worker_.Stop(); }

  // HotList::LoadBaseline()
  //
  // Publishes a baseline read from a JSON array of item ids, e.g.
  // `["i1", "i2"]` or `[101, 102]` — for use at start-up, before the first
  // refresh. Available when `Item` is `std::string` or `int64_t`. Errors name
  // the list, the hot-list file and the fault (unreadable, over
  // kMaxHotListBytes, malformed, not an array, an element of the wrong type,
  // empty); the previous snapshot is kept.
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
    absl::StatusOr<std::string> content =
        detail::ReadFileCapped(path, kMaxHotListBytes, detail::kHotListFile);
    if (!content.ok()) {
      return cell_.Fail(detail::Reworded(
          content.status(),
          absl::StrCat(name_, ": ", content.status().message())));
    }
    absl::StatusOr<std::vector<Item>> items = std::invoke(
        parse, absl::string_view(*content), detail::Printable(path));
    if (!items.ok()) {
      return cell_.Fail(detail::Reworded(
          items.status(),
          absl::StrCat(name_, ": baseline: ", items.status().message())));
    }
    if (items->empty()) {
      return cell_.Fail(absl::FailedPreconditionError(
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
  Snapshot snapshot() const { return cell_.snapshot(); }

  // HotList::Get()
  //
  // The serving snapshot, or FAILED_PRECONDITION before the first one.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::StatusOr<Snapshot> Get() const { return cell_.Get(); }

  // HotList::Fallback()
  //
  // A fallback for `WithFallback` on a `CircuitBreaker<std::vector<Item>>`:
  // a copy of the serving snapshot, or Get()'s error.
  //
  // Precondition: this list outlives the returned callable. Thread-safe.
  auto Fallback() const {
    return
        [this]() -> absl::StatusOr<std::vector<Item>> { return cell_.Copy(); };
  }

  // HotList::age()
  //
  // Time since the serving snapshot was taken (by the list's clock), or
  // `absl::InfiniteDuration()` before the first one. Never negative: a clock
  // stepped back behind the snapshot reads as an age of zero.
  //
  // Thread-safe; may be stale the moment it returns.
  absl::Duration age() const {
    const auto [serving, taken] = cell_.snapshot_and_time();
    if (serving == nullptr) return absl::InfiniteDuration();
    return detail::ElapsedSince(clock_->Now(), taken);
  }

  // The status of the last publish/refresh/baseline attempt (OK before any).
  // Thread-safe; may be stale the moment it returns.
  absl::Status last_status() const { return cell_.last_status(); }
  // Successful publishes (Publish, RefreshOnce, LoadBaseline) and failed
  // attempts so far. The same pair of names as `DefaultFeatures`'s.
  // Thread-safe; may be stale the moment they return.
  uint64_t updates() const { return cell_.updates(); }
  uint64_t failures() const { return cell_.failures(); }
  // The name `updates()` had before (kept: same value).
  uint64_t refreshes() const { return updates(); }
  std::size_t top_n() const { return top_n_; }
  const std::string& name() const { return name_; }

  // Age, items and the update/failure counts of the serving snapshot, as
  // its telemetry reads them (hot_list_stats.hpp). Thread-safe; may be
  // stale the moment it returns.
  HotListStats stats() const {
    const typename detail::SnapshotCell<std::vector<Item>>::Stats cell =
        cell_.stats();
    HotListStats st;
    st.items = cell.snapshot != nullptr ? cell.snapshot->size() : 0;
    st.refreshes = cell.updates;
    st.failures = cell.failures;
    st.age = age();
    return st;
  }

 private:
  absl::StatusOr<std::vector<Item>> CallSource() {
    const detail::CallbackScope in_source(this);
    return detail::InvokeCatching<std::vector<Item>>(source_, "hot list",
                                                     name_);
  }

  static absl::StatusOr<std::vector<Item>> ParseIds(absl::string_view text,
                                                    const std::string& source) {
    namespace json = detail::json;
    absl::StatusOr<json::Json> parsed =
        json::ParseJsonDocument(text, source, detail::kHotListFile);
    if (!parsed.ok()) return parsed.status();
    const json::Json& root = *parsed;
    const char* const wanted = std::is_same_v<Item, std::string>
                                   ? "an array of string ids"
                                   : "an array of integer ids";
    if (!root.is_array())
      return json::WrongType(source, "(top level)", root, wanted);
    std::vector<Item> items;
    items.reserve(root.size());
    for (std::size_t i = 0; i < root.size(); ++i) {
      const json::Json& v = root[i];
      const std::string path = json::AppendIndex("", i);
      if constexpr (std::is_same_v<Item, std::string>) {
        if (!v.is_string())
          return json::WrongType(source, path, v, "a string id");
        items.push_back(v.get<std::string>());
      } else {
        if (!v.is_number_integer()) {
          return json::WrongType(source, path, v, "an integer id");
        }
        if (v.is_number_unsigned() &&
            v.get<uint64_t>() >
                static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return json::Error(source, path, v, "is out of int64 range");
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

  detail::SnapshotCell<std::vector<Item>> cell_;

  // What the telemetry reads: a member, so the list has no virtual
  // functions of its own.
  const detail::OwnerView<HotList, HotListStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
  // Last, so that it stops before anything its refreshes touch is destroyed.
  detail::PeriodicWorker worker_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_HOT_LIST_HPP_
