// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// inference_shedding: a batched inference server (batch size 32, 180 ms of
// core work per full batch, plus the non-core work the seed article lists)
// driven to 3x its fully featured capacity, run three times on the same
// requests:
//
//   shedding       a DegradationManager on the article's config switches the
//                  non-core features off level by level, and at level 3
//                  refuses best-effort traffic;
//   features only  the same, but every request is admitted;
//   always on      no manager: every feature always on.
//
// It prints a table per 30 s slice (offered load, level, queue, p50/p99
// latency, throughput, features on), the manager's level changes (its JSON
// log lines), and a summary; with --svg it writes a chart of load, level and
// p99 latency over time. Everything runs on a FakeClock (see
// inference/simulation.hpp): a run takes well under a second, and the same
// seed prints the same output.
//
//   build/dev/examples/inference_shedding [--svg FILE] [--seed N]
//                                         [--config FILE] [--quiet]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "degrade/config.hpp"
#include "inference/report.hpp"
#include "inference/simulation.hpp"
#include "inference/svg_chart.hpp"

#ifndef INFERENCE_SHEDDING_CONFIG
#define INFERENCE_SHEDDING_CONFIG "examples/config/inference_degradation.json"
#endif

namespace {

struct Args {
  std::string svg;
  std::string config = INFERENCE_SHEDDING_CONFIG;
  uint64_t seed = 1;
  bool quiet = false;
};

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--svg FILE] [--seed N] [--config FILE] [--quiet]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--svg" && has_value) {
      args.svg = argv[++i];
    } else if (a == "--config" && has_value) {
      args.config = argv[++i];
    } else if (a == "--seed" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &args.seed)) return Usage(argv[0]);
    } else if (a == "--quiet") {
      args.quiet = true;
    } else {
      return Usage(argv[0]);
    }
  }

  absl::StatusOr<degrade::DegradationConfig> config =
      degrade::LoadDegradationConfigFile(args.config);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<inference::Comparison> runs =
      inference::RunComparison(*config, args.seed);
  if (!runs.ok()) {
    std::fprintf(stderr, "%s\n", runs.status().ToString().c_str());
    return 1;
  }
  std::fputs(inference::Report(*runs, *config, !args.quiet).c_str(), stdout);

  if (!args.svg.empty()) {
    const std::string svg = inference::Chart(*runs);
    std::FILE* out = std::fopen(args.svg.c_str(), "w");
    if (out == nullptr ||
        std::fwrite(svg.data(), 1, svg.size(), out) != svg.size() ||
        std::fclose(out) != 0) {
      std::fprintf(stderr, "cannot write %s\n", args.svg.c_str());
      return 1;
    }
    std::printf("\nchart written to %s\n", args.svg.c_str());
  }
  return 0;
}
