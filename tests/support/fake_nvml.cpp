// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A stand-in for libnvidia-ml.so.1, built as a shared library by the test
// suite, so that gpu_signal.hpp's loading code is tested without a GPU. It
// exports the six NVML functions NvmlGpuSource resolves, with NVML's C
// signatures, and `fake_nvml_*` functions through which a test sets what
// they return and counts the calls. Built a second time with
// FAKE_NVML_OMIT_UTILIZATION it lacks nvmlDeviceGetUtilizationRates (a
// library that is not, or not enough, NVML).
//
// The functions have exactly the types NvmlGpuSource calls them through
// (detail/levels/nvml_types.hpp), and this library completes the opaque device
// type, as NVML does behind its handle.
//
// The state is process-wide and atomic: a test keeps its own dlopen()
// handle on the library, so the state survives the source's dlclose().

#include <atomic>

#include "degrade/detail/levels/nvml_types.hpp"

namespace nvml = ::degrade::detail::nvml;

struct nvml::DeviceOpaque {
  unsigned index;
};

namespace {

constexpr unsigned kMaxDevices = 8;

nvml::DeviceOpaque g_devices[kMaxDevices] = {{0}, {1}, {2}, {3},
                                             {4}, {5}, {6}, {7}};

std::atomic<unsigned> g_device_count{1};
std::atomic<int> g_init_result{0};
std::atomic<int> g_count_result{0};
std::atomic<int> g_handle_result{0};
std::atomic<int> g_utilization_result{0};
std::atomic<unsigned> g_gpu_percent[kMaxDevices];
std::atomic<int> g_init_calls{0};
std::atomic<int> g_shutdown_calls{0};
std::atomic<int> g_initialised{0};  // init minus shutdown, as NVML counts

}  // namespace

extern "C" {

// ---- NVML's functions ----

__attribute__((visibility("default"))) nvml::Return nvmlInit_v2() {
  g_init_calls.fetch_add(1);
  const int r = g_init_result.load();
  if (r == 0) g_initialised.fetch_add(1);
  return r;
}

__attribute__((visibility("default"))) nvml::Return nvmlShutdown() {
  g_shutdown_calls.fetch_add(1);
  // NVML_ERROR_UNINITIALIZED (1) for a shutdown without an init.
  if (g_initialised.fetch_sub(1) <= 0) {
    g_initialised.fetch_add(1);
    return 1;
  }
  return 0;
}

__attribute__((visibility("default"))) nvml::Return nvmlDeviceGetCount_v2(
    unsigned int* count) {
  if (g_initialised.load() <= 0) return 1;
  const int r = g_count_result.load();
  if (r == 0) *count = g_device_count.load();
  return r;
}

__attribute__((visibility("default"))) nvml::Return
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvml::Device* device) {
  if (g_initialised.load() <= 0) return 1;
  if (index >= g_device_count.load()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const int r = g_handle_result.load();
  if (r == 0) *device = &g_devices[index];
  return r;
}

#ifndef FAKE_NVML_OMIT_UTILIZATION
__attribute__((visibility("default"))) nvml::Return
nvmlDeviceGetUtilizationRates(nvml::Device device,
                              nvml::Utilization* utilization) {
  if (g_initialised.load() <= 0) return 1;
  if (device < &g_devices[0] || device >= &g_devices[kMaxDevices]) return 2;
  const int r = g_utilization_result.load();
  if (r == 0) {
    utilization->gpu = g_gpu_percent[device->index].load();
    utilization->memory = 0;
  }
  return r;
}
#endif

__attribute__((visibility("default"))) const char* nvmlErrorString(
    nvml::Return result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

// ---- The test's controls ----

// Back to one device at 0%, every call succeeding, the counts at zero.
__attribute__((visibility("default"))) void fake_nvml_reset() {
  g_device_count = 1;
  g_init_result = 0;
  g_count_result = 0;
  g_handle_result = 0;
  g_utilization_result = 0;
  for (auto& p : g_gpu_percent) p = 0;
  g_init_calls = 0;
  g_shutdown_calls = 0;
  g_initialised = 0;
}

__attribute__((visibility("default"))) void fake_nvml_set_device_count(
    unsigned n) {
  g_device_count = n > kMaxDevices ? kMaxDevices : n;
}

// What each call returns (0 = NVML_SUCCESS). `which`: "init", "count",
// "handle" or "utilization" by first letter.
__attribute__((visibility("default"))) void fake_nvml_fail(char which,
                                                           int code) {
  switch (which) {
    case 'i':
      g_init_result = code;
      break;
    case 'c':
      g_count_result = code;
      break;
    case 'h':
      g_handle_result = code;
      break;
    case 'u':
      g_utilization_result = code;
      break;
    default:
      break;
  }
}

__attribute__((visibility("default"))) void fake_nvml_set_utilization(
    unsigned device, unsigned percent) {
  if (device < kMaxDevices) g_gpu_percent[device] = percent;
}

__attribute__((visibility("default"))) int fake_nvml_init_calls() {
  return g_init_calls.load();
}
__attribute__((visibility("default"))) int fake_nvml_shutdown_calls() {
  return g_shutdown_calls.load();
}
// Inits not yet matched by a shutdown.
__attribute__((visibility("default"))) int fake_nvml_initialised() {
  return g_initialised.load();
}

}  // extern "C"
