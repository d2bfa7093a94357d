// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: breaker_family.hpp
// -----------------------------------------------------------------------------
//
// One circuit breaker per key — a recall route, a feature-service shard, a
// backend host — from shared settings, so that one sick host trips only its
// own breaker. Breakers are created on first use; the family holds at most
// `max_breakers` of them and evicts idle ones, so a service that talks to
// thousands of keys has bounded memory:
//
//   degrade::BreakerSettings settings;
//   settings.name = "recall";
//   settings.timeout = absl::Seconds(5);
//   degrade::FamilyOptions options;
//   options.max_breakers = 1024;
//   options.idle_ttl = absl::Minutes(10);
//   degrade::BreakerFamily<std::string, Candidates> routes(settings, options);
//
//   auto breaker = routes.Get("vector_search");   // shared_ptr
//   absl::StatusOr<Candidates> c = breaker->Execute([&] { return Search(q); });
//
// Each breaker is named `<settings.name>/<key>`. An evicted breaker stays
// alive for whoever still holds it (shared ownership), but the family forgets
// it: the next Get() of that key starts a fresh, closed breaker. Eviction
// therefore drops a key's history; pick `idle_ttl` longer than the breakers'
// `timeout` so an open breaker isn't forgotten while its backend is down.
//
// Thread safety: every member is thread-safe. Get() of an existing key takes
// a shared (reader) lock and one relaxed atomic store; creating or evicting
// takes the exclusive lock.

#ifndef DEGRADE_BREAKER_FAMILY_HPP_
#define DEGRADE_BREAKER_FAMILY_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// FamilyOptions
//
// The bounds of a BreakerFamily.
struct FamilyOptions {
  // The most breakers the family holds; 0 means 1024. When a new key would
  // exceed it, the least recently used breaker is evicted (preferring one
  // nobody holds right now).
  std::size_t max_breakers = 0;
  // A breaker not used for this long is evicted at the next creation of a
  // breaker (or by EvictIdle()). 0 means never by age, only by the bound.
  absl::Duration idle_ttl = absl::ZeroDuration();
};

namespace detail {

// Names string-like and arithmetic keys by their value, anything else by
// its hash (pass a key_name function for readable names).
template <typename Key, typename Hash>
std::string DefaultKeyName(const Key& key) {
  if constexpr (std::is_convertible_v<const Key&, absl::string_view>) {
    return std::string(absl::string_view(key));
  } else if constexpr (std::is_arithmetic_v<Key>) {
    return absl::StrCat(key);
  } else {
    return absl::StrCat("#", Hash()(key));
  }
}

}  // namespace detail

// BreakerFamily<Key, T>
//
// See the file comment. `Key` needs std::hash and ==. Neither copyable nor
// movable.
template <typename Key, typename T, typename Hash = std::hash<Key>>
class BreakerFamily {
 public:
  using Breaker = CircuitBreaker<T>;
  using KeyName = std::function<std::string(const Key&)>;

  // `settings` is the template for every breaker (its `clock` also times
  // idleness). `key_name` turns a key into the breaker's name suffix; unset
  // names string-like and arithmetic keys by value, others by hash. It runs
  // outside the family's lock, so it may call the family; if it throws, the
  // default name is used.
  explicit BreakerFamily(BreakerSettings settings, FamilyOptions options = {},
                         KeyName key_name = nullptr)
      : settings_(std::move(settings)),
        clock_(settings_.clock != nullptr ? settings_.clock
                                          : &RealClock::Instance()),
        max_(options.max_breakers == 0 ? 1024 : options.max_breakers),
        idle_ttl_(options.idle_ttl),
        key_name_(key_name ? std::move(key_name)
                           : KeyName(detail::DefaultKeyName<Key, Hash>)) {}

  BreakerFamily(const BreakerFamily&) = delete;
  BreakerFamily& operator=(const BreakerFamily&) = delete;

  // The breaker for `key`, created (closed) on first use.
  std::shared_ptr<Breaker> Get(const Key& key) {
    const int64_t now = NowNanos();
    {
      detail::ReaderLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        it->second.last_used->store(now, std::memory_order_relaxed);
        return it->second.breaker;
      }
    }
    // The user's naming, before the lock: one that calls back into the
    // family (Find, size, Get of another key) must not wait for itself.
    const std::string suffix =
        detail::InvokeOr([&] { return key_name_(key); },
                         [&](absl::string_view) {
                           return detail::DefaultKeyName<Key, Hash>(key);
                         });
    detail::WriterLock lock(&mu_);
    auto it = entries_.find(key);  // another thread may have created it
    if (it != entries_.end()) {
      it->second.last_used->store(now, std::memory_order_relaxed);
      return it->second.breaker;
    }
    EvictIdleLocked(now);
    while (entries_.size() >= max_) EvictOneLocked();
    BreakerSettings s = settings_;
    s.name = absl::StrCat(settings_.name, "/", suffix);
    Entry e;
    e.breaker = std::make_shared<Breaker>(std::move(s));
    e.last_used = std::make_unique<std::atomic<int64_t>>(now);
    ++created_;
    return entries_.emplace(key, std::move(e)).first->second.breaker;
  }

  // The breaker for `key` if the family holds one; nullptr otherwise. Does
  // not count as a use.
  std::shared_ptr<Breaker> Find(const Key& key) const {
    detail::ReaderLock lock(&mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.breaker;
  }

  // Evicts every breaker idle for longer than `idle_ttl`; returns how many.
  std::size_t EvictIdle() {
    detail::WriterLock lock(&mu_);
    return EvictIdleLocked(NowNanos());
  }

  std::size_t size() const {
    detail::ReaderLock lock(&mu_);
    return entries_.size();
  }
  // Breakers created and evicted since construction.
  uint64_t created() const {
    detail::ReaderLock lock(&mu_);
    return created_;
  }
  uint64_t evicted() const {
    detail::ReaderLock lock(&mu_);
    return evicted_;
  }

 private:
  struct Entry {
    std::shared_ptr<Breaker> breaker;
    // Written under the shared lock by concurrent Get()s, hence atomic; in
    // its own allocation so the map can rehash without moving it.
    std::unique_ptr<std::atomic<int64_t>> last_used;
  };

  int64_t NowNanos() const { return absl::ToUnixNanos(clock_->CoarseNow()); }

  std::size_t EvictIdleLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (idle_ttl_ <= absl::ZeroDuration()) return 0;
    const int64_t ttl = absl::ToInt64Nanoseconds(idle_ttl_);
    std::size_t n = 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      const int64_t last =
          it->second.last_used->load(std::memory_order_relaxed);
      if (detail::ElapsedNanosSince(now, last) > ttl) {
        it = entries_.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    evicted_ += n;
    return n;
  }

  // Evicts the least recently used breaker, preferring one that nobody
  // outside the family holds (use_count 1).
  void EvictOneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto victim = entries_.end();
    bool victim_free = false;
    int64_t victim_last = 0;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const bool free = it->second.breaker.use_count() == 1;
      const int64_t last =
          it->second.last_used->load(std::memory_order_relaxed);
      if (victim == entries_.end() || (free && !victim_free) ||
          (free == victim_free && last < victim_last)) {
        victim = it;
        victim_free = free;
        victim_last = last;
      }
    }
    if (victim != entries_.end()) {
      entries_.erase(victim);
      ++evicted_;
    }
  }

  const BreakerSettings settings_;
  const Clock* const clock_;
  const std::size_t max_;
  const absl::Duration idle_ttl_;
  const KeyName key_name_;

  mutable detail::SharedMutex mu_;
  // The map and its counters; each entry's `last_used` is also written under
  // the shared lock (it is atomic for that reason).
  std::unordered_map<Key, Entry, Hash> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t created_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evicted_ ABSL_GUARDED_BY(mu_) = 0;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_BREAKER_FAMILY_HPP_
