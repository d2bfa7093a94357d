// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A hostile review of the etcd watcher's stream-header check: etcd wiped
// and made anew between the watcher's read and its watch. A single-member
// cluster started again with the same name, peer URL and
// --initial-cluster-token gets the same cluster_id (etcd derives it from
// them), so only a header revision below the one already seen tells; a
// busy prefix written past the old head before the watch opens hides even
// that. Against a real etcd; bounded by real time (kBound) only because a
// process and a socket are involved.

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/etcd/watcher.hpp"
#include "etcd/etcd_server.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::etcd::EtcdClient;
using ::degrade::etcd::EtcdClientOptions;
using ::degrade::etcd::EtcdPrefixWatcher;
using ::degrade::etcd::EtcdWatcherOptions;
using ::degrade_tests::EtcdServer;

// A generous bound: etcd starting, a resync and its backoff take well under
// a second on a loaded machine; nothing here waits for time to pass.
constexpr absl::Duration kBound = absl::Seconds(15);

class Recorder {
 public:
  void Attach(EtcdWatcherOptions* o) {
    o->on_put = [this](const std::string& k, const std::string& v, int64_t) {
      detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("put ", k, "=", v));
      view_[k] = v;
      cv_.SignalAll();
    };
    o->on_delete = [this](const std::string& k, int64_t) {
      detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("delete ", k));
      view_.erase(k);
      cv_.SignalAll();
    };
    o->on_status = [this](const absl::Status& s) {
      detail::MutexLock l(&mu_);
      statuses_.push_back(s);
      cv_.SignalAll();
    };
  }
  bool WaitForView(const std::map<std::string, std::string>& want) {
    detail::MutexLock l(&mu_);
    return cv_.WaitFor(&mu_, kBound, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return view_ == want;
    });
  }
  std::map<std::string, std::string> view() {
    detail::MutexLock l(&mu_);
    return view_;
  }
  std::vector<std::string> events() {
    detail::MutexLock l(&mu_);
    return events_;
  }
  std::vector<absl::Status> statuses() {
    detail::MutexLock l(&mu_);
    return statuses_;
  }

 private:
  detail::Mutex mu_;
  detail::CondVar cv_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> view_ ABSL_GUARDED_BY(mu_);
};

class EtcdAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  int64_t Put(const std::string& k, const std::string& v) {
    EtcdClientOptions o;
    o.endpoint = etcd_.endpoint();
    EtcdClient c(o);
    absl::StatusOr<int64_t> r = c.Put(k, v);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(0);
  }
  uint64_t ClusterId() {
    EtcdClientOptions o;
    o.endpoint = etcd_.endpoint();
    EtcdClient c(o);
    absl::StatusOr<etcd::RangeResult> r = c.Range("/");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->cluster_id : 0;
  }
  EtcdServer etcd_;
};

// The read is at revision 5 (/cfg/a=old, /cfg/gone, /cfg/b). Before the
// watch opens, etcd is wiped and made anew with the same token (the same
// cluster_id), and a busy prefix writes it to revision 7, past the read's:
// /cfg/a=new (revision 2) is below the watch's start and never arrives;
// /cfg/gone and /cfg/b are never deleted; every header is from "the same
// cluster" at a revision above the one seen. The watcher must still end
// up with the new cluster's view.
// No header field tells this wipe apart (same cluster_id, a revision above
// the one seen; a single member's raft_term restarts at the value it had).
// The watcher reads the prefix again at the read's revision once the watch
// is created, and the new store's history there is not what it delivered.
TEST_F(EtcdAttackTest, AWipeBetweenReadAndWatchPastTheOldHeadIsResynced) {
  Put("/cfg/a", "old");
  Put("/cfg/gone", "x");
  Put("/cfg/b", "1");
  ASSERT_EQ(Put("/cfg/b", "2"), 5);
  const uint64_t old_id = ClusterId();
  Recorder rec;
  EtcdWatcherOptions o;
  o.endpoint = etcd_.endpoint();
  o.prefix = "/cfg/";
  o.backoff_initial = absl::Milliseconds(10);
  o.backoff_max = absl::Milliseconds(200);
  rec.Attach(&o);
  int calls = 0;
  uint64_t new_id = 0;
  o.after_range_for_testing = [&](int64_t revision) {
    if (calls++ != 0) return;
    EXPECT_EQ(revision, 5);
    etcd_.Wipe("etcd-cluster");  // the default token: the same cluster_id
    absl::Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Put("/cfg/a", "new"), 2);
    Put("/cfg/busy", "1");
    Put("/cfg/busy", "2");
    Put("/cfg/busy", "3");
    Put("/cfg/busy", "4");
    EXPECT_EQ(Put("/cfg/head", "h"), 7);
    new_id = ClusterId();
  };
  EtcdPrefixWatcher w(std::move(o));
  ASSERT_TRUE(w.Start().ok());
  const std::map<std::string, std::string> want = {
      {"/cfg/a", "new"}, {"/cfg/busy", "4"}, {"/cfg/head", "h"}};
  EXPECT_TRUE(rec.WaitForView(want))
      << "the watcher's view: " << ::testing::PrintToString(rec.view())
      << "\nevents: " << ::testing::PrintToString(rec.events())
      << "\nstatuses: " << rec.statuses().size()
      << "\nsame cluster_id: " << (old_id == new_id);
  w.Stop();
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
