// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A breaker's outcome counters, sharded per thread. Every call bumps one
// counter; with one shared set, concurrent successes would all write the
// same cache line. Each thread writes its own shard (thread_shard.hpp), on
// cache lines of its own, and readers sum the shards: the counters are
// cumulative, so a generation's counts are the sums minus a snapshot taken
// when it began.
//
// Each shard also holds its own copy of the two rejection statuses:
// returning an absl::Status bumps its reference count, and one shared copy
// would make every rejecting thread of an open breaker write one line.
//
// Thread-safe: relaxed atomics. Sum() is exact only when no call is in
// flight; under load each field is a value the counter has held.

#ifndef DEGRADE_DETAIL_BREAKER_SHARDS_HPP_
#define DEGRADE_DETAIL_BREAKER_SHARDS_HPP_

#include <atomic>
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
  std::atomic<uint64_t> admitted{0};
  std::atomic<uint64_t> successes{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> exclusions{0};
  std::atomic<uint64_t> slow_calls{0};
  std::atomic<uint64_t> abandoned{0};
  std::atomic<uint64_t> stale{0};
  std::atomic<uint64_t> rejected_open{0};
  std::atomic<uint64_t> rejected_too_many{0};
  absl::Status open_status;
  absl::Status too_many_status;
};

class BreakerShards {
 public:
  // `breaker` names the breaker in the rejection statuses.
  explicit BreakerShards(absl::string_view breaker)
      : mask_(ShardCount() - 1), shards_(new BreakerShard[mask_ + 1]) {
    for (std::size_t i = 0; i <= mask_; ++i) {
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

  // The calling thread's shard.
  BreakerShard& Local() { return shards_[ThreadShardIndex() & mask_]; }

  BreakerTotals Sum() const {
    BreakerTotals t;
    for (std::size_t i = 0; i <= mask_; ++i) {
      const BreakerShard& s = shards_[i];
      t.admitted += s.admitted.load(std::memory_order_relaxed);
      t.successes += s.successes.load(std::memory_order_relaxed);
      t.failures += s.failures.load(std::memory_order_relaxed);
      t.exclusions += s.exclusions.load(std::memory_order_relaxed);
      t.slow_calls += s.slow_calls.load(std::memory_order_relaxed);
      t.abandoned += s.abandoned.load(std::memory_order_relaxed);
      t.stale += s.stale.load(std::memory_order_relaxed);
      t.rejected_open += s.rejected_open.load(std::memory_order_relaxed);
      t.rejected_too_many +=
          s.rejected_too_many.load(std::memory_order_relaxed);
    }
    return t;
  }

 private:
  const std::size_t mask_;
  std::unique_ptr<BreakerShard[]> shards_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_SHARDS_HPP_
