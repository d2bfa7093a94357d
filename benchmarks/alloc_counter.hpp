// Allocation counting shared by the benchmarks (alloc_counter.cpp replaces
// the global operator new/delete).
#ifndef DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_
#define DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_

#include <cstdint>

namespace degrade_bench {

// Heap allocations made by the calling thread so far.
std::uint64_t ThreadAllocations();

}  // namespace degrade_bench

#endif  // DEGRADE_BENCHMARKS_ALLOC_COUNTER_HPP_
