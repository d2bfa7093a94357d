// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: gpu_signal.hpp
// -----------------------------------------------------------------------------
//
// A GPU-utilisation signal for a `DegradationManager`, read from NVIDIA's
// management library (NVML) loaded at run time. Nothing NVIDIA is needed to
// build degrade or a service using it: `NvmlGpuSource::Load()` opens
// `libnvidia-ml.so.1` with dlopen(), and on a machine without a GPU driver
// it returns a status saying so, which a service logs before carrying on
// with its other signals.
//
//   degrade::GpuSourceOptions o;           // libnvidia-ml.so.1, device 0
//   auto gpu = degrade::NvmlGpuSource::Load(o);
//   if (gpu.ok()) {
//     manager.AddSource("gpu_util", (*gpu)->Source());  // 0..1
//   } else {
//     LOG(WARNING) << gpu.status();  // "NVML not available: dlopen(...)
//     failed: ..."
//   }
//   // keep *gpu alive as long as the manager polls it
//
// Load() reads the device once, so a GPU whose utilisation NVML cannot
// report at all (a MIG instance, some vGPU profiles: NOT_SUPPORTED) is a
// Load() error, not a signal that fails on every poll.
//
// The value is NVML's `gpu` utilisation: the percentage of the driver's
// last sample period (1/6 s to 1 s, depending on the product) during which
// a kernel was running, divided by 100. It says "busy", not "saturated": a
// GPU at 1.0 may still have room for larger batches, so pair it with a
// queueing-delay signal (admission_queue.hpp) rather than use it alone.
//
// Operators see it through its telemetry (`GpuSourceOptions::metrics`,
// source_stats.hpp): whether the last read succeeded, the last reading,
// and failed reads by code.
//
// Thread safety: `Utilization()` and the `Source()` functions may be called
// from any thread (NVML is thread-safe); `last_status()` and `stats()` too.

#ifndef DEGRADE_GPU_SIGNAL_HPP_
#define DEGRADE_GPU_SIGNAL_HPP_

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "degrade/detail/levels/nvml_types.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/source_stats.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// GpuSourceOptions
//
// `library`: what dlopen() is given, a file name (searched the usual way)
// or a path; must not be empty nor contain a NUL. `device_index`: the GPU in NVML's order
// (which follows PCI bus ids, not CUDA_VISIBLE_DEVICES); must be >= 0 and
// below the number of devices NVML reports.
struct GpuSourceOptions {
  std::string library = "libnvidia-ml.so.1";
  int device_index = 0;
  // Names the source in metrics (degrade_gpu_source_*{gpu_source=...}).
  // Empty (the default) means "gpu<device_index>", e.g. "gpu0".
  std::string name;
  // The telemetry the source reports to (telemetry.hpp): with a
  // MetricsRegistry, degrade_gpu_source_* (available, utilisation, reads,
  // errors by code) under `name`. nullptr means DefaultTelemetry() (none
  // unless SetDefaultTelemetry() was called); NoTelemetry() means none even
  // then. REQUIRES: outlives the source.
  Telemetry* metrics = nullptr;
};

// NvmlGpuSource
//
// One GPU's utilisation. `Load()` opens the library, resolves the six
// functions used, initialises NVML and looks the device up; the destructor
// calls nvmlShutdown() exactly once and closes the library. Neither
// copyable nor movable (the `Source()` functions hold `this`).
class NvmlGpuSource {
 public:
  // Reads the device once before returning it (see the file comment).
  // Errors, each naming what failed:
  //   INVALID_ARGUMENT   an empty `library` or one with a NUL in it (dlopen
  //                      would open the text before the NUL); a negative
  //                      `device_index`, or one NVML does not have
  //                      ("... reports 2 devices");
  //   UNAVAILABLE        the library could not be opened: "NVML not
  //                      available: dlopen(<library>) failed: <dlerror>";
  //                      or an NVML call failed, the first read included:
  //                      "<library>: <function>(device N) failed: NVML
  //                      error <code> (<nvmlErrorString>)";
  //   OUT_OF_RANGE       the first read reported more than 100%;
  //   FAILED_PRECONDITION  the library lacks a function: "<library> has no
  //                      symbol nvmlDeviceGetCount_v2" (not NVML, or an NVML
  //                      older than the v2 entry points, driver 319).
  // Nothing is left initialised or open after an error.
  static absl::StatusOr<std::unique_ptr<NvmlGpuSource>> Load(
      GpuSourceOptions options);

  NvmlGpuSource(const NvmlGpuSource&) = delete;
  NvmlGpuSource& operator=(const NvmlGpuSource&) = delete;
  // Detaches from its telemetry first, then shuts NVML down.
  ~NvmlGpuSource();

  // The device's utilisation in [0, 1]. UNAVAILABLE when NVML fails (the
  // GPU fell off the bus, the driver was reloaded; the message names the
  // function and "device N"), OUT_OF_RANGE when it
  // reports more than 100%. Thread-safe; one NVML call and a short
  // critical section (recording the outcome for last_status() and
  // stats()), no
  // allocation unless it fails. Meant for a poll, not a request path.
  absl::StatusOr<double> Utilization() const;

  // A source for `DegradationManager::AddSource`: `Utilization()` itself.
  // A manager records nothing for a failed read: it keeps the previous
  // value, so a failing GPU read neither raises nor lowers the level, and
  // its poll error is the read's status ("... source for 'gpu_util':
  // nvmlDeviceGetUtilizationRates(device 0) failed: ... (GPU is lost)"),
  // logged once until it changes. REQUIRES: this source outlives the
  // function (stop the manager's monitor, or destroy the manager, first).
  std::function<absl::StatusOr<double>()> Source() const {
    return [this] { return Utilization(); };
  }

  // The status of the most recent read: OK once a read succeeds, the
  // failure until then. Thread-safe.
  absl::Status last_status() const {
    detail::MutexLock lock(&mu_);
    return last_status_;
  }
  // The name last_status() had before; same value.
  [[deprecated("use last_status()")]] absl::Status last_error() const {
    return last_status();
  }

  // Reads and failures so far, and the latest reading, as its telemetry
  // reads them (source_stats.hpp). Thread-safe.
  GpuSourceStats stats() const {
    detail::MutexLock lock(&mu_);
    return stats_;
  }

  const std::string& library() const { return library_; }
  int device_index() const { return device_index_; }
  // The name in its metrics (GpuSourceOptions::name).
  const std::string& name() const { return name_; }

 private:
  using Return = detail::nvml::Return;
  using Device = detail::nvml::Device;
  struct Api {
    detail::nvml::InitFn* init = nullptr;
    detail::nvml::ShutdownFn* shutdown = nullptr;
    detail::nvml::GetCountFn* get_count = nullptr;
    detail::nvml::GetHandleFn* get_handle = nullptr;
    detail::nvml::GetUtilizationFn* get_utilization = nullptr;
    detail::nvml::ErrorStringFn* error_string = nullptr;  // optional
  };

  NvmlGpuSource(GpuSourceOptions options, void* handle, Api api, Device device)
      : library_(std::move(options.library)),
        device_index_(options.device_index),
        name_(options.name.empty() ? absl::StrCat("gpu", options.device_index)
                                   : std::move(options.name)),
        handle_(handle),
        api_(api),
        device_(device) {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ =
        detail::Attach(options.metrics, &Telemetry::AttachComponent, view_);
  }

  // "<function> failed: NVML error <code> (<nvmlErrorString>)", or
  // "<function>(device N) failed: ..." for a call on device `device`.
  static absl::Status CallError(const Api& api, const char* function,
                                Return code, int device = -1);
  // `s` with "<library>: " in front: which NVML a Load() error came from.
  static absl::Status InLibrary(const std::string& library,
                                const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(library, ": ", s.message()));
  }
  // dlsym, as the function pointer type of `*out`; false when absent.
  template <typename Fn>
  static bool Resolve(void* handle, const char* symbol, Fn* out) {
    void* p = dlsym(handle, symbol);
    if (p == nullptr) return false;
    // POSIX guarantees a function's address survives the round trip
    // through void*; memcpy says so without a cast -Wpedantic questions.
    static_assert(sizeof(p) == sizeof(*out), "function and object pointers");
    std::memcpy(out, &p, sizeof(p));
    return true;
  }

  const std::string library_;
  const int device_index_;
  const std::string name_;
  void* const handle_;
  const Api api_;
  const Device device_;
  mutable detail::Mutex mu_;
  mutable absl::Status last_status_ ABSL_GUARDED_BY(mu_);
  mutable GpuSourceStats stats_ ABSL_GUARDED_BY(mu_);

  // What the telemetry reads: a member, so the source has no virtual
  // functions of its own.
  const detail::OwnerView<NvmlGpuSource, GpuSourceStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details ----

inline absl::Status NvmlGpuSource::CallError(const Api& api,
                                             const char* function,
                                             Return code, int device) {
  const char* text =
      api.error_string != nullptr ? api.error_string(code) : nullptr;
  return absl::UnavailableError(absl::StrCat(
      function, device >= 0 ? absl::StrCat("(device ", device, ")") : "",
      " failed: NVML error ", code,
      text != nullptr ? absl::StrCat(" (", text, ")") : ""));
}

inline absl::StatusOr<std::unique_ptr<NvmlGpuSource>> NvmlGpuSource::Load(
    GpuSourceOptions options) {
  if (options.library.empty()) {
    return absl::InvalidArgumentError(
        "GpuSourceOptions.library: empty (the NVML library to dlopen, "
        "normally libnvidia-ml.so.1)");
  }
  if (const std::size_t nul = options.library.find('\0');
      nul != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GpuSourceOptions.library: \"", absl::CHexEscape(options.library),
        "\" has a NUL at offset ", nul, " (dlopen takes a C string)"));
  }
  if (options.device_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GpuSourceOptions.device_index: ", options.device_index,
                     " (must be >= 0)"));
  }
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace, where they
  // could clash with a service that links NVML itself.
  void* handle = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(
        absl::StrCat("NVML not available: dlopen(", options.library,
                     ") failed: ", why != nullptr ? why : "unknown error"));
  }
  // Everything below undoes what it did before returning an error.
  std::unique_ptr<void, int (*)(void*)> library(handle, &dlclose);
  Api api;
  struct Symbol {
    const char* name;
    bool found;
  };
  const Symbol required[] = {
      {"nvmlInit_v2", Resolve(handle, "nvmlInit_v2", &api.init)},
      {"nvmlShutdown", Resolve(handle, "nvmlShutdown", &api.shutdown)},
      {"nvmlDeviceGetCount_v2",
       Resolve(handle, "nvmlDeviceGetCount_v2", &api.get_count)},
      {"nvmlDeviceGetHandleByIndex_v2",
       Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &api.get_handle)},
      {"nvmlDeviceGetUtilizationRates",
       Resolve(handle, "nvmlDeviceGetUtilizationRates", &api.get_utilization)},
  };
  for (const Symbol& s : required) {
    if (!s.found) {
      return absl::FailedPreconditionError(absl::StrCat(
          "NVML not usable: ", options.library, " has no symbol ", s.name));
    }
  }
  (void)Resolve(handle, "nvmlErrorString", &api.error_string);

  if (const Return r = api.init(); r != detail::nvml::kSuccess) {
    return InLibrary(options.library, CallError(api, "nvmlInit_v2", r));
  }
  std::unique_ptr<const Api, void (*)(const Api*)> initialised(
      &api, [](const Api* a) { a->shutdown(); });
  unsigned int count = 0;
  if (const Return r = api.get_count(&count); r != detail::nvml::kSuccess) {
    return InLibrary(options.library,
                     CallError(api, "nvmlDeviceGetCount_v2", r));
  }
  const auto index = static_cast<unsigned int>(options.device_index);
  if (index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("GpuSourceOptions.device_index: ", options.device_index,
                     " out of range: NVML reports ", count,
                     count == 1 ? " device" : " devices"));
  }
  Device device = nullptr;
  if (const Return r = api.get_handle(index, &device);
      r != detail::nvml::kSuccess) {
    return InLibrary(options.library,
                     CallError(api, "nvmlDeviceGetHandleByIndex_v2", r,
                               options.device_index));
  }
  (void)initialised.release();
  (void)library.release();
  // From here the source's destructor shuts NVML down and closes it.
  std::unique_ptr<NvmlGpuSource> source(
      new NvmlGpuSource(std::move(options), handle, api, device));
  if (const absl::StatusOr<double> first = source->Utilization(); !first.ok()) {
    return InLibrary(source->library(), first.status());
  }
  return source;
}

inline NvmlGpuSource::~NvmlGpuSource() {
  telemetry_.reset();  // no scrape may read the source while it goes
  api_.shutdown();
  dlclose(handle_);
}

inline absl::StatusOr<double> NvmlGpuSource::Utilization() const {
  detail::nvml::Utilization u{};
  absl::Status error;
  Return nvml_error = detail::nvml::kSuccess;
  if (const Return r = api_.get_utilization(device_, &u);
      r != detail::nvml::kSuccess) {
    nvml_error = r;
    error = CallError(api_, "nvmlDeviceGetUtilizationRates", r, device_index_);
  } else if (u.gpu > 100) {
    error = absl::OutOfRangeError(
        absl::StrCat("nvmlDeviceGetUtilizationRates: device ", device_index_,
                     " reported ", u.gpu, "% (more than 100)"));
  }
  detail::MutexLock lock(&mu_);
  ++stats_.reads;
  if (!error.ok()) {
    stats_.available = false;
    if (error.code() == absl::StatusCode::kOutOfRange) {
      ++stats_.errors_out_of_range;
    } else {
      ++stats_.errors_unavailable;
    }
    if (nvml_error != detail::nvml::kSuccess) {
      stats_.last_nvml_error = static_cast<int>(nvml_error);
    }
    last_status_ = error;
    return error;
  }
  stats_.available = true;
  stats_.utilization = u.gpu / 100.0;
  last_status_ = absl::OkStatus();
  return stats_.utilization;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_GPU_SIGNAL_HPP_
