// Benchmarks of degrade::FeatureGate::enabled() against the two ends of the
// design space, read while another thread keeps changing the level:
//
//   BM_Gate_Enabled        FeatureGate::enabled() on a manager's gate
//   BM_RelaxedAtomicLoad   a plain std::atomic<bool> relaxed load (the floor)
//   BM_MutexLevelRead      the article's Python approach ported directly,
//                          `with lock: return self.level`: std::mutex lock,
//                          read an int, unlock (then `level < 1`)
// and, for information:
//   BM_When                a degrade::When(manager, 1, f, fallback) wrapper
//   BM_DirectCall          the wrapped function called directly
//
// Each runs at 1 and 2 reader threads, wall-clock time per read. One
// background writer thread (started on first use, shared by every
// benchmark) changes all three states together, every kWriterPeriod
// (100 us): the manager's level through ForceLevel(k, InfiniteDuration())
// alternating between 0 and 1 (level 1 disables the gate's feature, so the
// gate flips), the plain atomic with a relaxed store, and the mutex-guarded
// int under the mutex. The writer sleeps between changes so that it stays
// light on a 2-core machine running two readers.
//
// Every read loop has the same shape: one read per iteration, the value
// passed through benchmark::DoNotOptimize and accumulated into a local.
// Every benchmark reports:
//   allocs_per_call   heap allocations made by the reader threads inside the
//                     timed loop, divided by the number of reads (the writer
//                     allocates, e.g. for its log line, but is not counted)
//   on_fraction       fraction of reads that saw the feature on (level 0):
//                     strictly between 0 and 1 shows the writer was flipping
//   writer_changes_per_s  changes the writer made per second during the run
// benchmarks/gate_ratios.py turns the output into the comparison table.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"

namespace {

// The writer's period: one change of all three states per period.
constexpr auto kWriterPeriod = std::chrono::microseconds(100);

// The level that switches the benchmarked feature off.
constexpr int kDegradedLevel = 1;
constexpr absl::string_view kFeature = "semantic_cache";

// The comparison states, each on its own cache line so that a store to one
// does not disturb reads of another.
struct alignas(64) PlainFlag {
  std::atomic<bool> enabled{true};
};

struct alignas(64) MutexLevel {
  std::mutex mu;
  int level = 0;  // guarded by mu
};

// Everything the readers and the writer share. Created on first use and
// never destroyed; the writer is stopped and joined at exit.
class Shared {
 public:
  static Shared& Get() {
    static Shared* const shared = [] {
      auto* s = new Shared();
      std::atexit([] { Get().StopWriter(); });
      return s;
    }();
    return *shared;
  }

  const degrade::DegradationManager& manager() const { return *manager_; }
  degrade::FeatureGate gate() const { return gate_; }
  const std::atomic<bool>& flag() const { return flag_.enabled; }
  MutexLevel& mutex_level() { return mutex_level_; }
  std::uint64_t changes() const {
    return changes_.load(std::memory_order_relaxed);
  }

 private:
  Shared() {
    degrade::ManagerOptions options;
    options.name = "gate_benchmark";
    // One JSON line per level change would be thousands of stderr writes a
    // second; the benchmark measures readers, not logging.
    options.log_sink = [](absl::string_view) {};
    manager_ = new degrade::DegradationManager(std::move(options));

    degrade::DegradationConfig config;
    config.name = "gate_benchmark";
    degrade::LevelSpec level1;
    level1.name = "level1";
    level1.enter = {{"queue_length", 100.0}};
    level1.disable = {std::string(kFeature)};
    config.levels.push_back(level1);
    Check(manager_->Reload(std::move(config)), "Reload");

    gate_ = manager_->Feature(kFeature);
    Check(manager_->ForceLevel(0, absl::InfiniteDuration()), "ForceLevel(0)");
    if (!gate_.enabled()) Fail("the gate is off at level 0");
    Check(manager_->ForceLevel(kDegradedLevel, absl::InfiniteDuration()),
          "ForceLevel(1)");
    if (gate_.enabled()) Fail("the gate is on at level 1");
    Check(manager_->ForceLevel(0, absl::InfiniteDuration()), "ForceLevel(0)");

    writer_ = std::thread([this] { WriterLoop(); });
  }

  static void Fail(const char* what) {
    std::fprintf(stderr, "gate_benchmark: %s\n", what);
    std::abort();
  }
  static void Check(const absl::Status& s, const char* what) {
    if (!s.ok()) {
      std::fprintf(stderr, "gate_benchmark: %s: %s\n", what,
                   s.ToString().c_str());
      std::abort();
    }
  }

  // Changes all three states once per kWriterPeriod, sleeping in between,
  // until stopped. The level alternates 0, 1, 0, 1, ... so every change
  // flips the feature. The schedule is absolute (sleep_until), so timer
  // slack does not lower the rate; after falling more than a few periods
  // behind (the writer was descheduled) it restarts from now rather than
  // catching up in a burst.
  void WriterLoop() {
    using Clock = std::chrono::steady_clock;
    int level = 0;
    Clock::time_point next = Clock::now();
    while (!stop_.load(std::memory_order_relaxed)) {
      level = kDegradedLevel - level;
      Check(manager_->ForceLevel(level, absl::InfiniteDuration()),
            "ForceLevel");
      flag_.enabled.store(level < kDegradedLevel, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(mutex_level_.mu);
        mutex_level_.level = level;
      }
      changes_.fetch_add(1, std::memory_order_relaxed);
      next += kWriterPeriod;
      const Clock::time_point now = Clock::now();
      if (next + 4 * kWriterPeriod < now) next = now;
      std::this_thread::sleep_until(next);
    }
  }

  void StopWriter() {
    stop_.store(true, std::memory_order_relaxed);
    if (writer_.joinable()) writer_.join();
  }

  degrade::DegradationManager* manager_ = nullptr;
  degrade::FeatureGate gate_;
  PlainFlag flag_;
  MutexLevel mutex_level_;
  std::atomic<std::uint64_t> changes_{0};
  std::atomic<bool> stop_{false};
  std::thread writer_;
};

// Runs `read` once per iteration; `read` returns whether the feature is on.
// Each value goes through DoNotOptimize and into a local count, so no read
// can be hoisted out of the loop or dropped. Reports the allocations made by
// this thread inside the loop, the fraction of reads that saw the feature
// on (counters are summed over threads and divided by the total number of
// reads), and, from thread 0, the writer's rate of changes during the loop.
template <typename Read>
void RunReads(benchmark::State& state, Read read) {
  Shared& shared = Shared::Get();
  const std::uint64_t changes_before = shared.changes();
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t allocations_before = degrade_bench::ThreadAllocations();
  std::uint64_t on = 0;
  for (auto _ : state) {
    bool enabled = read();
    benchmark::DoNotOptimize(enabled);
    on += enabled ? 1 : 0;
  }
  const std::uint64_t allocations =
      degrade_bench::ThreadAllocations() - allocations_before;
  benchmark::DoNotOptimize(on);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const std::uint64_t changes = shared.changes() - changes_before;

  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  state.counters["on_fraction"] = benchmark::Counter(
      static_cast<double>(on), benchmark::Counter::kAvgIterations);
  if (state.thread_index() == 0) {
    state.counters["writer_changes_per_s"] =
        seconds > 0 ? static_cast<double>(changes) / seconds : 0.0;
  }
}

// ---------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------
void BM_Gate_Enabled(benchmark::State& state) {
  // A local copy, as request code keeps one ("call it once and keep the
  // gate").
  const degrade::FeatureGate gate = Shared::Get().gate();
  RunReads(state, [&gate] { return gate.enabled(); });
}

void BM_RelaxedAtomicLoad(benchmark::State& state) {
  const std::atomic<bool>& flag = Shared::Get().flag();
  RunReads(state, [&flag] { return flag.load(std::memory_order_relaxed); });
}

void BM_MutexLevelRead(benchmark::State& state) {
  MutexLevel& m = Shared::Get().mutex_level();
  RunReads(state, [&m] {
    int level;
    {
      std::lock_guard<std::mutex> lock(m.mu);
      level = m.level;
    }
    return level < kDegradedLevel;
  });
}

// The function the When wrapper guards: trivial, out of line, and opaque to
// the optimizer. Returns true ("on"); the fallback is false ("off").
__attribute__((noinline)) bool Personalise(int x) {
  benchmark::DoNotOptimize(x);
  return true;
}

void BM_When(benchmark::State& state) {
  const auto personalise =
      degrade::When(Shared::Get().manager(), kDegradedLevel, Personalise,
                    /*fallback=*/false);
  int x = 0;
  RunReads(state, [&personalise, &x] { return personalise(++x); });
}

void BM_DirectCall(benchmark::State& state) {
  int x = 0;
  RunReads(state, [&x] { return Personalise(++x); });
}

}  // namespace

#define DEGRADE_GATE_BENCHMARK(fn) \
  BENCHMARK(fn)->UseRealTime()->Threads(1)->Threads(2)

DEGRADE_GATE_BENCHMARK(BM_Gate_Enabled);
DEGRADE_GATE_BENCHMARK(BM_RelaxedAtomicLoad);
DEGRADE_GATE_BENCHMARK(BM_MutexLevelRead);
DEGRADE_GATE_BENCHMARK(BM_When);
DEGRADE_GATE_BENCHMARK(BM_DirectCall);

BENCHMARK_MAIN();
