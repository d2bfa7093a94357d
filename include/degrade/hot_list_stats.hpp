// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: hot_list_stats.hpp
// -----------------------------------------------------------------------------
//
// What a hot list (hot_list.hpp) reports, as a plain value, and the
// read-only view it offers a `Telemetry` (telemetry.hpp), so that a metrics
// registry can scrape it without knowing the list's item type (the pattern
// of overload_stats.hpp). The questions it answers during an incident: is
// the fallback list fresh (`age`), is it empty (`items`), and are refreshes
// failing (`failures` rising while `refreshes` stands still).
//
//   degrade::HotList<Item> list(options);
//   degrade::HotListStats st = list.stats();
//   if (st.age > absl::Minutes(10)) Warn(list.name(), st.failures);
//
//   class MyTelemetry : public degrade::Telemetry {
//     std::unique_ptr<degrade::TelemetryAttachment> AttachHotList(
//         const degrade::HotListView& h) override {
//       views_.push_back(&h);  // scrape h.stats() until the attachment dies
//       return std::make_unique<Detach>(this, &h);
//     }
//   };
//
// Thread safety: the struct is a plain value. A view's methods may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_HOT_LIST_STATS_HPP_
#define DEGRADE_HOT_LIST_STATS_HPP_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// HotListStats
//
// A snapshot of a hot list: a plain value, no preconditions.
struct HotListStats {
  // Age of the serving snapshot; InfiniteDuration() before the first one.
  absl::Duration age = absl::InfiniteDuration();
  std::size_t items = 0;
  // Snapshot updates published, and refused (the previous one kept).
  uint64_t refreshes = 0;
  uint64_t failures = 0;
};

// HotListView
//
// What a Telemetry may read of a hot list while attached (StatsView).
using HotListView = StatsView<HotListStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_HOT_LIST_STATS_HPP_
