// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// inference_load: an open-loop load generator for inference_server.
//
// Open loop: request i is due at start + i / rate whatever happened to the
// ones before, and its latency counts from when it was due, not from when
// the generator got round to sending it. A closed-loop tool (one request per
// connection at a time, as wrk) waits for an answer before sending the next,
// so an overloaded server slows the load down and hides its own latency
// ("coordinated omission"); real clients do not wait for each other.
//
// Two client shapes, both on one epoll thread:
// - by default every request is its own connection (Connection: close,
//   reset on close so that no TIME_WAIT piles up), as a fresh client would;
// - --keep-alive reuses HTTP/1.1 connections as service clients and
//   connection pools do: a due request goes out on an idle connection, or a
//   new one while fewer than --connections are open, else it waits in the
//   client's own FIFO (and its latency still counts from when it was due).
//   Idle connections are reused newest first (--reuse=newest, as most pools
//   do, which lets the rest time out) or oldest first (--reuse=oldest, as a
//   round-robin pool does, which keeps every connection it ever opened warm).
//   A connection the server closes (after its keep-alive count, or idle) is
//   replaced; a request that finds its reused connection closed before any
//   answer is sent again once on a new one, as pooled clients do.
// --burst=N makes requests due N at a time (N / rate apart), the shape of a
// caller that fans one of its own requests out into N. Classes are drawn from
// the mix with a seeded generator (the same sequence for the same seed):
// 25% CRITICAL_PLUS, 40% CRITICAL, 20% SHEDDABLE_PLUS, 15% SHEDDABLE, with a
// uniform cohort in [0, 127].
//
// Usage:
//   inference_load --port=N [--host=127.0.0.1] [--rate=R] [--seconds=S]
//                  [--deadline-ms=1000] [--timeout-ms=5000] [--seed=1]
//                  [--mix=25,40,20,15] [--label=TEXT]
//                  [--keep-alive [--connections=1024] [--reuse=newest|oldest]]
//                  [--burst=1]
//   inference_load --port=N --once [--path=/infer] [--class=TEXT]
//
// The first form prints, per class and in total: sent, answered 200, good
// (answered 200 within the deadline), shed (503 or 429), timed out (no
// answer within --timeout-ms), other errors, and p50/p99/max of the 200s'
// latency; then one `total ...` line of key=value pairs for scripts (with
// --keep-alive also the connections opened, the most open at once and the
// most requests waiting for one). The
// second sends one request, prints `status=NNN` and the body, and exits 0
// if an answer came (whatever its status).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "degrade/request_class.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  double rate = 178;
  double seconds = 20;
  int deadline_ms = 1000;
  int timeout_ms = 5000;
  uint64_t seed = 1;
  std::array<int, degrade::kNumCriticalities> mix{25, 40, 20, 15};
  std::string label;
  bool once = false;
  std::string path = "/infer";
  std::string klass;  // --once: the header's raw value (may be malformed)
  bool keep_alive = false;
  int connections = 1024;     // --keep-alive: the pool's bound
  int burst = 1;              // requests due together (a caller's fan-out)
  bool reuse_oldest = false;  // --keep-alive: reuse the longest-idle first
};

bool ParseMix(absl::string_view text, std::array<int, degrade::kNumCriticalities>* mix) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ',');
  if (parts.size() != mix->size()) return false;
  int sum = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtoi(parts[i], &(*mix)[i]) || (*mix)[i] < 0) return false;
    sum += (*mix)[i];
  }
  return sum > 0;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const std::size_t eq = arg.find('=');
    const absl::string_view key = arg.substr(0, eq);
    const absl::string_view v =
        eq == absl::string_view::npos ? absl::string_view() : arg.substr(eq + 1);
    bool ok = true;
    if (key == "--once") {
      f->once = eq == absl::string_view::npos;
      ok = f->once;
    } else if (key == "--keep-alive") {
      f->keep_alive = eq == absl::string_view::npos;
      ok = f->keep_alive;
    } else if (eq == absl::string_view::npos) {
      ok = false;
    } else if (key == "--host") {
      f->host = std::string(v);
    } else if (key == "--port") {
      ok = absl::SimpleAtoi(v, &f->port) && f->port > 0 && f->port < 65536;
    } else if (key == "--rate") {
      ok = absl::SimpleAtod(v, &f->rate) && f->rate > 0 && f->rate <= 100000;
    } else if (key == "--seconds") {
      ok = absl::SimpleAtod(v, &f->seconds) && f->seconds > 0 && f->seconds <= 3600;
    } else if (key == "--deadline-ms") {
      ok = absl::SimpleAtoi(v, &f->deadline_ms) && f->deadline_ms > 0;
    } else if (key == "--timeout-ms") {
      ok = absl::SimpleAtoi(v, &f->timeout_ms) && f->timeout_ms > 0 && f->timeout_ms <= 600000;
    } else if (key == "--seed") {
      ok = absl::SimpleAtoi(v, &f->seed);
    } else if (key == "--mix") {
      ok = ParseMix(v, &f->mix);
    } else if (key == "--connections") {
      ok = absl::SimpleAtoi(v, &f->connections) && f->connections > 0 &&
           f->connections <= 60000;
    } else if (key == "--reuse") {
      f->reuse_oldest = v == "oldest";
      ok = v == "oldest" || v == "newest";
    } else if (key == "--burst") {
      ok = absl::SimpleAtoi(v, &f->burst) && f->burst > 0 && f->burst <= 10000;
    } else if (key == "--label") {
      f->label = std::string(v);
    } else if (key == "--path") {
      f->path = std::string(v);
    } else if (key == "--class") {
      f->klass = std::string(v);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "inference_load: bad argument \"%s\"\n", argv[i]);
      return false;
    }
  }
  if (f->port == 0) {
    std::fprintf(stderr, "inference_load: --port is required\n");
    return false;
  }
  return true;
}

// A request, from when it is due until it is answered or given up.
struct Outgoing {
  int cls = 0;
  Clock::time_point due;
  std::string out;
  bool resent = false;  // already sent again after a reused connection closed
};

struct Conn {
  bool busy = false;    // a request is out on it
  bool reused = false;  // it has answered a request before
  Outgoing req;
  std::size_t sent = 0;
  std::string in;
};

// The status code once a whole response is in `in`; 0 while incomplete.
// A response without Content-Length ends when the server closes
// (`closed`). `last`, when given, is set when the server says it closes the
// connection after this response.
int ParseResponse(const std::string& in, bool closed, std::string* body,
                  bool* last = nullptr) {
  const std::size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  if (last != nullptr) {
    const std::size_t at = in.find("\r\nConnection: close\r\n");
    *last = at != std::string::npos && at < end;
  }
  int status = 0;
  if (in.compare(0, 9, "HTTP/1.1 ") != 0 && in.compare(0, 9, "HTTP/1.0 ") != 0) return -1;
  if (!absl::SimpleAtoi(absl::string_view(in).substr(9, 3), &status)) return -1;
  const std::size_t cl = in.find("Content-Length: ");
  if (cl != std::string::npos && cl < end) {
    std::size_t length = 0;
    const std::size_t eol = in.find("\r\n", cl);
    if (!absl::SimpleAtoi(absl::string_view(in).substr(cl + 16, eol - cl - 16), &length)) {
      return -1;
    }
    if (in.size() < end + 4 + length) return closed ? -1 : 0;
    if (body != nullptr) *body = in.substr(end + 4, length);
    return status;
  }
  if (!closed) return 0;
  if (body != nullptr) *body = in.substr(end + 4);
  return status;
}

int OpenConnection(const Flags& f) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // Reset on close: a run opens tens of thousands of connections, which
  // would otherwise sit in TIME_WAIT and exhaust the ephemeral ports.
  const linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(f.port));
  if (inet_pton(AF_INET, f.host.c_str(), &addr.sin_addr) != 1 ||
      (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
       errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Request(const Flags& f, absl::string_view path, absl::string_view klass) {
  std::string r = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", f.host, "\r\n");
  if (!klass.empty()) absl::StrAppend(&r, "x-degrade-class: ", klass, "\r\n");
  absl::StrAppend(&r, "x-degrade-deadline-ms: ", f.deadline_ms,
                  "\r\nConnection: ",
                  f.keep_alive && !f.once ? "keep-alive" : "close", "\r\n\r\n");
  return r;
}

struct ClassReport {
  uint64_t sent = 0, ok = 0, good = 0, shed = 0, timed_out = 0, errors = 0;
  std::vector<double> latency_ms;  // of the 200s
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const std::size_t i =
      std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

// Runs the open loop; returns false if nothing could be sent at all.
bool RunLoad(const Flags& f) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return false;
  std::mt19937_64 rng(f.seed);
  std::discrete_distribution<int> pick_class(f.mix.begin(), f.mix.end());
  std::uniform_int_distribution<int> pick_cohort(0, degrade::kNumCohorts - 1);

  std::array<ClassReport, degrade::kNumCriticalities> report;
  std::unordered_map<int, Conn> conns;
  std::vector<int> idle;         // keep-alive connections with nothing out
  std::deque<Outgoing> waiting;  // due, no connection free (keep-alive)
  uint64_t opened = 0;
  std::size_t most_open = 0;
  std::size_t most_waiting = 0;
  std::size_t busy = 0;
  const auto start = Clock::now();
  const auto period = std::chrono::duration<double>(1.0 / f.rate);
  const auto send_end = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(f.seconds));
  const auto timeout = std::chrono::milliseconds(f.timeout_ms);
  const auto deadline = std::chrono::milliseconds(f.deadline_ms);
  uint64_t next = 0;
  std::array<epoll_event, 256> events;
  auto last_sweep = start;

  const auto record = [&](const Outgoing& r, int status,
                          Clock::time_point now) {
    ClassReport& cr = report[static_cast<std::size_t>(r.cls)];
    if (status == 200) {
      ++cr.ok;
      const auto latency = now - r.due;
      if (latency <= deadline) ++cr.good;
      cr.latency_ms.push_back(
          std::chrono::duration<double, std::milli>(latency).count());
    } else if (status == 503 || status == 429) {
      ++cr.shed;
    } else if (status == 0) {
      ++cr.timed_out;
    } else {
      ++cr.errors;
    }
  };
  const auto drop = [&](int fd) {
    auto it = conns.find(fd);
    if (it->second.busy) --busy;
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(it);
    idle.erase(std::remove(idle.begin(), idle.end(), fd), idle.end());
  };
  const auto start_on = [&](int fd, Outgoing&& r) {
    Conn& c = conns[fd];
    c.busy = true;
    ++busy;
    c.req = std::move(r);
    c.sent = 0;
    c.in.clear();
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
  };
  // Sends `r` on an idle connection, a new one, or queues it (keep-alive).
  const auto issue = [&](Outgoing&& r) {
    if (f.keep_alive && !idle.empty()) {
      int fd = idle.back();
      if (f.reuse_oldest) {
        fd = idle.front();
        idle.erase(idle.begin());
      } else {
        idle.pop_back();
      }
      start_on(fd, std::move(r));
      return;
    }
    if (f.keep_alive &&
        conns.size() >= static_cast<std::size_t>(f.connections)) {
      waiting.push_back(std::move(r));
      most_waiting = std::max(most_waiting, waiting.size());
      return;
    }
    const int fd = OpenConnection(f);
    if (fd < 0) {
      ++report[static_cast<std::size_t>(r.cls)].errors;
      return;
    }
    ++opened;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    conns[fd];
    most_open = std::max(most_open, conns.size());
    start_on(fd, std::move(r));
  };
  // The connection is free again: the next waiting request, else idle.
  const auto release = [&](int fd) {
    Conn& c = conns[fd];
    c.busy = false;
    --busy;
    c.reused = true;
    if (!waiting.empty()) {
      Outgoing r = std::move(waiting.front());
      waiting.pop_front();
      start_on(fd, std::move(r));
      return;
    }
    idle.push_back(fd);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;  // to see the server close it
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
  };
  const auto finish = [&](int fd, int status, bool last,
                          Clock::time_point now) {
    Conn& c = conns[fd];
    // A reused connection the server closed before it read the request: a
    // pooled client sends it again on a new connection (once).
    if (status == -1 && f.keep_alive && c.reused && c.in.empty() &&
        !c.req.resent) {
      Outgoing again = std::move(c.req);
      again.resent = true;
      drop(fd);
      issue(std::move(again));
      return;
    }
    record(c.req, status, now);
    if (f.keep_alive && status > 0 && !last) {
      release(fd);
      return;
    }
    drop(fd);
    if (!waiting.empty()) {
      Outgoing r = std::move(waiting.front());
      waiting.pop_front();
      issue(std::move(r));
    }
  };

  for (;;) {
    auto now = Clock::now();
    // Send everything that is due (catching up if the loop fell behind).
    for (;;) {
      // A burst of --burst requests is due at once, every burst / rate.
      const uint64_t group = next - next % static_cast<uint64_t>(f.burst);
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   period * static_cast<double>(group));
      if (due > now || due >= send_end) break;
      ++next;
      const int cls = pick_class(rng);
      const degrade::RequestClass rc{static_cast<degrade::Criticality>(cls),
                                     static_cast<uint8_t>(pick_cohort(rng))};
      ++report[static_cast<std::size_t>(cls)].sent;
      issue(Outgoing{cls, due,
                     Request(f, "/infer", degrade::EncodeRequestClass(rc)),
                     false});
    }
    const bool sending = now < send_end;
    if (!sending && busy == 0 && waiting.empty()) break;
    if (!sending && now >= send_end + timeout + std::chrono::milliseconds(100)) break;

    int wait_ms = 1;
    if (!sending) wait_ms = 10;
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), wait_ms);
    now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      const uint32_t e = events[static_cast<std::size_t>(i)].events;
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = it->second;
      if (!c.busy) {
        // An idle keep-alive connection only ever reports its closing (or
        // a stale event for an earlier connection with the same number).
        char b = 0;
        const ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        drop(fd);
        continue;
      }
      if ((e & EPOLLOUT) != 0 && c.sent < c.req.out.size()) {
        const ssize_t w = send(fd, c.req.out.data() + c.sent,
                               c.req.out.size() - c.sent, MSG_NOSIGNAL);
        if (w > 0) c.sent += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          finish(fd, -1, true, now);
          continue;
        }
        if (c.sent == c.req.out.size()) {
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.fd = fd;
          epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
        }
      }
      if ((e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        char buf[4096];
        bool closed = false;
        for (;;) {
          const ssize_t got = recv(fd, buf, sizeof buf, 0);
          if (got > 0) {
            c.in.append(buf, static_cast<std::size_t>(got));
            continue;
          }
          if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
          break;
        }
        bool last = false;
        const int status = ParseResponse(c.in, closed, nullptr, &last);
        if (status != 0) {
          finish(fd, status, last || closed, now);
        } else if (closed) {
          finish(fd, -1, true, now);
        }
      }
    }
    // Give up on what has waited longer than the timeout (every 10 ms).
    if (now - last_sweep >= std::chrono::milliseconds(10)) {
      last_sweep = now;
      while (!waiting.empty() && now - waiting.front().due > timeout) {
        record(waiting.front(), 0, now);
        waiting.pop_front();
      }
      std::vector<int> late;
      for (const auto& [fd, c] : conns) {
        if (c.busy && now - c.req.due > timeout) late.push_back(fd);
      }
      for (const int fd : late) finish(fd, 0, true, now);
    }
  }
  std::vector<int> left;
  for (const auto& [fd, c] : conns) left.push_back(fd);
  for (const int fd : left) {
    if (conns[fd].busy) {
      finish(fd, 0, true, Clock::now());
    } else {
      drop(fd);
    }
  }
  for (const Outgoing& r : waiting) record(r, 0, Clock::now());
  close(ep);

  const double elapsed = std::chrono::duration<double>(send_end - start).count();
  std::printf("%-16s %7s %7s %7s %7s %7s %7s %9s %9s %9s\n",
              f.label.empty() ? "class" : f.label.c_str(), "sent", "ok", "good", "shed",
              "timeout", "error", "p50_ms", "p99_ms", "max_ms");
  ClassReport total;
  const auto row = [](absl::string_view name, ClassReport& r) {
    const double p50 = Percentile(r.latency_ms, 0.50);
    const double p99 = Percentile(r.latency_ms, 0.99);
    const double max = r.latency_ms.empty()
                           ? 0
                           : *std::max_element(r.latency_ms.begin(), r.latency_ms.end());
    std::printf("%-16.*s %7llu %7llu %7llu %7llu %7llu %7llu %9.1f %9.1f %9.1f\n",
                static_cast<int>(name.size()), name.data(),
                static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.ok),
                static_cast<unsigned long long>(r.good), static_cast<unsigned long long>(r.shed),
                static_cast<unsigned long long>(r.timed_out),
                static_cast<unsigned long long>(r.errors), p50, p99, max);
  };
  for (std::size_t c = 0; c < report.size(); ++c) {
    ClassReport& r = report[c];
    row(degrade::CriticalityName(static_cast<degrade::Criticality>(c)), r);
    total.sent += r.sent;
    total.ok += r.ok;
    total.good += r.good;
    total.shed += r.shed;
    total.timed_out += r.timed_out;
    total.errors += r.errors;
    total.latency_ms.insert(total.latency_ms.end(), r.latency_ms.begin(), r.latency_ms.end());
  }
  row("all", total);
  // One line for scripts. goodput_rps: answers within the deadline per
  // second of sending.
  std::printf(
      "total label=%s rate=%.1f seconds=%.1f sent=%llu ok=%llu good=%llu "
      "shed=%llu "
      "timeout=%llu error=%llu goodput_rps=%.1f p50_ms=%.1f p99_ms=%.1f "
      "client=%s connections_opened=%llu most_open=%zu most_waiting=%zu\n",
      f.label.c_str(), f.rate, elapsed,
      static_cast<unsigned long long>(total.sent),
      static_cast<unsigned long long>(total.ok),
      static_cast<unsigned long long>(total.good),
      static_cast<unsigned long long>(total.shed),
      static_cast<unsigned long long>(total.timed_out),
      static_cast<unsigned long long>(total.errors),
      static_cast<double>(total.good) / elapsed,
      Percentile(total.latency_ms, 0.50), Percentile(total.latency_ms, 0.99),
      f.keep_alive ? "keep-alive" : "close",
      static_cast<unsigned long long>(opened), most_open, most_waiting);
  for (std::size_t c = 0; c < report.size(); ++c) {
    ClassReport& r = report[c];
    std::printf("class label=%s class=%s sent=%llu good=%llu shed=%llu p50_ms=%.1f "
                "p99_ms=%.1f\n",
                f.label.c_str(),
                std::string(degrade::CriticalityName(static_cast<degrade::Criticality>(c)))
                    .c_str(),
                static_cast<unsigned long long>(r.sent),
                static_cast<unsigned long long>(r.good),
                static_cast<unsigned long long>(r.shed), Percentile(r.latency_ms, 0.50),
                Percentile(r.latency_ms, 0.99));
  }
  return total.sent > total.errors;
}

// --once: one blocking request with a timeout.
bool RunOnce(const Flags& f) {
  const int fd = OpenConnection(f);
  if (fd < 0) return false;
  const std::string out = Request(f, f.path, f.klass);
  const auto give_up = Clock::now() + std::chrono::milliseconds(f.timeout_ms);
  std::size_t sent = 0;
  std::string in;
  int status = 0;
  std::string body;
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  while (status == 0 && Clock::now() < give_up) {
    epoll_event got{};
    if (epoll_wait(ep, &got, 1, 10) <= 0) continue;
    if (sent < out.size() && (got.events & EPOLLOUT) != 0) {
      const ssize_t w = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN) break;
      if (w > 0) sent += static_cast<std::size_t>(w);
      if (sent == out.size()) {
        ev.events = EPOLLIN | EPOLLRDHUP;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
      }
    }
    if ((got.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
      char buf[4096];
      const ssize_t r = recv(fd, buf, sizeof buf, 0);
      if (r > 0) in.append(buf, static_cast<std::size_t>(r));
      const bool closed = r == 0 || (r < 0 && errno != EAGAIN);
      status = ParseResponse(in, closed, &body);
      if (status == 0 && closed) status = -1;
    }
  }
  close(ep);
  close(fd);
  if (status <= 0) {
    std::printf("status=none\n");
    return false;
  }
  std::printf("status=%d\n%s", status, body.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  return (flags.once ? RunOnce(flags) : RunLoad(flags)) ? 0 : 1;
}
