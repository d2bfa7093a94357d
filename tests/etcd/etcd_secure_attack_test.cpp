// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A hostile review of etcd::EtcdClient's TLS and auth: a gateway that lies
// about tokens, a peer that speaks plain HTTP or trickles its handshake on
// the TLS port, and TLS options a deployment got wrong. The peers are
// cpp-httplib servers (plain and HTTPS, with certificates made by
// etcd_pki.hpp) on free loopback ports, scripted per test.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/etcd/client.hpp"
#include "degrade/etcd/watcher.hpp"
#include "etcd/etcd_pki.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/trickle_server.hpp"

namespace DEGRADE_TEST_UNIT {

using degrade::etcd::EtcdClient;
using degrade::etcd::EtcdClientOptions;
using degrade::etcd::EtcdPrefixWatcher;
using degrade::etcd::EtcdWatcherOptions;
using degrade::etcd::RangeResult;
using degrade_tests::EtcdPki;
using degrade_tests::TrickleServer;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassword[] = "s3cret-Pa55word";
constexpr char kRangeOk[] = R"({"header":{"revision":"7"}})";
constexpr char kInvalidToken[] =
    R"({"error":"etcdserver: invalid auth token","code":16})";

// A scripted gateway: /v3/auth/authenticate answers `auth_reply()` (one per
// call, the last repeated), /v3/kv/range answers OK for an accepted token
// and "invalid auth token" otherwise. Records each request's headers.
class AuthGateway {
 public:
  explicit AuthGateway(std::unique_ptr<httplib::Server> server)
      : server_(std::move(server)) {
    server_->Post("/v3/auth/authenticate", [this](const httplib::Request& req,
                                                  httplib::Response& res) {
      std::string reply;
      absl::Duration hold;
      {
        std::lock_guard<std::mutex> l(mu_);
        ++auths_;
        bodies_.push_back(req.body);
        reply = auth_replies_.empty() ? "{}" : auth_replies_.front();
        if (auth_replies_.size() > 1) {
          auth_replies_.erase(auth_replies_.begin());
        }
        hold = auth_hold_;
      }
      const absl::Time until = absl::Now() + hold;
      while (absl::Now() < until && !quit_.load()) {
        absl::SleepFor(absl::Milliseconds(2));
      }
      res.set_content(reply, "application/json");
    });
    server_->Post("/v3/kv/range", [this](const httplib::Request& req,
                                         httplib::Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      ++ranges_;
      for (const auto& [k, v] : req.headers) {
        headers_.push_back(absl::StrCat(k, ": ", v));
      }
      const std::string token = req.get_header_value("Authorization");
      if (accept_all_ || (!token.empty() && token != refused_token_)) {
        res.set_content(kRangeOk, "application/json");
      } else {
        res.status = 401;
        res.set_content(kInvalidToken, "application/json");
      }
    });
    // Every watch is refused for its token.
    server_->Post("/v3/watch",
                  [this](const httplib::Request&, httplib::Response& res) {
                    std::lock_guard<std::mutex> l(mu_);
                    ++watches_;
                    res.status = 401;
                    res.set_content(kInvalidToken, "application/json");
                  });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() before the loop runs would be lost (and the join would hang).
    while (port_ > 0 && !server_->is_running()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  AuthGateway(const AuthGateway&) = delete;
  AuthGateway& operator=(const AuthGateway&) = delete;
  ~AuthGateway() {
    quit_.store(true);
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  void AuthReplies(std::vector<std::string> replies) {
    std::lock_guard<std::mutex> l(mu_);
    auth_replies_ = std::move(replies);
  }
  void HoldAuth(absl::Duration hold) {
    std::lock_guard<std::mutex> l(mu_);
    auth_hold_ = hold;
  }
  // The range refuses this token as invalid (all tokens when "*"), or no
  // token at all when `accept_all` is false and none is sent.
  void RefuseToken(std::string token) {
    std::lock_guard<std::mutex> l(mu_);
    refused_token_ = std::move(token);
  }
  void AcceptAll(bool yes) {
    std::lock_guard<std::mutex> l(mu_);
    accept_all_ = yes;
  }
  int auths() {
    std::lock_guard<std::mutex> l(mu_);
    return auths_;
  }
  int ranges() {
    std::lock_guard<std::mutex> l(mu_);
    return ranges_;
  }
  int watches() {
    std::lock_guard<std::mutex> l(mu_);
    return watches_;
  }
  std::vector<std::string> headers() {
    std::lock_guard<std::mutex> l(mu_);
    return headers_;
  }
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> auth_replies_;
  absl::Duration auth_hold_;
  std::string refused_token_;
  bool accept_all_ = false;
  int auths_ = 0, ranges_ = 0, watches_ = 0;
  std::vector<std::string> bodies_;
  std::vector<std::string> headers_;
  std::atomic<bool> quit_{false};
};

// A loopback listener that forwards its first connection byte for byte to
// `target_port` and answers every later one, after the client's first
// bytes, with `trickle` one byte per `interval`: a read that works, then a
// watch whose TLS handshake never completes. Stopped by the destructor.
class FirstThenTrickle {
 public:
  FirstThenTrickle(int target_port, std::string trickle,
                   absl::Duration interval)
      : target_port_(target_port),
        trickle_(std::move(trickle)),
        interval_(interval) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) !=
            0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) !=
            0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    threads_.emplace_back([this] { Accept(); });
  }
  FirstThenTrickle(const FirstThenTrickle&) = delete;
  FirstThenTrickle& operator=(const FirstThenTrickle&) = delete;
  ~FirstThenTrickle() {
    quit_.store(true);
    for (std::thread& t : threads_) t.join();
    if (listener_ >= 0) ::close(listener_);
  }
  int port() const { return port_; }
  int trickled() const { return trickled_.load(); }

 private:
  static bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 10) > 0;
  }
  void Accept() {
    int accepted = 0;
    while (!quit_.load()) {
      if (!Readable(listener_)) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      if (accepted++ == 0) {
        Forward(fd);
      } else {
        Trickle(fd);
      }
    }
  }
  // One connection at a time is all the tests need: the read, then the
  // watch (each on this thread, in turn).
  void Forward(int fd) {
    const int up = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (::connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      char buf[16384];
      bool open = true;
      while (open && !quit_.load()) {
        pollfd p[2] = {{fd, POLLIN, 0}, {up, POLLIN, 0}};
        if (::poll(p, 2, 10) <= 0) continue;
        for (int i = 0; i < 2 && open; ++i) {
          if (p[i].revents == 0) continue;
          const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
          open = n > 0 && ::send(p[1 - i].fd, buf, static_cast<size_t>(n),
                                 MSG_NOSIGNAL) == n;
        }
      }
    }
    ::close(up);
    ::close(fd);
  }
  void Trickle(int fd) {
    while (!quit_.load() && !Readable(fd)) {
    }
    char buf[4096];
    (void)::read(fd, buf, sizeof buf);
    for (char c : trickle_) {
      const absl::Time next = absl::Now() + interval_;
      while (absl::Now() < next && !quit_.load()) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      if (quit_.load() || ::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
      trickled_.fetch_add(1);
    }
    ::close(fd);
  }

  const int target_port_;
  const std::string trickle_;
  const absl::Duration interval_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> quit_{false};
  std::atomic<int> trickled_{0};
  std::vector<std::thread> threads_;
};

EtcdClientOptions With(const std::string& endpoint) {
  EtcdClientOptions o;
  o.endpoint = endpoint;
  o.connect_timeout = absl::Milliseconds(500);
  o.request_timeout = absl::Seconds(2);
  o.user = "instance";
  o.password = kPassword;
  return o;
}

// ---- Tokens a gateway lies about ----

// A token with CR LF would, written into the Authorization header, add
// headers of the gateway's choosing to every request (or be dropped
// silently, so that requests go out without credentials). Either way it
// is no token: refused, and nothing is sent with it.
TEST(EtcdSecureAttackTest, ATokenWithCrLfIsRefusedNotSentAsHeaders) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"abc\r\nX-Injected: yes"})"});
  EtcdClient client(With(gw.endpoint()));
  absl::StatusOr<RangeResult> r = client.Range("/p/");
  for (const std::string& h : gw.headers()) {
    EXPECT_THAT(h, Not(HasSubstr("X-Injected"))) << h;
  }
  ASSERT_FALSE(r.ok()) << "a request went out with a token that cannot be "
                          "sent (ranges seen: "
                       << gw.ranges() << ")";
  EXPECT_TRUE(absl::IsInternal(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("token"));
  EXPECT_EQ(gw.ranges(), 0);
  EXPECT_EQ(client.authentications(), 0u);
}

// A token of megabytes is no etcd token (simple tokens are ~20 bytes, JWTs
// well under a KiB): held and sent on every request it would cost memory
// and, at etcd, a refused header block.
TEST(EtcdSecureAttackTest, AHugeTokenIsRefused) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AcceptAll(true);
  gw.AuthReplies(
      {absl::StrCat(R"({"token":")", std::string(4 << 20, 'a'), R"("})")});
  EtcdClient client(With(gw.endpoint()));
  absl::StatusOr<RangeResult> r = client.Range("/p/");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInternal(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("token"));
  EXPECT_LT(r.status().message().size(), 1000u);
  EXPECT_EQ(gw.ranges(), 0);
}

TEST(EtcdSecureAttackTest, AMissingEmptyOrNonStringTokenIsInternal) {
  for (const char* reply :
       {R"({})", R"({"token":""})", R"({"token":42})", R"({"token":null})",
        R"({"token":["a"]})", R"({"token":{"a":"b"}})", R"([1])"}) {
    AuthGateway gw(std::make_unique<httplib::Server>());
    gw.AcceptAll(true);
    gw.AuthReplies({reply});
    EtcdClient client(With(gw.endpoint()));
    absl::StatusOr<RangeResult> r = client.Range("/p/");
    ASSERT_FALSE(r.ok()) << reply;
    EXPECT_TRUE(absl::IsInternal(r.status())) << reply << ": " << r.status();
    EXPECT_EQ(gw.ranges(), 0) << reply;
  }
}

// etcd refusing every token: each request renews at most once, never a
// loop against /v3/auth/authenticate.
TEST(EtcdSecureAttackTest, ATokenAlwaysRefusedRenewsAtMostOncePerRequest) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AuthReplies({R"({"token":"t"})"});
  gw.RefuseToken("t");
  EtcdClient client(With(gw.endpoint()));
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<RangeResult> r = client.Range("/p/");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("invalid auth token"));
  }
  // The first request: one token, refused (a fresh token is etcd's last
  // word); each later one: refused, renewed once, refused again.
  EXPECT_EQ(gw.auths(), 1 + 4);
  EXPECT_EQ(gw.ranges(), 1 + 4 * 2);
}

// Many threads whose shared token expires: one renewal, not one each.
TEST(EtcdSecureAttackTest, ConcurrentRequestsRenewAnExpiredTokenOnce) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AuthReplies({R"({"token":"old"})", R"({"token":"new"})"});
  EtcdClient client(With(gw.endpoint()));
  ASSERT_TRUE(client.Range("/p/").ok());
  gw.RefuseToken("old");
  constexpr int kThreads = 8;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      if (client.Range("/p/").ok()) ok.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads);
  EXPECT_EQ(gw.auths(), 2);
  EXPECT_EQ(client.authentications(), 2u);
}

TEST(EtcdSecureAttackTest, InterruptDuringAuthenticationIsCancelled) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  gw.HoldAuth(absl::Seconds(30));
  EtcdClientOptions o = With(gw.endpoint());
  o.request_timeout = absl::Seconds(60);
  EtcdClient client(o);
  absl::StatusOr<RangeResult> r;
  std::thread request([&] { r = client.Range("/p/"); });
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (gw.auths() < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_EQ(gw.auths(), 1);
  const absl::Time asked = absl::Now();
  // Until the request is over: an Interrupt() landing just before the
  // exchange began would be reset by it (only one in flight is stopped).
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done.load()) {
      client.Interrupt();
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  request.join();
  done.store(true);
  interrupter.join();
  EXPECT_LT(absl::Now() - asked, absl::Seconds(10));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
  EXPECT_EQ(gw.ranges(), 0);
  EXPECT_EQ(client.authentications(), 0u);
  EXPECT_THAT(r.status().message(), Not(HasSubstr(kPassword)));
}

// The password is in no status: a wrong one, a transport failure during
// authentication, a garbled authenticate reply.
TEST(EtcdSecureAttackTest, ThePasswordIsInNoStatus) {
  {
    AuthGateway gw(std::make_unique<httplib::Server>());
    gw.AuthReplies({R"({"header":{}})"});
    EtcdClient client(With(gw.endpoint()));
    absl::Status s = client.Range("/p/").status();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), Not(HasSubstr(kPassword))) << s;
    EXPECT_THAT(s.message(), HasSubstr("instance"));
  }
  int closed_port = 0;
  {
    AuthGateway gw(std::make_unique<httplib::Server>());
    closed_port = gw.port();
  }
  EtcdClient client(With(absl::StrCat("127.0.0.1:", closed_port)));
  absl::Status s = client.Range("/p/").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), Not(HasSubstr(kPassword))) << s;
}

// Watches always refused for their token (reads accepted): the watcher
// renews once per attempt and backs off, never a loop against
// /v3/auth/authenticate; the status says why, without the password.
TEST(EtcdSecureAttackTest, AWatchAlwaysRefusedForItsTokenBacksOff) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AuthReplies({R"({"token":"t"})"});
  EtcdWatcherOptions o;
  o.endpoint = gw.endpoint();
  o.prefix = "/p/";
  o.user = "instance";
  o.password = kPassword;
  o.backoff_initial = absl::Milliseconds(1);
  o.backoff_max = absl::Milliseconds(2);
  std::mutex mu;
  std::vector<std::string> statuses;
  o.on_status = [&](const absl::Status& s) {
    std::lock_guard<std::mutex> l(mu);
    statuses.push_back(s.ToString());
  };
  EtcdPrefixWatcher watcher(o);
  ASSERT_TRUE(watcher.Start().ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (gw.watches() < 20 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  watcher.Stop();
  ASSERT_GE(gw.watches(), 20);
  // Each attempt: one read, a watch refused, one renewal, the watch again.
  EXPECT_LE(gw.auths(), gw.ranges() + 1);
  EXPECT_LE(gw.watches(), 2 * gw.ranges());
  std::lock_guard<std::mutex> l(mu);
  ASSERT_FALSE(statuses.empty());
  for (const std::string& s : statuses) {
    EXPECT_THAT(s, Not(HasSubstr(kPassword)));
  }
  EXPECT_THAT(statuses.front(), HasSubstr("invalid auth token"));
}

// ---- TLS a deployment got wrong, or a peer that is not etcd ----

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT

class EtcdSecureAttackTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status made = pki_.Make();
    ASSERT_TRUE(made.ok()) << made;
  }
  std::unique_ptr<httplib::Server> Https(const std::string& name) {
    auto s = std::make_unique<httplib::SSLServer>(
        pki_.Path(name + ".crt").c_str(), pki_.Path(name + ".key").c_str());
    EXPECT_TRUE(s->is_valid());
    return s;
  }
  EtcdClientOptions Tls(const std::string& endpoint) {
    EtcdClientOptions o = With(endpoint);
    o.tls.enabled = true;
    o.tls.ca_file = pki_.Path("ca.crt");
    return o;
  }
  EtcdPki pki_;
};

TEST_F(EtcdSecureAttackTlsTest, AGoodSetupWorks) {
  AuthGateway gw(Https("server"));
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  EtcdClient client(Tls(gw.endpoint()));
  absl::StatusOr<RangeResult> r = client.Range("/p/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->revision, 7);
}

// A peer speaking plain HTTP on the TLS port sees a ClientHello, never a
// request with the password or a token.
TEST_F(EtcdSecureAttackTlsTest, APlainHttpPeerOnTheTlsPortGetsNoCredentials) {
  AuthGateway gw(std::make_unique<httplib::Server>());
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  EtcdClient client(Tls(gw.endpoint()));
  absl::Status s = client.Range("/p/").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("TLS"));
  EXPECT_EQ(gw.auths(), 0);
  EXPECT_EQ(gw.ranges(), 0);
}

// tls.ca_file empty means the system's store: a certificate from a private
// CA is refused, with or without the name check.
TEST_F(EtcdSecureAttackTlsTest, TheSystemStoreDoesNotTrustAPrivateCa) {
  AuthGateway gw(Https("server"));
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  for (bool name_check : {true, false}) {
    EtcdClientOptions o = Tls(gw.endpoint());
    o.tls.ca_file.clear();
    o.tls.verify_server_name = name_check;
    EtcdClient client(o);
    absl::Status s = client.Range("/p/").status();
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << name_check << ": " << s;
  }
  EXPECT_EQ(gw.auths(), 0);
}

// A CA file that is a directory, empty, garbage, a private key, or a
// certificate from another CA: never a trusted link.
TEST_F(EtcdSecureAttackTlsTest, ABadCaFileIsNeverATrustedLink) {
  AuthGateway gw(Https("server"));
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  const std::string dir = pki_.Path("a-directory");
  std::filesystem::create_directory(dir);
  std::ofstream(pki_.Path("empty.pem")).close();
  std::ofstream(pki_.Path("garbage.pem")) << "-----BEGIN CERTIFICATE-----\n"
                                             "bm90IGEgY2VydA==\n"
                                             "-----END CERTIFICATE-----\n";
  struct Case {
    std::string file;
    bool refused_as_option;  // INVALID_ARGUMENT (else UNAUTHENTICATED)
  };
  const Case cases[] = {{dir, true},
                        {pki_.Path("empty.pem"), true},
                        {pki_.Path("garbage.pem"), true},
                        {pki_.Path("ca.key"), true},
                        {pki_.Path("foreign-ca.crt"), false}};
  for (const Case& c : cases) {
    for (bool name_check : {true, false}) {
      EtcdClientOptions o = Tls(gw.endpoint());
      o.tls.ca_file = c.file;
      o.tls.verify_server_name = name_check;
      EtcdClient client(o);
      absl::Status s = client.Range("/p/").status();
      ASSERT_FALSE(s.ok()) << c.file << " " << name_check;
      if (c.refused_as_option) {
        EXPECT_TRUE(absl::IsInvalidArgument(s))
            << c.file << " " << name_check << ": " << s;
        EXPECT_THAT(s.message(), HasSubstr("tls.ca_file"));
      } else {
        EXPECT_TRUE(absl::IsUnauthenticated(s))
            << c.file << " " << name_check << ": " << s;
      }
    }
  }
  EXPECT_EQ(gw.auths(), 0);
}

TEST_F(EtcdSecureAttackTlsTest, ACertificateWithoutItsKeyOrAKeyMismatch) {
  EtcdClientOptions o = Tls("127.0.0.1:1");
  o.tls.cert_file = pki_.Path("client.crt");
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::CheckOptions(o)));
  o.tls.key_file = pki_.Path("server.key");  // another certificate's key
  EtcdClient client(o);
  absl::Status s = client.Range("/p/").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("tls.key_file"));
}

TEST_F(EtcdSecureAttackTlsTest, TlsFilesWithoutEnabledAreRefused) {
  EtcdClientOptions o = Tls("127.0.0.1:1");
  o.tls.enabled = false;
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::CheckOptions(o)));
  EtcdClient client(o);
  EXPECT_TRUE(absl::IsInvalidArgument(client.Range("/p/").status()));
}

// An IP endpoint against a certificate naming only a DNS name: refused
// with the name check, and the chain alone still passes without it.
TEST_F(EtcdSecureAttackTlsTest, AnIpEndpointDoesNotMatchADnsOnlyCertificate) {
  AuthGateway gw(Https("elsewhere"));
  gw.AcceptAll(true);
  gw.AuthReplies({R"({"token":"t"})"});
  EtcdClientOptions o = Tls(gw.endpoint());
  {
    EtcdClient client(o);
    absl::Status s = client.Range("/p/").status();
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
    EXPECT_EQ(gw.auths(), 0);
  }
  o.tls.verify_server_name = false;
  EtcdClient client(o);
  absl::Status s = client.Range("/p/").status();
  EXPECT_TRUE(s.ok()) << s;
  // "localhost" is in server.crt, not in elsewhere.crt.
  EtcdClientOptions by_name = Tls(absl::StrCat("localhost:", gw.port()));
  EtcdClient named(by_name);
  EXPECT_TRUE(absl::IsUnauthenticated(named.Range("/p/").status()));
}

// A peer that accepts and then trickles a TLS record one byte at a time:
// the handshake never completes; the request ends within its bound.
TEST_F(EtcdSecureAttackTlsTest, ATrickledHandshakeIsBoundedByTheDeadline) {
  std::string reply = "\x16\x03\x03\x40\x00";  // a 16 KiB handshake record
  reply.append(4000, '\x02');
  TrickleServer server(reply, absl::Milliseconds(20));
  ASSERT_TRUE(server.ok());
  EtcdClientOptions o = Tls(absl::StrCat("127.0.0.1:", server.port()));
  o.connect_timeout = absl::Milliseconds(300);
  o.request_timeout = absl::Milliseconds(300);
  EtcdClient client(o);
  const absl::Time start = absl::Now();
  absl::Status s = client.Range("/p/").status();
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(s.ok());
  EXPECT_LT(took, absl::Seconds(3)) << s;
  EXPECT_THAT(s.message(), Not(HasSubstr(kPassword)));
}

// The watch stream's handshake trickled by the peer (the read before it
// worked): Stop() returns promptly, as it does for a stream.
TEST_F(EtcdSecureAttackTlsTest, StopEndsAWatchHandshakeThePeerTrickles) {
  AuthGateway gw(Https("server"));
  gw.AcceptAll(true);
  std::string reply = "\x16\x03\x03\x40\x00";
  reply.append(4000, '\x02');
  FirstThenTrickle peer(gw.port(), reply, absl::Milliseconds(20));
  ASSERT_GT(peer.port(), 0);
  EtcdWatcherOptions o;
  o.endpoint = absl::StrCat("127.0.0.1:", peer.port());
  o.prefix = "/p/";
  o.tls.enabled = true;
  o.tls.ca_file = pki_.Path("ca.crt");
  o.connect_timeout = absl::Seconds(30);
  o.request_timeout = absl::Seconds(30);
  EtcdPrefixWatcher watcher(o);
  ASSERT_TRUE(watcher.Start().ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (peer.trickled() < 3 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_GE(peer.trickled(), 3) << "the watch never reached its handshake";
  EXPECT_EQ(gw.ranges(), 1);
  const absl::Time asked = absl::Now();
  watcher.Stop();
  EXPECT_LT(absl::Now() - asked, absl::Seconds(2));
}

// The watch stream's handshake trickled, a byte within each connect_timeout:
// nothing bounds the handshake as a whole, so the watcher sits in it for as
// long as the peer goes on, reporting nothing (a read has a deadline; the
// stream's connect has only the per-read connect_timeout). Kept disabled,
// as a known limit written in docs/etcd.md: bounding the handshake as a
// whole needs a timer per stream, which the watcher has none of; Stop()
// ends such a stream at once (StopEndsAWatchHandshakeThePeerTrickles).
TEST_F(EtcdSecureAttackTlsTest,
       DISABLED_AWatchHandshakeThePeerTricklesIsReportedWithinItsBound) {
  AuthGateway gw(Https("server"));
  gw.AcceptAll(true);
  std::string reply = "\x16\x03\x03\x40\x00";
  reply.append(4000, '\x02');
  FirstThenTrickle peer(gw.port(), reply, absl::Milliseconds(20));
  ASSERT_GT(peer.port(), 0);
  EtcdWatcherOptions o;
  o.endpoint = absl::StrCat("127.0.0.1:", peer.port());
  o.prefix = "/p/";
  o.tls.enabled = true;
  o.tls.ca_file = pki_.Path("ca.crt");
  o.connect_timeout = absl::Milliseconds(300);
  o.request_timeout = absl::Milliseconds(300);
  std::atomic<int> failures{0};
  o.on_status = [&](const absl::Status& s) {
    if (!s.ok()) failures.fetch_add(1);
  };
  EtcdPrefixWatcher watcher(o);
  ASSERT_TRUE(watcher.Start().ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (failures.load() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_GT(failures.load(), 0) << "no status while the handshake trickles";
  watcher.Stop();
}

#endif  // CPPHTTPLIB_OPENSSL_SUPPORT

// ---- Decided ----

// A password without a user sent no credentials at all, silently, as TLS
// files without tls.enabled would be a silent plain link (which
// CheckOptions refuses). Decided: refused the same way.
TEST(EtcdSecureAttackTest, APasswordWithoutAUserIsRefused) {
  EtcdClientOptions o;
  o.endpoint = "127.0.0.1:1";
  o.password = kPassword;
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::CheckOptions(o)));
}

}  // namespace DEGRADE_TEST_UNIT
