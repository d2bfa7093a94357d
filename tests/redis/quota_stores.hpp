// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fleet quota store for tests that drive ClusterQuota without Redis
// (ClusterQuota::CreateWithLeaser): it answers every lease call with
// `answer` and counts the calls. Not thread-safe: the refresher calls it
// one call at a time, and tests change `answer` between refreshes.

#ifndef DEGRADE_TESTS_REDIS_QUOTA_STORES_HPP_
#define DEGRADE_TESTS_REDIS_QUOTA_STORES_HPP_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/redis/quota_options.hpp"

namespace degrade_tests {

struct FixedLeaseStore {
  absl::StatusOr<degrade::redis::QuotaLease> answer =
      absl::UnavailableError("down");
  int calls = 0;
  degrade::redis::QuotaLeaser Leaser() {
    return [this](const degrade::redis::QuotaLeaseRequest&)
               -> absl::StatusOr<degrade::redis::QuotaLease> {
      ++calls;
      return answer;
    };
  }
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_REDIS_QUOTA_STORES_HPP_
