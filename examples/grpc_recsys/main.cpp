// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// grpc_recsys: the recommendation service for real. Five gRPC server
// processes on loopback (features, two recall routes, rank, rerank), a
// front that calls them through degrade with a breaker, a budget and a
// Plan B per stage, open-loop traffic, and a chaos script that kills,
// pauses, slows and restarts the servers. It prints, per phase, what the
// responses looked like; chaos.hpp has the script and what is measured,
// docs/examples/grpc-recsys.md a run's figures.
//
//   build/dev/examples/grpc_recsys/grpc_recsys           # 9 phases x 6 s
//   build/dev/examples/grpc_recsys/grpc_recsys --short   # 9 x 3 s: the test's
//   build/dev/examples/grpc_recsys/grpc_recsys --qps 100 --phase-seconds 10
//       --breaker-timeout-ms 3000 --server path/to/grpc_recsys_server
//
// By default the server binary is the one built next to this program.
// The driver starts every server itself and stops every one of them, also
// when it fails or is interrupted (children.hpp).
//
// Exits 0 when every response in every phase was non-empty, 1 when some
// were empty, 2 on a bad argument, 3 when the run could not be carried out
// (a server that would not start, say), naming the cause.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "chaos.hpp"

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--short] [--qps N] [--phase-seconds S] "
               "[--breaker-timeout-ms MS] [--server PATH]\n",
               argv0);
  return 2;
}

// The directory of argv[0], with a trailing slash, or "".
std::string OwnDirectory(const char* argv0) {
  const std::string self = argv0;
  const std::size_t slash = self.rfind('/');
  return slash == std::string::npos ? std::string() : self.substr(0, slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string server = OwnDirectory(argv[0]) + "grpc_recsys_server";
  bool short_run = false;
  double qps = 0;
  double phase_seconds = 0;
  int breaker_ms = 0;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--short") {
      short_run = true;
    } else if (arg == "--server" && has_value) {
      server = argv[++i];
    } else if (arg == "--qps" && has_value) {
      if (!absl::SimpleAtod(argv[++i], &qps) || !(qps > 0 && qps <= 5000)) {
        std::fprintf(stderr, "--qps: expected a number in (0, 5000]\n");
        return Usage(argv[0]);
      }
    } else if (arg == "--phase-seconds" && has_value) {
      if (!absl::SimpleAtod(argv[++i], &phase_seconds) ||
          !(phase_seconds >= 0.5 && phase_seconds <= 600)) {
        std::fprintf(stderr,
                     "--phase-seconds: expected a number in [0.5, 600]\n");
        return Usage(argv[0]);
      }
    } else if (arg == "--breaker-timeout-ms" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &breaker_ms) || breaker_ms < 10 ||
          breaker_ms > 600000) {
        std::fprintf(
            stderr,
            "--breaker-timeout-ms: expected an integer in [10, 600000]\n");
        return Usage(argv[0]);
      }
    } else {
      return Usage(argv[0]);
    }
  }

  grpc_recsys::ChaosOptions o;
  if (short_run) o = grpc_recsys::ShortOptions(server);
  o.server_binary = server;
  if (qps > 0) o.qps = qps;
  if (phase_seconds > 0) o.phase_length = absl::Seconds(phase_seconds);
  if (breaker_ms > 0) o.breaker_timeout = absl::Milliseconds(breaker_ms);

  const grpc_recsys::FrontOptions f = grpc_recsys::FrontOptionsFor(o);
  // Enough workers for every request in flight when each takes its whole
  // budget (a hung stage), with a fifth to spare: open loop means the
  // queue would otherwise grow without bound in the slow phases.
  absl::Duration slowest = absl::ZeroDuration();
  for (absl::Duration b : f.budgets) slowest += b;
  o.workers = std::max(
      o.workers,
      static_cast<int>(std::ceil(o.qps * absl::ToDoubleSeconds(slowest) * 1.2)));
  std::printf(
      "grpc_recsys: features -> recall (cf, vec) -> rank -> rerank, each a "
      "gRPC server process on 127.0.0.1.\n"
      "Breakers trip after %d consecutive failures and stay open %s; budgets "
      "%s per call, rank %s.\n"
      "%zu phases of %s, %.0f requests/s open loop.\n\n",
      static_cast<int>(f.trip_after),
      absl::FormatDuration(o.breaker_timeout).c_str(),
      absl::FormatDuration(f.budgets[grpc_recsys::kFeatures]).c_str(),
      absl::FormatDuration(f.budgets[grpc_recsys::kRank]).c_str(),
      grpc_recsys::ChaosScript().size(),
      absl::FormatDuration(o.phase_length).c_str(), o.qps);
  std::fflush(stdout);

  absl::StatusOr<grpc_recsys::ChaosReport> report =
      grpc_recsys::RunChaos(o, stdout);
  if (!report.ok()) {
    std::fprintf(stderr, "grpc_recsys: %s\n",
                 report.status().ToString().c_str());
    return 3;
  }
  grpc_recsys::PrintReport(stdout, *report);

  uint64_t empty = 0;
  for (const grpc_recsys::PhaseReport& p : report->phases)
    empty += p.requests - p.non_empty;
  if (empty != 0) {
    std::printf("\nFAIL: %llu response(s) came back empty\n",
                static_cast<unsigned long long>(empty));
    return 1;
  }
  std::printf(
      "\nOK: every response was non-empty; every server was stopped.\n");
  return 0;
}
