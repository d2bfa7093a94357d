// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fake etcd JSON gateway for malformed-response tests: an httplib::Server
// on a free loopback port answering POST /v3/kv/range, /v3/kv/put and
// /v3/watch with whatever the test sets, counting requests. Started by the
// constructor, stopped (and its thread joined) by the destructor.
//
//   FakeGateway fake;
//   fake.Reply("/v3/kv/range", 200, "{\"header\": ");   // truncated JSON
//   EtcdClient client({fake.endpoint()});

#ifndef DEGRADE_TESTS_ETCD_FAKE_GATEWAY_HPP_
#define DEGRADE_TESTS_ETCD_FAKE_GATEWAY_HPP_

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace degrade_tests {

class FakeGateway {
 public:
  FakeGateway() {
    for (const char* path : {"/v3/kv/range", "/v3/kv/put", "/v3/kv/deleterange",
                             "/v3/kv/compaction", "/v3/watch"}) {
      server_.Post(path, [this, p = std::string(path)](
                             const httplib::Request&, httplib::Response& res) {
        std::pair<int, std::string> reply{404, "{}"};
        absl::Duration hold, trickle;
        {
          std::lock_guard<std::mutex> l(mu_);
          ++counts_[p];
          auto it = replies_.find(p);
          if (it != replies_.end()) reply = it->second;
          hold = holds_[p];
          trickle = trickles_[p];
        }
        res.status = reply.first;
        if (trickle > absl::ZeroDuration()) {
          // The body one byte (one chunk) per `trickle`, then the end.
          res.set_chunked_content_provider(
              "application/json",
              [this, body = reply.second, trickle](std::size_t offset,
                                                   httplib::DataSink& sink) {
                const absl::Time next = absl::Now() + trickle;
                while (absl::Now() < next && !quit_.load()) {
                  absl::SleepFor(absl::Milliseconds(1));
                }
                if (quit_.load()) return false;
                if (offset >= body.size()) {
                  sink.done();
                  return true;
                }
                return sink.write(body.data() + offset, 1);
              });
          return;
        }
        if (hold <= absl::ZeroDuration()) {
          res.set_content(reply.second, "application/json");
          return;
        }
        // Sends the body, then keeps the stream open, silent, for `hold`.
        res.set_chunked_content_provider(
            "application/json",
            [this, body = reply.second, hold](std::size_t offset,
                                              httplib::DataSink& sink) {
              if (offset == 0 && !body.empty()) {
                return sink.write(body.data(), body.size());
              }
              const absl::Time end = absl::Now() + hold;
              while (absl::Now() < end && !quit_.load()) {
                absl::SleepFor(absl::Milliseconds(5));
              }
              sink.done();
              return true;
            });
      });
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound and listening already: connections queue until the loop runs.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  FakeGateway(const FakeGateway&) = delete;
  FakeGateway& operator=(const FakeGateway&) = delete;
  ~FakeGateway() {
    quit_.store(true);
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void Reply(const std::string& path, int status, std::string body) {
    std::lock_guard<std::mutex> l(mu_);
    replies_[path] = {status, std::move(body)};
  }
  // Replies to `path` keep their connection open, silent, for `hold` after
  // the body (a quiet watch stream); zero: closed at once.
  void Hold(const std::string& path, absl::Duration hold) {
    std::lock_guard<std::mutex> l(mu_);
    holds_[path] = hold;
  }
  // Replies to `path` send their body one byte every `interval` (a gateway
  // that trickles); zero: at once.
  void Trickle(const std::string& path, absl::Duration interval) {
    std::lock_guard<std::mutex> l(mu_);
    trickles_[path] = interval;
  }
  int Count(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    return counts_[path];
  }
  // Waits (up to `bound`) until `path` was requested `n` times.
  bool WaitForCount(const std::string& path, int n,
                    absl::Duration bound = absl::Seconds(20)) {
    const absl::Time deadline = absl::Now() + bound;
    while (Count(path) < n) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  }
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::pair<int, std::string>> replies_;
  std::map<std::string, int> counts_;
  std::map<std::string, absl::Duration> holds_;
  std::map<std::string, absl::Duration> trickles_;
  std::atomic<bool> quit_{false};
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_ETCD_FAKE_GATEWAY_HPP_
