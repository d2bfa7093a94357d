// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The resync members of etcd::EtcdPrefixWatcher, included at the end of
// etcd/watcher.hpp (as watcher_stream_inl.hpp is): what a read applies, the
// checks of a Range response, a cluster made anew (wiped, restored, another
// id), and the snapshot delivered as puts and deletes. Including it alone
// includes the header first.
//
// Thread safety: see EtcdPrefixWatcher; these run on the watcher's thread.

#ifndef DEGRADE_ETCD_DETAIL_WATCHER_RESYNC_INL_HPP_
#define DEGRADE_ETCD_DETAIL_WATCHER_RESYNC_INL_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "degrade/etcd/watcher.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace etcd {

inline absl::Status EtcdPrefixWatcher::CheckRange(const RangeResult& r) const {
  // The watch starts at revision + 1.
  if (r.revision < 0 || r.revision == std::numeric_limits<int64_t>::max()) {
    return absl::DataLossError(
        absl::StrCat(Where(), ": Range: header.revision = ", r.revision,
                     ": not a revision a watch can follow"));
  }
  // A key changed after the read it is part of: a later event for it would
  // look older than it, and be dropped as a replay.
  for (std::size_t i = 0; i < r.kvs.size(); ++i) {
    const int64_t rev = r.kvs[i].mod_revision;
    if (rev < 0 || rev > r.revision) {
      return absl::DataLossError(
          absl::StrCat(Where(), ": Range: kvs[", i, "].mod_revision = ", rev,
                       ": not within the read's header.revision ", r.revision));
    }
  }
  return absl::OkStatus();
}

inline void EtcdPrefixWatcher::NoticeCluster(const RangeResult& r) {
  const bool other_cluster =
      cluster_id_ != 0 && r.cluster_id != 0 && r.cluster_id != cluster_id_;
  if (other_cluster || cluster_changed_ || r.revision < seen_revision_) {
    // Its revisions restarted: a delivered mod_revision says nothing now.
    for (auto& kv : delivered_) kv.second = Delivered{};
    refused_.clear();
    seen_revision_ = 0;
  }
  cluster_changed_ = false;
  if (r.cluster_id != 0) cluster_id_ = r.cluster_id;
  seen_revision_ = std::max(seen_revision_, r.revision);
  PublishRevision();
}

inline void EtcdPrefixWatcher::ApplySnapshot(const RangeResult& r) {
  std::map<std::string, int64_t> seen;
  for (const KeyValue& kv : r.kvs) {
    if (stopping()) return;
    seen.emplace(kv.key, kv.mod_revision);
    auto it = delivered_.find(kv.key);
    if (it != delivered_.end() && it->second.rev == kv.mod_revision &&
        it->second.hash == Hash(kv.value)) {
      continue;
    }
    Put(kv.key, kv.value, kv.mod_revision);
  }
  for (auto it = delivered_.begin(); it != delivered_.end();) {
    const std::string key = (it++)->first;  // Erase() invalidates `it - 1`
    if (seen.count(key) == 0) Erase(key, r.revision);
  }
  for (auto it = refused_.begin(); it != refused_.end();) {
    it = seen.count(it->first) == 0 ? refused_.erase(it) : std::next(it);
  }
}

inline void EtcdPrefixWatcher::Put(const std::string& key,
                                   const std::string& value, int64_t rev) {
  if (value.size() > options_.max_value_bytes) {
    auto [it, inserted] = refused_.emplace(key, rev);
    if (!inserted && it->second == rev) return;  // reported already
    it->second = rev;
    Bump(refused_count_);
    Report(absl::InvalidArgumentError(
        absl::StrCat("etcd ", options_.endpoint, " watch ",
                     detail::etcd::Quoted(options_.prefix), ": value of key ",
                     detail::etcd::Quoted(key), " at revision ", rev, " is ",
                     value.size(), " bytes, over max_value_bytes ",
                     options_.max_value_bytes, "; not delivered")));
    return;
  }
  refused_.erase(key);
  delivered_[key] = Delivered{rev, Hash(value)};
  Bump(events_);
  if (options_.on_put) {
    Guard("on_put", [&] { options_.on_put(key, value, rev); });
  }
}

inline void EtcdPrefixWatcher::Erase(const std::string& key, int64_t revision) {
  refused_.erase(key);
  if (delivered_.erase(key) == 0) return;  // never delivered: nothing to undo
  Bump(events_);
  if (options_.on_delete) {
    Guard("on_delete", [&] { options_.on_delete(key, revision); });
  }
}

}  // namespace etcd
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_WATCHER_RESYNC_INL_HPP_
