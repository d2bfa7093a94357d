// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The etcd adapter against a real etcd that serves HTTPS, requires client
// certificates and has auth enabled: the TLS happy path and each refused
// certificate (wrong CA, wrong name, expired, foreign CA) as one clear
// status; users and roles as production sets them up (instances read-only
// on the prefix, operators write); a wrong password; a role revoked under
// a running watcher; an auth token that expires mid-watch and is renewed
// without a change missed or repeated. Certificates are made by openssl in
// the test's temporary directory (etcd_pki.hpp), users and roles by
// etcdctl. Every wait on a real process is a condition wait with a bound.

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/etcd/client.hpp"
#include "degrade/etcd/watcher.hpp"
#include "etcd/etcd_pki.hpp"
#include "etcd/etcd_server.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using degrade::etcd::EtcdClient;
using degrade::etcd::EtcdClientOptions;
using degrade::etcd::EtcdPrefixWatcher;
using degrade::etcd::EtcdWatcherOptions;
using degrade_tests::EtcdPki;
using degrade_tests::EtcdServer;
using degrade_tests::EtcdServerOptions;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kBound = absl::Seconds(20);

// Polls `done` every 5 ms up to kBound; whether it came true.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + kBound;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// What a watcher's callbacks saw, in order.
class Recorder {
 public:
  void Attach(EtcdWatcherOptions* o) {
    o->on_put = [this](const std::string& k, const std::string& v, int64_t) {
      degrade::detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("put ", k, "=", v));
      view_[k] = v;
    };
    o->on_delete = [this](const std::string& k, int64_t) {
      degrade::detail::MutexLock l(&mu_);
      events_.push_back(absl::StrCat("delete ", k));
      view_.erase(k);
    };
    o->on_status = [this](const absl::Status& s) {
      degrade::detail::MutexLock l(&mu_);
      statuses_.push_back(s);
    };
  }
  std::vector<std::string> events() {
    degrade::detail::MutexLock l(&mu_);
    return events_;
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
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> view_ ABSL_GUARDED_BY(mu_);
};

class EtcdSecureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = pki_.Make();
    ASSERT_TRUE(s.ok()) << s;
  }

  // etcd serving `cert` (server or elsewhere), requiring client
  // certificates from the test CA; simple tokens living `ttl_s` seconds.
  EtcdServerOptions ServerOptions(const std::string& cert = "server",
                                  int ttl_s = 0) const {
    EtcdServerOptions o;
    o.cert_file = pki_.Path(cert + ".crt");
    o.key_file = pki_.Path(cert + ".key");
    o.trusted_ca_file = pki_.Path("ca.crt");
    o.auth_token_ttl_s = ttl_s;
    o.client_ca_file = pki_.Path("ca.crt");
    o.client_cert_file = pki_.Path("client.crt");
    o.client_key_file = pki_.Path("client.key");
    return o;
  }

  // Production's shape: root; `reader` reads /p/, `operator` writes it;
  // user `instance` is a reader, user `operator` an operator.
  static void EnableAuth(EtcdServer* etcd) {
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
             {"user", "add", "root:rootpw"},
             {"user", "grant-role", "root", "root"},
             {"role", "add", "reader"},
             {"role", "grant-permission", "reader", "read", "/p/",
              "--prefix=true"},
             {"role", "add", "operator"},
             {"role", "grant-permission", "operator", "readwrite", "/p/",
              "--prefix=true"},
             {"user", "add", "instance:instancepw"},
             {"user", "grant-role", "instance", "reader"},
             {"user", "add", "operator:operatorpw"},
             {"user", "grant-role", "operator", "operator"},
             {"auth", "enable"}}) {
      absl::Status s = etcd->Ctl(args);
      ASSERT_TRUE(s.ok()) << s;
    }
    etcd->set_ctl_user("root:rootpw");
  }

  static bool HaveEtcdctl() {
    return ::access(DEGRADE_ETCDCTL_BINARY, X_OK) == 0;
  }

  EtcdWatcherOptions WatcherOptions(const EtcdServer& etcd, Recorder* rec,
                                    const std::string& user,
                                    const std::string& password) const {
    const EtcdClientOptions c = etcd.ClientOptions(user, password);
    EtcdWatcherOptions o;
    o.endpoint = c.endpoint;
    o.tls = c.tls;
    o.user = c.user;
    o.password = c.password;
    o.prefix = "/p/";
    o.backoff_initial = absl::Milliseconds(10);
    o.backoff_max = absl::Milliseconds(200);
    rec->Attach(&o);
    return o;
  }

  EtcdPki pki_;
};

#define DEGRADE_REQUIRE_ETCDCTL()                                     \
  if (!HaveEtcdctl()) {                                               \
    GTEST_SKIP() << "etcdctl not found at " DEGRADE_ETCDCTL_BINARY    \
                 << " (Debian: etcd-client); the auth tests need it"; \
  }

TEST_F(EtcdSecureTest, TlsPutRangeAndWatch) {
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EtcdClient client(etcd.ClientOptions());
  ASSERT_TRUE(client.Put("/p/a", "1").ok());
  absl::StatusOr<degrade::etcd::RangeResult> r = client.Range("/p/");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].value, "1");

  Recorder rec;
  EtcdPrefixWatcher watcher(WatcherOptions(etcd, &rec, "", ""));
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 1; }));
  ASSERT_TRUE(Eventually([&] {
    return watcher.stats().state == degrade::EtcdWatcherState::kWatching;
  }));
  ASSERT_TRUE(client.Put("/p/b", "2").ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 2; }));
  watcher.Stop();
  EXPECT_THAT(rec.events(), ElementsAre("put /p/a=1", "put /p/b=2"));
  EXPECT_TRUE(rec.statuses().empty());
}

TEST_F(EtcdSecureTest, AServerCertificateFromAnotherCaIsOneClearStatus) {
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EtcdClientOptions o = etcd.ClientOptions();
  o.tls.ca_file = pki_.Path("foreign-ca.crt");
  EtcdClient client(o);
  absl::StatusOr<degrade::etcd::RangeResult> r = client.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(etcd.endpoint()), HasSubstr("not trusted"),
                    HasSubstr("foreign-ca.crt")));

  // The watcher reports it once however often it retries.
  Recorder rec;
  EtcdWatcherOptions wo = WatcherOptions(etcd, &rec, "", "");
  wo.tls.ca_file = pki_.Path("foreign-ca.crt");
  EtcdPrefixWatcher watcher(wo);
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return !rec.statuses().empty(); }));
  ASSERT_TRUE(Eventually([&] { return watcher.stats().outages >= 1; }));
  watcher.Stop();
  ASSERT_EQ(rec.statuses().size(), 1u);
  EXPECT_TRUE(absl::IsUnauthenticated(rec.statuses()[0])) << rec.statuses()[0];
  EXPECT_TRUE(rec.events().empty());
}

TEST_F(EtcdSecureTest, TheServerNameIsCheckedUnlessTurnedOff) {
  // etcd's certificate names only elsewhere.example, not 127.0.0.1.
  EtcdServerOptions so = ServerOptions("elsewhere");
  so.client_verify_server_name = false;
  EtcdServer etcd(so);
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EtcdClientOptions o = etcd.ClientOptions();
  o.tls.verify_server_name = true;
  EtcdClient checked(o);
  absl::StatusOr<degrade::etcd::RangeResult> r = checked.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr(etcd.endpoint()),
                                          HasSubstr("verify_server_name")));
  // Off, the chain is still checked: the right CA passes, another fails.
  o.tls.verify_server_name = false;
  EtcdClient unchecked(o);
  r = unchecked.Range("/p/");
  EXPECT_TRUE(r.ok()) << r.status();
  o.tls.ca_file = pki_.Path("foreign-ca.crt");
  EtcdClient foreign(o);
  r = foreign.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
}

TEST_F(EtcdSecureTest, AnExpiredClientCertificateIsAClearStatus) {
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EtcdClientOptions o = etcd.ClientOptions();
  o.tls.cert_file = pki_.Path("expired.crt");
  EtcdClient client(o);
  absl::StatusOr<degrade::etcd::RangeResult> r = client.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(etcd.endpoint()), HasSubstr("TLS"),
                    HasSubstr("expired.crt"), HasSubstr("expired")));
}

TEST_F(EtcdSecureTest, AClientCertificateFromAnotherCaIsAClearStatus) {
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EtcdClientOptions o = etcd.ClientOptions();
  o.tls.cert_file = pki_.Path("foreign.crt");
  o.tls.key_file = pki_.Path("foreign.key");
  EtcdClient client(o);
  absl::StatusOr<degrade::etcd::RangeResult> r = client.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(etcd.endpoint()), HasSubstr("foreign.crt"),
                    HasSubstr("refuses")));
}

TEST_F(EtcdSecureTest, BadTlsOptionsAreRefusedBeforeAnyConnection) {
  EtcdClientOptions o;
  o.endpoint = "127.0.0.1:1";
  o.tls.enabled = true;
  o.tls.cert_file = pki_.Path("client.crt");  // no key
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::CheckOptions(o)));
  o.tls.key_file = pki_.Path("client.key");
  o.tls.ca_file = pki_.Path("no-such-ca.crt");
  absl::Status s = EtcdClient::CheckOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("no-such-ca.crt"));
  EtcdClient client(o);
  EXPECT_TRUE(absl::IsInvalidArgument(client.Range("/p/").status()));
  // Files without `enabled` would be a plain connection: refused.
  EtcdClientOptions plain;
  plain.tls.ca_file = pki_.Path("ca.crt");
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::CheckOptions(plain)));
  EtcdWatcherOptions wo;
  wo.tls = o.tls;
  EtcdPrefixWatcher watcher(wo);
  EXPECT_TRUE(absl::IsInvalidArgument(watcher.Start()));
}

TEST_F(EtcdSecureTest, AWrongPasswordIsUnauthenticatedNamingTheUser) {
  DEGRADE_REQUIRE_ETCDCTL();
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClient client(etcd.ClientOptions("instance", "wrong"));
  absl::StatusOr<degrade::etcd::RangeResult> r = client.Range("/p/");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(etcd.endpoint()), HasSubstr("'instance'"),
                    HasSubstr("authentication failed")));
  // No credentials at all: etcd's own word.
  EtcdClient anonymous(etcd.ClientOptions());
  EXPECT_FALSE(anonymous.Range("/p/").ok());

  Recorder rec;
  EtcdPrefixWatcher watcher(WatcherOptions(etcd, &rec, "instance", "wrong"));
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return !rec.statuses().empty(); }));
  watcher.Stop();
  EXPECT_TRUE(absl::IsUnauthenticated(rec.statuses()[0])) << rec.statuses()[0];
}

TEST_F(EtcdSecureTest, AReaderCannotWriteButReadsAndWatches) {
  DEGRADE_REQUIRE_ETCDCTL();
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClient op(etcd.ClientOptions("operator", "operatorpw"));
  ASSERT_TRUE(op.Put("/p/mode", "normal").ok());
  EtcdClient instance(etcd.ClientOptions("instance", "instancepw"));
  absl::StatusOr<int64_t> put = instance.Put("/p/mode", "off");
  EXPECT_TRUE(absl::IsPermissionDenied(put.status())) << put.status();
  EXPECT_THAT(put.status().message(), AllOf(HasSubstr(etcd.endpoint()),
                                            HasSubstr("permission denied")));
  absl::StatusOr<degrade::etcd::RangeResult> r = instance.Range("/p/");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kvs.size(), 1u);
  // Outside its prefix the reader reads nothing.
  EXPECT_TRUE(absl::IsPermissionDenied(instance.Range("/q/").status()));

  Recorder rec;
  EtcdPrefixWatcher watcher(
      WatcherOptions(etcd, &rec, "instance", "instancepw"));
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] {
    return watcher.stats().state == degrade::EtcdWatcherState::kWatching;
  }));
  ASSERT_TRUE(op.Put("/p/mode", "degraded").ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 2; }));
  watcher.Stop();
  EXPECT_THAT(rec.events(),
              ElementsAre("put /p/mode=normal", "put /p/mode=degraded"));
  EXPECT_TRUE(rec.statuses().empty());
}

TEST_F(EtcdSecureTest, ARevokedRoleIsAClearStatusAndTheLastGoodStateStays) {
  DEGRADE_REQUIRE_ETCDCTL();
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClient op(etcd.ClientOptions("operator", "operatorpw"));
  ASSERT_TRUE(op.Put("/p/mode", "normal").ok());

  Recorder rec;
  EtcdWatcherOptions wo = WatcherOptions(etcd, &rec, "instance", "instancepw");
  // A quiet stream is re-established (a fresh read) this often.
  wo.stream_idle_timeout = absl::Milliseconds(300);
  EtcdPrefixWatcher watcher(wo);
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 1; }));

  s = etcd.Ctl({"user", "revoke-role", "instance", "reader"});
  ASSERT_TRUE(s.ok()) << s;
  EtcdClient instance(etcd.ClientOptions("instance", "instancepw"));
  absl::StatusOr<degrade::etcd::RangeResult> r = instance.Range("/p/");
  EXPECT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();

  ASSERT_TRUE(Eventually([&] { return !rec.statuses().empty(); }));
  watcher.Stop();
  EXPECT_TRUE(absl::IsPermissionDenied(rec.statuses()[0])) << rec.statuses()[0];
  EXPECT_THAT(rec.statuses()[0].message(), HasSubstr(etcd.endpoint()));
  // Still the last good state: nothing deleted, nothing rolled back.
  EXPECT_THAT(rec.events(), ElementsAre("put /p/mode=normal"));
  EXPECT_EQ(rec.view(),
            (std::map<std::string, std::string>{{"/p/mode", "normal"}}));
}

TEST_F(EtcdSecureTest, AClientRenewsAnExpiredTokenOnce) {
  DEGRADE_REQUIRE_ETCDCTL();
  constexpr int kTtlSeconds = 1;
  EtcdServer etcd(ServerOptions("server", kTtlSeconds));
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClient op(etcd.ClientOptions("operator", "operatorpw"));
  ASSERT_TRUE(op.Put("/p/a", "1").ok());
  EXPECT_EQ(op.authentications(), 1u);
  // A sleep: a token's expiry cannot be observed without using the token,
  // and each use extends its life. Waiting out the TTL (plus etcd's check
  // interval) is what a quiet instance does.
  absl::SleepFor(absl::Seconds(kTtlSeconds) + absl::Milliseconds(1500));
  absl::StatusOr<int64_t> put = op.Put("/p/a", "2");
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(op.authentications(), 2u);
}

TEST_F(EtcdSecureTest, ATokenExpiringMidWatchIsRenewedWithoutALostChange) {
  DEGRADE_REQUIRE_ETCDCTL();
  constexpr int kTtlSeconds = 2;
  EtcdServer etcd(ServerOptions("server", kTtlSeconds));
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClientOptions op_options = etcd.ClientOptions("operator", "operatorpw");
  EtcdClient op(op_options);
  ASSERT_TRUE(op.Put("/p/a", "1").ok());

  Recorder rec;
  EtcdWatcherOptions wo = WatcherOptions(etcd, &rec, "instance", "instancepw");
  // Quiet for longer than the token lives, the stream is re-established:
  // the read after it meets the expired token.
  wo.stream_idle_timeout = absl::Seconds(kTtlSeconds + 1);
  // A change made right after the renewed read, before the watch resumes
  // from its revision + 1, must come through the watch, once.
  std::atomic<bool> wrote_in_gap{false};
  EtcdPrefixWatcher* watching = nullptr;
  wo.after_range_for_testing = [&](int64_t) {
    if (watching != nullptr && watching->counters().authentications >= 2 &&
        !wrote_in_gap.exchange(true)) {
      EtcdClient gap_writer(op_options);
      EXPECT_TRUE(gap_writer.Put("/p/c", "3").ok());
    }
  };
  EtcdPrefixWatcher watcher(wo);
  watching = &watcher;
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] {
    return watcher.stats().state == degrade::EtcdWatcherState::kWatching;
  }));
  ASSERT_TRUE(op.Put("/p/b", "2").ok());  // before the expiry, by the stream
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 2; }));

  // The token expires unused; the next read renews it (a few seconds).
  ASSERT_TRUE(Eventually([&] { return wrote_in_gap.load(); }))
      << "the watcher never renewed its token";
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 3; }));
  ASSERT_TRUE(op.Put("/p/d", "4").ok());  // after the renewal
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 4; }));
  watcher.Stop();
  EXPECT_THAT(rec.events(), ElementsAre("put /p/a=1", "put /p/b=2",
                                        "put /p/c=3", "put /p/d=4"));
  EXPECT_GE(watcher.counters().authentications, 2u);
  EXPECT_TRUE(rec.statuses().empty()) << rec.statuses()[0];
}

TEST_F(EtcdSecureTest, AWatchRefusedForItsTokenResumesFromItsStartRevision) {
  DEGRADE_REQUIRE_ETCDCTL();
  constexpr int kTtlSeconds = 1;
  EtcdServer etcd(ServerOptions("server", kTtlSeconds));
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClientOptions op_options = etcd.ClientOptions("operator", "operatorpw");
  EtcdClient op(op_options);
  ASSERT_TRUE(op.Put("/p/a", "1").ok());

  Recorder rec;
  EtcdWatcherOptions wo = WatcherOptions(etcd, &rec, "instance", "instancepw");
  // Held after its first read until the token has expired (a sleep: the
  // expiry cannot be observed without using the token, which extends it),
  // the watcher creates its watch with a token etcd no longer knows; a
  // change made meanwhile must come once, through the re-created watch.
  std::atomic<bool> held{false};
  wo.after_range_for_testing = [&](int64_t) {
    if (held.exchange(true)) return;
    EtcdClient writer(op_options);
    EXPECT_TRUE(writer.Put("/p/b", "2").ok());
    absl::SleepFor(absl::Seconds(kTtlSeconds) + absl::Milliseconds(1500));
  };
  EtcdPrefixWatcher watcher(wo);
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 2; }));
  ASSERT_TRUE(op.Put("/p/c", "3").ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 3; }));
  watcher.Stop();
  EXPECT_THAT(rec.events(),
              ElementsAre("put /p/a=1", "put /p/b=2", "put /p/c=3"));
  EXPECT_EQ(watcher.counters().authentications, 2u);
  EXPECT_EQ(watcher.counters().resyncs, 0u);  // resumed, not re-read
  EXPECT_TRUE(rec.statuses().empty()) << rec.statuses()[0];
}

TEST_F(EtcdSecureTest, APasswordChangedUnderAWatcherKeepsItsLastGoodState) {
  DEGRADE_REQUIRE_ETCDCTL();
  EtcdServer etcd(ServerOptions());
  absl::Status s = etcd.Start();
  ASSERT_TRUE(s.ok()) << s;
  EnableAuth(&etcd);
  EtcdClient op(etcd.ClientOptions("operator", "operatorpw"));
  ASSERT_TRUE(op.Put("/p/mode", "normal").ok());

  Recorder rec;
  EtcdWatcherOptions wo = WatcherOptions(etcd, &rec, "instance", "instancepw");
  wo.stream_idle_timeout = absl::Milliseconds(300);  // reads again often
  EtcdPrefixWatcher watcher(wo);
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(Eventually([&] { return rec.events().size() == 1; }));

  // The user made anew with another password: etcd drops its tokens, and
  // the watcher's password no longer gets one.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"user", "delete", "instance"},
           {"user", "add", "instance:rotated"},
           {"user", "grant-role", "instance", "reader"}}) {
    s = etcd.Ctl(args);
    ASSERT_TRUE(s.ok()) << s;
  }
  ASSERT_TRUE(Eventually([&] { return !rec.statuses().empty(); }));
  ASSERT_TRUE(op.Put("/p/mode", "degraded").ok());  // not seen: no token
  watcher.Stop();
  EXPECT_TRUE(absl::IsUnauthenticated(rec.statuses()[0])) << rec.statuses()[0];
  EXPECT_THAT(rec.statuses()[0].message(),
              AllOf(HasSubstr(etcd.endpoint()), HasSubstr("'instance'"),
                    HasSubstr("authentication failed")));
  EXPECT_EQ(rec.statuses().size(), 1u);  // one outage, reported once
  EXPECT_THAT(rec.events(), ElementsAre("put /p/mode=normal"));
  EXPECT_EQ(rec.view(),
            (std::map<std::string, std::string>{{"/p/mode", "normal"}}));
}

}  // namespace DEGRADE_TEST_UNIT
