// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The multi-process recommendation demo (examples/grpc_recsys/), run short
// with real server processes on loopback: the proof that the
// breakers, budgets and Plan Bs hold when the outages are real ones (a
// SIGKILL, a SIGSTOP, a slow server, everything down).
//
// One run (chaos.hpp's ShortOptions: 9 phases of 3 s, breaker timeout
// 1 s, 200 requests/s, about 30 s in all; run serially, CTest RUN_SERIAL),
// and assertions on the report RunChaos() returns, the same one the demo
// prints:
//   * every phase: every response non-empty;
//   * rank paused: p99 <= the rank budget (100 ms) + 50 ms;
//   * each phase that starts with a server's return: a response in which
//     no stage of the returned server degraded, within RecoveryBound(): the
//     breaker timeout plus one probe (chaos.hpp says what a probe may take,
//     and the 500 ms of scheduling slack for a loaded machine; the breaker
//     timeout is longer than the slack, so a recovery that needed a second
//     open period fails);
//   * afterwards, no child process is left, running or unreaped.
// Under a sanitizer (the asan-ubsan workflow builds the servers and the
// front with ASan at -O1, several times slower) the latency and
// personalisation bounds are about a build they were not set for, so only
// the correctness half runs there: every response non-empty, every return
// seen, no malformed trailer, no child left.
// The bounds are upper bounds with their reasons, never a sleep and hope.
//
// Plus the driver's bad inputs, each a clear error and never a hang: a
// missing server binary, an unknown role, a child that exits at once, a
// child that never reports a port.

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "chaos.hpp"
#include "children.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GRPC_RECSYS_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRPC_RECSYS_TEST_SANITIZED 1
#endif
#ifdef GRPC_RECSYS_TEST_SANITIZED
constexpr bool kTimingBoundsApply = false;
#else
constexpr bool kTimingBoundsApply = true;
#endif

const grpc_recsys::PhaseReport* Phase(const grpc_recsys::ChaosReport& r,
                                      grpc_recsys::Action action) {
  for (const grpc_recsys::PhaseReport& p : r.phases) {
    if (p.action == action) return &p;
  }
  return nullptr;
}

// Every child the driver started is gone and reaped: waitpid has nothing
// to wait for.
void ExpectNoChildren() {
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child is left";
  EXPECT_EQ(errno, ECHILD);
}

TEST(GrpcRecsysTest, ShortChaosRunStaysNonEmptyBoundedAndRecovers) {
  grpc_recsys::ChaosOptions options =
      grpc_recsys::ShortOptions(GRPC_RECSYS_SERVER);
  if (!kTimingBoundsApply) {
    // Six sanitized processes on two cores serve 200 requests/s so slowly
    // that almost every stage overruns its budget and its breaker stays
    // open: a cold restart of all five then never gets a probe through
    // inside one phase. A quarter of the load keeps the run a test of the
    // adapter's memory safety under real failures, not of the sanitizer's
    // speed.
    options.qps = 50;
  }
  const absl::Time started = absl::Now();
  absl::StatusOr<grpc_recsys::ChaosReport> report =
      grpc_recsys::RunChaos(options);
  ExpectNoChildren();
  ASSERT_TRUE(report.ok()) << report.status();
  // The whole report, as the demo prints it: what a failure below is about.
  grpc_recsys::PrintReport(stdout, *report);
  EXPECT_LT(absl::Now() - started, absl::Seconds(60));
  if (!kTimingBoundsApply) {
    std::printf(
        "sanitized build: latency and personalisation bounds not "
        "checked\n");
  }
  ASSERT_EQ(report->phases.size(), grpc_recsys::ChaosScript().size());

  for (const grpc_recsys::PhaseReport& p : report->phases) {
    SCOPED_TRACE(p.name);
    // 3 s at 200/s is 600 requests (150 at 50/s); a loaded machine may
    // send fewer, but never almost none.
    EXPECT_GT(p.requests, static_cast<uint64_t>(options.qps / 2));
    EXPECT_EQ(p.non_empty, p.requests);
  }

  // The servers answer: when nothing is wrong, most requests are fully
  // personalised. Not all: on a loaded machine three budget overruns in a
  // row trip a breaker, which then serves its Plan B for 1 s, a third of
  // the phase; that is the library working, not failing.
  if (kTimingBoundsApply) {
    EXPECT_GE(report->phases.front().full_percent(), 50.0);
  }

  const grpc_recsys::PhaseReport* paused =
      Phase(*report, grpc_recsys::Action::kPause);
  ASSERT_NE(paused, nullptr);
  const grpc_recsys::FrontOptions front = grpc_recsys::FrontOptionsFor(options);
  if (kTimingBoundsApply) {
    EXPECT_LE(paused->p99, grpc_recsys::PausedRankP99Bound(front))
        << "p99 " << absl::FormatDuration(paused->p99);
  }
  // The ranker really was missed: its Plan B served.
  EXPECT_LT(paused->full_percent(), 50.0);

  const absl::Duration bound = grpc_recsys::RecoveryBound(options);
  int returns = 0;
  for (const grpc_recsys::PhaseReport& p : report->phases) {
    if (!p.server_returned) continue;
    ++returns;
    SCOPED_TRACE(p.name);
    ASSERT_TRUE(p.time_to_back.has_value())
        << "no response served by the returned server";
    if (kTimingBoundsApply) {
      EXPECT_LE(*p.time_to_back, bound) << absl::FormatDuration(*p.time_to_back)
                                        << " > " << absl::FormatDuration(bound);
    }
    // Full personalisation follows, unless load tripped another breaker.
    EXPECT_TRUE(p.time_to_full.has_value());
  }
  EXPECT_EQ(returns, 4);
  // The features ladder: with every server killed, users seen before get
  // their own last-known-good features (Zipf traffic repeats users), the
  // rest a segment's or the global mean; none is fresh.
  const grpc_recsys::PhaseReport* killed = nullptr;
  for (const grpc_recsys::PhaseReport& p : report->phases) {
    if (p.action == grpc_recsys::Action::kKillAll) killed = &p;
  }
  ASSERT_NE(killed, nullptr);
  EXPECT_GT(killed->features_stale, 0u);
  EXPECT_GT(killed->features_segment, 0u);
  EXPECT_EQ(killed->features_fresh, 0u);
  EXPECT_EQ(killed->features_stale + killed->features_segment +
                killed->features_global,
            killed->requests);
  EXPECT_GT(report->phases.front().features_fresh,
            report->phases.front().requests * 9 / 10);
  EXPECT_EQ(report->malformed_trailers, 0u);
  // The trust boundary, against the real servers: the front's
  // CRITICAL_PLUS is believed, a batch job's lowered to CRITICAL; no
  // certificate, no call; only the chaos driver may set latency (the slow
  // phase above did, as it).
  ASSERT_TRUE(report->trust.has_value());
  EXPECT_THAT(report->trust->front_served,
              testing::StartsWith("CRITICAL_PLUS:"));
  EXPECT_THAT(report->trust->batch_served, testing::StartsWith("CRITICAL:"));
  EXPECT_EQ(report->trust->no_certificate, absl::StatusCode::kUnavailable);
  EXPECT_EQ(report->trust->batch_control, absl::StatusCode::kPermissionDenied);
}

TEST(GrpcRecsysTest, MissingServerBinaryIsNamed) {
  grpc_recsys::ChaosOptions o =
      grpc_recsys::ShortOptions("/nonexistent/grpc_recsys_server");
  absl::StatusOr<grpc_recsys::ChaosReport> r = grpc_recsys::RunChaos(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("/nonexistent/grpc_recsys_server"));
}

TEST(GrpcRecsysTest, UnknownRoleIsReportedWithTheServersOwnWords) {
  grpc_recsys::Children children(absl::Seconds(10));
  absl::StatusOr<grpc_recsys::Child> c =
      children.Start("bogus", GRPC_RECSYS_SERVER, {"--role", "bogus"});
  ASSERT_FALSE(c.ok());
  const std::string message(c.status().message());
  EXPECT_THAT(message,
              HasSubstr("exited with status 2 before reporting its port"));
  EXPECT_THAT(message, HasSubstr("unknown role 'bogus'"));
  ExpectNoChildren();
}

TEST(GrpcRecsysTest, ChildThatDiesAtStartIsAnError) {
  grpc_recsys::Children children(absl::Seconds(10));
  absl::StatusOr<grpc_recsys::Child> c =
      children.Start("false", "/bin/false", {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("exited with status 1 before reporting its port"));
  ExpectNoChildren();
}

TEST(GrpcRecsysTest, PortNeverReportedTimesOutAndTheChildIsKilled) {
  grpc_recsys::Children children(absl::Milliseconds(300));
  const absl::Time started = absl::Now();
  absl::StatusOr<grpc_recsys::Child> c =
      children.Start("sleeper", "/bin/sleep", {"30"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("did not report its port within"));
  // The timeout plus the reaping, far from sleep's 30 s.
  EXPECT_LT(absl::Now() - started, absl::Seconds(10));
  ExpectNoChildren();  // killed and reaped, not left sleeping
}

}  // namespace DEGRADE_TEST_UNIT
