// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degradation_episode.hpp
// -----------------------------------------------------------------------------
//
// A degradation in progress: a breaker that is not closed, a manager at or
// above a level, a pipeline stage that has served fallbacks since its last
// normal answer. A MetricsRegistry derives episodes from what it watches
// (the *_degraded_seconds gauges are their ages) and an EscalationWatch
// pages a human when one has lasted too long. The kind is an enum, so the
// producers and the consumers cannot disagree about its spelling.
//
//   for (const degrade::DegradationEpisode& e : registry.Episodes()) {
//     if (e.kind == degrade::EpisodeKind::kBreaker) {
//       std::printf("%s open since %s\n", e.name.c_str(),
//                   absl::FormatTime(e.since).c_str());
//     }
//   }
//
// Thread safety: plain values.

#ifndef DEGRADE_DEGRADATION_EPISODE_HPP_
#define DEGRADE_DEGRADATION_EPISODE_HPP_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// EpisodeKind
enum class EpisodeKind : uint8_t {
  kBreaker,  // a breaker out of the closed state
  kLevel,    // a degradation manager at or above `level`
  kStage,    // a stage serving fallbacks since its last normal answer
};

// "breaker", "level" or "stage": the form in `escalation` log lines.
inline absl::string_view EpisodeKindName(EpisodeKind k) {
  switch (k) {
    case EpisodeKind::kBreaker:
      return "breaker";
    case EpisodeKind::kLevel:
      return "level";
    case EpisodeKind::kStage:
      return "stage";
  }
  return "unknown";
}

// For code written when the kind was a string (`e.kind == "breaker"`), and
// so that test failures print the name.
inline bool operator==(EpisodeKind k, absl::string_view name) {
  return EpisodeKindName(k) == name;
}
inline bool operator!=(EpisodeKind k, absl::string_view name) {
  return !(k == name);
}
inline std::ostream& operator<<(std::ostream& os, EpisodeKind k) {
  return os << EpisodeKindName(k);
}

// DegradationEpisode
struct DegradationEpisode {
  EpisodeKind kind = EpisodeKind::kBreaker;
  // The breaker, manager or stage.
  std::string name;
  // For kStage: the StageMetrics it was seen by. Otherwise `name`.
  std::string source;
  // For kLevel: the level this episode is about (the manager has been at
  // `level` or higher since `since`); 0 otherwise.
  int level = 0;
  absl::Time since;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADATION_EPISODE_HPP_
