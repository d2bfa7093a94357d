// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A breaker's outcome counters, sharded per thread. Every call bumps one
// counter; with one shared set, concurrent successes would all write the
// same cache line. Each thread writes its own shard (thread_shard.hpp), on
// cache lines of its own, and readers sum the shards: the counters are
// cumulative, so a generation's counts are the sums minus a snapshot taken
// when it began. A thread holding an exclusive shard adds with a plain
// load and store, no read-modify-write; threads past the exclusive shards
// share the shared ones with fetch_add (ShardCounter).
//
// Memory: ShardArraySize() shards of two cache lines each (nine counters
// and two statuses take 88 bytes): 10 x 128 = 1,280 bytes per breaker with
// 8 exclusive shards, 80 x 128 = 10,240 with 64.
//
// Each shard also holds its own copy of the two rejection statuses:
// returning an absl::Status bumps its reference count, and one shared copy
// would make every rejecting thread of an open breaker write one line.
//
// Thread-safe: relaxed atomics. Sum() is exact only when no call is in
// flight (every writer joined or synchronised with the reader); under load
// each field is a value the counter has held.

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_SHARDS_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_SHARDS_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

struct alignas(kCacheLine) BreakerShard {
  ShardCounter admitted;
  ShardCounter successes;
  ShardCounter failures;
  ShardCounter exclusions;
  ShardCounter slow_calls;
  ShardCounter abandoned;
  ShardCounter stale;
  ShardCounter rejected_open;
  ShardCounter rejected_too_many;
  absl::Status open_status;
  absl::Status too_many_status;
};

class BreakerShards {
 public:
  // `breaker` names the breaker in the rejection statuses.
  explicit BreakerShards(absl::string_view breaker)
      : size_(ShardArraySize()), shards_(new BreakerShard[size_]) {
    for (std::size_t i = 0; i < size_; ++i) {
      shards_[i].open_status =
          WithReason(absl::UnavailableError(absl::StrCat("circuit breaker '",
                                                         breaker, "' is open")),
                     kReasonOpen);
      shards_[i].too_many_status =
          WithReason(absl::UnavailableError(absl::StrCat(
                         "circuit breaker '", breaker,
                         "' is half-open and its trial calls are all taken")),
                     kReasonTooMany);
    }
  }

  BreakerShards(const BreakerShards&) = delete;
  BreakerShards& operator=(const BreakerShards&) = delete;

  // The calling thread's shard: its counters may only be added to from
  // this thread (ShardCounter::Add's precondition).
  BreakerShard& Local() { return shards_[ThreadShardIndex()]; }

  BreakerTotals Sum() const {
    BreakerTotals t;
    for (std::size_t i = 0; i < size_; ++i) {
      const BreakerShard& s = shards_[i];
      t.admitted += s.admitted.Load();
      t.successes += s.successes.Load();
      t.failures += s.failures.Load();
      t.exclusions += s.exclusions.Load();
      t.slow_calls += s.slow_calls.Load();
      t.abandoned += s.abandoned.Load();
      t.stale += s.stale.Load();
      t.rejected_open += s.rejected_open.Load();
      t.rejected_too_many += s.rejected_too_many.Load();
    }
    return t;
  }

 private:
  const std::size_t size_;
  std::unique_ptr<BreakerShard[]> shards_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_SHARDS_HPP_
