// Hygiene check: the public headers compile, and a breaker works, with
// -fno-exceptions (DESIGN.md: "the headers also compile with -fno-exceptions").
// Built by tests/CMakeLists.txt as degrade_no_exceptions; ctest runs it.
#include <cstdio>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "degrade/degrade.hpp"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "this file must be compiled with -fno-exceptions"
#endif

int main() {
  degrade::FakeClock clock;
  degrade::BreakerSettings settings;
  settings.name = "no-exceptions";
  settings.clock = &clock;
  degrade::CircuitBreaker<int> cb(settings);

  absl::StatusOr<int> r =
      cb.Execute([]() -> absl::StatusOr<int> { return 42; });
  if (!r.ok() || *r != 42) {
    std::fprintf(stderr, "Execute returned %s\n",
                 r.status().ToString().c_str());
    return 1;
  }
  if (cb.counts().total_successes != 1) {
    std::fprintf(stderr, "expected one success\n");
    return 1;
  }
  // The JSON layer must reject bad input without exceptions too.
  absl::StatusOr<degrade::DegradationConfig> bad =
      degrade::ParseDegradationConfig("{\"degradation\": [", "hygiene");
  if (bad.ok()) {
    std::fprintf(stderr, "truncated JSON was accepted\n");
    return 1;
  }
  absl::StatusOr<degrade::DegradationConfig> good =
      degrade::ParseDegradationConfig(
          R"({"degradation": {"level1": {"trigger": {"q": 1}}}})", "hygiene");
  if (!good.ok()) {
    std::fprintf(stderr, "%s\n", good.status().ToString().c_str());
    return 1;
  }
  // So must the fleet's kill switch, which parses JSON an operator typed.
  absl::StatusOr<degrade::ControlDocument> control =
      degrade::ParseControlDocument(
          "{\"degrade_control\": {\"version\": ", "hygiene", absl::Now());
  if (control.ok()) {
    std::fprintf(stderr, "a truncated control document was accepted\n");
    return 1;
  }
  return 0;
}
