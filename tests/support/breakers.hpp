// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Breakers for the fallback tests: one on a fake clock with the default
// trip rule (more than 5 consecutive failures), and a way to open it.

#ifndef DEGRADE_TESTS_SUPPORT_BREAKERS_HPP_
#define DEGRADE_TESTS_SUPPORT_BREAKERS_HPP_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "gtest/gtest.h"

namespace degrade_tests {

template <typename T>
std::unique_ptr<degrade::CircuitBreaker<T>> MakeBreaker(
    const degrade::FakeClock* clock, std::string name) {
  degrade::BreakerSettings s;
  s.name = std::move(name);
  s.clock = clock;
  return std::make_unique<degrade::CircuitBreaker<T>>(std::move(s));
}

// Fails six calls in a row, which opens a breaker with the default rule.
template <typename T>
void Trip(degrade::CircuitBreaker<T>& cb) {
  for (int i = 0; i < 6; ++i) {
    (void)cb.Execute(
        []() -> absl::StatusOr<T> { return absl::UnavailableError("down"); });
  }
  ASSERT_EQ(cb.state(), degrade::State::kOpen);
}

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_BREAKERS_HPP_
