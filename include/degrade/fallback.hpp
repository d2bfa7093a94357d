// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: fallback.hpp
// -----------------------------------------------------------------------------
//
// Plan B for each stage of a recommendation request. Each stage keeps
// serving when its dependency fails, with a lossy answer that is tagged as
// degraded (`StageResult::is_default()` and a `DegradationTrace` entry naming
// the stage and why), so the ranker can down-weight it, logs can keep it out
// of training, and dashboards can count how many layers a request lost.
//
//   Stage          Plan B                                       Header
//   ------------   ------------------------------------------
//   ------------------ features       `DefaultFeatures`: the global average
//   default_features
//                  feature vector, computed offline and
//                  shipped as a local JSON file. Never zeros.
//   recall         `HotList<Item>`: the top-N (200) hot items   hot_list
//                  of the last good snapshot, refreshed in
//                  the background.
//   ranking        `OrderByRecallScore` / `RankOrFallback`:      with_fallback
//                  skip the model, order by recall score.
//   re-ranking     `DedupOnly` / `RerankOrFallback`: only       with_fallback
//                  remove duplicates.
//
// All of them plug into `WithFallback` (with_fallback.hpp), which runs a call
// through a `CircuitBreaker<T>` and turns any failure (breaker open, too many
// half-open trials, the call's error, an exception it threw) into the
// fallback value:
//
//   auto defaults = degrade::DefaultFeatures::Load("/data/avg.json", 64);
//   if (!defaults.ok()) { /* refuse to start: there is no Plan B */ }
//
//   absl::StatusOr<degrade::StageResult<std::vector<float>>> f =
//       degrade::WithFallback(feature_cb, "features",
//                             [&] { return feature_client.Get(user); },
//                             (*defaults)->Fallback());
//   // f->is_default() is true and f->trace() is "v1;features=open" while
//   // the feature service's breaker is open.
//
// This header includes the three, so that code written against it keeps
// compiling; new code can include the one it uses (with_fallback.hpp does not
// pull in a JSON parser). Umbrella header: no library header includes it.
//
// Thread safety: see the three headers. In short, the combinators are
// thread-safe when the callables given to them are, and `DefaultFeatures`
// and `HotList` are thread-safe.

#ifndef DEGRADE_FALLBACK_HPP_
#define DEGRADE_FALLBACK_HPP_

#include "degrade/default_features.hpp"  // IWYU pragma: export
#include "degrade/hot_list.hpp"          // IWYU pragma: export
#include "degrade/with_fallback.hpp"     // IWYU pragma: export

#endif  // DEGRADE_FALLBACK_HPP_
