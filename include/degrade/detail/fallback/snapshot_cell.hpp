// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/fallback/snapshot_cell.hpp
// -----------------------------------------------------------------------------
//
// `SnapshotCell<T>`: the serving state of a Plan-B data source
// (`DefaultFeatures`, `HotList<Item>`), written once for both. It holds
//
//   * the serving value as a `shared_ptr<const T>`: an update swaps the
//     pointer under a short lock, so a reader holds either the whole old
//     value or the whole new one, never a mix, and keeps it alive as long as
//     it needs however many updates follow;
//   * when that value was installed (for a hot list's age);
//   * the outcome of the latest attempt, and how many attempts succeeded
//     (`updates`) and failed (`failures`), so a failed reload is visible
//     without ever replacing what serves.
//
// Nothing slow happens under the lock: values are built (parsed, fetched,
// truncated) before `Install()` and the lock covers only the checks against
// the serving value and the swap.
//
//   detail::SnapshotCell<std::vector<float>> cell("no vector loaded yet");
//   absl::Status s = cell.Install(
//       std::make_shared<const std::vector<float>>(std::move(values)),
//       clock.Now(), [&](const auto& serving) -> absl::Status {
//         if (serving != nullptr && serving->size() != dim) return Mismatch();
//         return absl::OkStatus();
//       });
//   absl::StatusOr<std::vector<float>> copy = cell.Copy();  // a Fallback()
//
// Thread-safe: every member may be called concurrently.

#ifndef DEGRADE_DETAIL_FALLBACK_SNAPSHOT_CELL_HPP_
#define DEGRADE_DETAIL_FALLBACK_SNAPSHOT_CELL_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

template <typename T>
class SnapshotCell {
 public:
  using Snapshot = std::shared_ptr<const T>;

  // Everything at one instant, for exporters.
  struct Stats {
    Snapshot snapshot;  // null before the first install
    absl::Time installed_at = absl::InfinitePast();
    uint64_t updates = 0;
    uint64_t failures = 0;
  };

  // `empty_error` is the FAILED_PRECONDITION message of `Get()` (and of
  // `Copy()`) before the first successful install.
  explicit SnapshotCell(std::string empty_error)
      : empty_error_(std::move(empty_error)) {}

  SnapshotCell(const SnapshotCell&) = delete;
  SnapshotCell& operator=(const SnapshotCell&) = delete;

  // The serving value, or null before the first install. May be stale the
  // moment it returns.
  Snapshot snapshot() const {
    MutexLock lock(&mu_);
    return snapshot_;
  }

  // The serving value and when it was installed (null and InfinitePast
  // before the first install), read together.
  std::pair<Snapshot, absl::Time> snapshot_and_time() const {
    MutexLock lock(&mu_);
    return {snapshot_, installed_at_};
  }

  // The serving value, or FAILED_PRECONDITION(empty_error) before the first.
  absl::StatusOr<Snapshot> Get() const {
    Snapshot s = snapshot();
    if (s == nullptr) return absl::FailedPreconditionError(empty_error_);
    return s;
  }

  // A copy of the serving value, or Get()'s error: the body of a source's
  // `Fallback()`.
  absl::StatusOr<T> Copy() const {
    absl::StatusOr<Snapshot> s = Get();
    if (!s.ok()) return s.status();
    return T(**s);
  }

  // Makes `fresh` (not null) the serving value, installed at `at`, if
  // `accept(serving)` returns OK; `accept` sees the value serving now (null
  // before the first) and runs under the cell's lock, so it must be quick
  // and must not call the cell. On OK counts an update and clears the last
  // status; otherwise counts a failure, keeps accept's status as the last
  // and leaves the serving value alone. Returns that status.
  template <typename Accept>
  absl::Status Install(Snapshot fresh, absl::Time at, Accept&& accept) {
    // The value replaced is destroyed after the lock (it may be the last
    // reference to a large set): readers copying the pointer never wait
    // for its destructor.
    Snapshot replaced;
    MutexLock lock(&mu_);
    absl::Status accepted = accept(static_cast<const Snapshot&>(snapshot_));
    if (!accepted.ok()) return FailLocked(std::move(accepted));
    replaced = std::exchange(snapshot_, std::move(fresh));
    installed_at_ = at;
    ++updates_;
    last_status_ = absl::OkStatus();
    return last_status_;
  }

  // As above, accepting any value.
  absl::Status Install(Snapshot fresh, absl::Time at = absl::InfinitePast()) {
    return Install(std::move(fresh), at,
                   [](const Snapshot&) { return absl::OkStatus(); });
  }

  // Records a failed attempt that never got as far as a value: counts it and
  // keeps `status` as the last. Returns `status`.
  absl::Status Fail(absl::Status status) {
    MutexLock lock(&mu_);
    return FailLocked(std::move(status));
  }

  // Successful installs and failed attempts so far.
  uint64_t updates() const {
    MutexLock lock(&mu_);
    return updates_;
  }
  uint64_t failures() const {
    MutexLock lock(&mu_);
    return failures_;
  }
  // The outcome of the latest attempt (OK before any).
  absl::Status last_status() const {
    MutexLock lock(&mu_);
    return last_status_;
  }

  Stats stats() const {
    MutexLock lock(&mu_);
    return Stats{snapshot_, installed_at_, updates_, failures_};
  }

 private:
  absl::Status FailLocked(absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++failures_;
    last_status_ = status;
    return status;
  }

  const std::string empty_error_;
  mutable Mutex mu_;
  Snapshot snapshot_ ABSL_GUARDED_BY(mu_);
  absl::Time installed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t updates_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_FALLBACK_SNAPSHOT_CELL_HPP_
