// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stale_cache.hpp
// -----------------------------------------------------------------------------
//
// The last value a per-key source returned successfully, kept to be served
// when the source fails (RFC 5861's stale-if-error). A recommendation
// service's feature stage asks the feature store for each user; every
// success writes through to the cache, and when the store errs, times out
// or is shed, the stage serves that user's last good features before
// falling back to segment or global averages. The cache holds values for
// that one purpose: it never serves a value older than the caller allows
// (`stale_if_error`, at most the hard `max_age`), and it never holds more
// than `max_entries` values or `max_bytes` bytes, at any moment.
//
// Which values to keep when full is decided by S3-FIFO per shard: users who
// come back are kept, a crawler sweeping a million one-off ids passes
// through a small queue without displacing them. Puts, erases and sweeps
// lock one shard. A hit takes no lock and allocates nothing: it hashes the
// key, reads the coarse clock, adds to its shard's reader word on entry
// and on exit (two atomic adds on a line the shard's readers share),
// follows a bucket chain, increments the value's reference count (the
// caller's copy decrements it) and, while the key's use count is below
// its cap of 3, stores it with a relaxed atomic. It never waits for other
// readers; it waits (spinning, then yielding) only while a writer updates
// that shard's table: tens of nanoseconds, more when one put evicts many
// entries (values are freed after the writer lets readers back in). About
// 40 ns on a key in the CPU's caches; with many keys the three dependent
// memory reads (bucket, slot, reference count) dominate
// (benchmarks/stale_cache_benchmark.cpp).
//
//   degrade::LastGoodCacheSettings s;
//   s.name = "user_features";
//   s.max_bytes = 512 << 20;          // charged: key + value + overhead
//   s.max_entries = 1'000'000;
//   s.stale_if_error = absl::Hours(2);
//   using FeatureCache = degrade::LastGoodCache<uint64_t, std::vector<float>>;
//   auto cache = FeatureCache::Create(s).value();
//
//   absl::StatusOr<std::vector<float>> fresh = store.Fetch(user);
//   if (fresh.ok()) {
//     cache->Put(user, *std::move(fresh));
//   } else if (FeatureCache::Lookup stale = cache->FindStale(user);
//              stale.hit()) {
//     Use(*stale.value, stale.age);
//   }
//
// Call SweepExpired() now and then (a periodic worker): values older than
// max_age are never returned, and a sweep also frees their memory.

#ifndef DEGRADE_STALE_CACHE_HPP_
#define DEGRADE_STALE_CACHE_HPP_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/stale_cache/shard.hpp"
#include "degrade/stale_cache_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The most entries a cache may hold (a shard's slots are 32-bit ids).
inline constexpr std::size_t kMaxLastGoodCacheEntries = std::size_t{1} << 31;
inline constexpr std::size_t kMaxLastGoodCacheShards = 1 << 16;

// LastGoodCacheSettings
//
// Thread-compatible: a plain value. `clock` and `metrics` are not owned and
// must outlive the cache. Validate with LastGoodCache<K, V>::Validate().
struct LastGoodCacheSettings {
  std::string name = "last_good";
  // Required, > 0: the bytes charged for all entries together (key +
  // weigher(value) + the per-entry overhead, `LastGoodCache::kOverhead`),
  // split evenly over the shards. Each shard must fit one entry of
  // sizeof(K) + sizeof(V) + overhead.
  std::size_t max_bytes = 0;
  // Required, in [1, 2^31]: entries held at most, split evenly over the
  // shards (the slots are allocated at creation: about
  // sizeof(K) + 60 bytes each).
  std::size_t max_entries = 0;
  // 0: the smallest power of two >= 16 and >= 4 x hardware threads, halved
  // while a shard would get no entry or less than one entry's bytes.
  // Otherwise a power of two in [1, 65536], at most max_entries.
  std::size_t shards = 0;
  // FindStale() returns values at most this old. Finite, > 0.
  absl::Duration stale_if_error = absl::Hours(1);
  // Hard expiry: no lookup returns an older value, and SweepExpired()
  // evicts them. Finite, >= stale_if_error.
  absl::Duration max_age = absl::Hours(24);
  // nullptr: RealClock. Ages are measured on its CoarseNow() (a few ms of
  // resolution on RealClock); a clock stepped back reads as age 0 until it
  // passes the write time again.
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// What a lookup found.
enum class LastGoodResult : uint8_t {
  kHit,     // a value at most as old as asked
  kMiss,    // no value for the key
  kTooOld,  // a value older than asked (not returned)
};

// LastGoodCache<K, V, Hash>
//
// K: default-constructible, copy-assignable, equality-comparable, hashable
// by Hash. V: any type; values are held as shared_ptr<const V>, so a value
// a caller holds stays valid after it is replaced or evicted, and after the
// cache is destroyed.
//
// Thread-safe; neither copyable nor movable. Every function may be called
// from any thread at any time. Find/FindStale take no lock and allocate
// nothing; Put, Erase, SweepExpired and stats() lock one shard at a time.
template <class K, class V, class Hash = absl::Hash<K>>
class LastGoodCache final {
  using Shard = detail::StaleCacheShard<K, V, Hash>;

 public:
  // Bytes of a value. Called once per Put, outside any lock; any result is
  // safe (0 or SIZE_MAX: a value weighing more than a shard's budget is
  // refused). Must not call back into the cache.
  using Weigher = std::function<std::size_t(const V&)>;

  // The bytes charged per entry beyond key and value: the slot less the
  // key, the shared_ptr control block, a bucket head and a ghost place.
  static constexpr std::size_t kOverhead = Shard::kOverhead;

  // The result of a lookup. `value` is non-null exactly when `result` is
  // kHit; `age` (never negative) is the held value's age for kHit and
  // kTooOld, 0 for kMiss.
  struct Lookup {
    LastGoodResult result = LastGoodResult::kMiss;
    std::shared_ptr<const V> value;
    absl::Duration age = absl::ZeroDuration();
    bool hit() const { return result == LastGoodResult::kHit; }
  };

  // Validate(settings)
  //
  // OK, or INVALID_ARGUMENT naming the cache, the first setting at fault and
  // its value ("last-good cache 'x': setting 'max_bytes' = 0 is invalid:
  // ..."). Pure; thread-safe.
  static absl::Status Validate(const LastGoodCacheSettings& s);

  // Create(settings, weigher)
  //
  // INVALID_ARGUMENT (Validate). `weigher` empty: sizeof(V), plus the
  // capacity of a std::vector's or std::string's buffer.
  static absl::StatusOr<std::unique_ptr<LastGoodCache>> Create(
      LastGoodCacheSettings s, Weigher weigher = {});

  LastGoodCache(const LastGoodCache&) = delete;
  LastGoodCache& operator=(const LastGoodCache&) = delete;
  ~LastGoodCache() { telemetry_.reset(); }  // first: its view reads us

  // Put(key, value)
  //
  // Stores a fresh value, stamped with the clock's time now, replacing the
  // key's held value. Evicts first (the small queue, then main; values past
  // max_age before any other) so that entries <= max_entries and
  // bytes <= max_bytes hold at every moment. false, and counted, when the
  // value is refused: null, heavier than one shard's byte budget with its
  // key and overhead (or more than 4 GiB), or stamped by a clock at an
  // infinite time. Never
  // throws beyond what copying `key` or the weigher throw.
  bool Put(const K& key, std::shared_ptr<const V> value);
  // The same, for a value by value: one allocation (allocate_shared).
  bool Put(const K& key, V value) {
    return Put(key,
               std::shared_ptr<const V>(std::make_shared<V>(std::move(value))));
  }

  // Find(key, max_age)
  //
  // The key's value if it is at most min(max_age, settings' max_age) old
  // (a max_age of 0 accepts only a value written at this clock reading).
  // A hit raises the key's use count (it is then kept longer); a miss or
  // too-old result changes nothing but the counts. Lock-free for readers:
  // it may wait only while a Put, Erase or sweep updates the key's shard.
  Lookup Find(const K& key, absl::Duration max_age) const;
  // Find(key, stale_if_error).
  Lookup FindStale(const K& key) const {
    return Find(key, settings_.stale_if_error);
  }

  // Contains(key)
  //
  // Whether a value is held for the key, whatever its age. Not a lookup:
  // not counted, and the key is not kept longer for it. Locks the key's
  // shard; for tests, tools and simulations, not the request path.
  bool Contains(const K& key) const {
    const uint64_t hash = detail::StaleCacheHashOf(hasher_, key);
    return ShardOf(hash).Contains(key, hash);
  }

  // Erase(key)
  //
  // Forgets the key's value; true if one was held. A caller holding the
  // value keeps it.
  bool Erase(const K& key);

  // SweepExpired()
  //
  // Evicts every value older than max_age and returns how many. Costs a
  // pass over every shard's entries, each shard locked in turn; lookups
  // of a shard wait for at most one removal at a time.
  std::size_t SweepExpired();

  const std::string& name() const { return name_; }
  const LastGoodCacheSettings& settings() const { return settings_; }
  std::size_t shard_count() const { return shards_.size(); }

  // A snapshot, read shard by shard (see LastGoodCacheStats).
  LastGoodCacheStats stats() const;

 private:
  LastGoodCache(LastGoodCacheSettings s, Weigher weigher, std::size_t shards);

  static std::size_t MinCharge() { return sizeof(K) + sizeof(V) + kOverhead; }
  static std::size_t AutoShards(const LastGoodCacheSettings& s);
  // Two shifts, so that one shard (shift_ 64) needs no branch.
  Shard& ShardOf(uint64_t hash) const {
    return *shards_[(hash >> 1) >> (shift_ - 1)];
  }
  // The default clock without the virtual call and the absl::Time round
  // trip (about half of a hit's fixed cost otherwise).
  int64_t NowNanos() const {
    return real_clock_ != nullptr ? real_clock_->CoarseUnixNanos()
                                  : absl::ToUnixNanos(clock_->CoarseNow());
  }

  const std::string name_;
  const LastGoodCacheSettings settings_;
  const Clock* const clock_;
  const RealClock* const real_clock_;  // clock_ when it is the default
  const Weigher weigher_;
  const Hash hasher_;
  const int64_t max_age_nanos_;
  const int shift_;  // 64 - log2(shards); the top bits pick the shard
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<uint64_t> refused_too_big_{0};
  std::atomic<uint64_t> refused_null_{0};
  std::atomic<uint64_t> refused_clock_{0};
  const detail::OwnerView<LastGoodCache, LastGoodCacheStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last
};

// ---- Implementation details ----

template <class K, class V, class Hash>
absl::Status LastGoodCache<K, V, Hash>::Validate(
    const LastGoodCacheSettings& s) {
  const detail::SettingOwner who("last-good cache", s.name);
  if (s.max_entries == 0 || s.max_entries > kMaxLastGoodCacheEntries) {
    return who.Invalid("max_entries", s.max_entries,
                       "is required: must be in [1, 2^31]");
  }
  if (s.shards > kMaxLastGoodCacheShards || (s.shards & (s.shards - 1)) != 0) {
    return who.Invalid("shards", s.shards,
                       "must be 0 (automatic) or a power of two in "
                       "[1, 65536]");
  }
  if (s.shards > s.max_entries) {
    return who.Invalid(
        "shards", s.shards,
        absl::StrCat("must be at most max_entries (", s.max_entries,
                     "): every shard holds one "
                     "entry at least"));
  }
  if (s.max_bytes == 0) {
    return who.Invalid("max_bytes", s.max_bytes, "is required: must be > 0");
  }
  const std::size_t shards = s.shards == 0 ? 1 : s.shards;
  if (s.max_bytes / shards < MinCharge()) {
    return who.Invalid("max_bytes", s.max_bytes,
                       absl::StrCat("is too small for one entry per shard: ",
                                    shards, " shard(s) x ", MinCharge(),
                                    " bytes (key + sizeof(value) + overhead)"));
  }
  const auto bad = [](absl::Duration d) {
    return d <= absl::ZeroDuration() || d == absl::InfiniteDuration();
  };
  if (bad(s.stale_if_error)) {
    return who.Invalid("stale_if_error", absl::FormatDuration(s.stale_if_error),
                       "must be finite and > 0");
  }
  if (bad(s.max_age)) {
    return who.Invalid("max_age", absl::FormatDuration(s.max_age),
                       "must be finite and > 0");
  }
  if (s.max_age < s.stale_if_error) {
    return who.Invalid(
        "max_age", absl::FormatDuration(s.max_age),
        absl::StrCat("must be >= stale_if_error (",
                     absl::FormatDuration(s.stale_if_error), ")"));
  }
  return absl::OkStatus();
}

template <class K, class V, class Hash>
std::size_t LastGoodCache<K, V, Hash>::AutoShards(
    const LastGoodCacheSettings& s) {
  if (s.shards != 0) return s.shards;
  std::size_t n = 16;
  const std::size_t want =
      4 * static_cast<std::size_t>(std::thread::hardware_concurrency());
  while (n < want && n < kMaxLastGoodCacheShards) n <<= 1;
  while (n > 1 && (n > s.max_entries || s.max_bytes / n < MinCharge())) {
    n >>= 1;
  }
  return n;
}

template <class K, class V, class Hash>
absl::StatusOr<std::unique_ptr<LastGoodCache<K, V, Hash>>>
LastGoodCache<K, V, Hash>::Create(LastGoodCacheSettings s, Weigher weigher) {
  if (absl::Status v = Validate(s); !v.ok()) return v;
  if (!weigher) weigher = &detail::StaleCacheDefaultWeigh<V>;
  if (s.clock == nullptr) s.clock = &RealClock::Instance();
  const std::size_t shards = AutoShards(s);
  return std::unique_ptr<LastGoodCache>(
      new LastGoodCache(std::move(s), std::move(weigher), shards));
}

template <class K, class V, class Hash>
LastGoodCache<K, V, Hash>::LastGoodCache(LastGoodCacheSettings s,
                                         Weigher weigher, std::size_t shards)
    : name_(detail::Printable(s.name)),
      settings_(std::move(s)),
      clock_(settings_.clock),
      real_clock_(clock_ == &RealClock::Instance() ? &RealClock::Instance()
                                                   : nullptr),
      weigher_(std::move(weigher)),
      hasher_(),
      max_age_nanos_(absl::ToInt64Nanoseconds(settings_.max_age)),
      shift_([shards] {
        int bits = 0;
        while ((std::size_t{1} << bits) < shards) ++bits;
        return 64 - bits;
      }()) {
  shards_.reserve(shards);
  const std::size_t entries = settings_.max_entries / shards;
  const std::size_t entries_left = settings_.max_entries % shards;
  const std::size_t bytes = settings_.max_bytes / shards;
  const std::size_t bytes_left = settings_.max_bytes % shards;
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(std::make_unique<Shard>(
        static_cast<uint32_t>(entries + (i < entries_left ? 1 : 0)),
        bytes + (i < bytes_left ? 1 : 0), hasher_));
  }
  telemetry_ =
      detail::Attach(settings_.metrics, &Telemetry::AttachComponent, view_);
}

template <class K, class V, class Hash>
bool LastGoodCache<K, V, Hash>::Put(const K& key,
                                    std::shared_ptr<const V> value) {
  if (value == nullptr) {
    refused_null_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const std::size_t charge = detail::StaleCacheAddBytes(
      detail::StaleCacheAddBytes(detail::StaleCacheDefaultWeigh(key),
                                 weigher_(*value)),
      kOverhead);
  const uint64_t hash = detail::StaleCacheHashOf(hasher_, key);
  Shard& shard = ShardOf(hash);
  if (charge > shard.max_bytes() || charge > UINT32_MAX) {
    refused_too_big_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const absl::Time now = clock_->CoarseNow();
  if (now == absl::InfiniteFuture() || now == absl::InfinitePast()) {
    refused_clock_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  shard.Put(key, hash, std::move(value), static_cast<uint32_t>(charge),
            absl::ToUnixNanos(now), max_age_nanos_);
  return true;
}

template <class K, class V, class Hash>
typename LastGoodCache<K, V, Hash>::Lookup LastGoodCache<K, V, Hash>::Find(
    const K& key, absl::Duration max_age) const {
  const int64_t limit =
      std::min(absl::ToInt64Nanoseconds(max_age), max_age_nanos_);
  const uint64_t hash = detail::StaleCacheHashOf(hasher_, key);
  const int64_t now = NowNanos();
  Lookup out;
  int64_t age = 0;
  switch (ShardOf(hash).Find(key, hash, now, limit, &out.value, &age)) {
    case Shard::kHit:
      out.result = LastGoodResult::kHit;
      out.age = absl::Nanoseconds(age);
      break;
    case Shard::kTooOld:
      out.result = LastGoodResult::kTooOld;
      out.age = absl::Nanoseconds(age);
      break;
    case Shard::kMiss:
      break;
  }
  return out;
}

template <class K, class V, class Hash>
bool LastGoodCache<K, V, Hash>::Erase(const K& key) {
  const uint64_t hash = detail::StaleCacheHashOf(hasher_, key);
  return ShardOf(hash).Erase(key, hash);
}

template <class K, class V, class Hash>
std::size_t LastGoodCache<K, V, Hash>::SweepExpired() {
  std::size_t swept = 0;
  for (const auto& shard : shards_) {
    // Read per shard: a long sweep must not use a reading from its start.
    const int64_t now = NowNanos();
    // A clock at an infinity says nothing about ages (a put is refused
    // then too): nothing is swept.
    if (now == std::numeric_limits<int64_t>::max() ||
        now == std::numeric_limits<int64_t>::min()) {
      continue;
    }
    swept += shard->Sweep(now, max_age_nanos_);
  }
  return swept;
}

template <class K, class V, class Hash>
LastGoodCacheStats LastGoodCache<K, V, Hash>::stats() const {
  LastGoodCacheStats st;
  for (const auto& shard : shards_) shard->AddStats(&st);
  st.max_bytes = settings_.max_bytes;
  st.max_entries = settings_.max_entries;
  st.refused_too_big = refused_too_big_.load(std::memory_order_relaxed);
  st.refused_null = refused_null_.load(std::memory_order_relaxed);
  st.refused_clock = refused_clock_.load(std::memory_order_relaxed);
  st.shards = shards_.size();
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STALE_CACHE_HPP_
