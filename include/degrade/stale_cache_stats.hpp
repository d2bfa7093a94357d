// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stale_cache_stats.hpp
// -----------------------------------------------------------------------------
//
// What a `LastGoodCache` (stale_cache.hpp) reports, as a plain value, and
// the read-only view it offers a `Telemetry` (telemetry.hpp,
// stats_view.hpp): how full it is against its two bounds, how its lookups
// went (a lookup happens when the fresh source failed, so `hits` over all
// lookups is the share of failures the stale tier could serve), and why
// values left it.
//
//   degrade::LastGoodCacheStats s = cache->stats();
//   double served = double(s.hits) / double(s.hits + s.misses + s.too_old);
//
// Thread safety: the struct is a plain value. A view's functions may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_STALE_CACHE_STATS_HPP_
#define DEGRADE_STALE_CACHE_STATS_HPP_

#include <cstdint>

#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// LastGoodCacheStats
//
// A snapshot of a LastGoodCache: totals since it was created and its size
// now. Read shard by shard, so under traffic the fields may be a few
// operations apart; when nothing runs they add up exactly (entries ==
// inserts - evictions of every reason).
struct LastGoodCacheStats {
  // Values held now, and the bytes charged for them (key + value as the
  // weigher reports it + the cache's own per-entry overhead), with their
  // bounds: entries <= max_entries and bytes <= max_bytes at every moment.
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t max_bytes = 0;
  uint64_t max_entries = 0;
  // Lookups by result: a value young enough (hit), no value (miss), or a
  // value older than the lookup allowed, not returned (too_old).
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t too_old = 0;
  // Puts that stored a key not held, and puts that replaced a held key's
  // value.
  uint64_t inserts = 0;
  uint64_t replaced = 0;
  // Puts refused: the value alone (with its key and overhead) is larger
  // than one shard's byte budget; the value was null; the clock read an
  // infinite time (a write time no age could be measured from).
  uint64_t refused_too_big = 0;
  uint64_t refused_null = 0;
  uint64_t refused_clock = 0;
  // Values that left, by reason: to make room (size: the entry or byte
  // bound), older than max_age (age: by SweepExpired or found expired when
  // making room), or by Erase (explicit).
  uint64_t evictions_size = 0;
  uint64_t evictions_age = 0;
  uint64_t evictions_explicit = 0;
  // Shards the cache is split into.
  uint64_t shards = 0;
};

// What a Telemetry may read of a cache while attached (StatsView).
using LastGoodCacheView = StatsView<LastGoodCacheStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STALE_CACHE_STATS_HPP_
