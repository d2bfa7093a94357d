// Allocation counting shared by the benchmarks and the chaos soak test
// (alloc_counter.cpp replaces the global operator new/delete).
#ifndef DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_
#define DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_

#include <cstdint>

namespace degrade_bench {

// Heap allocations made by the calling thread so far.
std::uint64_t ThreadAllocations();

// Heap allocations made by any thread and not yet freed (operator new minus
// operator delete). Exact when no other thread is allocating.
std::int64_t LiveAllocations();

}  // namespace degrade_bench

#endif  // DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_
