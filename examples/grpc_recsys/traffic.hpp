// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/grpc_recsys/traffic.hpp
// -----------------------------------------------------------------------------
//
// The demo's open-loop load (chaos.hpp runs it): request i is due at
// t0 + i / qps whether or not earlier ones have come back, and its latency
// is measured from that due time, so a stalled front shows up as latency
// instead of as fewer requests (no coordinated omission). A generator
// thread queues the requests at their due times; a pool of worker threads
// serves them through the front and records what came back. Users are
// drawn from Zipf(0.9) over ten million, as a recommendation service sees
// them: a few return often (and find their features cached when the
// features server fails), most are rarely seen.
//
// Thread safety: Start() and Stop() from one thread; the rest is internal.

#ifndef DEGRADE_EXAMPLES_GRPC_RECSYS_TRAFFIC_HPP_
#define DEGRADE_EXAMPLES_GRPC_RECSYS_TRAFFIC_HPP_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/degradation_trace.hpp"
#include "degrade/degrade_reason.hpp"
#include "front.hpp"
#include "recsys/ladder_sim.hpp"
#include "recsys/pipeline.hpp"

namespace grpc_recsys {
namespace detail {

// One response, as the driver saw it.
struct Sample {
  absl::Time due;
  absl::Time done;
  uint32_t depth = 0;
  bool non_empty = false;
  std::vector<std::string> entries;  // "stage:reason" or "stage:reason/tier"
  // The rung the features stage served: kUnspecified when fresh.
  degrade::FallbackTier features = degrade::FallbackTier::kUnspecified;
};

// The open-loop load: a generator thread queues requests at their due
// times, `workers` threads serve them through the front. Stop() (or the
// destructor) stops the generator, lets the workers finish the queue (each
// request is bounded by its stage budgets), and joins every thread.
class Traffic {
 public:
  // `qps` > 0 requests a second, served by `workers` > 0 threads; users
  // drawn from `seed`.
  Traffic(Front* front, double qps, int workers, uint64_t seed)
      : front_(front), qps_(qps), workers_count_(workers), seed_(seed) {}
  ~Traffic() { Stop(); }
  Traffic(const Traffic&) = delete;
  Traffic& operator=(const Traffic&) = delete;

  void Start() {
    for (int i = 0; i < workers_count_; ++i)
      workers_.emplace_back([this] { Work(); });
    generator_ = std::thread([this] { Generate(); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (generator_.joinable()) generator_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      generator_done_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  std::vector<Sample> TakeSamples() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(samples_);
  }

 private:
  struct Due {
    absl::Time at;
    uint64_t user;
  };

  void Generate() {
    const absl::Duration interval = absl::Seconds(1.0 / qps_);
    const recsys::ladder_sim::ZipfSampler users(10'000'000, 0.9);
    uint64_t draws = 0;
    const auto uniform = [&] {
      return static_cast<double>(recsys::Mix(seed_ ^ recsys::Mix(++draws)) >>
                                 11) *
             0x1.0p-53;
    };
    const absl::Time t0 = absl::Now();
    for (uint64_t i = 0;; ++i) {
      const absl::Time at = t0 + interval * static_cast<double>(i);
      std::unique_lock<std::mutex> lock(mu_);
      // Wake at the due time, or at once on Stop().
      while (!stopping_ && absl::Now() < at) {
        cv_.wait_for(lock, absl::ToChronoNanoseconds(at - absl::Now()));
      }
      if (stopping_) return;
      queue_.push_back(Due{at, users.Sample(uniform)});
      cv_.notify_one();
    }
  }

  void Work() {
    for (;;) {
      Due due;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty() || generator_done_; });
        if (queue_.empty()) return;
        due = queue_.front();
        queue_.pop_front();
      }
      FrontResponse r = front_->Serve(due.user);
      Sample s;
      s.due = due.at;
      s.done = absl::Now();
      s.depth = static_cast<uint32_t>(r.trace.depth());
      s.non_empty = !r.items.empty();
      for (const degrade::TraceEntry& e : r.trace) {
        const absl::string_view tier = degrade::TierName(e.tier());
        s.entries.push_back(absl::StrCat(e.stage(), ":",
                                         degrade::ReasonName(e.reason()),
                                         tier.empty() ? "" : "/", tier));
        if (e.stage() == kTraceNames[kFeatures]) s.features = e.tier();
      }
      std::lock_guard<std::mutex> lock(mu_);
      samples_.push_back(std::move(s));
    }
  }

  Front* const front_;
  const double qps_;
  const int workers_count_;
  const uint64_t seed_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Due> queue_;
  std::vector<Sample> samples_;
  bool stopping_ = false;
  bool generator_done_ = false;
  std::thread generator_;
  std::vector<std::thread> workers_;
};

}  // namespace detail
}  // namespace grpc_recsys

#endif  // DEGRADE_EXAMPLES_GRPC_RECSYS_TRAFFIC_HPP_
