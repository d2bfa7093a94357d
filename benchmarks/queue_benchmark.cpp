// Benchmarks of degrade::AdmissionQueue<T> (issue 15: "queue push + pop per
// item <= 1/2 of a mutex + std::deque baseline", no allocation per item):
//
//   BM_Degrade_QueuePushPopBatch32  32 Push()es, then one PopBatch(out, 32)
//                                   into a reserved vector: the batching
//                                   server's use, on the real clock
//   BM_Baseline_MutexDeque          32 times {lock; deque.push_back;
//                                   unlock}, then 32 times {lock; front;
//                                   pop_front; unlock}: the queue a batching
//                                   server writes first
//   BM_Degrade_QueuePushPop1        for information: one Push, one
//                                   PopBatch(out, 1), so batching is not
//                                   the only saving measured
//   BM_Degrade_QueuePushPopBatch32FakeClock  for information: the batch
//                                   on a FakeClock (no clock read)
//   BM_ClockRead                    for information: RealClock::Now()
//
// One thread, no contention: the cost of the discipline itself. An item is
// a 16-byte struct (a pointer and a tag, what a server queues). Every
// benchmark reports the time per item (wall time / items, via
// items_per_second) and allocs_per_call: heap allocations inside the timed
// loop divided by the items. benchmarks/queue_ratios.py turns a run into
// the comparison.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/admission_queue.hpp"
#include "degrade/clock.hpp"
#include "degrade/telemetry.hpp"

namespace {

struct Item {
  void* request;
  std::uint64_t tag;
};

constexpr std::size_t kBatch = 32;

void Report(benchmark::State& state, std::uint64_t allocations,
            std::size_t items_per_iteration) {
  const auto items =
      static_cast<double>(state.iterations()) * static_cast<double>(items_per_iteration);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["allocs_per_call"] = static_cast<double>(allocations) / items;
  state.counters["ns_per_item"] = benchmark::Counter(
      items, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

std::unique_ptr<degrade::AdmissionQueue<Item>> MakeQueue(
    const degrade::Clock* clock) {
  degrade::QueueSettings s;
  s.clock = clock;
  s.name = "bench";
  s.capacity = 1024;
  s.metrics = degrade::NoTelemetry();
  return std::move(*degrade::AdmissionQueue<Item>::Create(s));
}

void PushPop(benchmark::State& state, std::size_t batch,
             const degrade::Clock* clock = nullptr) {
  auto q = MakeQueue(clock);
  std::vector<Item> out;
  out.reserve(batch);
  std::uint64_t tag = 0;
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  for (auto _ : state) {
    for (std::size_t i = 0; i < batch; ++i) {
      Item item{&out, ++tag};
      benchmark::DoNotOptimize(q->Push(std::move(item)).ok());
    }
    out.clear();
    benchmark::DoNotOptimize(q->PopBatch(&out, batch));
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, degrade_bench::ThreadAllocations() - before, batch);
  if (q->size() != 0 || q->stats().popped != tag) {
    state.SkipWithError("the queue lost items");
  }
}

void BM_Degrade_QueuePushPopBatch32(benchmark::State& state) {
  PushPop(state, kBatch);
}

void BM_Degrade_QueuePushPop1(benchmark::State& state) { PushPop(state, 1); }

// The same on a FakeClock: what the discipline costs without the precise
// clock read each Push() makes (about 20-50 ns of steady_clock::now(),
// more than the baseline's whole push and pop).
void BM_Degrade_QueuePushPopBatch32FakeClock(benchmark::State& state) {
  const degrade::FakeClock clock;
  PushPop(state, kBatch, &clock);
}

// The floor of any timestamped queue: one precise clock read per item.
void BM_ClockRead(benchmark::State& state) {
  const degrade::Clock& clock = degrade::RealClock::Instance();
  for (auto _ : state) benchmark::DoNotOptimize(clock.Now());
  Report(state, 0, 1);
}

void BM_Baseline_MutexDeque(benchmark::State& state) {
  std::mutex mu;
  std::deque<Item> queue;
  std::uint64_t tag = 0, sum = 0;
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(Item{&queue, ++tag});
    }
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::lock_guard<std::mutex> lock(mu);
      sum += queue.front().tag;
      queue.pop_front();
    }
    benchmark::DoNotOptimize(sum);
  }
  Report(state, degrade_bench::ThreadAllocations() - before, kBatch);
}

BENCHMARK(BM_Degrade_QueuePushPopBatch32)->UseRealTime();
BENCHMARK(BM_Baseline_MutexDeque)->UseRealTime();
BENCHMARK(BM_Degrade_QueuePushPop1)->UseRealTime();
BENCHMARK(BM_Degrade_QueuePushPopBatch32FakeClock)->UseRealTime();
BENCHMARK(BM_ClockRead)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
