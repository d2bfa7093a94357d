// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A server that answers, but one byte at a time: a TCP listener on a free
// loopback port whose own thread accepts one connection at a time, waits for
// the request's first bytes, then sends a fixed reply one byte every
// `interval` (reading and discarding whatever else the client sends), and
// closes the connection at the end of the reply. A client whose timeout
// bounds each socket read, not the whole exchange, never times out: every
// read gets its byte in time. The reply stops at once when the client goes
// away or the server is destroyed.
//
//   TrickleServer server(reply, absl::Milliseconds(10));
//   ASSERT_TRUE(server.ok());
//   ... a client of 127.0.0.1:server.port() ...
//   EXPECT_LT(server.sent(), reply.size());   // it gave up in the middle
//
// Loopback only. Thread-safe. Stopped (and its thread joined) by Stop() or
// the destructor, so also when a test fails.

#ifndef DEGRADE_TESTS_SUPPORT_TRICKLE_SERVER_HPP_
#define DEGRADE_TESTS_SUPPORT_TRICKLE_SERVER_HPP_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include "absl/time/time.h"

namespace degrade_tests {

class TrickleServer {
 public:
  TrickleServer(std::string reply, absl::Duration interval)
      : reply_(std::move(reply)),
        interval_ms_(static_cast<int>(absl::ToInt64Milliseconds(interval))) {
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
  }
  TrickleServer(const TrickleServer&) = delete;
  TrickleServer& operator=(const TrickleServer&) = delete;
  ~TrickleServer() {
    Stop();
    if (listener_ >= 0) ::close(listener_);
    for (int fd : wake_) {
      if (fd >= 0) ::close(fd);
    }
  }

  bool ok() const { return port_ != 0; }
  int port() const { return port_; }
  // Bytes of replies sent so far, over all connections.
  std::size_t sent() const { return sent_.load(); }
  // Connections accepted so far.
  int connections() const { return connections_.load(); }

  // Closes the connection and stops accepting; idempotent.
  void Stop() {
    if (!thread_.joinable()) return;
    const char byte = 0;
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
  }

 private:
  // False when woken by Stop().
  bool Serve() {
    for (;;) {
      pollfd fds[2] = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (fds[0].revents != 0) return false;
      const int c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) continue;
      ++connections_;
      const bool go_on = Trickle(c);
      ::close(c);
      if (!go_on) return false;
    }
  }

  // One connection: the reply, a byte per interval, once a request came.
  // False when woken by Stop().
  bool Trickle(int c) {
    bool requested = false;
    std::size_t next = 0;
    while (next < reply_.size()) {
      pollfd fds[2] = {{wake_[0], POLLIN, 0}, {c, POLLIN, 0}};
      const int n = ::poll(fds, 2, requested ? interval_ms_ : -1);
      if (n < 0) continue;
      if (fds[0].revents != 0) return false;
      if (fds[1].revents != 0) {
        char buf[512];
        if (::read(c, buf, sizeof buf) <= 0) return true;  // client gone
        requested = true;
        continue;  // the next byte still waits its interval
      }
      if (::send(c, &reply_[next], 1, MSG_NOSIGNAL) != 1) return true;
      ++next;
      ++sent_;
    }
    return true;
  }

  const std::string reply_;
  const int interval_ms_;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<std::size_t> sent_{0};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TRICKLE_SERVER_HPP_
