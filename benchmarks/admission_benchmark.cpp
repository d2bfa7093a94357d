// Benchmarks of degrade::AdmissionController::Admitted(), the check every
// request makes, against its floor:
//
//   BM_Admission_Admitted          Admitted(rc) on a controller following a
//                                  manager's floor, not adaptive: what most
//                                  servers run
//   BM_Baseline_RelaxedLoad        a relaxed std::atomic<int> load and a
//                                  compare with the request's rank (the floor
//                                  the issue sets: within 2x of it)
// and, for information:
//   BM_Admission_AdmittedAdaptive  Admitted(rc) in DAGOR's mode: two relaxed
//                                  fetch_adds more on shared lines (the
//                                  window's histogram)
//   BM_Admission_AdmitOk           Admit(rc) when admitted (an OK status)
//
// Each runs at 1 and 2 threads, wall-clock time per call. The requests cycle
// through all 512 ranks (rank = i mod 512) and every threshold is 320 (the
// plain controller's from a manager level's floor, the adaptive one's from
// one overloaded window), so each loop both admits (62.5%) and sheds, as a
// loaded server does. Every row reports allocs_per_call (heap allocations
// inside the timed loop per call; must be 0) and admitted_fraction.
// benchmarks/admission_ratios.py turns the output into the comparison table.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "alloc_counter.hpp"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/request_class.hpp"

namespace {

constexpr int kThreshold = 320;  // admits through SHEDDABLE_PLUS:63

degrade::RequestClass OfRank(int r) {
  degrade::RequestClass rc;
  rc.criticality = static_cast<degrade::Criticality>(r / degrade::kNumCohorts);
  rc.cohort = static_cast<uint8_t>(r % degrade::kNumCohorts);
  return rc;
}

void CheckOk(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "admission_benchmark: %s: %s\n", what, s.ToString().c_str());
    std::abort();
  }
}

std::unique_ptr<degrade::AdmissionController> Check(
    absl::StatusOr<std::unique_ptr<degrade::AdmissionController>> c) {
  if (!c.ok()) {
    std::fprintf(stderr, "admission_benchmark: %s\n", c.status().ToString().c_str());
    std::abort();
  }
  return *std::move(c);
}

degrade::FakeClock& Clock() {
  static degrade::FakeClock* const clock = new degrade::FakeClock();
  return *clock;
}

// DAGOR's mode at threshold kThreshold: one overloaded window walks it
// down to min_threshold (tighten_fraction 1); the interval is then a year
// and no delay is recorded, so it stays there.
std::unique_ptr<degrade::AdmissionController> MakeAdaptive() {
  degrade::AdmissionOptions o;
  o.name = "bench_adaptive";
  o.adaptive = true;
  o.min_threshold = kThreshold;
  o.tighten_fraction = 1;
  o.interval = absl::Hours(24 * 365);
  o.interval_requests = UINT32_MAX;
  o.clock = &Clock();
  o.metrics = degrade::NoTelemetry();
  auto c = Check(degrade::AdmissionController::Create(o));
  for (int r = 0; r < degrade::kAdmitAllRank; ++r) c->Admitted(OfRank(r));
  Clock().Advance(absl::Hours(24 * 366));
  c->RecordQueuingDelay(absl::Seconds(1));
  return c;
}

// The manager a plain controller follows: one level whose floor admits
// through SHEDDABLE_PLUS:63 (threshold 320), forced on for the whole run.
const degrade::DegradationManager& Manager() {
  static degrade::DegradationManager* const m = [] {
    degrade::ManagerOptions options;
    options.name = "admission_benchmark";
    options.clock = &Clock();
    options.log_sink = [](absl::string_view) {};
    options.metrics = degrade::NoTelemetry();
    auto* manager = new degrade::DegradationManager(std::move(options));
    degrade::DegradationConfig config;
    config.name = "admission_benchmark";
    degrade::LevelSpec level1;
    level1.name = "level1";
    level1.enter = {{"queue_delay_ms", 20.0}};
    level1.admit = degrade::AdmitFloor{degrade::Criticality::kSheddablePlus, 64};
    config.levels.push_back(level1);
    CheckOk(manager->Reload(std::move(config)), "Reload");
    CheckOk(manager->ForceLevel(1, absl::InfiniteDuration()), "ForceLevel");
    return manager;
  }();
  return *m;
}

// The plain controller: no adaptive mode, the threshold from the manager.
std::unique_ptr<degrade::AdmissionController> MakePlain() {
  degrade::AdmissionOptions o;
  o.name = "bench";
  o.manager = &Manager();
  o.clock = &Clock();
  o.metrics = degrade::NoTelemetry();
  return Check(degrade::AdmissionController::Create(o));
}

degrade::AdmissionController& AtThreshold(degrade::AdmissionController* c) {
  if (c->threshold() != kThreshold) {
    std::fprintf(stderr, "admission_benchmark: %s: threshold %d, want %d\n",
                 c->name().c_str(), c->threshold(), kThreshold);
    std::abort();
  }
  return *c;
}
degrade::AdmissionController& Plain() {
  static degrade::AdmissionController* const c = MakePlain().release();
  return AtThreshold(c);
}
degrade::AdmissionController& Adaptive() {
  static degrade::AdmissionController* const c = MakeAdaptive().release();
  return AtThreshold(c);
}

// The baseline's threshold: the same, so both rows admit the same requests.
struct alignas(64) PlainThreshold {
  std::atomic<int> value{kThreshold};
};
PlainThreshold& Baseline() {
  static PlainThreshold* const p = new PlainThreshold();
  return *p;
}

// Runs `check(rc)` once per iteration over a cycle of all 512 classes; each
// result goes through DoNotOptimize and into a local count.
template <typename Check>
void RunChecks(benchmark::State& state, Check check) {
  degrade::RequestClass classes[degrade::kAdmitAllRank];
  for (int r = 0; r < degrade::kAdmitAllRank; ++r) classes[r] = OfRank(r);
  const std::uint64_t allocations_before = degrade_bench::ThreadAllocations();
  std::uint64_t admitted = 0;
  unsigned i = static_cast<unsigned>(state.thread_index()) * 97;
  for (auto _ : state) {
    bool ok = check(classes[i++ % degrade::kAdmitAllRank]);
    benchmark::DoNotOptimize(ok);
    admitted += ok ? 1 : 0;
  }
  const std::uint64_t allocations =
      degrade_bench::ThreadAllocations() - allocations_before;
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  state.counters["admitted_fraction"] = benchmark::Counter(
      static_cast<double>(admitted), benchmark::Counter::kAvgIterations);
}

void BM_Admission_Admitted(benchmark::State& state) {
  degrade::AdmissionController& c = Plain();
  RunChecks(state, [&c](degrade::RequestClass rc) { return c.Admitted(rc); });
}

void BM_Baseline_RelaxedLoad(benchmark::State& state) {
  const std::atomic<int>& t = Baseline().value;
  RunChecks(state, [&t](degrade::RequestClass rc) {
    return degrade::Rank(rc) < t.load(std::memory_order_relaxed);
  });
}

void BM_Admission_AdmittedAdaptive(benchmark::State& state) {
  degrade::AdmissionController& c = Adaptive();
  RunChecks(state, [&c](degrade::RequestClass rc) { return c.Admitted(rc); });
}

void BM_Admission_AdmitOk(benchmark::State& state) {
  degrade::AdmissionController& c = Plain();
  RunChecks(state, [&c](degrade::RequestClass rc) {
    // Only admitted classes: the OK path, whose status is inline.
    rc.criticality = degrade::Criticality::kCriticalPlus;
    return c.Admit(rc).ok();
  });
}

}  // namespace

#define DEGRADE_ADMISSION_BENCHMARK(fn) \
  BENCHMARK(fn)->UseRealTime()->Threads(1)->Threads(2)

DEGRADE_ADMISSION_BENCHMARK(BM_Admission_Admitted);
DEGRADE_ADMISSION_BENCHMARK(BM_Baseline_RelaxedLoad);
DEGRADE_ADMISSION_BENCHMARK(BM_Admission_AdmittedAdaptive);
DEGRADE_ADMISSION_BENCHMARK(BM_Admission_AdmitOk);

BENCHMARK_MAIN();
