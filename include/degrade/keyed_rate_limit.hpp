// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: keyed_rate_limit.hpp
// -----------------------------------------------------------------------------
//
// A rate limit per key (per user, per item, per caller) in a table of fixed
// size. The limit of one key is the generic cell rate algorithm of
// rate_limit.hpp: one number, its theoretical arrival time (TAT). A key
// whose TAT has passed has fully replenished and is indistinguishable from
// a key never seen, so the table only has to hold keys that are *in debt*,
// and dropping a replenished key loses nothing. That sizes the table from
// first principles (unique keys per second x 1 / rate, for single requests)
// and lets it be allocated once: 16 bytes a slot (a 64-bit fingerprint of
// the key and its TAT), never growing, whatever the keys (a rotating
// client-chosen key cannot grow it, .NET's partitioned limiter's failure).
//
// Where a key is held. A key's fingerprint names two buckets of 8 slots
// and the key is held in one of them: a newcomer takes an empty or
// replenished slot of the one with fewer keys in debt. Up to about 70% of
// the slots in debt, no key finds both all debt (0.7% of newcomers do at
// 90%: rate-limits.md has the figures). The fingerprint is keyed by a
// per-table seed (`seed`, or drawn at Create()), so which keys share
// buckets cannot be worked out offline from the hash.
//
// A table full of debt. A key in debt is never evicted, whatever the
// newcomer asks: evicting it would forgive its debt, and a client choosing
// keys and costs could reset a hot key at will. A newcomer whose two
// buckets hold only keys in debt is instead charged, at the default limit, to
// an overflow cell it shares with the other such newcomers of its part of
// the table (one cell per 512 slots): at most its burst on a frozen clock,
// at most twice its own limit over any window (the cell's share, then a
// fresh burst if a slot frees), and the keys in debt keep their state.
// Where LRU would reset a hot key under a scan of one-shot keys, here the
// scan can only crowd itself. `when_full = kRefuse` refuses those
// newcomers outright. Both are counted (`KeyedRateLimitStats::table_full`).
//
//   degrade::KeyedRateLimitSettings s;
//   s.name = "per_user";
//   s.rate = 20;            // per key, per second
//   s.burst = 40;
//   s.max_keys = 1 << 20;   // 16 MiB, allocated now, never more
//   auto limiter = degrade::KeyedRateLimiter<std::string>::Create(
//       s, {{"batch-job", {/*rate=*/2, /*burst=*/2}}}).value();
//   if (!limiter->TryAcquire(user_id)) return TooManyRequests();
//
// Keys are told apart by a 64-bit fingerprint of Hash (mixed with the
// seed): two keys with the same fingerprint share a limit (about n^2 / 2^65
// pairs among n live keys: 3e-8 at a million). Overrides are compared by the
// key itself, and each has a state of its own outside the table: a
// configured key is never evicted and never charged to an overflow cell,
// so neither a VIP's burst nor a strict item's debt reaches other keys.

#ifndef DEGRADE_KEYED_RATE_LIMIT_HPP_
#define DEGRADE_KEYED_RATE_LIMIT_HPP_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/rate_limit/gcra.hpp"
#include "degrade/detail/rate_limit/slot_table.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/rate_limit_stats.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// What a KeyedRateLimiter does with a new key whose two buckets hold only
// keys in debt. Neither ever evicts a key in debt.
enum class KeyedTableFull : uint8_t {
  // Charge the newcomer, at the default limit, to the overflow cell it shares
  // with the other newcomers of its part of the table that found their
  // buckets all debt: admitted while that shared cell has room (its
  // burst at most, on a frozen clock), refused with the cell's retry-after
  // when it has none. The default.
  kShareOverflow = 0,
  // The former name of kShareOverflow. The default once evicted the
  // resident in least debt for a newcomer that would owe more, and
  // admitted the others untracked; it no longer does either.
  kForgiveLeast = kShareOverflow,
  // Refuse the newcomer (RateLimitedError, retry when the least indebted
  // resident of its two buckets will have replenished).
  kRefuse = 1,
};

// The most slots a table may have: 2^28, 4 GiB.
inline constexpr std::size_t kMaxRateLimitKeys = std::size_t{1} << 28;
// The most keys with their own limit.
inline constexpr std::size_t kMaxRateLimitOverrides = 4096;

// KeyedRateLimitSettings
//
// Thread-compatible: a plain value. `clock` and `metrics` are not owned and
// must outlive the limiter.
struct KeyedRateLimitSettings {
  std::string name = "keyed_rate_limit";
  // Each key's default limit, as RateLimitSettings' (same bounds).
  double rate = 0;
  int64_t burst = 1;
  // Mandatory: the keys in debt the table holds at once, in [1, 2^28];
  // rounded up to a multiple of 8 (a bucket). The table takes 16 bytes a
  // slot, allocated by Create(), plus 64 bytes per lock stripe (at most
  // 256, at most one per 8 buckets) and 8 bytes per 512 slots (the
  // overflow cells): under 1% more from 100,000 keys up. Every key is
  // held up to about 70% of it in debt; size it with room (rate-limits.md,
  // "Sizing the keyed table").
  std::size_t max_keys = 0;
  KeyedTableFull when_full = KeyedTableFull::kShareOverflow;
  // Seeds the fingerprints, so that which keys share buckets depends on a
  // secret: 0 (the default) draws one from std::random_device at Create().
  // Set it only to repeat a run exactly (a test, a simulation).
  uint64_t seed = 0;
  // As RateLimitSettings::precise_clock.
  bool precise_clock = false;
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// A key's own limit (a VIP caller with more, a known-hot item with less).
struct RateLimitOverride {
  double rate = 0;
  int64_t burst = 1;
};

// ValidateKeyedRateLimitSettings(s)
//
// OK, or INVALID_ARGUMENT naming the limiter, the first setting at fault
// and its value. Any value may be passed. Pure; thread-safe.
inline absl::Status ValidateKeyedRateLimitSettings(
    const KeyedRateLimitSettings& s) {
  const detail::SettingOwner who("keyed rate limiter", s.name);
  if (absl::Status v = detail::ValidateRateAndBurst(who, s.rate, s.burst);
      !v.ok()) {
    return v;
  }
  if (s.max_keys < 1 || s.max_keys > kMaxRateLimitKeys) {
    return who.Invalid("max_keys", s.max_keys, "must be in [1, 2^28]");
  }
  const auto w = static_cast<uint8_t>(s.when_full);
  if (w > static_cast<uint8_t>(KeyedTableFull::kRefuse)) {
    return who.Invalid("when_full", static_cast<int>(w),
                       "not a KeyedTableFull");
  }
  return absl::OkStatus();
}

// KeyedRateLimiter<Key, Hash>
//
// Thread-safe; neither copyable nor movable. Calls on keys of different
// lock stripes run in parallel; a call holds its stripe's spinlock for one
// bucket's scan (no allocation, nothing of the caller's); a waiter spins,
// then yields its core.
// Key must be copyable and equality-comparable (overrides are compared by
// the key); Hash is called without a lock held and must not throw.
template <class Key, class Hash = std::hash<Key>>
class KeyedRateLimiter final {
 public:
  using Overrides = std::vector<std::pair<Key, RateLimitOverride>>;

  // Create(settings, overrides, hash)
  //
  // INVALID_ARGUMENT for a bad setting or override (each override's rate
  // and burst as the default's; at most 4096; no key twice),
  // FAILED_PRECONDITION when the clock reads an infinite time, or a
  // limiter with every key replenished. Allocates the whole table.
  static absl::StatusOr<std::unique_ptr<KeyedRateLimiter>> Create(
      KeyedRateLimitSettings s, Overrides overrides = {}, Hash hash = Hash());

  KeyedRateLimiter(const KeyedRateLimiter&) = delete;
  KeyedRateLimiter& operator=(const KeyedRateLimiter&) = delete;
  ~KeyedRateLimiter() { telemetry_.reset(); }  // first: its view reads us

  // TryAcquire(key, n)
  //
  // As RateLimiter::TryAcquire for `key`'s own limit: true and `n` permits
  // taken, or false and nothing changed (no slot taken, no state written).
  // `*retry_after` as RateLimiter's; refused for two buckets all in debt,
  // when the shared overflow cell will have room (kShareOverflow) or a
  // slot will have replenished (kRefuse). REQUIRES: retry_after is not
  // null.
  bool TryAcquire(const Key& key, int64_t n = 1) {
    return Take(key, n, nullptr);
  }
  bool TryAcquire(const Key& key, int64_t n, absl::Duration* retry_after);

  // Admit(key, n): TryAcquire as a status, worded as RateLimiter::Admit.
  absl::Status Admit(const Key& key, int64_t n = 1);

  // GiveBack(key, n)
  //
  // Returns `n` permits `key` was admitted and did not use (a later check
  // refused the request), at the key's rate: never past a full bucket. A
  // key no longer held (replenished and evicted, or charged to an overflow
  // cell) has nothing to give back to. No-op for n < 1. Thread-safe.
  void GiveBack(const Key& key, int64_t n);

  // How long until `key` has fully replenished: zero for a key not held
  // (one last charged to an overflow cell included, whose debt is the
  // cell's). For dashboards and tests.
  absl::Duration Debt(const Key& key) const;

  const std::string& name() const { return name_; }
  // Slots in the table, and the bytes the limiter holds (table, stripes,
  // overrides with their std::string keys' heap, itself; another Key's
  // own heap is not seen); neither changes after Create().
  std::size_t capacity() const { return table_.capacity(); }
  std::size_t memory_bytes() const {
    return sizeof(*this) + table_.memory_bytes() +
           overrides_.capacity() * sizeof(OverrideEntry) + key_heap_bytes_;
  }

  // Totals, live keys (an O(max_keys) scan: about a millisecond per
  // million slots) and evictions. Thread-safe.
  KeyedRateLimitStats stats() const;

 private:
  struct Limit {
    int64_t interval;
    int64_t tolerance;
  };
  // An override key's state lives here, never in the table: a configured
  // key is never evicted and never shares the overflow cell (where one
  // strict or generous limit would decide every newcomer's). `tat` is
  // guarded by the table's stripe lock for `fingerprint`.
  struct OverrideEntry {
    uint64_t fingerprint;
    Key key;
    Limit limit;
    mutable int64_t tat = std::numeric_limits<int64_t>::min();
  };
  enum Counter { kAdmitted = 0, kRefused = 1, kPermits = 2 };

  KeyedRateLimiter(KeyedRateLimitSettings s, std::vector<OverrideEntry> o,
                   Hash hash);

  static Limit LimitOf(double rate, int64_t burst) {
    const int64_t interval = detail::GcraInterval(rate);
    return {interval, detail::SatMulNanos(interval, burst)};
  }
  // A bijection of the hash for a given seed (distinct hashes stay
  // distinct), whose bits cannot be predicted without the seed.
  // `seed2` is SplitMix64Step(seed), kept so as not to mix it per call.
  static uint64_t FingerprintOf(std::size_t hash, uint64_t seed,
                                uint64_t seed2) {
    const uint64_t f = detail::SplitMix64Step(
        detail::SplitMix64Step(static_cast<uint64_t>(hash) ^ seed) ^ seed2);
    return f == 0 ? 1 : f;  // 0 marks an empty slot
  }
  static uint64_t DrawSeed();
  static std::size_t KeyHeapBytes(const std::vector<OverrideEntry>& o) {
    std::size_t bytes = 0;
    if constexpr (std::is_same_v<Key, std::string>) {
      const std::size_t inline_capacity = std::string().capacity();
      for (const OverrideEntry& e : o) {
        if (e.key.capacity() > inline_capacity) bytes += e.key.capacity() + 1;
      }
    }
    return bytes;
  }
  uint64_t Fingerprint(const Key& key) const {
    return FingerprintOf(hash_(key), seed_, seed2_);
  }
  // The override entry for `key`, or null for the default limit.
  const OverrideEntry* OverrideFor(const Key& key, uint64_t fp) const;
  // Refused: `*retry` (unless null) in ticks, -1 for never; `*full`
  // (unless null) when the key is new and the table had no slot for it.
  bool Take(const Key& key, int64_t n, int64_t* retry, bool* full = nullptr);
  absl::Status Refusal(int64_t n, int64_t retry, bool full) const;

  const std::string name_;
  const KeyedRateLimitSettings settings_;
  const Hash hash_;
  const uint64_t seed_;
  const uint64_t seed2_;
  const Limit default_;
  // Sorted by fingerprint; few, fixed at Create().
  const std::vector<OverrideEntry> overrides_;
  const std::size_t key_heap_bytes_;
  const detail::GcraLine line_;
  mutable detail::SlotTable table_;
  detail::ShardedCounts<3> counts_;
  const detail::OwnerView<KeyedRateLimiter, KeyedRateLimitStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last
};

// ---- Implementation details ----

template <class Key, class Hash>
absl::StatusOr<std::unique_ptr<KeyedRateLimiter<Key, Hash>>>
KeyedRateLimiter<Key, Hash>::Create(KeyedRateLimitSettings s,
                                    Overrides overrides, Hash hash) {
  if (absl::Status v = ValidateKeyedRateLimitSettings(s); !v.ok()) return v;
  const detail::SettingOwner who("keyed rate limiter", s.name);
  if (overrides.size() > kMaxRateLimitOverrides) {
    return who.Invalid("overrides", overrides.size(),
                       "must hold at most 4096 keys");
  }
  if (s.seed == 0) s.seed = DrawSeed();
  std::vector<OverrideEntry> entries;
  entries.reserve(overrides.size());
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    const detail::SettingOwner one = detail::SettingOwner::Described(
        absl::StrCat(who.who(), " override ", i));
    const RateLimitOverride& o = overrides[i].second;
    if (absl::Status v = detail::ValidateRateAndBurst(one, o.rate, o.burst);
        !v.ok()) {
      return v;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (overrides[j].first == overrides[i].first) {
        return who.Invalid("overrides", absl::StrCat("[", j, "] and [", i, "]"),
                           "name the same key twice");
      }
    }
    entries.push_back({FingerprintOf(hash(overrides[i].first), s.seed,
                                     detail::SplitMix64Step(s.seed)),
                       overrides[i].first, LimitOf(o.rate, o.burst)});
  }
  std::sort(entries.begin(), entries.end(),
            [](const OverrideEntry& a, const OverrideEntry& b) {
              return a.fingerprint < b.fingerprint;
            });
  const Clock* clock = s.clock != nullptr ? s.clock : &RealClock::Instance();
  if (detail::SteadyTime::AtAnInfinity(clock->Now())) {
    return absl::FailedPreconditionError(
        absl::StrCat(who.who(), ": the clock reads an infinite time"));
  }
  s.clock = clock;
  return std::unique_ptr<KeyedRateLimiter>(
      new KeyedRateLimiter(std::move(s), std::move(entries), std::move(hash)));
}

template <class Key, class Hash>
KeyedRateLimiter<Key, Hash>::KeyedRateLimiter(KeyedRateLimitSettings s,
                                              std::vector<OverrideEntry> o,
                                              Hash hash)
    : name_(detail::Printable(s.name)),
      settings_(std::move(s)),
      hash_(std::move(hash)),
      seed_(settings_.seed),
      seed2_(detail::SplitMix64Step(seed_)),
      default_(LimitOf(settings_.rate, settings_.burst)),
      overrides_(std::move(o)),
      key_heap_bytes_(KeyHeapBytes(overrides_)),
      line_(settings_.clock,
            !settings_.precise_clock &&
                static_cast<double>(settings_.burst) >=
                    settings_.rate *
                        absl::ToDoubleSeconds(kCoarseRateLimitTolerance)),
      table_(settings_.max_keys) {
  telemetry_ =
      detail::Attach(settings_.metrics, &Telemetry::AttachComponent, view_);
}

template <class Key, class Hash>
uint64_t KeyedRateLimiter<Key, Hash>::DrawSeed() {
  uint64_t seed = 0;
#if DEGRADE_HAS_EXCEPTIONS
  try {
#endif
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
#if DEGRADE_HAS_EXCEPTIONS
  } catch (...) {
    // No entropy source: the time and an address below still differ per
    // table and per run, which keeps the placement from being computed
    // ahead of time.
  }
#endif
  int local = 0;
  seed ^= detail::SplitMix64Step(
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count()) ^
      static_cast<uint64_t>(reinterpret_cast<std::uintptr_t>(&local)));
  return seed == 0 ? 1 : seed;
}

template <class Key, class Hash>
const typename KeyedRateLimiter<Key, Hash>::OverrideEntry*
KeyedRateLimiter<Key, Hash>::OverrideFor(const Key& key, uint64_t fp) const {
  if (overrides_.empty()) return nullptr;
  auto it = std::lower_bound(
      overrides_.begin(), overrides_.end(), fp,
      [](const OverrideEntry& e, uint64_t f) { return e.fingerprint < f; });
  for (; it != overrides_.end() && it->fingerprint == fp; ++it) {
    if (it->key == key) return &*it;
  }
  return nullptr;
}

template <class Key, class Hash>
bool KeyedRateLimiter<Key, Hash>::Take(const Key& key, int64_t n,
                                       int64_t* retry, bool* full) {
  const auto refuse = [&](int64_t r) {
    if (retry != nullptr) *retry = r;
    counts_.Add(kRefused);
    return false;
  };
  if (n < 1) return refuse(-1);
  const uint64_t fp = Fingerprint(key);
  const OverrideEntry* const o = OverrideFor(key, fp);
  const Limit& limit = o != nullptr ? o->limit : default_;
  const int64_t cost = detail::SatMulNanos(limit.interval, n);
  // More than the burst: never, whatever the state; nothing to look up.
  if (cost > limit.tolerance) return refuse(-1);

  detail::SlotTable::Locked bucket = table_.Lock(fp);
  const int64_t now = line_.Now(bucket.last_now());
  bucket.set_last_now(now);
  if (o != nullptr) {
    const detail::GcraStep step =
        detail::GcraDecide(o->tat, now, cost, 0, limit.tolerance, 0);
    if (!step.admit) return refuse(step.wait);
    o->tat = step.next;
    counts_.Add(kAdmitted);
    counts_.Add(kPermits, static_cast<uint64_t>(n));
    return true;
  }
  const detail::SlotTable::Probe p = bucket.Find(fp, now);
  if (p.found >= 0) {
    const detail::GcraStep step = detail::GcraDecide(
        bucket.tat(p.found), now, cost, 0, limit.tolerance, 0);
    if (!step.admit) return refuse(step.wait);
    bucket.set_tat(p.found, step.next);
  } else {
    // A key not held has replenished: admitted (cost <= tolerance).
    if (p.free >= 0) {
      bucket.Store(p.free, fp, detail::SatAddNanos(now, cost));
    } else {
      // Both buckets all debt: no resident is forgiven for a newcomer.
      bucket.CountFull();
      if (full != nullptr) *full = true;
      if (settings_.when_full == KeyedTableFull::kRefuse) {
        return refuse(detail::ElapsedNanosSince(bucket.tat(p.least), now));
      }
      const detail::GcraStep step = detail::GcraDecide(
          bucket.overflow_tat(), now, cost, 0, limit.tolerance, 0);
      if (!step.admit) return refuse(step.wait);
      bucket.set_overflow_tat(step.next);
    }
  }
  counts_.Add(kAdmitted);
  counts_.Add(kPermits, static_cast<uint64_t>(n));
  return true;
}

template <class Key, class Hash>
bool KeyedRateLimiter<Key, Hash>::TryAcquire(const Key& key, int64_t n,
                                             absl::Duration* retry_after) {
  int64_t retry = 0;
  if (Take(key, n, &retry)) return true;
  *retry_after =
      retry < 0 ? absl::Milliseconds(-1) : detail::GcraDuration(retry);
  return false;
}

template <class Key, class Hash>
absl::Status KeyedRateLimiter<Key, Hash>::Refusal(int64_t n, int64_t retry,
                                                  bool full) const {
  const std::string where = absl::StrCat("keyed rate limiter '", name_, "'");
  if (n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": asked for ", n, " permits; must be >= 1"));
  }
  if (retry < 0) {
    return RateLimitedError(where, "more permits than the key's burst: never",
                            absl::Milliseconds(-1));
  }
  // A new key refused for want of a slot is no caller over its rate: the
  // table is too small for the keys in debt (size max_keys up).
  return RateLimitedError(
      where,
      full ? "a new key, and the table is full of keys in debt (max_keys)"
           : "over the key's rate",
      detail::GcraDuration(retry));
}

template <class Key, class Hash>
absl::Status KeyedRateLimiter<Key, Hash>::Admit(const Key& key, int64_t n) {
  int64_t retry = 0;
  bool full = false;
  if (Take(key, n, &retry, &full)) return absl::OkStatus();
  return Refusal(n, retry, full);
}

template <class Key, class Hash>
void KeyedRateLimiter<Key, Hash>::GiveBack(const Key& key, int64_t n) {
  if (n < 1) return;
  const uint64_t fp = Fingerprint(key);
  const OverrideEntry* const o = OverrideFor(key, fp);
  const Limit& limit = o != nullptr ? o->limit : default_;
  const int64_t credit = detail::SatMulNanos(limit.interval, n);
  detail::SlotTable::Locked bucket = table_.Lock(fp);
  const int64_t now = line_.Now(bucket.last_now());
  bucket.set_last_now(now);
  // What is returned fills the bucket, not more: never below now.
  const auto returned = [&](int64_t tat) {
    const int64_t next = detail::SatSubNanos(tat, credit);
    return next < now ? now : next;
  };
  if (o != nullptr) {
    if (o->tat > now) o->tat = returned(o->tat);
    return;
  }
  const detail::SlotTable::Probe p = bucket.Find(fp, now);
  if (p.found >= 0 && bucket.tat(p.found) > now) {
    bucket.set_tat(p.found, returned(bucket.tat(p.found)));
  }
}

template <class Key, class Hash>
absl::Duration KeyedRateLimiter<Key, Hash>::Debt(const Key& key) const {
  const uint64_t fp = Fingerprint(key);
  const OverrideEntry* const o = OverrideFor(key, fp);
  detail::SlotTable::Locked bucket = table_.Lock(fp);
  const int64_t now = line_.Now(bucket.last_now());
  bucket.set_last_now(now);
  if (o != nullptr) {
    return detail::GcraDuration(detail::ElapsedNanosSince(o->tat, now));
  }
  const detail::SlotTable::Probe p = bucket.Find(fp, now);
  const int64_t debt =
      p.found < 0 ? 0 : detail::ElapsedNanosSince(bucket.tat(p.found), now);
  return detail::GcraDuration(debt);
}

template <class Key, class Hash>
KeyedRateLimitStats KeyedRateLimiter<Key, Hash>::stats() const {
  KeyedRateLimitStats st;
  st.admitted = counts_.Load(kAdmitted);
  st.refused = counts_.Load(kRefused);
  st.admitted_permits = counts_.Load(kPermits);
  st.rate = settings_.rate;
  const detail::SlotTable::Totals t = table_.Count(line_.Peek());
  st.live_keys = t.live;
  st.capacity = table_.capacity();
  st.evictions = t.evictions;
  st.evictions_in_debt = 0;  // never: a key in debt is not evicted
  st.table_full = t.full;
  st.overrides = overrides_.size();
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_KEYED_RATE_LIMIT_HPP_
