// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// redis::HotListSource against a real redis-server: each test starts its own
// on a free loopback port in a temporary directory (tests/redis/
// redis_server.hpp) and stops it, also on failure. Covered: a normal
// refresh, top-N, mapping members to items, the key missing, the wrong type,
// bad scores, AUTH and SELECT, Redis stopped in the middle (the old snapshot
// serves, the breaker opens, nothing blocks past its budget, the snapshot's
// age keeps rising), Redis restarted (the breaker closes on the next
// refresh), a restart between two refreshes, a slow Redis (CLIENT PAUSE)
// and a hung one (SIGSTOP) hitting the command timeout, a connect timeout,
// and concurrent refreshes. Settings validation is checked without a
// server (reply parsing, in redis/detail/reply_test.cpp).
//
// Time: the breakers and hot lists run on a FakeClock; only the socket waits
// are real, and those are asserted with generous upper bounds (the timeout
// plus 2 s) and polled, never slept on. Without redis-server on PATH the
// server tests skip, saying so; .ci/run installs it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/metrics.hpp"
#include "degrade/redis/hot_list_source.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "redis/redis_server.hpp"
#include "redis/silent_server.hpp"
#include "support/trickle_server.hpp"

namespace degrade {
namespace redis {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::RedisServer;
using ::degrade_tests::SilentServer;
using ::degrade_tests::TrickleServer;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kConnectTimeout = absl::Milliseconds(300);
constexpr absl::Duration kCommandTimeout = absl::Milliseconds(300);
// Added to every real-time bound: a loaded 2-core CI machine running
// sanitizers can be slow to schedule us, never slow by design.
constexpr absl::Duration kSlack = absl::Seconds(2);

// Real (wall) time taken by `f()`.
template <typename F>
absl::Duration Timed(F&& f) {
  const absl::Time start = absl::Now();
  f();
  return absl::Now() - start;
}

HotListSourceSettings BaseSettings(int port, const Clock* clock) {
  HotListSourceSettings s;
  s.host = "127.0.0.1";
  s.port = port;
  s.key = "hot";
  s.connect_timeout = kConnectTimeout;
  s.command_timeout = kCommandTimeout;
  s.breaker.clock = clock;
  return s;
}

std::unique_ptr<HotListSource> MustCreate(HotListSourceSettings s) {
  absl::StatusOr<std::unique_ptr<HotListSource>> source =
      HotListSource::Create(std::move(s));
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? *std::move(source) : nullptr;
}

// ---- Settings (no server) ----

TEST(RedisHotListSourceSettingsTest, DefaultsWithAKeyAreValid) {
  HotListSourceSettings s;
  s.key = "hot_items";
  EXPECT_TRUE(ValidateHotListSourceSettings(s).ok());
  EXPECT_EQ(s.top_n, 200u);
  absl::StatusOr<std::unique_ptr<HotListSource>> source =
      HotListSource::Create(s);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE((*source)->connected());  // Create does not connect
  EXPECT_EQ((*source)->breaker().name(), "redis 127.0.0.1:6379/0 hot_items");
  EXPECT_EQ((*source)->where(), "redis 127.0.0.1:6379/0 key 'hot_items'");
}

TEST(RedisHotListSourceSettingsTest, RejectsInvalidSettingsNamingTheField) {
  struct Case {
    std::function<void(HotListSourceSettings&)> mutate;
    std::string want;  // in the message
  };
  const std::vector<Case> cases = {
      {[](auto& s) { s.host = ""; }, "'host' = \"\""},
      {[](auto& s) { s.host = std::string("a\0b", 3); }, "'host'"},
      {[](auto& s) { s.port = 0; }, "'port' = 0 is invalid: must be in"},
      {[](auto& s) { s.port = 65536; }, "'port' = 65536"},
      {[](auto& s) { s.port = -1; }, "'port' = -1"},
      {[](auto& s) { s.key = ""; }, "'key' = \"\""},
      {[](auto& s) { s.top_n = 0; }, "'top_n' = 0"},
      {[](auto& s) { s.top_n = kMaxHotListSourceItems + 1; }, "'top_n' = "},
      {[](auto& s) { s.connect_timeout = absl::ZeroDuration(); },
       "'connect_timeout' = 0"},
      {[](auto& s) { s.connect_timeout = -absl::Seconds(1); },
       "'connect_timeout' = -1s"},
      {[](auto& s) { s.connect_timeout = absl::InfiniteDuration(); },
       "'connect_timeout' = inf"},
      {[](auto& s) { s.command_timeout = absl::ZeroDuration(); },
       "'command_timeout' = 0"},
      {[](auto& s) { s.command_timeout = absl::Nanoseconds(500); },
       "'command_timeout' = 500ns is invalid: must be in [1ms, "},
      {[](auto& s) { s.command_timeout = absl::Microseconds(999); },
       "'command_timeout' = 999us"},
      {[](auto& s) { s.command_timeout = absl::InfiniteDuration(); },
       "'command_timeout' = inf"},
      {[](auto& s) { s.command_timeout = absl::Hours(24 * 25); },
       "'command_timeout' = 600h"},
      {[](auto& s) { s.connect_timeout = absl::Nanoseconds(1); },
       "'connect_timeout' = 1ns"},
      {[](auto& s) {
         s.connect_timeout = MaxRedisTimeout() + absl::Nanoseconds(1);
       },
       "'connect_timeout' = "},
      {[](auto& s) { s.username = "app"; }, "'username' = app"},
      {[](auto& s) { s.username = ""; }, "'username' = \"\""},
      {[](auto& s) { s.password = ""; }, "'password' = \"\""},
      {[](auto& s) { s.database = -1; }, "'database' = -1"},
      {[](auto& s) { s.breaker.timeout = -absl::Seconds(1); },
       "setting 'timeout' = -1s"},
  };
  for (const Case& c : cases) {
    HotListSourceSettings s;
    s.key = "hot";
    c.mutate(s);
    const absl::Status v = ValidateHotListSourceSettings(s);
    EXPECT_TRUE(absl::IsInvalidArgument(v)) << c.want << ": " << v;
    EXPECT_THAT(std::string(v.message()), HasSubstr(c.want));
    const absl::Status created = HotListSource::Create(s).status();
    EXPECT_EQ(created, v);
  }
}

TEST(RedisHotListSourceSettingsTest, NeverPrintsThePassword) {
  HotListSourceSettings s;
  s.key = "";  // invalid, after a password was set
  s.password = "hunter2";
  EXPECT_THAT(std::string(ValidateHotListSourceSettings(s).message()),
              Not(HasSubstr("hunter2")));
}

// The options struct was called HotListSourceSettings; the old names still
// work and mean the same things.
TEST(RedisHotListSourceSettingsTest, OldNamesAreAliasesOfTheOptionsNames) {
  static_assert(std::is_same_v<HotListSourceSettings, HotListSourceOptions>);
  HotListSourceOptions o;
  o.key = "hot";
  EXPECT_TRUE(ValidateHotListSourceOptions(o).ok());
  o.port = 0;
  EXPECT_EQ(ValidateHotListSourceOptions(o), ValidateHotListSourceSettings(o));
  EXPECT_FALSE(ValidateHotListSourceOptions(o).ok());
  o.port = 6379;
  absl::StatusOr<std::unique_ptr<HotListSource>> source =
      HotListSource::Create(o);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(&(*source)->options(), &(*source)->settings());
  EXPECT_EQ((*source)->options().key, "hot");
}

// ---- A connect timeout (no redis-server: a listener that never accepts) --

TEST(RedisHotListSourceTimeoutTest, ConnectTimeoutBoundsAFetch) {
  // A listener with a backlog of 0 and one connection waiting in it: the
  // kernel drops further SYNs, so a connect hangs until its timeout.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
            0);
  ASSERT_EQ(::listen(listener, 0), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len),
            0);
  const int port = ntohs(addr.sin_port);
  detail::redis::ContextPtr filler(
      redisConnectWithTimeout("127.0.0.1", port, absl::ToTimeval(kSlack)));
  ASSERT_NE(filler, nullptr);
  ASSERT_EQ(filler->err, 0) << filler->errstr;

  FakeClock clock;
  std::unique_ptr<HotListSource> source =
      MustCreate(BaseSettings(port, &clock));
  ASSERT_NE(source, nullptr);
  absl::Status s;
  const absl::Duration took = Timed([&] { s = source->Fetch().status(); });
  ::close(listener);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cannot connect within 300ms"));
  EXPECT_GE(took, kConnectTimeout - absl::Milliseconds(50));
  EXPECT_LE(took, kConnectTimeout + kSlack);
  EXPECT_EQ(source->breaker().counts().consecutive_failures, 1u);
}

// ---- Against a real redis-server ----

// Reads the hot list's fallback as fast as it can on another thread, the way
// requests would while a refresh is stuck, and records the slowest read.
class ReaderProbe {
 public:
  template <typename Item>
  explicit ReaderProbe(const HotList<Item>& hot)
      : thread_([this, &hot] {
          const auto fallback = hot.Fallback();
          while (!stop_.load(std::memory_order_acquire)) {
            absl::StatusOr<std::vector<Item>> v;
            const absl::Duration took = Timed([&] { v = fallback(); });
            if (!v.ok() || v->empty()) bad_.fetch_add(1);
            reads_.fetch_add(1);
            int64_t ns = absl::ToInt64Nanoseconds(took);
            int64_t prev = max_ns_.load();
            while (ns > prev && !max_ns_.compare_exchange_weak(prev, ns)) {
            }
            std::this_thread::yield();
          }
        }) {}
  ReaderProbe(const ReaderProbe&) = delete;
  ReaderProbe& operator=(const ReaderProbe&) = delete;
  ~ReaderProbe() { Stop(); }

  void Stop() {
    stop_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
  }
  uint64_t reads() const { return reads_.load(); }
  uint64_t bad_reads() const { return bad_.load(); }
  absl::Duration slowest() const { return absl::Nanoseconds(max_ns_.load()); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> bad_{0};
  std::atomic<int64_t> max_ns_{0};
  std::thread thread_;
};

class RedisHotListSourceTest : public ::testing::Test {
 protected:
  // Extra redis-server arguments for a fixture's server.
  virtual std::vector<std::string> ServerArgs() const { return {}; }

  void SetUp() override {
    if (RedisServer::FindBinary().empty()) {
      GTEST_SKIP() << "redis-server is not on PATH, so the tests against a "
                      "real Redis cannot run (Debian: apt-get install "
                      "redis-server; .ci/run installs it)";
    }
    server_ = std::make_unique<RedisServer>(ServerArgs());
    const absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  void TearDown() override {
    if (server_ != nullptr) {
      EXPECT_TRUE(server_->Stop().ok());
    }
  }

  HotListSourceSettings Settings() const {
    return BaseSettings(server_->port(), &clock_);
  }

  // Runs `argv` on the test's own connection; fails the test on an error.
  void Redis(std::vector<std::string> argv) {
    absl::StatusOr<std::string> r = server_->Command(argv);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->rfind("ERR:", 0), std::string::npos) << argv[0] << ": " << *r;
  }

  // The article's offline job: replace the hot list.
  void WriteHotList(const std::vector<std::pair<double, std::string>>& items,
                    const std::string& key = "hot") {
    std::vector<std::string> argv = {"ZADD", key};
    for (const auto& [score, member] : items) {
      argv.push_back(absl::StrCat(score));
      argv.push_back(member);
    }
    Redis({"DEL", key});
    Redis(argv);
  }

  HotListOptions<std::string> ListOptions(HotListSource& source) {
    HotListOptions<std::string> o;
    o.source = source.SourceFor<std::string>();
    o.clock = &clock_;
    o.name = "hot";
    o.metrics = &registry_;
    return o;
  }

  // The value of the first exported sample whose line starts with `prefix`
  // (NaN if none): what a Prometheus scrape of this process would read.
  double Scraped(absl::string_view prefix) const {
    for (absl::string_view line :
         absl::StrSplit(registry_.RenderPrometheus(), '\n')) {
      if (!absl::StartsWith(line, prefix)) continue;
      double v = 0;
      const std::size_t space = line.rfind(' ');
      if (space != absl::string_view::npos &&
          absl::SimpleAtod(line.substr(space + 1), &v)) {
        return v;
      }
    }
    return std::nan("");
  }

  static std::vector<std::string> Items(const HotList<std::string>& hot) {
    HotList<std::string>::Snapshot s = hot.snapshot();
    return s == nullptr ? std::vector<std::string>{} : *s;
  }

  // Fails the test unless `refresh()` returns within `bound` + kSlack.
  template <typename F>
  absl::Status RefreshWithin(absl::Duration bound, F refresh) {
    absl::Status s;
    const absl::Duration took = Timed([&] { s = refresh(); });
    EXPECT_LE(took, bound + kSlack) << s;
    return s;
  }

  // Writes `items` as the hot list, makes `source_` and `hot_` read it, and
  // refreshes once, which must succeed.
  void Serve(const std::vector<std::pair<double, std::string>>& items) {
    WriteHotList(items);
    HotListSourceSettings settings = Settings();
    settings.breaker.metrics = &registry_;
    source_ = MustCreate(std::move(settings));
    ASSERT_NE(source_, nullptr);
    hot_ = std::make_unique<HotList<std::string>>(ListOptions(*source_));
    ASSERT_TRUE(hot_->RefreshOnce().ok()) << hot_->last_status();
  }

  FakeClock clock_;
  MetricsRegistry registry_;
  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<HotListSource> source_;
  std::unique_ptr<HotList<std::string>> hot_;  // after source_: it calls it
};

TEST_F(RedisHotListSourceTest, NormalRefreshServesTheSetBestFirst) {
  WriteHotList({{1, "a"}, {3, "c"}, {2, "b"}});
  std::unique_ptr<HotListSource> source = MustCreate(Settings());
  ASSERT_NE(source, nullptr);
  HotList<std::string> hot(ListOptions(*source));

  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  EXPECT_THAT(Items(hot), ElementsAre("c", "b", "a"));
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  EXPECT_TRUE(source->connected());
  EXPECT_EQ(source->connects(), 1u);

  // The offline job writes a new list; the next refresh takes it, on the
  // same connection.
  WriteHotList({{9, "z"}, {8, "y"}});
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  EXPECT_THAT(Items(hot), ElementsAre("z", "y"));
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  EXPECT_EQ(source->connects(), 1u);
  EXPECT_EQ(source->fetches(), 2u);
  EXPECT_EQ(source->failures(), 0u);
  EXPECT_EQ(source->breaker_state(), State::kClosed);

  // With scores.
  absl::StatusOr<std::vector<ScoredMember>> scored = source->Fetch();
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_THAT(*scored, ElementsAre(ScoredMember{"z", 9}, ScoredMember{"y", 8}));
}

TEST_F(RedisHotListSourceTest, ReadsOnlyTheTopN) {
  std::vector<std::pair<double, std::string>> items;
  for (int i = 0; i < 250; ++i) items.emplace_back(i, absl::StrCat("i", i));
  WriteHotList(items);
  std::unique_ptr<HotListSource> source = MustCreate(Settings());  // N = 200
  ASSERT_NE(source, nullptr);
  absl::StatusOr<std::vector<ScoredMember>> got = source->Fetch();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 200u);
  EXPECT_EQ(got->front(), (ScoredMember{"i249", 249}));
  EXPECT_EQ(got->back(), (ScoredMember{"i50", 50}));
}

// What a recall stage's item looks like: a numeric id and the score.
struct Candidate {
  int64_t id = 0;
  float recall_score = 0;
};

absl::StatusOr<Candidate> ToCandidate(const ScoredMember& m) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(m.member, &id)) {
    return absl::InvalidArgumentError("not a numeric item id");
  }
  return Candidate{id, static_cast<float>(m.score)};
}

TEST_F(RedisHotListSourceTest, MapsMembersToItemsAndRefusesBadOnes) {
  WriteHotList({{0.5, "1002"}, {0.9, "1001"}});
  std::unique_ptr<HotListSource> source = MustCreate(Settings());
  ASSERT_NE(source, nullptr);
  HotListOptions<Candidate> o;
  o.source = source->SourceFor<Candidate>(&ToCandidate);
  o.clock = &clock_;
  HotList<Candidate> hot(std::move(o));
  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  HotList<Candidate>::Snapshot s = hot.snapshot();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].id, 1001);
  EXPECT_FLOAT_EQ((*s)[0].recall_score, 0.9f);

  // One member that is not an id: the whole refresh is refused, the
  // snapshot stays.
  WriteHotList({{0.7, "1003"}, {0.6, "oops"}});
  const absl::Status bad = hot.RefreshOnce();
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_THAT(std::string(bad.message()),
              AllOf(HasSubstr("keeping the previous snapshot"),
                    HasSubstr("key 'hot'"), HasSubstr("member [1] 'oops'"),
                    HasSubstr("not a numeric item id")));
  EXPECT_EQ(hot.snapshot(), s);

  // A plain map (no StatusOr) works too.
  HotListOptions<std::string> upper;
  upper.source = source->SourceFor<std::string>(
      [](const ScoredMember& m) { return m.member + "!"; });
  HotList<std::string> hot2(std::move(upper));
  ASSERT_TRUE(hot2.RefreshOnce().ok()) << hot2.last_status();
  EXPECT_THAT(Items(hot2), ElementsAre("1003!", "oops!"));
}

TEST_F(RedisHotListSourceTest, MissingKeyKeepsTheSnapshotAndTheBreakerClosed) {
  ASSERT_NO_FATAL_FAILURE(Serve({{2, "a"}, {1, "b"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;
  const HotList<std::string>::Snapshot before = hot.snapshot();

  Redis({"DEL", "hot"});
  for (int i = 0; i < 5; ++i) {  // more than the breaker's 3
    const absl::Status s = hot.RefreshOnce();
    EXPECT_TRUE(absl::IsNotFound(s)) << s;
    EXPECT_THAT(std::string(s.message()),
                AllOf(HasSubstr("keeping the previous snapshot"),
                      HasSubstr("redis 127.0.0.1:"), HasSubstr("key 'hot'"),
                      HasSubstr("does not exist or its sorted set is empty")));
  }
  EXPECT_EQ(hot.snapshot(), before);
  EXPECT_THAT(Items(hot), ElementsAre("a", "b"));
  EXPECT_TRUE(absl::IsNotFound(hot.last_status()));
  // Redis answered every time: the breaker measures reachability.
  EXPECT_EQ(source.breaker_state(), State::kClosed);
  EXPECT_EQ(source.connects(), 1u);
}

TEST_F(RedisHotListSourceTest, WrongTypeIsReportedAndKeepsTheConnection) {
  ASSERT_NO_FATAL_FAILURE(Serve({{1, "a"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  Redis({"DEL", "hot"});
  Redis({"SET", "hot", "not a sorted set"});
  const absl::Status s = hot.RefreshOnce();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("key 'hot'"), HasSubstr("WRONGTYPE"),
                    HasSubstr("not a sorted set")));
  EXPECT_THAT(Items(hot), ElementsAre("a"));
  EXPECT_EQ(source.breaker_state(), State::kClosed);
  EXPECT_TRUE(source.connected());
  EXPECT_EQ(source.connects(), 1u);

  Redis({"LPUSH", "list", "x"});
  HotListSourceSettings other = Settings();
  other.key = "list";
  std::unique_ptr<HotListSource> list_source = MustCreate(other);
  ASSERT_NE(list_source, nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(list_source->Fetch().status()));
}

TEST_F(RedisHotListSourceTest, BadScoresAreRefusedWithTheValue) {
  ASSERT_NO_FATAL_FAILURE(Serve({{2, "a"}, {1, "b"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  // A real sorted set can only hold numbers, but +inf and -inf among them:
  // the one way a real server hands out a score no ranker can use.
  Redis({"ZADD", "hot", "+inf", "x", "-inf", "y"});
  const absl::Status s = hot.RefreshOnce();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("key 'hot'"), HasSubstr("member [0] 'x'"),
                    HasSubstr("score 'inf' is not a finite number")));
  EXPECT_THAT(Items(hot), ElementsAre("a", "b"));
  EXPECT_EQ(source.breaker_state(), State::kClosed);
}

TEST_F(RedisHotListSourceTest, StoppedRedisOpensTheBreakerAndTheOldListServes) {
  ASSERT_NO_FATAL_FAILURE(Serve({{3, "a"}, {2, "b"}, {1, "c"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;
  const HotList<std::string>::Snapshot good = hot.snapshot();

  ReaderProbe readers(hot);
  ASSERT_TRUE(server_->Stop().ok());

  // The first refresh finds its kept connection closed, reconnects once and
  // is refused; so are the next two. Each returns within its budget.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(source.breaker_state(), State::kClosed) << i;
    const absl::Status s =
        RefreshWithin(2 * (kConnectTimeout + kCommandTimeout),
                      [&] { return hot.RefreshOnce(); });
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_FALSE(IsBreakerOpen(s)) << s;
    EXPECT_THAT(std::string(s.message()),
                AllOf(HasSubstr("keeping the previous snapshot"),
                      HasSubstr("cannot connect"), HasSubstr("refused")));
    EXPECT_FALSE(source.connected());
    clock_.Advance(absl::Seconds(5));
    EXPECT_EQ(hot.age(), absl::Seconds(5 * (i + 1)));
    EXPECT_EQ(Scraped(R"(degrade_hot_list_age_seconds{hot_list="hot"})"),
              5 * (i + 1));
  }
  EXPECT_EQ(source.breaker_state(), State::kOpen);  // for 30 s
  EXPECT_EQ(Scraped(R"(degrade_breaker_state{breaker="redis 127.0.0.1:)"), 2);

  // Open: refreshes fail at once, without touching the network.
  for (int i = 0; i < 10; ++i) {
    const absl::Status s =
        RefreshWithin(absl::ZeroDuration(), [&] { return hot.RefreshOnce(); });
    EXPECT_TRUE(IsBreakerOpen(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("keeping the previous"));
  }
  EXPECT_EQ(source.connects(), 1u);
  EXPECT_TRUE(IsBreakerOpen(source.last_status()));

  // The old snapshot kept serving throughout, and the age keeps rising.
  readers.Stop();
  EXPECT_EQ(hot.snapshot(), good);
  EXPECT_GT(readers.reads(), 0u);
  EXPECT_EQ(readers.bad_reads(), 0u);
  EXPECT_LT(readers.slowest(), absl::Milliseconds(250));
  clock_.Advance(absl::Seconds(20));
  EXPECT_EQ(hot.age(), absl::Seconds(35));
  EXPECT_EQ(Scraped(R"(degrade_hot_list_age_seconds{hot_list="hot"})"), 35);
  EXPECT_EQ(
      Scraped(
          R"(degrade_hot_list_refreshes_total{hot_list="hot",result="failed"})"),
      13);
  EXPECT_EQ(source.breaker_state(), State::kOpen);
  EXPECT_EQ(hot.failures(), 13u);
}

TEST_F(RedisHotListSourceTest, RestartedRedisClosesTheBreakerOnTheNextRefresh) {
  ASSERT_NO_FATAL_FAILURE(Serve({{2, "old1"}, {1, "old2"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  ASSERT_TRUE(server_->Stop().ok());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(hot.RefreshOnce().ok());
  ASSERT_EQ(source.breaker_state(), State::kOpen);
  clock_.Advance(absl::Seconds(10));

  // Back on the same port, with the offline job's next list (no
  // persistence: the restarted server starts empty).
  ASSERT_TRUE(server_->Start().ok());
  WriteHotList({{5, "new1"}, {4, "new2"}});
  // Still open: the breaker does not know yet.
  EXPECT_TRUE(IsBreakerOpen(hot.RefreshOnce()));
  EXPECT_THAT(Items(hot), ElementsAre("old1", "old2"));

  clock_.Advance(absl::Seconds(20) + absl::Nanoseconds(1));  // 30 s open
  EXPECT_EQ(source.breaker_state(), State::kHalfOpen);
  const absl::Status s = RefreshWithin(kConnectTimeout + kCommandTimeout,
                                       [&] { return hot.RefreshOnce(); });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(source.breaker_state(), State::kClosed);
  EXPECT_THAT(Items(hot), ElementsAre("new1", "new2"));
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  EXPECT_TRUE(source.connected());
  EXPECT_EQ(source.connects(), 2u);  // reconnected by itself
  EXPECT_TRUE(source.last_status().ok());
}

TEST_F(RedisHotListSourceTest, RestartBetweenRefreshesCostsNoFailedRefresh) {
  ASSERT_NO_FATAL_FAILURE(Serve({{1, "a"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  ASSERT_TRUE(server_->Stop().ok());
  ASSERT_TRUE(server_->Start().ok());
  WriteHotList({{1, "b"}});
  // The kept connection is dead; the fetch notices, reconnects and retries.
  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  EXPECT_THAT(Items(hot), ElementsAre("b"));
  EXPECT_EQ(source.connects(), 2u);
  EXPECT_EQ(source.breaker().totals().failures, 0u);
}

TEST_F(RedisHotListSourceTest, SlowRedisHitsTheCommandTimeout) {
  ASSERT_NO_FATAL_FAILURE(Serve({{2, "a"}, {1, "b"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  // Every client's commands wait for 1 s: a Redis far slower than the
  // 300 ms command timeout.
  Redis({"CLIENT", "PAUSE", "1000", "ALL"});
  ReaderProbe readers(hot);
  absl::Status s;
  const absl::Duration took = Timed([&] { s = hot.RefreshOnce(); });
  readers.Stop();
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(
      std::string(s.message()),
      AllOf(HasSubstr("keeping the previous snapshot"), HasSubstr("key 'hot'"),
            HasSubstr("ZREVRANGE: no answer within 300ms")));
  EXPECT_GE(took, kCommandTimeout - absl::Milliseconds(50));
  EXPECT_LE(took, kCommandTimeout + kSlack);
  // Requests read the old list meanwhile, never waiting for the refresh.
  EXPECT_THAT(Items(hot), ElementsAre("a", "b"));
  EXPECT_GT(readers.reads(), 0u);
  EXPECT_EQ(readers.bad_reads(), 0u);
  EXPECT_LT(readers.slowest(), absl::Milliseconds(250));
  // The connection may still get the late reply: it was dropped.
  EXPECT_FALSE(source.connected());
  EXPECT_EQ(source.breaker().counts().consecutive_failures, 1u);

  // Our own client's PING is answered when the pause ends.
  absl::StatusOr<std::string> pong = server_->Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status();
  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  EXPECT_EQ(source.connects(), 2u);
  EXPECT_EQ(source.breaker_state(), State::kClosed);
}

TEST_F(RedisHotListSourceTest, HungRedisTripsTheBreakerWithinItsBudget) {
  ASSERT_NO_FATAL_FAILURE(Serve({{2, "a"}, {1, "b"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  // SIGSTOP: the kernel still completes connections, nothing answers.
  server_->Freeze();
  ReaderProbe readers(hot);
  for (int i = 0; i < 3; ++i) {
    const absl::Status s =
        RefreshWithin(kCommandTimeout, [&] { return hot.RefreshOnce(); });
    EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  }
  EXPECT_EQ(source.breaker_state(), State::kOpen);
  EXPECT_TRUE(IsBreakerOpen(
      RefreshWithin(absl::ZeroDuration(), [&] { return hot.RefreshOnce(); })));
  readers.Stop();
  EXPECT_GT(readers.reads(), 0u);
  EXPECT_EQ(readers.bad_reads(), 0u);
  EXPECT_LT(readers.slowest(), absl::Milliseconds(250));
  EXPECT_THAT(Items(hot), ElementsAre("a", "b"));

  server_->Thaw();
  clock_.Advance(absl::Seconds(31));
  ASSERT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  EXPECT_EQ(source.breaker_state(), State::kClosed);
}

TEST_F(RedisHotListSourceTest, ConcurrentRefreshesShareOneConnection) {
  ASSERT_NO_FATAL_FAILURE(Serve({{3, "a"}, {2, "b"}, {1, "c"}}));
  HotListSource& source = *source_;
  HotList<std::string>& hot = *hot_;

  ReaderProbe readers(hot);
  ASSERT_TRUE(hot.Start(absl::Milliseconds(1)).ok());  // the background refresher...
  std::thread other([&] {            // ...another thread...
    for (int i = 0; i < 30; ++i) EXPECT_TRUE(source.Fetch().ok());
  });
  for (int i = 0; i < 30; ++i) {  // ...and this one, all at once
    EXPECT_TRUE(hot.RefreshOnce().ok()) << hot.last_status();
  }
  other.join();
  hot.Stop();
  readers.Stop();
  EXPECT_EQ(readers.bad_reads(), 0u);
  EXPECT_EQ(source.connects(), 1u);
  EXPECT_GE(source.fetches(), 61u);
  EXPECT_EQ(source.failures(), 0u);
  EXPECT_THAT(Items(hot), ElementsAre("a", "b", "c"));
}

class RedisAuthTest : public RedisHotListSourceTest {
 protected:
  std::vector<std::string> ServerArgs() const override {
    return {"--requirepass", "s3cret"};
  }
};

TEST_F(RedisAuthTest, AuthenticatesAndSelectsTheDatabase) {
  ASSERT_TRUE(server_
                  ->Run({{"SELECT", "2"},
                         {"ZADD", "hot", "2", "in-db2", "1", "also-db2"}})
                  .ok());
  Redis({"ZADD", "hot", "1", "in-db0"});

  HotListSourceSettings s = Settings();
  s.password = "s3cret";
  s.database = 2;
  std::unique_ptr<HotListSource> source = MustCreate(s);
  ASSERT_NE(source, nullptr);
  absl::StatusOr<std::vector<ScoredMember>> got = source->Fetch();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(ScoredMember{"in-db2", 2},
                                ScoredMember{"also-db2", 1}));
  EXPECT_EQ(source->where(),
            absl::StrCat("redis 127.0.0.1:", server_->port(), "/2 key 'hot'"));

  s.username = "default";  // Redis 6 ACL form: AUTH user password
  std::unique_ptr<HotListSource> with_user = MustCreate(s);
  ASSERT_NE(with_user, nullptr);
  EXPECT_TRUE(with_user->Fetch().ok()) << with_user->last_status();
}

TEST_F(RedisAuthTest, RefusedCredentialsAndDatabasesAreReported) {
  Redis({"ZADD", "hot", "1", "a"});

  HotListSourceSettings wrong = Settings();
  wrong.password = "guess";
  std::unique_ptr<HotListSource> source = MustCreate(wrong);
  ASSERT_NE(source, nullptr);
  for (int i = 0; i < 4; ++i) {
    const absl::Status s = source->Fetch().status();
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
    EXPECT_THAT(
        std::string(s.message()),
        AllOf(HasSubstr("AUTH refused: WRONGPASS"), Not(HasSubstr("guess"))));
  }
  EXPECT_FALSE(source->connected());
  EXPECT_EQ(source->breaker_state(), State::kClosed);  // Redis answered

  std::unique_ptr<HotListSource> none = MustCreate(Settings());
  ASSERT_NE(none, nullptr);
  const absl::Status noauth = none->Fetch().status();
  EXPECT_TRUE(absl::IsUnauthenticated(noauth)) << noauth;
  EXPECT_THAT(std::string(noauth.message()),
              HasSubstr("ZREVRANGE refused: NOAUTH"));

  HotListSourceSettings far = Settings();
  far.password = "s3cret";
  far.database = 999;
  std::unique_ptr<HotListSource> db = MustCreate(far);
  ASSERT_NE(db, nullptr);
  const absl::Status s = db->Fetch().status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("SELECT 999 refused: ERR"));
  EXPECT_FALSE(db->connected());
}

// ---- A server that accepts and never answers (no redis-server) ----

TEST(RedisHotListSourceSettingsTest, TheBoundaryTimeoutsAreAccepted) {
  HotListSourceSettings s;
  s.key = "hot";
  s.connect_timeout = MinRedisTimeout();
  s.command_timeout = MaxRedisTimeout();
  EXPECT_TRUE(ValidateHotListSourceSettings(s).ok());
  s.connect_timeout = MaxRedisTimeout();
  s.command_timeout = MinRedisTimeout();
  EXPECT_TRUE(ValidateHotListSourceSettings(s).ok());
}

// Runs source->Fetch() on a thread of its own; Wait() says whether it
// returned within a minute (a safety net: the fetches here are bounded by
// far less, or released by the test).
class BackgroundFetch {
 public:
  explicit BackgroundFetch(HotListSource* source)
      : thread_([this, source] {
          absl::Status s = source->Fetch().status();
          std::lock_guard<std::mutex> lock(mu_);
          status_ = std::move(s);
          done_ = true;
          cv_.notify_all();
        }) {}
  BackgroundFetch(const BackgroundFetch&) = delete;
  BackgroundFetch& operator=(const BackgroundFetch&) = delete;
  ~BackgroundFetch() { thread_.join(); }

  bool done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(1),
                        [this] { return done_; });
  }
  absl::Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;    // guarded by mu_
  absl::Status status_;  // guarded by mu_
  std::thread thread_;
};

TEST(RedisHotListSourceSilentServerTest,
     SubMillisecondTimeoutIsRefusedNotAnEndlessWait) {
  // Regression: 500 ns passed validation and became a {0, 0} timeval, which
  // the kernel reads as "no timeout": Fetch() from a server that never
  // answers never returned.
  SilentServer server;
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  HotListSourceSettings s = BaseSettings(server.port(), &clock);
  s.command_timeout = absl::Nanoseconds(500);
  absl::StatusOr<std::unique_ptr<HotListSource>> source =
      HotListSource::Create(s);
  EXPECT_TRUE(absl::IsInvalidArgument(source.status())) << source.status();
  EXPECT_THAT(std::string(source.status().message()),
              HasSubstr("'command_timeout' = 500ns"));
  if (source.ok()) {
    // Show what it did: wait for the fetch a minute, then release it.
    BackgroundFetch fetch(source->get());
    ASSERT_TRUE(server.WaitForRequest("ZREVRANGE"));
    if (!fetch.Wait()) {
      ADD_FAILURE() << "Fetch() blocked for good on a silent server";
    }
    server.Hangup();
  }
}

TEST(RedisHotListSourceSilentServerTest, TheShortestTimeoutEndsAFetch) {
  SilentServer server;
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  HotListSourceSettings s = BaseSettings(server.port(), &clock);
  s.command_timeout = MinRedisTimeout();
  std::unique_ptr<HotListSource> source = MustCreate(s);
  ASSERT_NE(source, nullptr);
  absl::Status status;
  const absl::Duration took =
      Timed([&] { status = source->Fetch().status(); });
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("ZREVRANGE: no answer within 1ms"));
  EXPECT_LE(took, MinRedisTimeout() + kSlack);
  EXPECT_FALSE(source->connected());  // a late reply must not be read
}

TEST(RedisHotListSourceSilentServerTest, AccessorsDoNotWaitForABlockedFetch) {
  // Regression: every accessor took the lock a fetch holds across its
  // network calls, so a dashboard reading last_status() waited for Redis.
  SilentServer server;
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  HotListSourceSettings s = BaseSettings(server.port(), &clock);
  s.command_timeout = absl::Seconds(30);  // the test releases it first
  std::unique_ptr<HotListSource> source = MustCreate(s);
  ASSERT_NE(source, nullptr);
  BackgroundFetch fetch(source.get());
  // The server has the command: the fetch is blocked reading the reply,
  // holding the connection, and can only return when the server hangs up
  // (or in 30 s).
  ASSERT_TRUE(server.WaitForRequest("ZREVRANGE"));
  EXPECT_TRUE(source->connected());
  EXPECT_EQ(source->connects(), 1u);
  EXPECT_EQ(source->fetches(), 0u);
  EXPECT_EQ(source->failures(), 0u);
  EXPECT_TRUE(source->last_status().ok());
  EXPECT_EQ(source->breaker_state(), State::kClosed);
  // Every accessor came back while the fetch was still blocked.
  EXPECT_FALSE(fetch.done());
  server.Hangup();
  ASSERT_TRUE(fetch.Wait());
  EXPECT_TRUE(absl::IsUnavailable(fetch.status())) << fetch.status();
  EXPECT_EQ(source->fetches(), 1u);
  EXPECT_EQ(source->failures(), 1u);
  EXPECT_FALSE(source->connected());
  EXPECT_EQ(source->last_status(), fetch.status());
}

TEST(RedisHotListSourceSilentServerTest,
     HotListStopReturnsWithinTheCommandTimeout) {
  SilentServer server;
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  std::unique_ptr<HotListSource> source =
      MustCreate(BaseSettings(server.port(), &clock));
  ASSERT_NE(source, nullptr);
  HotListOptions<std::string> o;
  o.name = "hot";
  o.clock = &clock;
  o.source = source->SourceFor<std::string>();
  HotList<std::string> hot(std::move(o));
  ASSERT_TRUE(hot.Publish({"baseline"}).ok());
  ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(server.WaitForRequest("ZREVRANGE"));  // the refresh is blocked
  // Readers do not wait for it.
  EXPECT_EQ(hot.age(), absl::ZeroDuration());
  EXPECT_THAT(*hot.snapshot(), ElementsAre("baseline"));
  EXPECT_TRUE(source->last_status().ok());
  // Stop() from this thread waits only for the refresh in progress, which
  // its command timeout ends.
  const absl::Duration took = Timed([&] { hot.Stop(); });
  EXPECT_LE(took, kCommandTimeout + kSlack);
  EXPECT_TRUE(absl::IsDeadlineExceeded(hot.last_status()))
      << hot.last_status();
  EXPECT_THAT(*hot.snapshot(), ElementsAre("baseline"));
}

// A ZREVRANGE ... WITHSCORES reply of `n` members, as Redis sends it.
std::string ScoredReply(int n) {
  std::string r = absl::StrCat("*", 2 * n, "\r\n");
  for (int i = 0; i < n; ++i) {
    const std::string member = absl::StrCat("m", 1000 + i);
    absl::StrAppend(&r, "$", member.size(), "\r\n", member, "\r\n$1\r\n1\r\n");
  }
  return r;
}

// Issue 32: a Redis that answers one byte every 10 ms never lets a socket
// read wait its 100 ms, so a per-read timeout let this ~1.2 kB reply hold
// the fetch (and a HotList's Stop() or destructor) for about 12 s. The
// command timeout is a deadline for the whole command: the fetch gives up
// in the middle of the reply. Asserted by the status and by the bytes the
// server had sent (not the whole reply); the wall-clock bound is the
// file's generous one (the timeout plus kSlack), far below the reply's 12 s.
TEST(RedisHotListSourceTrickleTest, TheCommandTimeoutBoundsTheWholeReply) {
  const std::string reply = ScoredReply(70);
  TrickleServer server(reply, absl::Milliseconds(10));
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  HotListSourceSettings s = BaseSettings(server.port(), &clock);
  s.command_timeout = absl::Milliseconds(100);
  s.top_n = 70;
  std::unique_ptr<HotListSource> source = MustCreate(s);
  ASSERT_NE(source, nullptr);
  absl::Status status;
  const absl::Duration took = Timed([&] { status = source->Fetch().status(); });
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("key 'hot'"),
                    HasSubstr("ZREVRANGE: no answer within 100ms")));
  EXPECT_LT(server.sent(), reply.size());
  EXPECT_LE(took, s.command_timeout + kSlack);
  EXPECT_FALSE(source->connected());  // the rest must not be read as a reply
}

// The same through a HotList: its Stop() waits for the refresh in progress,
// which the command's deadline ends.
TEST(RedisHotListSourceTrickleTest, HotListStopIsBoundedByTheCommandTimeout) {
  const std::string reply = ScoredReply(70);
  TrickleServer server(reply, absl::Milliseconds(10));
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  HotListSourceSettings s = BaseSettings(server.port(), &clock);
  s.command_timeout = absl::Milliseconds(100);
  s.top_n = 70;
  std::unique_ptr<HotListSource> source = MustCreate(s);
  ASSERT_NE(source, nullptr);
  HotListOptions<std::string> o;
  o.name = "hot";
  o.clock = &clock;
  o.source = source->SourceFor<std::string>();
  HotList<std::string> hot(std::move(o));
  ASSERT_TRUE(hot.Publish({"baseline"}).ok());
  ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
  // The refresh is under way once the server has its connection (a bound,
  // not a timing: it comes at once).
  const absl::Time bound = absl::Now() + absl::Seconds(30);
  while (server.sent() == 0 && absl::Now() < bound) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GT(server.sent(), 0u);
  const absl::Duration took = Timed([&] { hot.Stop(); });
  EXPECT_TRUE(absl::IsDeadlineExceeded(hot.last_status())) << hot.last_status();
  EXPECT_LT(server.sent(), reply.size());
  EXPECT_LE(took, s.command_timeout + kSlack);
  EXPECT_THAT(*hot.snapshot(), ElementsAre("baseline"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace redis
}  // namespace degrade
