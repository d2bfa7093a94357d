// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The few C types of NVIDIA's management library (NVML) that gpu_signal.hpp
// calls through, declared here so that nothing NVIDIA is needed to build:
// nvmlReturn_t is an int-sized enum whose 0 is NVML_SUCCESS, a device is an
// opaque pointer, nvmlUtilization_t two unsigned percentages. The fake NVML
// of the tests (tests/support/fake_nvml.cpp) defines its functions with
// exactly these types, so that calling them through the resolved pointers
// is a call through the right function type (UBSan's -fsanitize=function
// checks it); the real NVML is C and has the same layout.
//
//   detail::nvml::Return (*init)() = ...;  // dlsym(handle, "nvmlInit_v2")
//
// Thread safety: types only.

#ifndef DEGRADE_DETAIL_LEVELS_NVML_TYPES_HPP_
#define DEGRADE_DETAIL_LEVELS_NVML_TYPES_HPP_

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace nvml {

using Return = int;
inline constexpr Return kSuccess = 0;

struct DeviceOpaque;
using Device = DeviceOpaque*;

struct Utilization {
  unsigned int gpu;     // percent of the sample period a kernel ran
  unsigned int memory;  // percent of it device memory was read or written
};

using InitFn = Return();
using ShutdownFn = Return();
using GetCountFn = Return(unsigned int* count);
using GetHandleFn = Return(unsigned int index, Device* device);
using GetUtilizationFn = Return(Device device, Utilization* utilization);
using ErrorStringFn = const char*(Return result);

}  // namespace nvml
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_NVML_TYPES_HPP_
