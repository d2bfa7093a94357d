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
// Every request is its own connection (Connection: close, reset on close so
// that no TIME_WAIT piles up), on one epoll thread. Classes are drawn from
// the mix with a seeded generator (the same sequence for the same seed):
// 25% CRITICAL_PLUS, 40% CRITICAL, 20% SHEDDABLE_PLUS, 15% SHEDDABLE, with a
// uniform cohort in [0, 127].
//
// Usage:
//   inference_load --port=N [--host=127.0.0.1] [--rate=R] [--seconds=S]
//                  [--deadline-ms=1000] [--timeout-ms=5000] [--seed=1]
//                  [--mix=25,40,20,15] [--label=TEXT]
//   inference_load --port=N --once [--path=/infer] [--class=TEXT]
//
// The first form prints, per class and in total: sent, answered 200, good
// (answered 200 within the deadline), shed (503 or 429), timed out (no
// answer within --timeout-ms), other errors, and p50/p99/max of the 200s'
// latency; then one `total ...` line of key=value pairs for scripts. The
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

struct Conn {
  int cls = 0;
  Clock::time_point due;
  std::string out;
  std::size_t sent = 0;
  std::string in;
};

// The status code once a whole response is in `in`; 0 while incomplete.
// A response without Content-Length ends when the server closes
// (`closed`).
int ParseResponse(const std::string& in, bool closed, std::string* body) {
  const std::size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
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
  absl::StrAppend(&r, "x-degrade-deadline-ms: ", f.deadline_ms, "\r\nConnection: close\r\n\r\n");
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
  const auto start = Clock::now();
  const auto period = std::chrono::duration<double>(1.0 / f.rate);
  const auto send_end = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(f.seconds));
  const auto timeout = std::chrono::milliseconds(f.timeout_ms);
  const auto deadline = std::chrono::milliseconds(f.deadline_ms);
  uint64_t next = 0;
  std::array<epoll_event, 256> events;
  auto last_sweep = start;

  const auto finish = [&](int fd, int status, Clock::time_point now) {
    Conn& c = conns[fd];
    ClassReport& r = report[static_cast<std::size_t>(c.cls)];
    if (status == 200) {
      ++r.ok;
      const auto latency = now - c.due;
      if (latency <= deadline) ++r.good;
      r.latency_ms.push_back(std::chrono::duration<double, std::milli>(latency).count());
    } else if (status == 503 || status == 429) {
      ++r.shed;
    } else if (status == 0) {
      ++r.timed_out;
    } else {
      ++r.errors;
    }
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
  };

  for (;;) {
    auto now = Clock::now();
    // Send everything that is due (catching up if the loop fell behind).
    for (;;) {
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   period * static_cast<double>(next));
      if (due > now || due >= send_end) break;
      ++next;
      const int cls = pick_class(rng);
      const degrade::RequestClass rc{static_cast<degrade::Criticality>(cls),
                                     static_cast<uint8_t>(pick_cohort(rng))};
      ClassReport& r = report[static_cast<std::size_t>(cls)];
      ++r.sent;
      const int fd = OpenConnection(f);
      if (fd < 0) {
        ++r.errors;
        continue;
      }
      Conn& c = conns[fd];
      c.cls = cls;
      c.due = due;
      c.out = Request(f, "/infer", degrade::EncodeRequestClass(rc));
      epoll_event ev{};
      ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    const bool sending = now < send_end;
    if (!sending && conns.empty()) break;
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
      if ((e & EPOLLOUT) != 0 && c.sent < c.out.size()) {
        const ssize_t w = send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (w > 0) c.sent += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          finish(fd, -1, now);
          continue;
        }
        if (c.sent == c.out.size()) {
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
        const int status = ParseResponse(c.in, closed, nullptr);
        if (status != 0) {
          finish(fd, status, now);
        } else if (closed) {
          finish(fd, -1, now);
        }
      }
    }
    // Give up on what has waited longer than the timeout (every 10 ms).
    if (now - last_sweep >= std::chrono::milliseconds(10)) {
      last_sweep = now;
      std::vector<int> late;
      for (const auto& [fd, c] : conns) {
        if (now - c.due > timeout) late.push_back(fd);
      }
      for (const int fd : late) finish(fd, 0, now);
    }
  }
  std::vector<int> left;
  for (const auto& [fd, c] : conns) left.push_back(fd);
  for (const int fd : left) finish(fd, 0, Clock::now());
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
  std::printf("total label=%s rate=%.1f seconds=%.1f sent=%llu ok=%llu good=%llu shed=%llu "
              "timeout=%llu error=%llu goodput_rps=%.1f p50_ms=%.1f p99_ms=%.1f\n",
              f.label.c_str(), f.rate, elapsed, static_cast<unsigned long long>(total.sent),
              static_cast<unsigned long long>(total.ok),
              static_cast<unsigned long long>(total.good),
              static_cast<unsigned long long>(total.shed),
              static_cast<unsigned long long>(total.timed_out),
              static_cast<unsigned long long>(total.errors),
              static_cast<double>(total.good) / elapsed, Percentile(total.latency_ms, 0.50),
              Percentile(total.latency_ms, 0.99));
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
