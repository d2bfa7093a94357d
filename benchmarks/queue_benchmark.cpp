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
//   BM_ClockRead                    for information: RealClock::UnixNanos(),
//                                   the read each Push() makes
//   BM_Baseline_MutexDequeTimestamped  for information: the baseline with
//                                   the clock read per push a CoDel queue
//                                   needs, read as degrade reads it
//   BM_Floor_BoundedCasPerPush      for information: one compare-and-swap
//                                   per push against a capacity, one store
//                                   per batch pop, nothing else
//
// One thread, no contention: the cost of the discipline itself, in a
// process that has other threads (multi_threaded.hpp says why that matters
// to a mutex baseline). An item is
// a 16-byte struct (a pointer and a tag, what a server queues). Every
// benchmark reports the time per item (wall time / items, via
// items_per_second) and allocs_per_call: heap allocations inside the timed
// loop divided by the items. benchmarks/queue_ratios.py turns a run into
// the comparison.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "multi_threaded.hpp"
#include "degrade/admission_queue.hpp"
#include "degrade/clock.hpp"
#include "degrade/telemetry.hpp"

namespace {

[[maybe_unused]] const bool kMultiThreaded = degrade_bench::StartIdleThread();

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
  const degrade::RealClock& clock = degrade::RealClock::Instance();
  for (auto _ : state) benchmark::DoNotOptimize(clock.UnixNanos());
  Report(state, 0, 1);
}

struct NanosItem {
  Item item;
  std::int64_t enqueued;
};
std::uint64_t TagOf(const NanosItem& i) { return i.item.tag; }
std::uint64_t TagOf(const Item& i) { return i.tag; }

// The baseline: a std::deque under a std::mutex, one lock per push and per
// pop. `make` builds each entry before the push's lock (a NanosItem reads
// the clock, as a CoDel queue must; an Item is the plain 16 bytes).
template <typename Entry, typename Make>
void MutexDeque(benchmark::State& state, Make make) {
  std::mutex mu;
  std::deque<Entry> queue;
  std::uint64_t tag = 0, sum = 0;
  const std::uint64_t before = degrade_bench::ThreadAllocations();
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      Entry e = make(Item{&queue, ++tag});
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(e);
    }
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::lock_guard<std::mutex> lock(mu);
      sum += TagOf(queue.front());
      queue.pop_front();
    }
    benchmark::DoNotOptimize(sum);
  }
  Report(state, degrade_bench::ThreadAllocations() - before, kBatch);
}

void BM_Baseline_MutexDeque(benchmark::State& state) {
  MutexDeque<Item>(state, [](Item i) { return i; });
}

// The baseline as a hand-written CoDel queue must be: each item stamped
// with the precise clock when pushed (CoDel and the deadline check read its
// age), read the way degrade's Push() reads it (RealClock::UnixNanos(), no
// virtual call, into an int64).
void BM_Baseline_MutexDequeTimestamped(benchmark::State& state) {
  const degrade::RealClock& clock = degrade::RealClock::Instance();
  MutexDeque<NanosItem>(
      state, [&clock](Item i) { return NanosItem{i, clock.UnixNanos()}; });
}

// The floor of any bounded queue with several producers, before its
// discipline and its clock: each push is one compare-and-swap on a shared
// tail against the consumer's head (a hard capacity needs both), and a
// batch pop is one store.
void BM_Floor_BoundedCasPerPush(benchmark::State& state) {
  std::vector<Item> ring(kBatch);
  std::atomic<std::uint64_t> tail{0};
  std::atomic<std::uint64_t> head{0};
  std::uint64_t tag = 0, sum = 0, full = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::uint64_t t = tail.load(std::memory_order_relaxed);
      do {
        if (t - head.load(std::memory_order_acquire) >= kBatch) {
          ++full;
          break;
        }
      } while (!tail.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
      ring[t % kBatch] = Item{&ring, ++tag};
    }
    const std::uint64_t from = head.load(std::memory_order_relaxed);
    const std::uint64_t to = tail.load(std::memory_order_acquire);
    for (std::uint64_t k = from; k < to; ++k) sum += ring[k % kBatch].tag;
    head.store(to, std::memory_order_release);
    benchmark::DoNotOptimize(sum);
  }
  if (full != 0) state.SkipWithError("the ring filled");
  Report(state, 0, kBatch);
}

BENCHMARK(BM_Degrade_QueuePushPopBatch32)->UseRealTime();
BENCHMARK(BM_Baseline_MutexDeque)->UseRealTime();
BENCHMARK(BM_Baseline_MutexDequeTimestamped)->UseRealTime();
BENCHMARK(BM_Floor_BoundedCasPerPush)->UseRealTime();
BENCHMARK(BM_Degrade_QueuePushPop1)->UseRealTime();
BENCHMARK(BM_Degrade_QueuePushPopBatch32FakeClock)->UseRealTime();
BENCHMARK(BM_ClockRead)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
