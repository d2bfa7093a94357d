// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/metrics/overload_metrics.hpp through MetricsRegistry's
// AttachAdmission, AttachQueue and AttachLimiter, with fake views (the views
// are interfaces): the exact exposition for known stats, the sojourn
// histogram's cumulative buckets, duplicate names, and a detach racing a
// scrape (label concurrency, run under TSan).

#include "degrade/detail/metrics/overload_metrics.hpp"

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "degrade/metrics_registry.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using FakeAdmission = FakeView<AdmissionView, AdmissionStats>;
using FakeQueue = FakeView<QueueView, QueueStats>;
using FakeLimiter = FakeView<LimiterView, LimiterStats>;

// The exposition's lines that mention `family_prefix`, HELP and TYPE lines
// included, joined by newlines.
std::string Family(const std::string& text, absl::string_view family_prefix) {
  std::vector<absl::string_view> kept;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StrContains(line, family_prefix)) kept.push_back(line);
  }
  return absl::StrJoin(kept, "\n");
}

TEST(OverloadMetricsTest, AdmissionExportsPerCriticalityCountsAndThreshold) {
  MetricsRegistry registry;
  FakeAdmission view("frontend");
  view.st.threshold = 2 * 128 + 17;  // SHEDDABLE_PLUS:17 and above are shed
  view.st.admitted = {100, 90, 5, 0};
  view.st.shed = {0, 0, 7, 40};
  auto attachment = registry.AttachAdmission(view);
  ASSERT_NE(attachment, nullptr);
  EXPECT_EQ(
      Family(registry.RenderPrometheus(), "degrade_admission_"),
      R"(# HELP degrade_admission_admitted_total Requests the admission controller let through, by criticality.
# TYPE degrade_admission_admitted_total counter
degrade_admission_admitted_total{admission="frontend",criticality="CRITICAL"} 90
degrade_admission_admitted_total{admission="frontend",criticality="CRITICAL_PLUS"} 100
degrade_admission_admitted_total{admission="frontend",criticality="SHEDDABLE"} 0
degrade_admission_admitted_total{admission="frontend",criticality="SHEDDABLE_PLUS"} 5
# HELP degrade_admission_shed_total Requests the admission controller refused (a ShedError), by criticality.
# TYPE degrade_admission_shed_total counter
degrade_admission_shed_total{admission="frontend",criticality="CRITICAL"} 0
degrade_admission_shed_total{admission="frontend",criticality="CRITICAL_PLUS"} 0
degrade_admission_shed_total{admission="frontend",criticality="SHEDDABLE"} 40
degrade_admission_shed_total{admission="frontend",criticality="SHEDDABLE_PLUS"} 7
# HELP degrade_admission_threshold The rank threshold in force: ranks below it are admitted (criticality * 128 + cohort); 512 admits everything.
# TYPE degrade_admission_threshold gauge
degrade_admission_threshold{admission="frontend"} 273)");
  attachment.reset();
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("frontend")));
}

TEST(OverloadMetricsTest, QueueExportsDepthFlagsDropsAndSojournHistogram) {
  MetricsRegistry registry;
  FakeQueue view("gpu");
  QueueStats& st = view.st;
  st.depth = 12;
  st.capacity = 64;
  st.lifo = true;
  st.overloaded = false;
  st.pushed = 1000;
  st.popped = 950;
  st.drops = {3, 20, 15, 2};  // capacity, codel, deadline, shed
  // 2 items under 1 ms, 1 in (2, 5] ms, 4 in (50, 100] ms, 1 past 5 s.
  st.sojourn_buckets = {2, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 1};
  st.sojourn_sum = absl::Milliseconds(6503);
  auto attachment = registry.AttachQueue(view);
  ASSERT_NE(attachment, nullptr);
  EXPECT_EQ(Family(registry.RenderPrometheus(), "degrade_queue_"),
            R"(# HELP degrade_queue_capacity The queue's hard capacity.
# TYPE degrade_queue_capacity gauge
degrade_queue_capacity{queue="gpu"} 64
# HELP degrade_queue_depth Items waiting in the queue.
# TYPE degrade_queue_depth gauge
degrade_queue_depth{queue="gpu"} 12
# HELP degrade_queue_drops_total Items let go without service, by reason: capacity (full), codel (standing queue), deadline (could not be met), shed (below the admission threshold).
# TYPE degrade_queue_drops_total counter
degrade_queue_drops_total{queue="gpu",reason="capacity"} 3
degrade_queue_drops_total{queue="gpu",reason="codel"} 20
degrade_queue_drops_total{queue="gpu",reason="deadline"} 15
degrade_queue_drops_total{queue="gpu",reason="shed"} 2
# HELP degrade_queue_lifo 1 while the queue serves newest first (a standing queue formed), else 0.
# TYPE degrade_queue_lifo gauge
degrade_queue_lifo{queue="gpu"} 1
# HELP degrade_queue_overloaded 1 while CoDel considers the queue overloaded, else 0.
# TYPE degrade_queue_overloaded gauge
degrade_queue_overloaded{queue="gpu"} 0
# HELP degrade_queue_popped_total Items handed out for service.
# TYPE degrade_queue_popped_total counter
degrade_queue_popped_total{queue="gpu"} 950
# HELP degrade_queue_pushed_total Items accepted into the queue.
# TYPE degrade_queue_pushed_total counter
degrade_queue_pushed_total{queue="gpu"} 1000
# HELP degrade_queue_sojourn_seconds Time the popped items waited in the queue.
# TYPE degrade_queue_sojourn_seconds histogram
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.001"} 2
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.002"} 2
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.005"} 3
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.01"} 3
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.02"} 3
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.05"} 3
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.1"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.2"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="0.5"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="1"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="2"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="5"} 7
degrade_queue_sojourn_seconds_bucket{queue="gpu",le="+Inf"} 8
degrade_queue_sojourn_seconds_sum{queue="gpu"} 6.503
degrade_queue_sojourn_seconds_count{queue="gpu"} 8)");
}

TEST(OverloadMetricsTest,
     SojournBucketsAreCumulativeAndMatchTheMillisecondBounds) {
  // Every bucket holds one more item than the last: the cumulative counts
  // are the triangular numbers, whatever the bounds' formatting.
  QueueStats st;
  uint64_t total = 0;
  for (std::size_t i = 0; i < st.sojourn_buckets.size(); ++i) {
    st.sojourn_buckets[i] = i + 1;
    total += i + 1;
  }
  MetricsRegistry registry;
  FakeQueue view("q");
  view.st = st;
  auto attachment = registry.AttachQueue(view);
  const std::string text = registry.RenderPrometheus();
  const std::vector<std::string> buckets = [&] {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, "degrade_queue_sojourn_seconds_bucket")) {
        out.emplace_back(line);
      }
    }
    return out;
  }();
  ASSERT_EQ(buckets.size(), kSojournBucketsMs.size() + 1);
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += i + 1;
    const std::string value = buckets[i].substr(buckets[i].rfind(' ') + 1);
    EXPECT_EQ(value, std::to_string(cumulative)) << buckets[i];
    if (i < kSojournBucketsMs.size()) {
      const std::size_t le = buckets[i].find("le=\"") + 4;
      const double bound_s =
          std::stod(buckets[i].substr(le, buckets[i].find('"', le) - le));
      EXPECT_NEAR(bound_s * 1000.0, kSojournBucketsMs[i], 1e-9) << buckets[i];
    }
  }
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        R"(degrade_queue_sojourn_seconds_count{queue="q"} )",
                        total, "\n")));
}

TEST(OverloadMetricsTest,
     LimiterExportsLimitInFlightPermitsNoLoadLatencyAndReMeasuring) {
  MetricsRegistry registry;
  FakeLimiter view("model");
  view.st.limit = 37;
  view.st.in_flight = 12;
  view.st.acquired = {10, 200, 30, 4};
  view.st.rejected = {0, 1, 6, 9};
  view.st.succeeded = 220;
  view.st.dropped = 11;
  view.st.ignored = 1;
  view.st.no_load_latency = absl::Microseconds(180500);
  view.st.re_measuring = true;
  auto attachment = registry.AttachLimiter(view);
  ASSERT_NE(attachment, nullptr);
  EXPECT_EQ(
      Family(registry.RenderPrometheus(), "degrade_limiter_"),
      R"(# HELP degrade_limiter_acquired_total Permits granted, by criticality.
# TYPE degrade_limiter_acquired_total counter
degrade_limiter_acquired_total{limiter="model",criticality="CRITICAL"} 200
degrade_limiter_acquired_total{limiter="model",criticality="CRITICAL_PLUS"} 10
degrade_limiter_acquired_total{limiter="model",criticality="SHEDDABLE"} 4
degrade_limiter_acquired_total{limiter="model",criticality="SHEDDABLE_PLUS"} 30
# HELP degrade_limiter_in_flight Permits held right now.
# TYPE degrade_limiter_in_flight gauge
degrade_limiter_in_flight{limiter="model"} 12
# HELP degrade_limiter_limit The concurrency limit now in force.
# TYPE degrade_limiter_limit gauge
degrade_limiter_limit{limiter="model"} 37
# HELP degrade_limiter_no_load_latency_seconds The limit algorithm's estimate of the latency without queueing; 0 for a fixed limit or before the first sample.
# TYPE degrade_limiter_no_load_latency_seconds gauge
degrade_limiter_no_load_latency_seconds{limiter="model"} 0.1805
# HELP degrade_limiter_outcomes_total How granted permits ended: success (with a latency), dropped (timeout or overload: the limit decreases), ignored (no signal).
# TYPE degrade_limiter_outcomes_total counter
degrade_limiter_outcomes_total{limiter="model",outcome="dropped"} 11
degrade_limiter_outcomes_total{limiter="model",outcome="ignored"} 1
degrade_limiter_outcomes_total{limiter="model",outcome="success"} 220
# HELP degrade_limiter_re_measuring 1 while the no-load latency is being re-measured, else 0.
# TYPE degrade_limiter_re_measuring gauge
degrade_limiter_re_measuring{limiter="model"} 1
# HELP degrade_limiter_rejected_total Permits refused at the limit (a ShedError), by criticality.
# TYPE degrade_limiter_rejected_total counter
degrade_limiter_rejected_total{limiter="model",criticality="CRITICAL"} 1
degrade_limiter_rejected_total{limiter="model",criticality="CRITICAL_PLUS"} 0
degrade_limiter_rejected_total{limiter="model",criticality="SHEDDABLE"} 9
degrade_limiter_rejected_total{limiter="model",criticality="SHEDDABLE_PLUS"} 6)");
}

TEST(OverloadMetricsTest, ScrapesSeeTheStatsOfTheirMoment) {
  MetricsRegistry registry;
  FakeLimiter view("l");
  auto attachment = registry.AttachLimiter(view);
  view.st.limit = 5;
  EXPECT_THAT(registry.RenderPrometheus(),
              HasSubstr("degrade_limiter_limit{limiter=\"l\"} 5\n"));
  view.st.limit = 9;
  EXPECT_THAT(registry.RenderPrometheus(),
              HasSubstr("degrade_limiter_limit{limiter=\"l\"} 9\n"));
}

TEST(OverloadMetricsTest, SameNamesAreMadeUniquePerKindAsForBreakers) {
  MetricsRegistry registry;
  FakeQueue q1("infer");
  FakeQueue q2("infer");
  FakeAdmission a("infer");  // another kind: no clash
  FakeLimiter l("infer");
  q1.st.depth = 1;
  q2.st.depth = 2;
  auto first = registry.AttachQueue(q1);
  auto second = registry.AttachQueue(q2);
  auto admission = registry.AttachAdmission(a);
  auto limiter = registry.AttachLimiter(l);
  EXPECT_THAT(registry.Names("queue"), ElementsAre("infer", "infer#2"));
  EXPECT_THAT(registry.Names("admission"), ElementsAre("infer"));
  EXPECT_THAT(registry.Names("limiter"), ElementsAre("infer"));
  std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("degrade_queue_depth{queue=\"infer\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("degrade_queue_depth{queue=\"infer#2\"} 2\n"));
  // The freed name comes back to the next queue, as for breakers.
  first.reset();
  FakeQueue q3("infer");
  q3.st.depth = 3;
  auto third = registry.AttachQueue(q3);
  EXPECT_THAT(registry.Names("queue"), ElementsAre("infer", "infer#2"));
  text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("degrade_queue_depth{queue=\"infer\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("degrade_metrics_dropped_samples_total 0\n"));
}

// A queue view whose stats() holds the scrape until unregistering has begun
// (the name is gone from the registry), so the destroyer really races it.
class BlockingQueue final : public QueueView {
 public:
  BlockingQueue(const MetricsRegistry* registry, std::promise<void>* entered)
      : registry_(registry), entered_(entered) {}
  const std::string& name() const override { return name_; }
  QueueStats stats() const override {
    in_stats.store(true);
    entered_->set_value();
    while (!registry_->Names("queue").empty()) std::this_thread::yield();
    QueueStats st;
    st.depth = 4;
    in_stats.store(false);
    return st;
  }
  mutable std::atomic<bool> in_stats{false};

 private:
  const std::string name_ = "slow";
  const MetricsRegistry* registry_;
  std::promise<void>* entered_;
};

TEST(OverloadMetricsConcurrencyTest, DetachWaitsForAScrapeReadingTheView) {
  MetricsRegistry registry;
  std::promise<void> entered;
  auto view = std::make_unique<BlockingQueue>(&registry, &entered);
  std::unique_ptr<TelemetryAttachment> attachment = registry.AttachQueue(*view);
  std::string scraped;
  std::thread scraper([&] { scraped = registry.RenderPrometheus(); });
  entered.get_future().wait();
  std::thread destroyer([&] {
    attachment.reset();
    // The detach returned: no scrape is inside the view any more, so the
    // component may now be destroyed.
    EXPECT_FALSE(view->in_stats.load());
    view.reset();
  });
  destroyer.join();
  scraper.join();
  // The scrape that had started finished with the view's snapshot.
  EXPECT_THAT(scraped, HasSubstr("degrade_queue_depth{queue=\"slow\"} 4\n"));
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("slow")));
}

TEST(OverloadMetricsConcurrencyTest,
     ScrapesRaceAttachAndDetachOfManyComponents) {
  MetricsRegistry registry;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      const std::string text = registry.RenderPrometheus();
      EXPECT_THAT(text, HasSubstr("degrade_metrics_dropped_samples_total 0\n"));
    }
  });
  for (int round = 0; round < 200; ++round) {
    FakeAdmission a("a");
    FakeQueue q("q");
    FakeLimiter l("l");
    auto x = registry.AttachAdmission(a);
    auto y = registry.AttachQueue(q);
    auto z = registry.AttachLimiter(l);
    auto y2 = registry.AttachQueue(q);  // the same view twice: q and q#2
  }
  done.store(true);
  scraper.join();
  EXPECT_TRUE(registry.Names("queue").empty());
}

// A queue view whose stats() throws, as a buggy component's might.
class ThrowingQueue final : public QueueView {
 public:
  const std::string& name() const override { return name_; }
  QueueStats stats() const override {
    throw std::runtime_error("stats() failed");
  }

 private:
  const std::string name_ = "broken";
};

// A view whose stats() throws is contained, and counted in the dropped total.
TEST(OverloadMetricsTest, AThrowingViewIsCountedNotSilentlyAbsent) {
  MetricsRegistry registry;
  ThrowingQueue bad;
  FakeQueue good("good");
  auto a = registry.AttachQueue(bad);
  auto b = registry.AttachQueue(good);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("degrade_queue_depth{queue=\"good\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("broken")));  // contained
  EXPECT_THAT(text, Not(HasSubstr("degrade_metrics_dropped_samples_total 0\n")))
      << "a collection that threw left no trace in the exposition";
  EXPECT_THAT(text, HasSubstr("degrade_metrics_dropped_samples_total 1\n"));
}

// Bucket counts summing past 2^64 saturate, so le stays monotonic.
TEST(OverloadMetricsTest, SojournBucketsNearUint64MaxStayMonotonic) {
  MetricsRegistry registry;
  FakeQueue view("q");
  view.st.sojourn_buckets = {UINT64_MAX, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
  auto attachment = registry.AttachQueue(view);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(
      text, Not(HasSubstr(
                "degrade_queue_sojourn_seconds_bucket{queue=\"q\",le=\"+Inf\"}"
                " 4\n")))
      << "the +Inf bucket wrapped below the first bucket";
  EXPECT_THAT(text,
              Not(HasSubstr("degrade_queue_sojourn_seconds_count{queue=\"q\"} "
                            "4\n")));
  EXPECT_THAT(text,
              HasSubstr("degrade_queue_sojourn_seconds_bucket{queue=\"q\","
                        "le=\"+Inf\"} 18446744073709551615\n"));
  EXPECT_THAT(text,
              HasSubstr("degrade_queue_sojourn_seconds_count{queue=\"q\"} "
                        "18446744073709551615\n"));
  EXPECT_THAT(registry.RenderJson(),
              HasSubstr(R"("le":"+Inf","count":18446744073709551615})"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
