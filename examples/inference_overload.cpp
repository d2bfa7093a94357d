// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// inference_overload: simulation.hpp's batched inference server under four
// request classes (25% CRITICAL_PLUS paid, 40% CRITICAL interactive, 20%
// SHEDDABLE_PLUS prefetch, 15% SHEDDABLE batch), driven to 3x its fully
// featured capacity for ten minutes, then, still at 3x, with its GPU at half
// speed for two minutes. Four modes on the same requests:
//
//   always on        no control;
//   static config    today's config: features off by level, level 3 refuses
//                    the sheddable classes;
//   admit by level   the seed's levels carrying "admit" floors;
//   full discipline  AdmissionController (manager floor + DAGOR) ->
//                    ConcurrencyLimiter (Gradient2) -> AdmissionQueue (CoDel,
//                    adaptive LIFO, deadline-aware), PopBatch(32).
//
// It prints goodput per mode and, per mode, window and class, availability,
// p50/p99/max latency and every refusal by reason; with --svg-dir it writes
// one chart per class. Everything runs on a FakeClock
// (inference/overload_sim.hpp): the same seed prints the same output.
//
//   build/dev/examples/inference_overload [--svg-dir DIR] [--seed N]
//       [--static-config FILE] [--admit-config FILE] [--discipline-config FILE]

#include <cstdio>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "degrade/config.hpp"
#include "inference/overload_report.hpp"

#ifndef INFERENCE_SHEDDING_CONFIG
#define INFERENCE_SHEDDING_CONFIG "examples/config/inference_degradation.json"
#endif
#ifndef INFERENCE_OVERLOAD_CONFIG
#define INFERENCE_OVERLOAD_CONFIG "examples/config/inference_overload.json"
#endif
#ifndef INFERENCE_DISCIPLINE_CONFIG
#define INFERENCE_DISCIPLINE_CONFIG "examples/config/inference_discipline.json"
#endif

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--svg-dir DIR] [--seed N] [--static-config FILE] "
               "[--admit-config FILE] [--discipline-config FILE]\n",
               argv0);
  return 2;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return false;
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  return std::fclose(out) == 0 && written;
}

}  // namespace

int main(int argc, char** argv) {
  std::string svg_dir, static_path = INFERENCE_SHEDDING_CONFIG,
                       admit_path = INFERENCE_OVERLOAD_CONFIG,
                       discipline_path = INFERENCE_DISCIPLINE_CONFIG;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--svg-dir" && has_value) {
      svg_dir = argv[++i];
    } else if (a == "--static-config" && has_value) {
      static_path = argv[++i];
    } else if (a == "--admit-config" && has_value) {
      admit_path = argv[++i];
    } else if (a == "--discipline-config" && has_value) {
      discipline_path = argv[++i];
    } else if (a == "--seed" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &seed)) return Usage(argv[0]);
    } else {
      return Usage(argv[0]);
    }
  }
  inference::overload::SimOptions base;
  const std::pair<const std::string*, degrade::DegradationConfig*> configs[] = {
      {&static_path, &base.static_config},
      {&admit_path, &base.admit_config},
      {&discipline_path, &base.discipline_config}};
  for (const auto& [path, config] : configs) {
    absl::StatusOr<degrade::DegradationConfig> c =
        degrade::LoadDegradationConfigFile(*path);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 1;
    }
    *config = std::move(*c);
  }
  absl::StatusOr<inference::overload::Comparison> runs =
      inference::overload::RunComparison(base, seed);
  if (!runs.ok()) {
    std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
    return 1;
  }
  std::fputs(inference::overload::Report(*runs).c_str(), stdout);
  if (!svg_dir.empty()) {
    for (std::size_t k = 0; k < inference::overload::kClasses.size(); ++k) {
      const std::string path =
          absl::StrCat(svg_dir, "/", inference::overload::ClassChartName(k));
      if (!WriteFile(path, inference::overload::ClassChart(*runs, k))) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
      std::printf("chart written to %s\n", path.c_str());
    }
  }
  return 0;
}
