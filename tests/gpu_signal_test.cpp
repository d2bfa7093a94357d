// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of gpu_signal.hpp against a fake NVML built by the test suite
// (tests/support/fake_nvml.cpp, loaded from FAKE_NVML_PATH): loading and
// reading, a missing library, a missing symbol, NVML errors at each step of
// Load() (and that each undoes the init), the device index, shutdown
// exactly once, a failing read through Source() and a manager polling it,
// and reads racing failures (under TSan).

#include "degrade/gpu_signal.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"
#include "metrics_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The fake's controls, resolved from a handle the test keeps open: the
// library's state outlives every NvmlGpuSource's dlclose().
class FakeNvml {
 public:
  explicit FakeNvml(const char* path)
      : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(handle_, nullptr) << path << ": " << dlerror();
    if (handle_ == nullptr) return;
    Resolve("fake_nvml_reset", &reset);
    Resolve("fake_nvml_set_device_count", &set_device_count);
    Resolve("fake_nvml_fail", &fail);
    Resolve("fake_nvml_set_utilization", &set_utilization);
    Resolve("fake_nvml_init_calls", &init_calls);
    Resolve("fake_nvml_shutdown_calls", &shutdown_calls);
    Resolve("fake_nvml_initialised", &initialised);
    reset();
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  void (*reset)() = nullptr;
  void (*set_device_count)(unsigned) = nullptr;
  void (*fail)(char, int) = nullptr;
  void (*set_utilization)(unsigned, unsigned) = nullptr;
  int (*init_calls)() = nullptr;
  int (*shutdown_calls)() = nullptr;
  int (*initialised)() = nullptr;

 private:
  template <typename Fn>
  void Resolve(const char* name, Fn* out) {
    void* p = dlsym(handle_, name);
    ASSERT_NE(p, nullptr) << name;
    std::memcpy(out, &p, sizeof(p));
  }
  void* handle_;
};

GpuSourceOptions Fake(int device = 0) {
  GpuSourceOptions o;
  o.library = FAKE_NVML_PATH;
  o.device_index = device;
  return o;
}

class NvmlGpuSourceTest : public ::testing::Test {
 protected:
  FakeNvml nvml_{FAKE_NVML_PATH};
};

TEST_F(NvmlGpuSourceTest, LoadsTheDeviceAndReadsItsGpuPercentAsAFraction) {
  nvml_.set_device_count(2);
  nvml_.set_utilization(0, 10);
  nvml_.set_utilization(1, 73);
  auto gpu = NvmlGpuSource::Load(Fake(1));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ((*gpu)->device_index(), 1);
  EXPECT_EQ((*gpu)->library(), FAKE_NVML_PATH);
  EXPECT_EQ(nvml_.init_calls(), 1);
  absl::StatusOr<double> u = (*gpu)->Utilization();
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_NEAR(*u, 0.73, 1e-12);  // device 1's, not device 0's
  nvml_.set_utilization(1, 100);
  EXPECT_NEAR(*(*gpu)->Utilization(), 1.0, 1e-12);
  nvml_.set_utilization(1, 0);
  EXPECT_NEAR(*(*gpu)->Source()(), 0.0, 1e-12);
  EXPECT_TRUE((*gpu)->last_status().ok());
}

TEST_F(NvmlGpuSourceTest, AMissingLibraryIsUnavailableAndSaysWhyDlopenFailed) {
  GpuSourceOptions o;
  o.library = "/nonexistent/libnvidia-ml.so.1";
  auto gpu = NvmlGpuSource::Load(o);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(gpu.status().message()),
              StartsWith("NVML not available: "
                         "dlopen(/nonexistent/libnvidia-ml.so.1) failed: "));
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr("No such file"));  // dlerror
}

TEST_F(NvmlGpuSourceTest, TheDefaultLibraryNameIsNvidiasAndItsAbsenceIsNamed) {
  auto gpu = NvmlGpuSource::Load(GpuSourceOptions{});
  if (gpu.ok()) GTEST_SKIP() << "this machine has a real NVML";
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(
      std::string(gpu.status().message()),
      StartsWith("NVML not available: dlopen(libnvidia-ml.so.1) failed: "));
}

TEST_F(NvmlGpuSourceTest, AMissingSymbolIsNamedAndNothingIsInitialised) {
  FakeNvml partial(FAKE_NVML_PARTIAL_PATH);
  GpuSourceOptions o;
  o.library = FAKE_NVML_PARTIAL_PATH;
  auto gpu = NvmlGpuSource::Load(o);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr("has no symbol nvmlDeviceGetUtilizationRates"));
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr(FAKE_NVML_PARTIAL_PATH));
  EXPECT_EQ(partial.init_calls(), 0);
}

TEST_F(NvmlGpuSourceTest, AnInitFailureNamesTheFunctionTheCodeAndItsText) {
  nvml_.fail('i', 9);
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gpu.status().message(),
            absl::StrCat(FAKE_NVML_PATH,
                         ": nvmlInit_v2 failed: NVML error 9 (Driver Not "
                         "Loaded)"));
  EXPECT_EQ(nvml_.shutdown_calls(), 0);  // nothing to shut down
}

TEST_F(NvmlGpuSourceTest, FailuresAfterInitShutNvmlDownAgain) {
  nvml_.fail('c', 15);
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(),
            absl::StrCat(FAKE_NVML_PATH,
                         ": nvmlDeviceGetCount_v2 failed: NVML error 15 (GPU "
                         "is lost)"));
  EXPECT_EQ(nvml_.shutdown_calls(), 1);
  EXPECT_EQ(nvml_.initialised(), 0);

  nvml_.reset();
  nvml_.fail('h', 15);
  gpu = NvmlGpuSource::Load(Fake());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(),
            absl::StrCat(FAKE_NVML_PATH,
                         ": nvmlDeviceGetHandleByIndex_v2(device 0) failed: "
                         "NVML error 15 (GPU is lost)"));
  EXPECT_EQ(nvml_.shutdown_calls(), 1);
  EXPECT_EQ(nvml_.initialised(), 0);
}

TEST_F(NvmlGpuSourceTest,
       ADeviceIndexOutOfRangeIsInvalidArgumentNamingTheCount) {
  nvml_.set_device_count(2);
  auto gpu = NvmlGpuSource::Load(Fake(2));
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu.status().message(),
            "GpuSourceOptions.device_index: 2 out of range: NVML reports 2 "
            "devices");
  EXPECT_EQ(nvml_.initialised(), 0);  // the init was undone

  nvml_.set_device_count(0);  // a driver with no GPU
  gpu = NvmlGpuSource::Load(Fake(0));
  ASSERT_FALSE(gpu.ok());
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr("NVML reports 0 devices"));
}

TEST_F(NvmlGpuSourceTest, BadOptionsAreRefusedBeforeAnythingIsLoaded) {
  auto gpu = NvmlGpuSource::Load(Fake(-1));
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu.status().message(),
            "GpuSourceOptions.device_index: -1 (must be >= 0)");
  GpuSourceOptions empty;
  empty.library = "";
  gpu = NvmlGpuSource::Load(empty);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(gpu.status().message()),
              StartsWith("GpuSourceOptions.library: empty"));
  EXPECT_EQ(nvml_.init_calls(), 0);
}

TEST_F(NvmlGpuSourceTest, DestructionShutsNvmlDownExactlyOnce) {
  auto first = NvmlGpuSource::Load(Fake());
  auto second = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(nvml_.initialised(), 2);  // NVML counts inits
  EXPECT_EQ(nvml_.shutdown_calls(), 0);
  first->reset();
  EXPECT_EQ(nvml_.shutdown_calls(), 1);
  // The other source still reads: its init is still counted.
  nvml_.set_utilization(0, 40);
  EXPECT_NEAR(*(*second)->Utilization(), 0.4, 1e-12);
  second->reset();
  EXPECT_EQ(nvml_.shutdown_calls(), 2);
  EXPECT_EQ(nvml_.initialised(), 0);
}

TEST_F(NvmlGpuSourceTest, AFailingReadIsAnErrorThroughSourceAndLastStatus) {
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  std::function<absl::StatusOr<double>()> source = (*gpu)->Source();
  nvml_.fail('u', 15);
  EXPECT_EQ(source().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*gpu)->last_status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*gpu)->last_status().message(),
            "nvmlDeviceGetUtilizationRates(device 0) failed: NVML error 15 "
            "(GPU is lost)");
  EXPECT_EQ((*gpu)->Utilization().status(), (*gpu)->last_status());
  nvml_.fail('u', 0);
  nvml_.set_utilization(0, 250);  // a driver bug: refused, not clamped
  EXPECT_EQ(source().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*gpu)->last_status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string((*gpu)->last_status().message()),
              HasSubstr("reported 250%"));
  nvml_.set_utilization(0, 55);
  ASSERT_TRUE(source().ok());
  EXPECT_NEAR(*source(), 0.55, 1e-12);
  EXPECT_TRUE((*gpu)->last_status().ok());  // a good read clears it
}

TEST_F(NvmlGpuSourceTest, StatsFollowAGpuFailingThenRecovering) {
  nvml_.set_utilization(0, 40);
  GpuSourceOptions o = Fake();
  o.metrics = NoTelemetry();
  auto gpu = NvmlGpuSource::Load(o);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ((*gpu)->name(), "gpu0");
  GpuSourceStats st = (*gpu)->stats();
  EXPECT_TRUE(st.available);
  EXPECT_DOUBLE_EQ(st.utilization, 0.4);
  EXPECT_EQ(st.reads, 1u);  // Load()'s own read

  nvml_.fail('u', 15);  // GPU_IS_LOST
  EXPECT_FALSE((*gpu)->Utilization().ok());
  EXPECT_FALSE((*gpu)->Utilization().ok());
  st = (*gpu)->stats();
  EXPECT_FALSE(st.available);
  EXPECT_DOUBLE_EQ(st.utilization, 0.4);  // the last good reading
  EXPECT_EQ(st.errors_unavailable, 2u);
  EXPECT_EQ(st.errors_out_of_range, 0u);
  EXPECT_EQ(st.last_nvml_error, 15);

  nvml_.fail('u', 0);
  nvml_.set_utilization(0, 250);
  EXPECT_FALSE((*gpu)->Utilization().ok());
  EXPECT_EQ((*gpu)->stats().errors_out_of_range, 1u);

  nvml_.set_utilization(0, 55);
  ASSERT_TRUE((*gpu)->Utilization().ok());
  st = (*gpu)->stats();
  EXPECT_TRUE(st.available);
  EXPECT_DOUBLE_EQ(st.utilization, 0.55);
  EXPECT_EQ(st.reads, 5u);
  EXPECT_EQ(st.last_nvml_error, 15);  // what last broke, kept
}

TEST_F(NvmlGpuSourceTest, TheRegistryRendersItsSeriesUntilItIsGone) {
  MetricsRegistry registry;
  nvml_.set_utilization(0, 30);
  GpuSourceOptions o = Fake();
  o.name = "train";
  o.metrics = &registry;
  auto gpu = NvmlGpuSource::Load(o);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  nvml_.fail('u', 15);
  EXPECT_FALSE((*gpu)->Utilization().ok());
  std::string text = registry.RenderPrometheus();
  ExpectSeries(
      text,
      {{R"(degrade_gpu_source_available{gpu_source="train"})", 0},
       {R"(degrade_gpu_source_utilization{gpu_source="train"})", 0.3},
       {R"(degrade_gpu_source_reads_total{gpu_source="train"})", 2},
       {R"(degrade_gpu_source_errors_total{gpu_source="train",code="UNAVAILABLE"})",
        1},
       {R"(degrade_gpu_source_errors_total{gpu_source="train",code="OUT_OF_RANGE"})",
        0},
       {R"(degrade_gpu_source_last_nvml_error{gpu_source="train"})", 15}});
  nvml_.fail('u', 0);
  ASSERT_TRUE((*gpu)->Utilization().ok());
  EXPECT_EQ(SampleValue(registry.RenderPrometheus(),
                        R"(degrade_gpu_source_available{gpu_source="train"})"),
            1);

  gpu->reset();
  text = registry.RenderPrometheus();
  EXPECT_TRUE(LinesStartingWith(text, "degrade_gpu_source_").empty()) << text;
}

TEST_F(NvmlGpuSourceTest, ItsDefaultTelemetryIsTheProcessDefault) {
  MetricsRegistry registry;
  ScopedDefaultTelemetry scope(&registry);
  auto gpu = NvmlGpuSource::Load(Fake(0));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(SampleValue(registry.RenderPrometheus(),
                        R"(degrade_gpu_source_reads_total{gpu_source="gpu0"})"),
            1);
  GpuSourceOptions o = Fake(0);
  o.name = "quiet";
  o.metrics = NoTelemetry();
  auto quiet = NvmlGpuSource::Load(o);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_TRUE(
      LinesStartingWith(registry.RenderPrometheus(),
                        R"(degrade_gpu_source_reads_total{gpu_source="quiet"})")
          .empty());
}

TEST_F(NvmlGpuSourceTest, LastErrorIsAnAliasOfLastStatus) {
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  nvml_.fail('u', 15);
  (void)(*gpu)->Utilization();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_EQ((*gpu)->last_error(), (*gpu)->last_status());
#pragma GCC diagnostic pop
  EXPECT_FALSE((*gpu)->last_status().ok());
}

class GpuSourceManagerTest : public ManagerTestBase {
 protected:
  // ThreeLevels()'s first level, on the seed config's 0..1 signal.
  static DegradationConfig OnGpu() {
    DegradationConfig c = ThreeLevels();
    c.levels.resize(1);
    c.levels[0].enter = {{"gpu_util", 0.85}};
    return c;
  }
  FakeNvml nvml_{FAKE_NVML_PATH};
};

TEST_F(GpuSourceManagerTest, AFailingReadKeepsTheLastValueAndTheLevel) {
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  std::unique_ptr<DegradationManager> m = Make(OnGpu());
  m->AddSource("gpu_util", (*gpu)->Source());
  nvml_.set_utilization(0, 92);
  ASSERT_TRUE(m->PollOnce().ok());
  EXPECT_EQ(m->level(), 1);
  ASSERT_TRUE(m->signal_value("gpu_util").has_value());
  EXPECT_NEAR(*m->signal_value("gpu_util"), 0.92, 1e-12);

  // The GPU falls off the bus: the poll reports the failed read, and the
  // manager neither drops the level nor forgets what it last saw.
  nvml_.fail('u', 15);
  const absl::Status s = m->PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("gpu_util"));
  clock_.Advance(absl::Minutes(5));  // past any hold
  (void)m->PollOnce();
  EXPECT_EQ(m->level(), 1);
  EXPECT_NEAR(*m->signal_value("gpu_util"), 0.92, 1e-12);
  EXPECT_THAT(std::string((*gpu)->last_status().message()),
              HasSubstr("GPU is lost"));

  // It comes back idle: the level recovers as usual.
  nvml_.fail('u', 0);
  nvml_.set_utilization(0, 10);
  ASSERT_TRUE(m->PollOnce().ok());
  clock_.Advance(absl::Seconds(61));
  ASSERT_TRUE(m->PollOnce().ok());
  EXPECT_EQ(m->level(), 0);
  m.reset();  // the manager goes before the source it polls
}

TEST_F(NvmlGpuSourceTest, ConcurrentReadsRaceFailuresAndStayInRange) {
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const NvmlGpuSource* source = gpu->get();
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        const absl::StatusOr<double> u = source->Utilization();
        if (u.ok() ? !(*u >= 0.0 && *u <= 1.0)
                   : u.status().code() != absl::StatusCode::kUnavailable) {
          bad.fetch_add(1);
        }
        (void)source->last_status();
      }
    });
  }
  for (unsigned i = 0; i < 2000; ++i) {
    nvml_.set_utilization(0, i % 101);
    nvml_.fail('u', i % 7 == 0 ? 15 : 0);
  }
  done.store(true);
  for (std::thread& r : readers) r.join();
  EXPECT_EQ(bad.load(), 0);
}


// A MIG instance (NOT_SUPPORTED on every read) is a Load() error naming
// the device and the library, not a signal that fails every poll.
TEST_F(NvmlGpuSourceTest, ADeviceThatCannotReportUtilizationFailsLoad) {
  nvml_.fail('u', 3);  // NVML_ERROR_NOT_SUPPORTED
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_FALSE(gpu.ok()) << "Load() accepted a device whose every "
                            "utilisation read fails with NOT_SUPPORTED";
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gpu.status().message(),
            absl::StrCat(FAKE_NVML_PATH,
                         ": nvmlDeviceGetUtilizationRates(device 0) failed: "
                         "NVML error 3 (Unknown Error)"));
  EXPECT_EQ(nvml_.initialised(), 0);  // and nothing left initialised
  EXPECT_EQ(nvml_.shutdown_calls(), 1);
}

// With one source per GPU, a per-device call's error names its device.
TEST_F(NvmlGpuSourceTest, PerDeviceCallErrorsNameTheDevice) {
  nvml_.set_device_count(4);
  auto gpu = NvmlGpuSource::Load(Fake(3));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  nvml_.fail('u', 15);
  EXPECT_THAT(std::string((*gpu)->Utilization().status().message()),
              HasSubstr("device 3"));
  nvml_.fail('u', 0);
  nvml_.fail('h', 15);
  auto other = NvmlGpuSource::Load(Fake(2));
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("device 2"))
      << other.status();
}

// An NVML call failing in Load() names the library that was tried.
TEST_F(NvmlGpuSourceTest, AnNvmlCallFailureInLoadNamesTheLibrary) {
  nvml_.fail('i', 9);
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_FALSE(gpu.ok());
  EXPECT_THAT(std::string(gpu.status().message()), HasSubstr(FAKE_NVML_PATH));
}

// A failed read's cause reaches the manager's poll error (and its log).
TEST_F(GpuSourceManagerTest, APollErrorFromAFailingGpuReadSaysWhy) {
  auto gpu = NvmlGpuSource::Load(Fake());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  std::unique_ptr<DegradationManager> m = Make(OnGpu());
  m->AddSource("gpu_util", (*gpu)->Source());
  nvml_.fail('u', 15);
  const absl::Status s = m->PollOnce();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("GPU is lost")) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("source for 'gpu_util': "
                        "nvmlDeviceGetUtilizationRates(device 0) failed"));
  m.reset();
}

// A library name with a NUL is refused: dlopen would open another file.
TEST_F(NvmlGpuSourceTest, ALibraryNameWithANulIsRefused) {
  GpuSourceOptions o = Fake();
  o.library = std::string(FAKE_NVML_PATH) + std::string("\0.evil", 6);
  auto gpu = NvmlGpuSource::Load(o);
  EXPECT_FALSE(gpu.ok()) << "loaded " << std::string(FAKE_NVML_PATH)
                         << " while library() names something else";
  if (!gpu.ok()) {
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(gpu.status().message()),
                HasSubstr("has a NUL at offset"));
  }
  EXPECT_EQ(nvml_.init_calls(), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
