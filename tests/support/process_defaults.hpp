// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Guards for the process-wide settings a test may change: each saves the
// value in force when it is made and puts it back when it goes out of
// scope, so a test that fails half-way (an ASSERT returns early, an
// exception unwinds) still leaves the next test the process as it found
// it. Every test that calls SetDefaultTelemetry() or
// SetThreadStartHookForTesting() holds one for as long as its value must
// stay.
//
//   DefaultTelemetryGuard guard(&spy);  // spy is the default until the end
//                                       // of the scope, then the old one
//   DefaultTelemetryGuard guard;        // the test sets it itself, any
//                                       // number of times; restored here
//
// Not thread-safe: make and destroy them on the test's own thread, while no
// other thread changes the same setting.

#ifndef DEGRADE_TESTS_SUPPORT_PROCESS_DEFAULTS_HPP_
#define DEGRADE_TESTS_SUPPORT_PROCESS_DEFAULTS_HPP_

#include "degrade/detail/thread_start.hpp"
#include "degrade/telemetry.hpp"

namespace degrade_tests {

// SetDefaultTelemetry (degrade/telemetry.hpp).
class DefaultTelemetryGuard {
 public:
  DefaultTelemetryGuard() : saved_(degrade::DefaultTelemetry()) {}
  explicit DefaultTelemetryGuard(degrade::Telemetry* telemetry)
      : DefaultTelemetryGuard() {
    degrade::SetDefaultTelemetry(telemetry);
  }
  DefaultTelemetryGuard(const DefaultTelemetryGuard&) = delete;
  DefaultTelemetryGuard& operator=(const DefaultTelemetryGuard&) = delete;
  ~DefaultTelemetryGuard() { degrade::SetDefaultTelemetry(saved_); }

  // What will be restored.
  degrade::Telemetry* saved() const { return saved_; }

 private:
  degrade::Telemetry* const saved_;
};

// SetThreadStartHookForTesting (degrade/detail/thread_start.hpp).
class ThreadStartHookGuard {
 public:
  ThreadStartHookGuard()
      : saved_(degrade::detail::ThreadStartHookSlot().load()) {}
  explicit ThreadStartHookGuard(degrade::detail::ThreadStartHook hook)
      : ThreadStartHookGuard() {
    degrade::detail::SetThreadStartHookForTesting(hook);
  }
  ThreadStartHookGuard(const ThreadStartHookGuard&) = delete;
  ThreadStartHookGuard& operator=(const ThreadStartHookGuard&) = delete;
  ~ThreadStartHookGuard() {
    degrade::detail::SetThreadStartHookForTesting(saved_);
  }

 private:
  const degrade::detail::ThreadStartHook saved_;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_PROCESS_DEFAULTS_HPP_
