// breaker_basics: a CircuitBreaker<std::string> in front of a flaky backend,
// on the real clock.
//
// The backend answers normally, is down from 0.5 s to 2.6 s, then recovers.
// One call every 180 ms; the breaker trips after 3 consecutive failures and
// stays open for 1 s. Expected story (about 4 s):
//
//   closed     the first calls succeed
//   closed -> open        three failures in a row trip the breaker
//   open       calls are rejected at once; the backend is not called
//   open -> half-open     after 1 s a single probe is let through...
//   half-open -> open     ...it fails (the backend is still down): open again
//   open -> half-open     1 s later another probe...
//   half-open -> closed   ...succeeds (the backend is back): closed
//
// Exits 0 if all of those transitions were seen, 1 otherwise.
//
//   ./cmake/run.sh demo        (or build/dev/examples/breaker_basics)
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "degrade/degrade.hpp"

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kCallPeriod{180};
constexpr std::chrono::milliseconds kOutageStart{500};
constexpr std::chrono::milliseconds kOutageEnd{2600};
constexpr int kCalls = 21;

long long MillisSince(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             SteadyClock::now() - start)
      .count();
}

// The flaky dependency: down during [kOutageStart, kOutageEnd).
class FlakyBackend {
 public:
  explicit FlakyBackend(SteadyClock::time_point start) : start_(start) {}

  absl::StatusOr<std::string> Fetch() {
    ++calls_;
    const auto now = SteadyClock::now() - start_;
    if (now >= kOutageStart && now < kOutageEnd) {
      return absl::UnavailableError("recall service: connection refused");
    }
    return absl::StrCat("recall list #", calls_);
  }

 private:
  SteadyClock::time_point start_;
  int calls_ = 0;
};

}  // namespace

int main() {
  const SteadyClock::time_point start = SteadyClock::now();
  FlakyBackend backend(start);
  std::vector<std::string> transitions;

  degrade::BreakerSettings settings;
  settings.name = "recall";
  settings.timeout = absl::Seconds(1);  // how long the breaker stays open
  settings.ready_to_trip = degrade::trip::ConsecutiveFailures(3);
  settings.on_state_change = [&](const std::string& name, degrade::State from,
                                 degrade::State to) {
    const std::string t =
        absl::StrCat(degrade::StateName(from), " -> ", degrade::StateName(to));
    std::printf("[%5lld ms]   >> breaker '%s': %s\n", MillisSince(start),
                name.c_str(), t.c_str());
    transitions.push_back(t);
  };
  // settings.clock stays nullptr: the real clock.
  degrade::CircuitBreaker<std::string> breaker(settings);

  std::printf(
      "breaker_basics: backend down from %lld ms to %lld ms; a call every "
      "%lld ms; trip after 3 consecutive failures; open for 1 s\n\n",
      static_cast<long long>(kOutageStart.count()),
      static_cast<long long>(kOutageEnd.count()),
      static_cast<long long>(kCallPeriod.count()));

  for (int i = 0; i < kCalls; ++i) {
    // Absolute schedule, so the calls don't drift relative to the outage and
    // the 1 s open timeout.
    std::this_thread::sleep_until(start + i * kCallPeriod);
    const long long at = MillisSince(start);
    const degrade::State before = breaker.state();
    absl::StatusOr<std::string> result =
        breaker.Execute([&backend] { return backend.Fetch(); });
    const degrade::State after = breaker.state();

    std::string outcome;
    if (result.ok()) {
      outcome = absl::StrCat("ok: ", *result);
    } else if (degrade::IsBreakerOpen(result.status())) {
      outcome = "rejected: breaker open (backend not called)";
    } else if (degrade::IsTooManyRequests(result.status())) {
      outcome = "rejected: too many requests in half-open";
    } else {
      outcome = absl::StrCat("failed: ", result.status().message());
    }
    std::printf("[%5lld ms] call %2d  %-9s -> %-9s  %s\n", at, i + 1,
                std::string(degrade::StateName(before)).c_str(),
                std::string(degrade::StateName(after)).c_str(),
                outcome.c_str());
  }

  const degrade::Counts counts = breaker.counts();
  std::printf(
      "\nfinal state: %s; counts since the last reset: requests=%u "
      "successes=%u failures=%u\n",
      std::string(degrade::StateName(breaker.state())).c_str(),
      static_cast<unsigned>(counts.requests),
      static_cast<unsigned>(counts.total_successes),
      static_cast<unsigned>(counts.total_failures));
  std::printf("transitions: %s\n", absl::StrJoin(transitions, ", ").c_str());

  const std::vector<std::string> expected = {
      "closed -> open", "open -> half-open", "half-open -> open",
      "open -> half-open", "half-open -> closed"};
  if (transitions != expected || breaker.state() != degrade::State::kClosed) {
    std::printf("unexpected transitions; expected: %s\n",
                absl::StrJoin(expected, ", ").c_str());
    return 1;
  }
  std::printf("closed -> open -> half-open -> closed: as expected\n");
  return 0;
}
