// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A server that accepts connections and never answers, the worst Redis a
// client can meet: a TCP listener on a free loopback port whose own thread
// accepts every connection and reads (and records) what is sent, but never
// writes a byte. A client's command then blocks until its timeout, or until
// the test calls Hangup(), which closes every connection (the client sees
// the end of the stream) and stops accepting.
//
//   SilentServer server;
//   ASSERT_TRUE(server.ok());
//   ... connect a client to server.port(), send a command ...
//   ASSERT_TRUE(server.WaitForRequest("ZREVRANGE"));  // it is blocked now
//   server.Hangup();                                  // release it
//
// Loopback only. Thread-safe.

#ifndef DEGRADE_TESTS_REDIS_SILENT_SERVER_HPP_
#define DEGRADE_TESTS_REDIS_SILENT_SERVER_HPP_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace degrade_tests {

class SilentServer {
 public:
  SilentServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listener_ < 0 || ::pipe(wake_) != 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) !=
            0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) !=
            0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
    thread_started_ = true;
  }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  ~SilentServer() {
    Hangup();
    if (!thread_started_ && listener_ >= 0) ::close(listener_);
    for (int fd : wake_) {
      if (fd >= 0) ::close(fd);
    }
  }

  bool ok() const { return port_ != 0; }
  int port() const { return port_; }

  // Blocks until the bytes received so far (over all connections) contain
  // `needle`; false after a minute (a safety net, not a timing).
  bool WaitForRequest(absl::string_view needle) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(1), [&] {
      return absl::StrContains(received_, needle);
    });
  }

  // Closes every accepted connection and stops accepting; clients blocked
  // on a read see the end of the stream. Idempotent.
  void Hangup() {
    if (!thread_.joinable()) return;
    const char byte = 0;
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
  }

 private:
  void Serve() {
    std::vector<int> clients;
    for (;;) {
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
      for (int c : clients) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents != 0) break;
      std::vector<int> open;
      if (fds[1].revents & POLLIN) {
        const int c = ::accept(listener_, nullptr, nullptr);
        if (c >= 0) open.push_back(c);
      }
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) {
          open.push_back(fds[i].fd);
          continue;
        }
        char buf[512];
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {  // the client went away
          ::close(fds[i].fd);
          continue;
        }
        open.push_back(fds[i].fd);
        {
          std::lock_guard<std::mutex> lock(mu_);
          received_.append(buf, static_cast<std::size_t>(n));
        }
        cv_.notify_all();
      }
      clients = std::move(open);
    }
    for (int c : clients) ::close(c);
    // Connections still in the backlog are reset with the listener.
    ::close(listener_);
  }

  int listener_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  bool thread_started_ = false;  // then Serve() closes the listener
  std::mutex mu_;
  std::condition_variable cv_;
  std::string received_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_REDIS_SILENT_SERVER_HPP_
