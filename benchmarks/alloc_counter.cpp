// Allocation counting for the benchmarks: every replaceable global operator
// new counts into a per-thread counter. Thread-local rather than one shared
// atomic so that a thread's count covers exactly its own timed loop, with no
// cross-thread traffic and no double counting when several benchmark threads
// run at once. Linked into every benchmark binary, and into the chaos soak
// test, which also reads the process-wide count of live allocations to show
// that memory does not grow with the request count.
#include "alloc_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

thread_local std::uint64_t t_allocations = 0;

// Live allocations, in cache-line shards so that threads allocating at once
// don't all write one counter. A thread takes a shard on first use.
constexpr std::size_t kLiveShards = 16;
struct alignas(64) LiveShard {
  std::atomic<std::int64_t> live{0};
};
LiveShard g_live[kLiveShards];
std::atomic<std::size_t> g_next_live_shard{0};
thread_local std::size_t t_live_shard = kLiveShards;  // not taken yet

std::atomic<std::int64_t>& Live() noexcept {
  if (t_live_shard == kLiveShards) {
    t_live_shard =
        g_next_live_shard.fetch_add(1, std::memory_order_relaxed) % kLiveShards;
  }
  return g_live[t_live_shard].live;
}

void* Counted(void* p) noexcept {
  if (p != nullptr) Live().fetch_add(1, std::memory_order_relaxed);
  return p;
}

void* CountedAlloc(std::size_t size) noexcept {
  ++t_allocations;
  return Counted(std::malloc(size == 0 ? 1 : size));
}

void* CountedAlignedAlloc(std::size_t size, std::align_val_t align) noexcept {
  ++t_allocations;
  std::size_t alignment = static_cast<std::size_t>(align);
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) return nullptr;
  return Counted(p);
}

// Out of line so that GCC does not pair the free() with an inlined operator
// new and report -Wmismatched-new-delete.
__attribute__((noinline)) void Release(void* p) noexcept {
  if (p == nullptr) return;
  Live().fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

void* OrThrow(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t size) { return OrThrow(CountedAlloc(size)); }
void* operator new[](std::size_t size) { return OrThrow(CountedAlloc(size)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return CountedAlloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return CountedAlloc(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return OrThrow(CountedAlignedAlloc(size, align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return OrThrow(CountedAlignedAlloc(size, align));
}
void* operator new(std::size_t size, std::align_val_t align,
                   const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align,
                     const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, align);
}

void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete[](void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete(void* p, std::align_val_t) noexcept { Release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  Release(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  Release(p);
}

std::uint64_t degrade_bench::ThreadAllocations() { return t_allocations; }

std::int64_t degrade_bench::LiveAllocations() {
  std::int64_t sum = 0;
  for (const LiveShard& s : g_live) {
    sum += s.live.load(std::memory_order_relaxed);
  }
  return sum;
}
