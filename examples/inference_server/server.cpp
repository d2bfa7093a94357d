// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// inference_server: a batched inference-style HTTP server, run for real past
// its capacity, with and without degrade's overload control.
//
// One "GPU" worker thread runs batches of up to 32 requests on a CPU-bound
// model calibrated at start-up to ~180 ms per full batch (model.hpp), so the
// server's capacity is about 32 / 0.18 s = 178 requests a second. HTTP
// threads park each request until its batch is done.
//
//   --mode=plain       today's server: one FIFO queue, unbounded, no
//                      admission; every request is served, however late.
//   --mode=discipline  a ConcurrencyLimiter (Gradient2) bounds what is in
//                      flight; an AdmissionQueue (bounded, CoDel, adaptive
//                      LIFO, deadline-aware drop) feeds PopBatch(32) to the
//                      model and reports every pop's sojourn to an
//                      AdmissionController, which sheds the lowest request
//                      classes first (DAGOR) while the queuing delay is high.
//
// Endpoints:
//   GET /infer    headers: x-degrade-class: SHEDDABLE_PLUS:17 (default
//                 CRITICAL:0; malformed or repeated -> 400; capped by the
//                 trust policy, below), x-degrade-deadline-ms: 1000
//                 (default 1000; malformed -> 400). 200 when served; 503
//                 with Retry-After when shed, and x-degrade-drop naming why.
//   GET /stats    one line of key=value counters (batches, drops, limit...),
//                 also printed on stderr at exit
//   GET /healthz  "ok"
//
// Usage:
//   inference_server [--mode=plain|discipline] [--port=N] [--bind=ADDR]
//                    [--threads=N] [--batch-ms=MS] [--queue-capacity=N]
//                    [--duration-seconds=S] [--admission-target-batches=X]
//                    [--codel-target-batches=X] [--codel-interval-batches=X]
//                    [--rtt-tolerance=X] [--trust=ADDR[,ADDR...]]
//
// The class a request claims is capped by a degrade::TrustPolicy keyed by
// the peer's address: the addresses in --trust (a front end, a sidecar)
// may claim any class; every other peer at most CRITICAL, what a request
// without the header gets, so forging the header buys nothing. A lowered
// claim is served at the cap and counted (`class_capped=` in /stats). A
// proxy named in --trust vouches for every request it forwards, so it must
// set the header itself, never pass a client's through; X-Forwarded-For
// is not read (any client can write it). Plain HTTP proves no identity,
// so an address is the only key here; a server reachable beyond a private
// network belongs behind mTLS (the gRPC adapter's PeerOf reads certificate
// names).
//
// The discipline's delays are given in full batches (defaults: admission
// target 1, CoDel target 1 of an interval of 5; Gradient2's tolerance 3):
// DisciplineBackend::Create() says why.
//
// --port=0 (the default) binds a free port. Prints `listening on
// http://ADDR:PORT` on stdout once it accepts connections. SIGINT, SIGTERM or
// the end of --duration-seconds stop it: every parked request is answered
// (503) before the HTTP threads are joined, so it always exits.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/admission_queue.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/trust_policy.hpp"
#include "httplib.h"
#include "inference_server/model.hpp"

namespace {

using inference_server::kBatchSize;

struct Flags {
  std::string mode = "discipline";
  std::string bind = "127.0.0.1";
  int port = 0;
  int threads = 512;
  double batch_ms = 180.0;
  int queue_capacity = 8 * kBatchSize;
  double duration_seconds = 0;
  // Discipline settings in units of the full batch's time (see Create()).
  double admission_target_batches = 1;
  double codel_target_batches = 1;
  double codel_interval_batches = 5;
  double rtt_tolerance = 3;
  // Addresses allowed to claim any request class.
  std::vector<std::string> trust;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const std::size_t eq = arg.find('=');
    const absl::string_view key = arg.substr(0, eq);
    const absl::string_view value =
        eq == absl::string_view::npos ? absl::string_view() : arg.substr(eq + 1);
    bool ok = eq != absl::string_view::npos;
    if (!ok) {
    } else if (key == "--mode") {
      f->mode = std::string(value);
      ok = f->mode == "plain" || f->mode == "discipline";
    } else if (key == "--trust") {
      f->trust = absl::StrSplit(value, ',', absl::SkipEmpty());
      ok = !f->trust.empty();
    } else if (key == "--bind") {
      f->bind = std::string(value);
    } else if (key == "--port") {
      ok = absl::SimpleAtoi(value, &f->port) && f->port >= 0 && f->port < 65536;
    } else if (key == "--threads") {
      ok = absl::SimpleAtoi(value, &f->threads) && f->threads >= 8;
    } else if (key == "--batch-ms") {
      ok = absl::SimpleAtod(value, &f->batch_ms) && f->batch_ms > 0 && f->batch_ms < 1e5;
    } else if (key == "--queue-capacity") {
      ok = absl::SimpleAtoi(value, &f->queue_capacity) && f->queue_capacity >= 2 * kBatchSize;
    } else if (key == "--admission-target-batches") {
      ok = absl::SimpleAtod(value, &f->admission_target_batches) &&
           f->admission_target_batches > 0 && f->admission_target_batches < 1000;
    } else if (key == "--codel-target-batches") {
      ok = absl::SimpleAtod(value, &f->codel_target_batches) && f->codel_target_batches > 0 &&
           f->codel_target_batches < 1000;
    } else if (key == "--codel-interval-batches") {
      ok = absl::SimpleAtod(value, &f->codel_interval_batches) &&
           f->codel_interval_batches > 0 && f->codel_interval_batches < 1000;
    } else if (key == "--rtt-tolerance") {
      ok = absl::SimpleAtod(value, &f->rtt_tolerance);  // the limiter validates it
    } else if (key == "--duration-seconds") {
      ok = absl::SimpleAtod(value, &f->duration_seconds) && f->duration_seconds >= 0 &&
           f->duration_seconds < 1e7;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "inference_server: bad argument \"%s\"\n", argv[i]);
      return false;
    }
  }
  return true;
}

// One request parked in an HTTP thread until the model (or a drop) answers.
struct Job {
  degrade::RequestClass rc;
  absl::Time arrival;
  std::optional<degrade::LimiterPermit> permit;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int http_status = 0;
  std::string drop;  // why it was not served; empty when served
};
using JobPtr = std::shared_ptr<Job>;

void Complete(Job& job, int http_status, std::string drop) {
  {
    std::lock_guard<std::mutex> lock(job.mu);
    job.http_status = http_status;
    job.drop = std::move(drop);
    job.done = true;
  }
  job.cv.notify_one();
}

// What the GPU thread and /stats share. Only counters: relaxed is enough.
struct Counters {
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> served{0};
  std::atomic<uint64_t> busy_us{0};
  std::atomic<uint64_t> full_batches{0};
  std::atomic<uint64_t> full_batch_us{0};
  std::atomic<uint64_t> refused{0};  // limiter or admission at arrival
  std::atomic<uint64_t> class_capped{0};  // claims the trust policy lowered
};

// The two ways of queueing in front of the model.
class Backend {
 public:
  virtual ~Backend() = default;
  // Answers (by Complete) now or later; never blocks on the model.
  virtual void Submit(const JobPtr& job, absl::Time deadline) = 0;
  // Up to kBatchSize jobs, waiting at most `timeout` for the first.
  virtual void NextBatch(std::vector<JobPtr>* out, absl::Duration timeout) = 0;
  virtual void BatchDone(std::vector<JobPtr>& batch, absl::Duration took) = 0;
  // Answers everything still queued (at shutdown).
  virtual void Drain() = 0;
  virtual std::string Stats() const = 0;
};

class PlainBackend final : public Backend {
 public:
  void Submit(const JobPtr& job, absl::Time) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fifo_.push_back(job);
    }
    cv_.notify_one();
  }
  void NextBatch(std::vector<JobPtr>* out, absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return !fifo_.empty(); });
    while (!fifo_.empty() && out->size() < static_cast<std::size_t>(kBatchSize)) {
      out->push_back(std::move(fifo_.front()));
      fifo_.pop_front();
    }
  }
  void BatchDone(std::vector<JobPtr>& batch, absl::Duration) override {
    for (const JobPtr& job : batch) Complete(*job, 200, "");
  }
  void Drain() override {
    std::deque<JobPtr> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      left.swap(fifo_);
    }
    for (const JobPtr& job : left) Complete(*job, 503, "shutdown");
  }
  std::string Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return absl::StrCat(" queue=", fifo_.size());
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobPtr> fifo_;
};

class DisciplineBackend final : public Backend {
 public:
  static std::unique_ptr<DisciplineBackend> Create(const Flags& flags, Counters* counters) {
    auto b = std::unique_ptr<DisciplineBackend>(new DisciplineBackend(counters));
    // The delays are in units of the full batch's time, not the defaults
    // from RPC servers (DAGOR's 20 ms, CoDel's 5 of 100 ms): in a batching
    // server every request waits for the batch in service, up to 180 ms,
    // even when nothing is overloaded. With the RPC defaults the admission
    // controller shed SHEDDABLE traffic at 1x (measured: 83% of it) and
    // CoDel dropped class-blind. This is tuning to the service, not to the
    // load: the same settings at 1x and 3x.
    const absl::Duration batch = absl::Milliseconds(flags.batch_ms);
    degrade::AdmissionOptions a;
    a.name = "inference";
    a.adaptive = true;
    a.target_queuing_delay = batch * flags.admission_target_batches;
    // The door sheds only the sheddable classes; among the critical ones the
    // limiter's shares and the queue's deadline check choose (as in the
    // simulation, docs/overload/sim.md).
    a.min_threshold = degrade::FloorRank(degrade::Criticality::kCritical);
    auto admission = degrade::AdmissionController::Create(a);
    if (!admission.ok()) return Fail(admission.status());
    b->admission_ = *std::move(admission);

    degrade::QueueSettings q;
    q.name = "inference";
    q.capacity = static_cast<std::size_t>(flags.queue_capacity);
    q.codel_target = batch * flags.codel_target_batches;
    q.codel_interval = batch * flags.codel_interval_batches;
    // The queue refuses what the controller no longer admits and reports
    // the standing queue's delay back to it (drops included).
    q.admission = b->admission_.get();
    DisciplineBackend* self = b.get();
    auto queue = degrade::AdmissionQueue<JobPtr>::Create(
        q, [self](JobPtr&& job, degrade::DropReason why) { self->OnDrop(std::move(job), why); });
    if (!queue.ok()) return Fail(queue.status());
    b->queue_ = *std::move(queue);

    // In flight = queued + in the batch. At least two full batches (one
    // running, one filling), or the batches run part-empty and capacity is
    // lost; at most the queue's capacity, so the queue never overflows with
    // requests the limiter let in.
    degrade::LimiterSettings l;
    l.name = "inference";
    l.algorithm = degrade::LimitAlgorithm::kGradient2;
    l.min_limit = 2 * kBatchSize;
    l.initial_limit = 2 * kBatchSize;
    l.max_limit = flags.queue_capacity;
    l.max_healthy_latency = absl::Seconds(1);  // the deadline
    l.rtt_tolerance = flags.rtt_tolerance;
    // The no-load latency of a batching server is that of a full batch
    // that did not wait, so the re-measurement admits one batch.
    l.probe_limit = kBatchSize;
    // The limiter cannot tell classes apart by itself: without reservations
    // its refusals would fall on CRITICAL_PLUS as often as on SHEDDABLE.
    // At the limit, the two critical classes keep most of it.
    l.guaranteed_share[static_cast<std::size_t>(degrade::Criticality::kCriticalPlus)] = 0.5;
    l.guaranteed_share[static_cast<std::size_t>(degrade::Criticality::kCritical)] = 0.4;
    auto limiter = degrade::ConcurrencyLimiter::Create(l);
    if (!limiter.ok()) return Fail(limiter.status());
    b->limiter_ = *std::move(limiter);
    return b;
  }

  void Submit(const JobPtr& job, absl::Time deadline) override {
    // Class first (lowest first, DAGOR), then the in-flight bound, then the
    // queue: the admission controller counts every arrival by rank, which
    // is what its threshold steps are computed from.
    const absl::Status admitted = admission_->Admit(job->rc);
    if (!admitted.ok()) return Refuse(*job, admitted, "admission");
    absl::StatusOr<degrade::LimiterPermit> permit = limiter_->Acquire(job->rc);
    if (!permit.ok()) {
      // Strict order: the door now refuses every less important class, and
      // a queued request of one gives its permit up to this one.
      admission_->RecordRefusal(job->rc);
      // As many permits back as the limiter needs, and only if the queue
      // holds that many below this class (other threads may take one
      // first: then this request is refused like any other).
      const int need = limiter_->in_flight() - limiter_->limit() + 1;
      if (need > 0 &&
          queue_->queued_below(job->rc) >= static_cast<std::size_t>(need)) {
        for (int i = 0; i < need; ++i) queue_->Preempt(job->rc);
        permit = limiter_->Acquire(job->rc);
      }
      if (!permit.ok()) return Refuse(*job, permit.status(), "limiter");
    }
    job->permit = *std::move(permit);
    JobPtr item = job;
    const absl::Status pushed = queue_->Push(std::move(item), deadline, job->rc);
    if (!pushed.ok()) {
      // Refused at the door (the threshold moved, a deadline that cannot be
      // met, or full): not a latency signal for the limiter.
      job->permit->Ignore();
      Refuse(*job, pushed, "queue");
    }
  }
  void NextBatch(std::vector<JobPtr>* out, absl::Duration timeout) override {
    queue_->WaitPopBatch(out, kBatchSize, timeout);
  }
  void BatchDone(std::vector<JobPtr>& batch, absl::Duration took) override {
    queue_->RecordServiceTime(took);
    const absl::Time now = absl::Now();
    for (const JobPtr& job : batch) {
      job->permit->Success(now - job->arrival);
      Complete(*job, 200, "");
    }
  }
  void Drain() override {
    std::vector<JobPtr> left;
    while (queue_->PopBatch(&left, kBatchSize) > 0) {
      for (const JobPtr& job : left) {
        job->permit->Ignore();
        Complete(*job, 503, "shutdown");
      }
      left.clear();
    }
  }
  std::string Stats() const override {
    const degrade::QueueStats q = queue_->stats();
    const degrade::AdmissionStats a = admission_->stats();
    const degrade::LimiterStats l = limiter_->stats();
    std::string out = absl::StrCat(" queue=", q.depth, " lifo=", q.lifo ? 1 : 0,
                                   " threshold=", a.threshold, " limit=", l.limit,
                                   " in_flight=", l.in_flight, " no_load_ms=",
                                   absl::ToDoubleMilliseconds(l.no_load_latency));
    for (std::size_t r = 0; r < q.drops.size(); ++r) {
      absl::StrAppend(&out, " drop_",
                      degrade::DropReasonName(static_cast<degrade::DropReason>(r)), "=",
                      q.drops[r]);
    }
    for (std::size_t c = 0; c < degrade::kNumCriticalities; ++c) {
      const auto name = degrade::CriticalityName(static_cast<degrade::Criticality>(c));
      absl::StrAppend(&out, " shed_", name, "=", a.shed[c], " limited_", name, "=",
                      l.rejected[c]);
    }
    return out;
  }

 private:
  explicit DisciplineBackend(Counters* counters) : counters_(counters) {}

  static std::unique_ptr<DisciplineBackend> Fail(const absl::Status& s) {
    std::fprintf(stderr, "inference_server: %s\n", s.ToString().c_str());
    return nullptr;
  }

  // `why` is a ShedError; its message says which component refused.
  void Refuse(Job& job, const absl::Status& why, const char* where) {
    counters_->refused.fetch_add(1, std::memory_order_relaxed);
    Complete(job, 503, degrade::IsShed(why) ? where : "error");
  }

  // Called by the queue outside its lock, from Push or a pop.
  void OnDrop(JobPtr&& job, degrade::DropReason why) {
    // Only a request that would have missed its deadline is the limiter's
    // "timeout". CoDel's drops are the queue's own loop shortening a
    // standing queue (and that queue is the admission controller's signal to
    // shed by class): were they drops for the limiter too, a second loop
    // would cut in flight class-blind on the same evidence. A shed by class
    // says nothing about latency. (The queue itself reports the delay of
    // what it drops to the admission controller.)
    if (why == degrade::DropReason::kDeadline) {
      job->permit->Dropped();
    } else {
      job->permit->Ignore();
    }
    Complete(*job, 503, std::string(degrade::DropReasonName(why)));
  }

  Counters* counters_;
  // Destroyed bottom-up: the queue's items hold permits of the limiter and
  // the queue reports to the admission controller, so both outlive it.
  std::unique_ptr<degrade::AdmissionController> admission_;
  std::unique_ptr<degrade::ConcurrencyLimiter> limiter_;
  std::unique_ptr<degrade::AdmissionQueue<JobPtr>> queue_;
};

void RunGpu(Backend& backend, const inference_server::SpinModel& model, Counters& counters,
            const std::atomic<bool>& stopping) {
  std::vector<JobPtr> batch;
  batch.reserve(kBatchSize);
  while (!stopping.load(std::memory_order_acquire)) {
    batch.clear();
    backend.NextBatch(&batch, absl::Milliseconds(50));
    if (batch.empty()) continue;
    const absl::Time t0 = absl::Now();
    model.Run(static_cast<int>(batch.size()));
    const absl::Duration took = absl::Now() - t0;
    const auto us = static_cast<uint64_t>(absl::ToInt64Microseconds(took));
    counters.batches.fetch_add(1, std::memory_order_relaxed);
    counters.served.fetch_add(batch.size(), std::memory_order_relaxed);
    counters.busy_us.fetch_add(us, std::memory_order_relaxed);
    if (batch.size() == static_cast<std::size_t>(kBatchSize)) {
      counters.full_batches.fetch_add(1, std::memory_order_relaxed);
      counters.full_batch_us.fetch_add(us, std::memory_order_relaxed);
    }
    backend.BatchDone(batch, took);
  }
}

// cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
// compiled into Debian's libcpp-httplib). At hundreds of new connections a
// second, one scheduling hiccup of its accept thread overflows that, and the
// kernel then drops SYNs, which clients resend after 1 s and 3 s: latency
// the server never sees and the load generator blames on it. Linux lets a
// second listen() on the same socket change the backlog; find the socket by
// its port. Returns false if it was not found.
bool WidenBacklog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
      continue;
    }
    sockaddr_in addr{};
    len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        addr.sin_family == AF_INET && ntohs(addr.sin_port) == port) {
      return listen(fd, 4096) == 0;
    }
  }
  return false;
}

void Answer(httplib::Response& res, int status, const std::string& drop) {
  res.status = status;
  if (status == 200) {
    res.set_content("ok\n", "text/plain");
    return;
  }
  // Every refusal is a shed: the client may come back after the hint.
  res.set_header("Retry-After", "1");
  res.set_header("x-degrade-drop", drop);
  res.set_content(absl::StrCat("shed: ", drop, "\n"), "text/plain");
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;

  // Only the main thread takes SIGINT/SIGTERM (sigtimedwait below); every
  // thread started from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  inference_server::SpinModel model(flags.batch_ms);
  model.Calibrate();

  Counters counters;
  degrade::TrustPolicySettings trust_settings;
  for (const std::string& address : flags.trust) {
    trust_settings.addresses.push_back(
        {address, degrade::Criticality::kCriticalPlus});
  }
  absl::StatusOr<degrade::TrustPolicy> trust_or =
      degrade::TrustPolicy::Create(std::move(trust_settings));
  if (!trust_or.ok()) {
    std::fprintf(stderr, "inference_server: --trust: %s\n",
                 std::string(trust_or.status().message()).c_str());
    return 1;
  }
  const degrade::TrustPolicy trust = *std::move(trust_or);
  std::unique_ptr<Backend> backend;
  if (flags.mode == "plain") {
    backend = std::make_unique<PlainBackend>();
  } else {
    backend = DisciplineBackend::Create(flags, &counters);
    if (backend == nullptr) return 1;
  }

  std::atomic<bool> stopping{false};
  std::atomic<bool> drained{false};
  httplib::Server server;
  const int threads = flags.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // No endpoint takes a body, and cpp-httplib would otherwise read any
  // body it is sent (to a POST anywhere) into memory: 413, unkept.
  server.set_payload_max_length(0);

  server.Get("/infer", [&](const httplib::Request& req, httplib::Response& res) {
    auto job = std::make_shared<Job>();
    job->arrival = absl::Now();
    if (req.has_header("x-degrade-class")) {
      // Sent twice is malformed, as in the gRPC adapter: read first-wins, a
      // trusted proxy that appends its own class behind the client's would
      // pass the client's claim on under the proxy's trusted address.
      if (req.get_header_value_count("x-degrade-class") > 1) {
        res.status = 400;
        res.set_content("x-degrade-class: sent more than once\n", "text/plain");
        return;
      }
      absl::StatusOr<degrade::RequestClass> rc =
          degrade::DecodeRequestClass(req.get_header_value("x-degrade-class"));
      if (!rc.ok()) {
        res.status = 400;
        res.set_content(absl::StrCat(rc.status().message(), "\n"), "text/plain");
        return;
      }
      degrade::PeerIdentity peer;
      peer.address = req.remote_addr;
      // Bound to "::", an IPv4 client is "::ffff:a.b.c.d": the --trust
      // entry for a.b.c.d is that peer.
      absl::string_view v4 = peer.address;
      if (absl::ConsumePrefix(&v4, "::ffff:") &&
          v4.find('.') != absl::string_view::npos) {
        peer.address = std::string(v4);
      }
      bool lowered = false;
      job->rc = trust.Apply(*rc, peer, &lowered);
      if (lowered)
        counters.class_capped.fetch_add(1, std::memory_order_relaxed);
    }
    int deadline_ms = 1000;
    if (req.has_header("x-degrade-deadline-ms") &&
        (!absl::SimpleAtoi(req.get_header_value("x-degrade-deadline-ms"), &deadline_ms) ||
         deadline_ms <= 0)) {
      res.status = 400;
      res.set_content("x-degrade-deadline-ms: expected a positive integer\n", "text/plain");
      return;
    }
    if (stopping.load(std::memory_order_acquire)) return Answer(res, 503, "shutdown");
    backend->Submit(job, job->arrival + absl::Milliseconds(deadline_ms));
    std::unique_lock<std::mutex> lock(job->mu);
    // A request that slipped in after the queue was drained at shutdown is
    // never served: give up once the drain is over.
    while (!job->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return job->done; })) {
      if (drained.load(std::memory_order_acquire)) return Answer(res, 503, "shutdown");
    }
    Answer(res, job->http_status, job->drop);
  });
  const auto stats_line = [&] {
    const uint64_t full = counters.full_batches.load(std::memory_order_relaxed);
    const double full_ms =
        full == 0 ? 0.0
                  : counters.full_batch_us.load(std::memory_order_relaxed) / 1000.0 / full;
    return absl::StrCat(
        "mode=", flags.mode,
        " batches=", counters.batches.load(std::memory_order_relaxed),
        " served=", counters.served.load(std::memory_order_relaxed),
        " busy_s=", counters.busy_us.load(std::memory_order_relaxed) / 1e6,
        " full_batch_ms=", full_ms,
        " refused=", counters.refused.load(std::memory_order_relaxed),
        " class_capped=", counters.class_capped.load(std::memory_order_relaxed),
        backend->Stats());
  };
  server.Get("/stats", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(stats_line() + "\n", "text/plain");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });

  const int port = flags.port == 0 ? server.bind_to_any_port(flags.bind)
                                   : (server.bind_to_port(flags.bind, flags.port) ? flags.port : -1);
  if (port <= 0) {
    std::fprintf(stderr, "inference_server: cannot bind %s:%d\n", flags.bind.c_str(), flags.port);
    return 1;
  }
  if (!WidenBacklog(port)) {
    std::fprintf(stderr, "inference_server: could not widen the listen backlog\n");
  }
  std::thread gpu([&] { RunGpu(*backend, model, counters, stopping); });
  std::thread http([&] { server.listen_after_bind(); });
  // The socket listens from bind_to_*: a connection made now waits in the
  // backlog until the accept loop starts.
  std::printf("listening on http://%s:%d mode=%s calibrated_full_batch_ms=%.1f\n",
              flags.bind.c_str(), port, flags.mode.c_str(), model.planned_ms(kBatchSize));
  std::fflush(stdout);

  const absl::Time end = flags.duration_seconds > 0
                             ? absl::Now() + absl::Seconds(flags.duration_seconds)
                             : absl::InfiniteFuture();
  while (absl::Now() < end) {
    const timespec wait{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) break;
  }

  // New requests are refused; the model finishes its batch; whatever is
  // still queued is answered; only then can the HTTP threads be joined.
  stopping.store(true, std::memory_order_release);
  gpu.join();
  // Also on stderr: an overloaded plain server answers /stats only after
  // everything queued before it.
  std::fprintf(stderr, "inference_server: stats %s\n", stats_line().c_str());
  backend->Drain();
  drained.store(true, std::memory_order_release);
  server.stop();
  http.join();
  backend->Drain();  // a request that slipped in between the two
  std::fprintf(stderr, "inference_server: stopped\n");
  return 0;
}
