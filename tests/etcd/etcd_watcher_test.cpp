// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// EtcdPrefixWatcher against real etcd processes (snapshot then events in
// order, the read-to-watch gap, a crash and restart, compaction, oversize
// values, Stop() while the stream is blocked) and against a fake gateway
// answering garbage. Every wait on a real process is a condition wait with
// a generous bound, never a sleep followed by an assertion.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/etcd/watcher.hpp"
#include "degrade/event_log.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/metrics_registry.hpp"
#include "etcd/etcd_server.hpp"
#include "etcd/fake_gateway.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using degrade::etcd::EtcdClient;
using degrade::etcd::EtcdClientOptions;
using degrade::etcd::EtcdPrefixWatcher;
using degrade::etcd::EtcdWatcherOptions;
using degrade_tests::EtcdServer;
using degrade_tests::FakeGateway;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kBound = absl::Seconds(20);

// Polls `done` (every 2 ms, up to kBound). A test whose threads would hang
// forever otherwise (a deadlocked Stop()) ends the process instead.
void WithinBoundOrAbort(const std::function<bool()>& done, const char* what) {
  const absl::Time deadline = absl::Now() + kBound;
  while (!done()) {
    if (absl::Now() > deadline) {
      std::fprintf(stderr, "FAILED: %s did not happen within %s; aborting\n",
                   what, absl::FormatDuration(kBound).c_str());
      std::abort();
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
}

// Holds the watcher's thread in a callback until opened (or kBound), so a
// test can change the world while the watcher is away. Opens when
// destroyed: declare it after the watcher.
class Gate {
 public:
  Gate() : waiting_(open_.get_future().share()) {}
  ~Gate() { Open(); }
  void Open() {
    if (!opened_.exchange(true)) open_.set_value();
  }
  void Wait() const {
    waiting_.wait_for(std::chrono::microseconds(
        absl::ToInt64Microseconds(kBound)));
  }

 private:
  std::promise<void> open_;
  std::shared_future<void> waiting_;
  std::atomic<bool> opened_{false};
};

// What the callbacks saw, in order, and the view they add up to.
class Recorder {
 public:
  // Hooks `o`'s callbacks up to this recorder.
  void Attach(EtcdWatcherOptions* o) {
    o->on_put = [this](const std::string& k, const std::string& v, int64_t r) {
      degrade::detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("put ", k, "=", v));
      revisions_.push_back(r);
      view_[k] = v;
      cv_.SignalAll();
    };
    o->on_delete = [this](const std::string& k, int64_t r) {
      degrade::detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("delete ", k));
      revisions_.push_back(r);
      view_.erase(k);
      cv_.SignalAll();
    };
    o->on_status = [this](const absl::Status& s) {
      degrade::detail::MutexLock l(&mu_);
      statuses_.push_back(s);
      cv_.SignalAll();
    };
  }

  // Waits until `pred(*this)` holds (up to kBound); returns whether it did.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    degrade::detail::MutexLock l(&mu_);
    return cv_.WaitFor(&mu_, kBound, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return pred(*this);
    });
  }
  bool WaitForView(const std::map<std::string, std::string>& want) {
    return WaitFor([&](const Recorder& r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return r.view_ == want; });
  }
  bool WaitForEvents(std::size_t n) {
    return WaitFor([n](const Recorder& r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return r.events_.size() >= n; });
  }
  bool WaitForStatuses(std::size_t n) {
    return WaitFor([n](const Recorder& r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return r.statuses_.size() >= n; });
  }

  std::vector<std::string> events() {
    degrade::detail::MutexLock l(&mu_);
    return events_;
  }
  std::vector<int64_t> revisions() {
    degrade::detail::MutexLock l(&mu_);
    return revisions_;
  }
  std::vector<absl::Status> statuses() {
    degrade::detail::MutexLock l(&mu_);
    return statuses_;
  }
  std::map<std::string, std::string> view() {
    degrade::detail::MutexLock l(&mu_);
    return view_;
  }

 private:
  degrade::detail::Mutex mu_;
  degrade::detail::CondVar cv_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> revisions_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> view_ ABSL_GUARDED_BY(mu_);
};

EtcdWatcherOptions Options(const std::string& endpoint, Recorder* rec) {
  EtcdWatcherOptions o;
  o.endpoint = endpoint;
  o.prefix = "/cfg/";
  o.backoff_initial = absl::Milliseconds(10);
  o.backoff_max = absl::Milliseconds(200);
  rec->Attach(&o);
  return o;
}

class EtcdWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  EtcdClientOptions ClientOptions() const {
    EtcdClientOptions o;
    o.endpoint = etcd_.endpoint();
    return o;
  }
  int64_t Put(const std::string& k, const std::string& v) {
    EtcdClient c(ClientOptions());
    absl::StatusOr<int64_t> r = c.Put(k, v);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(0);
  }
  int64_t Delete(const std::string& k) {
    EtcdClient c(ClientOptions());
    absl::StatusOr<int64_t> r = c.Delete(k);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(0);
  }
  uint64_t ClusterId() {
    EtcdClient c(ClientOptions());
    absl::StatusOr<degrade::etcd::RangeResult> r = c.Range("/");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->cluster_id : 0;
  }

  // The cluster is wiped and made anew (with `token`) while the watcher is
  // held in its outage report; then `refill` writes the new cluster's data.
  // /cfg/a was "old" at revision 2 and is "new" at revision 2 again.
  void ExpectARemadeClusterIsDeliveredAgain(
      const std::string& token, const std::function<void()>& refill,
      const std::map<std::string, std::string>& want) {
    EXPECT_EQ(Put("/cfg/a", "old"), 2);
    Put("/cfg/b", "1");
    Delete("/cfg/b");  // the read's revision is 4
    const uint64_t old_id = ClusterId();
    Recorder rec;
    EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
    auto record = o.on_status;
    std::shared_ptr<Gate> gate = std::make_shared<Gate>();
    o.on_status = [record, gate](const absl::Status& s) {
      record(s);
      if (!s.ok()) gate->Wait();
    };
    EtcdPrefixWatcher w(std::move(o));
    ASSERT_TRUE(w.Start().ok());
    ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "old"}}));
    etcd_.Wipe(token);
    ASSERT_TRUE(rec.WaitForStatuses(1));  // and held there
    absl::Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Put("/cfg/a", "new"), 2);
    refill();
    EXPECT_EQ(ClusterId() != old_id, token != "etcd-cluster");
    gate->Open();
    EXPECT_TRUE(rec.WaitForView(want)) << ::testing::PrintToString(rec.view());
  }

  // Issue 32: etcd is wiped and made anew (with `token`) between the
  // watcher's read and its watch: the read is at revision 5 (/cfg/a, /cfg/b,
  // /cfg/gone), the watch starts at 6 on a cluster that `refill` writes up
  // to revision `head`. Writes below 6 would never reach the watch, and the
  // keys wiped would never be deleted; only the stream's header (its
  // cluster_id, or a revision below 5) tells. Then the watcher resyncs:
  // on_delete for each key gone, on_put for the new cluster's keys, one
  // ABORTED status naming `why` and OK once watching again, and the watch
  // after it delivers.
  void ExpectAClusterMadeAnewBeforeTheWatchIsResynced(
      const std::string& token, const std::function<void()>& refill,
      int64_t head, const std::string& why,
      const std::map<std::string, std::string>& want,
      const std::vector<std::string>& resync) {
    Put("/cfg/a", "old");
    Put("/cfg/gone", "x");
    Put("/cfg/b", "1");
    EXPECT_EQ(Put("/cfg/b", "2"), 5);
    Recorder rec;
    EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
    int calls = 0;
    // On the watcher's thread, while the test thread only waits.
    o.after_range_for_testing = [&](int64_t revision) {
      if (calls++ != 0) return;
      EXPECT_EQ(revision, 5);
      etcd_.Wipe(token);
      absl::Status s = etcd_.Start();
      ASSERT_TRUE(s.ok()) << s;
      refill();
      EXPECT_EQ(Put("/cfg/head", "h"), head);
    };
    EtcdPrefixWatcher w(std::move(o));
    ASSERT_TRUE(w.Start().ok());
    std::map<std::string, std::string> view = want;
    view["/cfg/head"] = "h";
    ASSERT_TRUE(rec.WaitForView(view)) << ::testing::PrintToString(rec.view());
    ASSERT_TRUE(rec.WaitForStatuses(2));  // ABORTED, then OK: watching again
    Put("/cfg/live", "after");
    view["/cfg/live"] = "after";
    ASSERT_TRUE(rec.WaitForView(view)) << ::testing::PrintToString(rec.view());

    std::vector<std::string> events = {"put /cfg/a=old", "put /cfg/b=2",
                                       "put /cfg/gone=x"};
    events.insert(events.end(), resync.begin(), resync.end());
    events.push_back("put /cfg/live=after");
    EXPECT_EQ(rec.events(), events);  // nothing missed, nothing phantom
    const std::vector<absl::Status> st = rec.statuses();
    ASSERT_EQ(st.size(), 2u);
    EXPECT_TRUE(absl::IsAborted(st[0])) << st[0];
    EXPECT_THAT(std::string(st[0].message()),
                AllOf(HasSubstr(etcd_.endpoint()), HasSubstr(why)));
    EXPECT_TRUE(st[1].ok()) << st[1];
    EXPECT_EQ(w.counters().cluster_changes, 1u);
    EXPECT_EQ(w.counters().resyncs, 1u);
    EXPECT_EQ(w.stats().cluster_changes, 1u);
  }

  EtcdServer etcd_;
};

TEST_F(EtcdWatcherTest, DeliversTheSnapshotThenEachChangeInOrder) {
  Put("/cfg/a", "1");
  Put("/cfg/b", "2");
  Put("/other/x", "not mine");
  Recorder rec;
  EtcdPrefixWatcher w(Options(etcd_.endpoint(), &rec));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForEvents(2));
  // The watch may not be open yet; it starts from the snapshot's revision +
  // 1, so these are delivered either way, in order.
  Put("/cfg/c", "3");
  Put("/cfg/a", "4");
  Delete("/cfg/b");
  Put("/other/y", "not mine");
  ASSERT_TRUE(rec.WaitForEvents(5));
  EXPECT_THAT(rec.events(), ElementsAre("put /cfg/a=1", "put /cfg/b=2",
                                        "put /cfg/c=3", "put /cfg/a=4",
                                        "delete /cfg/b"));
  const std::vector<int64_t> revs = rec.revisions();
  for (std::size_t i = 3; i < revs.size(); ++i) EXPECT_GT(revs[i], revs[i - 1]);
  EXPECT_TRUE(rec.statuses().empty());
  EXPECT_EQ(w.counters().events_delivered, 5u);
  EXPECT_EQ(w.counters().resyncs, 0u);
  EXPECT_THAT(w.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(EtcdWatcherTest, APutBetweenTheReadAndTheWatchIsNotMissed) {
  Put("/cfg/a", "1");
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  int calls = 0;
  o.after_range_for_testing = [&](int64_t) {
    if (calls++ == 0) Put("/cfg/gap", "made after the read");
  };
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForView(
      {{"/cfg/a", "1"}, {"/cfg/gap", "made after the read"}}));
  EXPECT_THAT(rec.events(),
              ElementsAre("put /cfg/a=1", "put /cfg/gap=made after the read"));
  EXPECT_EQ(w.counters().resyncs, 0u);
}

TEST_F(EtcdWatcherTest, ACrashIsReportedOnceAndTheWatcherConverges) {
  Put("/cfg/a", "1");
  Put("/cfg/b", "2");
  Recorder rec;
  EtcdPrefixWatcher w(Options(etcd_.endpoint(), &rec));
  ASSERT_TRUE(w.Start().ok());
  Put("/cfg/b", "2b");  // delivered by the watch: the stream is open
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}, {"/cfg/b", "2b"}}));

  etcd_.Kill();
  ASSERT_TRUE(rec.WaitForStatuses(1));
  // Retries go on (backoff 10-200 ms) while etcd is down: still one status.
  absl::Status restarted = etcd_.Start();
  ASSERT_TRUE(restarted.ok()) << restarted;
  ASSERT_TRUE(rec.WaitForStatuses(2));
  Delete("/cfg/a");
  Put("/cfg/b", "new");
  Put("/cfg/c", "3");
  ASSERT_TRUE(rec.WaitForView({{"/cfg/b", "new"}, {"/cfg/c", "3"}}));

  const std::vector<absl::Status> st = rec.statuses();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
  EXPECT_THAT(std::string(st[0].message()), HasSubstr(etcd_.endpoint()));
  EXPECT_TRUE(st[1].ok()) << st[1];
  EXPECT_GE(w.counters().resyncs, 1u);
  EXPECT_GE(w.counters().reconnects, 1u);
}

// Issue 29: what an operator sees of the watcher, through a registry: the
// state gauge follows watching -> outage -> watching -> stopped, one outage
// is counted however many retries it took, the resync after it is counted,
// and the last revision is the highest seen.
TEST_F(EtcdWatcherTest, StatsFollowStateOutagesResyncsAndTheLastRevision) {
  using degrade::EtcdWatcherState;
  degrade::EventLogOptions quiet;
  quiet.sink = [](absl::string_view) {};
  degrade::MetricsRegistry registry(quiet);
  Put("/cfg/a", "1");
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  o.metrics = &registry;
  auto w = std::make_unique<EtcdPrefixWatcher>(std::move(o));
  EXPECT_EQ(w->name(), "/cfg/");  // the prefix, by default
  EXPECT_EQ(w->stats().state, EtcdWatcherState::kStarting);
  ASSERT_TRUE(w->Start().ok());
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}}));
  const int64_t rev = Put("/cfg/b", "2");  // only a watch delivers it
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}, {"/cfg/b", "2"}}));
  degrade::EtcdWatcherStats s = w->stats();
  EXPECT_EQ(s.state, EtcdWatcherState::kWatching);
  EXPECT_EQ(s.last_revision, rev);
  EXPECT_EQ(s.outages, 0u);
  EXPECT_THAT(registry.RenderPrometheus(),
              HasSubstr("degrade_etcd_watcher_state{watcher=\"/cfg/\"} 1\n"));

  etcd_.Kill();
  ASSERT_TRUE(rec.WaitForStatuses(1));  // reported after the state moved
  s = w->stats();
  EXPECT_EQ(s.state, EtcdWatcherState::kOutage);
  EXPECT_EQ(s.outages, 1u);
  EXPECT_THAT(
      registry.RenderPrometheus(),
      AllOf(HasSubstr("degrade_etcd_watcher_state{watcher=\"/cfg/\"} 3\n"),
            HasSubstr("degrade_etcd_watcher_outages_total{watcher=\"/cfg/\"} "
                      "1\n")));

  absl::Status restarted = etcd_.Start();
  ASSERT_TRUE(restarted.ok()) << restarted;
  ASSERT_TRUE(rec.WaitForStatuses(2));  // OK: watching again
  const int64_t later = Put("/cfg/c", "3");
  ASSERT_TRUE(
      rec.WaitForView({{"/cfg/a", "1"}, {"/cfg/b", "2"}, {"/cfg/c", "3"}}));
  s = w->stats();
  EXPECT_EQ(s.state, EtcdWatcherState::kWatching);
  EXPECT_EQ(s.outages, 1u);  // one outage, however many retries
  EXPECT_GE(s.resyncs, 1u);
  EXPECT_EQ(s.last_revision, later);

  w->Stop();
  EXPECT_EQ(w->stats().state, EtcdWatcherState::kStopped);
  w.reset();
  EXPECT_THAT(registry.RenderPrometheus(),
              Not(HasSubstr("degrade_etcd_watcher_")));
}

TEST_F(EtcdWatcherTest, ACompactedStartRevisionLeadsToAResync) {
  Put("/cfg/keep", "1");
  Put("/cfg/gone", "2");
  Put("/cfg/change", "old");
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  int calls = 0;
  // Between the read and the watch (the watcher is "disconnected"): changes,
  // then a compaction past them, so the watch from R + 1 is refused.
  o.after_range_for_testing = [&](int64_t) {
    if (calls++ != 0) return;
    Delete("/cfg/gone");
    Put("/cfg/change", "new");
    const int64_t head = Put("/cfg/added", "3");
    EtcdClient c(ClientOptions());
    absl::Status s = c.Compact(head);
    EXPECT_TRUE(s.ok()) << s;
  };
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForView(
      {{"/cfg/keep", "1"}, {"/cfg/change", "new"}, {"/cfg/added", "3"}}));
  EXPECT_EQ(w.counters().compactions, 1u);
  EXPECT_EQ(w.counters().resyncs, 1u);
  EXPECT_TRUE(rec.statuses().empty());
  // The unchanged key was not delivered twice.
  const std::vector<std::string> ev = rec.events();
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "put /cfg/keep=1"), 1);
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "delete /cfg/gone"), 1);
}

TEST_F(EtcdWatcherTest, AnOversizeValueIsRefusedWithAClearStatus) {
  const std::string big(100, 'x');
  Put("/cfg/big", big);
  Put("/cfg/small", "ok");
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  o.max_value_bytes = 16;
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForStatuses(1));
  Put("/cfg/big2", big);
  Put("/cfg/after", "fine");
  ASSERT_TRUE(rec.WaitForView({{"/cfg/small", "ok"}, {"/cfg/after", "fine"}}));
  ASSERT_TRUE(rec.WaitForStatuses(2));
  const std::vector<absl::Status> st = rec.statuses();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_TRUE(absl::IsInvalidArgument(st[0])) << st[0];
  EXPECT_THAT(std::string(st[0].message()), HasSubstr("'/cfg/big'"));
  EXPECT_THAT(std::string(st[0].message()), HasSubstr("100 bytes"));
  EXPECT_THAT(std::string(st[1].message()), HasSubstr("'/cfg/big2'"));
  EXPECT_EQ(w.counters().values_refused, 2u);
}

TEST_F(EtcdWatcherTest, StopReturnsPromptlyWhileTheStreamIsBlocked) {
  Recorder rec;
  EtcdPrefixWatcher w(Options(etcd_.endpoint(), &rec));
  ASSERT_TRUE(w.Start().ok());
  Put("/cfg/a", "1");
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}}));  // the stream is open
  const absl::Time t0 = absl::Now();
  w.Stop();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
  w.Stop();  // idempotent
}

TEST_F(EtcdWatcherTest, ConcurrentStopsAllReturn) {
  Put("/cfg/a", "1");
  // A race, so several rounds (each hung or crashed before the fix).
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    Recorder rec;
    EtcdPrefixWatcher w(Options(etcd_.endpoint(), &rec));
    ASSERT_TRUE(w.Start().ok());
    ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}}));
    std::atomic<int> ready{0}, returned{0};
    std::vector<std::thread> stoppers;
    for (int i = 0; i < 4; ++i) {
      stoppers.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < 4) std::this_thread::yield();
        w.Stop();
        returned.fetch_add(1);
      });
    }
    WithinBoundOrAbort([&] { return returned.load() == 4; }, "4 Stop() calls");
    for (std::thread& t : stoppers) t.join();
  }  // and the destructor's Stop() after them
}

TEST_F(EtcdWatcherTest, StopFromACallbackReturnsAndNoCallbackFollows) {
  Put("/cfg/a", "1");
  Put("/cfg/stop", "2");
  Put("/cfg/z", "3");  // after /cfg/stop in the snapshot: never delivered
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  EtcdPrefixWatcher* self = nullptr;
  std::atomic<bool> stop_returned{false};
  auto record = o.on_put;
  o.on_put = [&, record](const std::string& k, const std::string& v,
                         int64_t r) {
    record(k, v, r);
    if (k != "/cfg/stop") return;
    self->Stop();
    stop_returned.store(true);
  };
  EtcdPrefixWatcher w(std::move(o));
  self = &w;
  ASSERT_TRUE(w.Start().ok());
  WithinBoundOrAbort([&] { return stop_returned.load(); },
                     "Stop() from on_put returning");
  const absl::Time t0 = absl::Now();
  w.Stop();  // joins the thread, which is leaving
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
  EXPECT_THAT(rec.events(), ElementsAre("put /cfg/a=1", "put /cfg/stop=2"));
  EXPECT_TRUE(rec.statuses().empty());
}

TEST_F(EtcdWatcherTest, AGracefulShutdownIsUnavailableAndTheReturnIsOkAtOnce) {
  Put("/cfg/a", "1");
  Recorder rec;
  EtcdPrefixWatcher w(Options(etcd_.endpoint(), &rec));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}}));
  Put("/cfg/b", "2");  // delivered by the watch: the stream is open
  ASSERT_TRUE(rec.WaitForView({{"/cfg/a", "1"}, {"/cfg/b", "2"}}));

  etcd_.Stop();  // SIGTERM: the gateway sends an error message, then ends
  ASSERT_TRUE(rec.WaitForStatuses(1));
  absl::Status restarted = etcd_.Start();
  ASSERT_TRUE(restarted.ok()) << restarted;
  // Back as soon as the watch is, with no event to carry the news.
  ASSERT_TRUE(rec.WaitForStatuses(2));
  const std::vector<absl::Status> st = rec.statuses();
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
  EXPECT_THAT(std::string(st[0].message()), HasSubstr(etcd_.endpoint()));
  EXPECT_TRUE(st[1].ok()) << st[1];
  EXPECT_EQ(st.size(), 2u);
}

TEST_F(EtcdWatcherTest, AWipedClusterIsDeliveredAgain) {
  // Same token, same cluster_id: the read's revision (2) is below the
  // revision already seen (4).
  ExpectARemadeClusterIsDeliveredAgain("etcd-cluster", [] {},
                                       {{"/cfg/a", "new"}});
}

TEST_F(EtcdWatcherTest, AClusterWithAnotherIdIsDeliveredAgain) {
  // Revisions as high as before (4), but another cluster_id.
  ExpectARemadeClusterIsDeliveredAgain(
      "another-cluster",
      [this] {
        Put("/cfg/c", "1");
        EXPECT_EQ(Put("/cfg/c", "2"), 4);
      },
      {{"/cfg/a", "new"}, {"/cfg/c", "2"}});
}

TEST_F(EtcdWatcherTest, AClusterRemadeWithTheSameIdPastTheOldHeadIsDeliveredAgain) {
  // Same token, same cluster_id, and written up to revision 5, past the 4
  // seen: only /cfg/a's value tells the new cluster from the old.
  ExpectARemadeClusterIsDeliveredAgain(
      "etcd-cluster",
      [this] {
        Put("/cfg/b", "x");
        Put("/cfg/b", "y");
        EXPECT_EQ(Put("/cfg/b", "z"), 5);
      },
      {{"/cfg/a", "new"}, {"/cfg/b", "z"}});
}

TEST_F(EtcdWatcherTest, AWipeBetweenTheReadAndTheWatchIsResynced) {
  // Same token, same cluster_id: the new cluster's head (3) is below the
  // read's revision (5).
  ExpectAClusterMadeAnewBeforeTheWatchIsResynced(
      "etcd-cluster", [this] { EXPECT_EQ(Put("/cfg/a", "new"), 2); }, 3,
      "header.revision 3 is below the revision 5", {{"/cfg/a", "new"}},
      {"put /cfg/a=new", "put /cfg/head=h", "delete /cfg/b",
       "delete /cfg/gone"});
}

TEST_F(EtcdWatcherTest,
       ARestoreWithAnotherIdBetweenTheReadAndTheWatchIsResynced) {
  // Another cluster_id at a head (5) as high as the read's: only the id
  // tells (a backup restored as a new cluster).
  ExpectAClusterMadeAnewBeforeTheWatchIsResynced(
      "another-cluster",
      [this] {
        Put("/cfg/a", "new");
        Put("/cfg/c", "1");
        EXPECT_EQ(Put("/cfg/c", "2"), 4);
      },
      5, "header.cluster_id", {{"/cfg/a", "new"}, {"/cfg/c", "2"}},
      {"put /cfg/a=new", "put /cfg/c=2", "put /cfg/head=h", "delete /cfg/b",
       "delete /cfg/gone"});
}

TEST_F(EtcdWatcherTest, AThrowingCallbackDoesNotStopTheWatcher) {
  Recorder rec;
  EtcdWatcherOptions o = Options(etcd_.endpoint(), &rec);
  auto record = o.on_put;
  o.on_put = [record](const std::string& k, const std::string& v, int64_t r) {
    if (k == "/cfg/boom") throw std::runtime_error("boom");
    record(k, v, r);
  };
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  Put("/cfg/boom", "1");
  Put("/cfg/next", "2");
  ASSERT_TRUE(rec.WaitForView({{"/cfg/next", "2"}}));
  ASSERT_TRUE(rec.WaitForStatuses(1));
  EXPECT_THAT(std::string(rec.statuses()[0].message()), HasSubstr("boom"));
  EXPECT_EQ(w.counters().callback_errors, 1u);
}

TEST(EtcdWatcherOptionsTest, BadOptionsAreRefusedAtStart) {
  EtcdWatcherOptions o;
  o.endpoint = "nowhere";
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdPrefixWatcher(o).Start()));
  o.endpoint = "127.0.0.1:1";
  o.backoff_initial = absl::Seconds(10);
  o.backoff_max = absl::Seconds(1);
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdPrefixWatcher(o).Start()));
  o.backoff_initial = absl::Milliseconds(1);
  EtcdPrefixWatcher stopped(o);
  stopped.Stop();
  EXPECT_TRUE(absl::IsFailedPrecondition(stopped.Start()));
}

// ---- Malformed gateways: clear statuses, no crash, outage reported once ----

struct BadStream {
  const char* name;
  const char* range_body;
  const char* watch_body;
  absl::StatusCode code;
  const char* says;
};

class EtcdWatcherGarbageTest : public ::testing::TestWithParam<BadStream> {};

TEST_P(EtcdWatcherGarbageTest, IsOneClearStatusAndNoCrash) {
  const BadStream& b = GetParam();
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, b.range_body);
  fake.Reply("/v3/watch", 200, b.watch_body);
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(5);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  // Several failed attempts later, still one report.
  ASSERT_TRUE(fake.WaitForCount("/v3/kv/range", 6));
  ASSERT_TRUE(rec.WaitForStatuses(1));
  const absl::Time t0 = absl::Now();
  w.Stop();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
  const std::vector<absl::Status> st = rec.statuses();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].code(), b.code) << st[0];
  EXPECT_THAT(std::string(st[0].message()), HasSubstr(fake.endpoint()));
  EXPECT_THAT(std::string(st[0].message()), HasSubstr(b.says));
}

constexpr char kEmptyRange[] = R"({"header":{"revision":"7"}})";

INSTANTIATE_TEST_SUITE_P(
    Gateways, EtcdWatcherGarbageTest,
    ::testing::Values(
        BadStream{"RangeNotJson", "garbage", "", absl::StatusCode::kInternal,
                  "Range"},
        BadStream{"RangeBadBase64",
                  R"({"header":{"revision":"7"},"kvs":[{"key":"%%%"}]})", "",
                  absl::StatusCode::kDataLoss, "kvs[0].key"},
        BadStream{"WatchGarbage", kEmptyRange, "hello",
                  absl::StatusCode::kInternal, "watch"},
        BadStream{"WatchTruncated", kEmptyRange,
                  R"({"result":{"created":true}}{"result":{"events":[)",
                  absl::StatusCode::kInternal, "truncated"},
        BadStream{
            "WatchBadBase64", kEmptyRange,
            R"({"result":{"created":true}}{"result":{"events":[{"kv":{"key":"@@"}}]}})",
            absl::StatusCode::kDataLoss, "events[0].kv.key"},
        BadStream{
            "WatchBadType", kEmptyRange,
            R"({"result":{"created":true}}{"result":{"events":[{"type":"X","kv":{"key":"YQ=="}}]}})",
            absl::StatusCode::kInternal, "events[0].type"},
        BadStream{"WatchNoResult", kEmptyRange, R"({"nothing":1})",
                  absl::StatusCode::kInternal, "without a result"},
        BadStream{"WatchErrorMessage", kEmptyRange,
                  R"({"error":{"code":14,"message":"going away"}})",
                  absl::StatusCode::kUnavailable, "going away"},
        BadStream{
            "WatchGrpcCodeCancelled", kEmptyRange,
            R"({"error":{"grpc_code":1,"http_code":408,"message":"grpc: the client connection is closing"}})",
            absl::StatusCode::kUnavailable, "connection is closing"},
        BadStream{"WatchNeverCreated", kEmptyRange, "",
                  absl::StatusCode::kInternal, "before the watch was created"},
        // A gateway forging the store revision: the watch would start at
        // revision + 1, past int64 (undefined; in practice a negative
        // start_revision), or before the first revision.
        BadStream{"RangeRevisionMax",
                  R"({"header":{"revision":"9223372036854775807"}})", "",
                  absl::StatusCode::kDataLoss,
                  "header.revision = 9223372036854775807"},
        BadStream{"RangeRevisionNegative", R"({"header":{"revision":"-5"}})",
                  "", absl::StatusCode::kDataLoss, "header.revision = -5"},
        // A key changed after the read it came in: a later event for it
        // would look like a replay.
        BadStream{
            "RangeModRevisionAhead",
            R"({"header":{"revision":"10"},"kvs":[{"key":"L2NmZy9h","value":"bmV3","mod_revision":"9223372036854775807"}]})",
            "", absl::StatusCode::kDataLoss,
            "kvs[0].mod_revision = 9223372036854775807"}),
    [](const ::testing::TestParamInfo<BadStream>& i) { return i.param.name; });

// ---- Gateways whose every stream ends at once without an event ----

struct EmptyStreams {
  const char* name;
  const char* watch_body;
  const char* says;
};

class EtcdWatcherEmptyStreamsTest
    : public ::testing::TestWithParam<EmptyStreams> {};

TEST_P(EtcdWatcherEmptyStreamsTest, AreOneStatusWithBackoffUntilAnEvent) {
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, kEmptyRange);
  fake.Reply("/v3/watch", 200, GetParam().watch_body);
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(100);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForStatuses(1));
  std::vector<absl::Status> st = rec.statuses();
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
  EXPECT_THAT(std::string(st[0].message()), HasSubstr("in a row"));
  EXPECT_THAT(std::string(st[0].message()), HasSubstr(GetParam().says));
  // Backing off now: the next 6 streams wait up to 2, 4, ... 64 ms first
  // (at least ~18 ms in all for the fixed jitter seed), not ~1 ms each.
  const int n = fake.Count("/v3/watch");
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(fake.WaitForCount("/v3/watch", n + 6));
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(10));
  EXPECT_EQ(rec.statuses().size(), 1u);
  // One outage, in force across the retries, each of which re-read the
  // prefix; its streams' "created" does not end it.
  EXPECT_EQ(w.stats().outages, 1u);
  EXPECT_EQ(w.stats().state, degrade::EtcdWatcherState::kOutage);
  EXPECT_GE(w.stats().resyncs, 6u);
  // A stream that delivers ends the outage.
  fake.Reply("/v3/watch", 200,
             R"({"result":{"created":true}})"
             R"({"result":{"events":[{"kv":{"key":"L2NmZy94","value":"MQ==","mod_revision":"8"}}]}})");
  ASSERT_TRUE(rec.WaitForStatuses(2));
  st = rec.statuses();
  EXPECT_TRUE(st[1].ok()) << st[1];
  // The stream's "created" may report the recovery just before its event
  // is delivered (a flake seen once under load): wait for the event.
  EXPECT_TRUE(rec.WaitForView({{"/cfg/x", "1"}}));
  // Still the one outage (the gateway's streams end after their event, so
  // the state and revision move on: not asserted here).
  EXPECT_EQ(w.stats().outages, 1u);
}

// A gateway that replays an old event on every watch stream (a proxy
// serving a stale buffer): the key's value must not roll back to it, nor
// flap between the snapshot's value and the replayed one at each resync.
// Issue 32: a gateway that trickles its watch stream a byte every 20 ms
// never lets a read wait `stream_idle_timeout` (200 ms here), so a per-read
// bound let a stream that never completes a message in time count as
// alive. A stream with no complete message for stream_idle_timeout is
// dropped: one UNAVAILABLE status naming it, and the stream re-established.
TEST(EtcdWatcherTrickleTest, AStreamWithoutACompleteMessageInTimeIsDropped) {
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, R"({"header":{"revision":"7"}})");
  fake.Reply(
      "/v3/watch", 200,
      R"({"result":{"created":true}})"
      R"({"result":{"events":[{"kv":{"key":"L2NmZy94","value":"MQ==","mod_revision":"8"}}]}})");
  fake.Trickle("/v3/watch", absl::Milliseconds(20));
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.stream_idle_timeout = absl::Milliseconds(200);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForStatuses(1));
  ASSERT_TRUE(fake.WaitForCount("/v3/watch", 2));  // re-established
  w.Stop();
  const std::vector<absl::Status> st = rec.statuses();
  ASSERT_GE(st.size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
  EXPECT_THAT(std::string(st[0].message()),
              HasSubstr("no complete message within 200ms"));
  EXPECT_TRUE(rec.events().empty());  // nothing half-read was delivered
}

TEST(EtcdWatcherLyingGatewayTest,
     AnEventOlderThanTheDeliveredValueIsNotDelivered) {
  FakeGateway fake;
  // /cfg/a = "new" at revision 10; the stream replays /cfg/a = "old" at 5,
  // then deletes it at 7.
  fake.Reply(
      "/v3/kv/range", 200,
      R"({"header":{"revision":"10"},"kvs":[{"key":"L2NmZy9h","value":"bmV3","mod_revision":"10"}]})");
  fake.Reply(
      "/v3/watch", 200,
      R"({"result":{"created":true}})"
      R"({"result":{"events":[{"kv":{"key":"L2NmZy9h","value":"b2xk","mod_revision":"5"}}]}})"
      R"({"result":{"events":[{"type":"DELETE","kv":{"key":"L2NmZy9h","mod_revision":"7"}}]}})");
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(5);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(fake.WaitForCount("/v3/watch", 4));
  w.Stop();
  EXPECT_EQ(rec.events(), std::vector<std::string>{"put /cfg/a=new"});
  EXPECT_EQ(rec.view(),
            (std::map<std::string, std::string>{{"/cfg/a", "new"}}));
  EXPECT_EQ(w.stats().last_revision, 10);
}

// The same replay of a key the read did not have (deleted before it): it
// must not come back.
TEST(EtcdWatcherLyingGatewayTest,
     AnEventFromBeforeTheWatchStartIsNotDelivered) {
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, kEmptyRange);  // revision 7, no keys
  fake.Reply(
      "/v3/watch", 200,
      R"({"result":{"created":true}})"
      R"({"result":{"events":[{"kv":{"key":"L2NmZy9h","value":"b2xk","mod_revision":"3"}}]}})"
      R"({"result":{"events":[{"kv":{"key":"L2NmZy9i","value":"bmV3","mod_revision":"8"}}]}})");
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(5);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForEvents(1));
  w.Stop();
  const std::vector<std::string> events = rec.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0], "put /cfg/b=new");
  EXPECT_EQ(rec.view().count("/cfg/a"), 0u);
}

// A gateway that creates every watch and fails it at once with
// UNAVAILABLE: one outage, one status, not an UNAVAILABLE / OK pair per
// retry.
TEST(EtcdWatcherFlappingTest, CreatedThenUnavailableStreamsAreOneStatus) {
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, kEmptyRange);
  fake.Reply("/v3/watch", 200,
             R"({"result":{"created":true}})"
             R"({"error":{"code":14,"message":"going away"}})");
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(5);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(fake.WaitForCount("/v3/watch", 10));
  w.Stop();
  const std::vector<absl::Status> st = rec.statuses();
  ASSERT_EQ(st.size(), 1u) << ::testing::PrintToString(st);
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
}

// After an outage of empty streams, a healthy but quiet stream ends it
// once it has lasted a second, not when it ends (here 30 s later, past
// the recorder's bound).
TEST(EtcdWatcherFlappingTest, AQuietHealthyStreamEndsAnOutageOfEmptyOnes) {
  FakeGateway fake;
  fake.Reply("/v3/kv/range", 200, kEmptyRange);
  fake.Reply("/v3/watch", 200,
             R"({"result":{"created":true,"canceled":true,"compact_revision":"5"}})");
  Recorder rec;
  EtcdWatcherOptions o = Options(fake.endpoint(), &rec);
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(20);
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  ASSERT_TRUE(rec.WaitForStatuses(1));
  fake.Hold("/v3/watch", absl::Seconds(30));
  fake.Reply("/v3/watch", 200, R"({"result":{"created":true}})");
  ASSERT_TRUE(rec.WaitForStatuses(2));
  const std::vector<absl::Status> st = rec.statuses();
  EXPECT_TRUE(absl::IsUnavailable(st[0])) << st[0];
  EXPECT_TRUE(st[1].ok()) << st[1];
  w.Stop();
}

INSTANTIATE_TEST_SUITE_P(
    Gateways, EtcdWatcherEmptyStreamsTest,
    ::testing::Values(
        EmptyStreams{"Closed", R"({"result":{"created":true}})", "closed"},
        EmptyStreams{
            "Compacted",
            R"({"result":{"created":true,"canceled":true,"compact_revision":"5"}})",
            "compacted"}),
    [](const ::testing::TestParamInfo<EmptyStreams>& i) {
      return i.param.name;
    });

}  // namespace DEGRADE_TEST_UNIT
