// The consumer program of both package tests (find_package and
// add_subdirectory; DEGRADE_CONSUMER_KIND names which). Exits 0 only if the
// breaker behaves as documented with default settings, and, when built
// against degrade::redis (DEGRADE_CONSUMER_REDIS), the Redis adapter's header
// compiles, links against hiredis and validates its settings; against
// degrade::grpc (DEGRADE_CONSUMER_GRPC), the gRPC adapter's header compiles,
// links against gRPC and maps a status with its pushback; against
// degrade::etcd (DEGRADE_CONSUMER_ETCD), the etcd watcher compiles, links
// against cpp-httplib and validates its options.
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/degrade.hpp"

#if DEGRADE_CONSUMER_REDIS
#include "degrade/redis/hot_list_source.hpp"
#endif
#if DEGRADE_CONSUMER_GRPC
#include "degrade/grpc/status.hpp"
#endif
#if DEGRADE_CONSUMER_ETCD
#include "degrade/etcd/watcher.hpp"
#endif

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  degrade::FakeClock clock;
  degrade::BreakerSettings settings;
  settings.name = "consumer";
  settings.clock = &clock;
  int transitions = 0;
  settings.on_state_change = [&transitions](const std::string&, degrade::State,
                                            degrade::State) { ++transitions; };
  degrade::CircuitBreaker<std::string> cb(settings);

  Check(cb.state() == degrade::State::kClosed, "starts closed");

  int calls = 0;
  auto fail = [&calls]() -> absl::StatusOr<std::string> {
    ++calls;
    return absl::UnavailableError("backend down");
  };
  auto succeed = [&calls]() -> absl::StatusOr<std::string> {
    ++calls;
    return std::string("ok");
  };

  // Default ready_to_trip: more than 5 consecutive failures.
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::string> r = cb.Execute(fail);
    Check(!r.ok() && !degrade::IsBreakerOpen(r.status()),
          "failures 1-5 are the callable's own errors");
  }
  Check(cb.state() == degrade::State::kClosed, "still closed after 5 failures");
  Check(cb.counts().consecutive_failures == 5,
        "5 consecutive failures counted");

  (void)cb.Execute(fail);
  Check(cb.state() == degrade::State::kOpen, "open after the 6th failure");
  Check(calls == 6, "callable ran 6 times");

  absl::StatusOr<std::string> rejected = cb.Execute(succeed);
  Check(!rejected.ok() && degrade::IsBreakerOpen(rejected.status()),
        "open breaker rejects with IsBreakerOpen");
  Check(!degrade::IsTooManyRequests(rejected.status()),
        "an open rejection is not too-many-requests");
  Check(calls == 6, "open breaker does not run the callable");

  // Default timeout (60 s) later the breaker lets a probe through.
  clock.Advance(absl::Seconds(61));
  absl::StatusOr<std::string> probe = cb.Execute(succeed);
  Check(probe.ok() && *probe == "ok", "half-open probe succeeds");
  Check(cb.state() == degrade::State::kClosed,
        "closed after a successful half-open probe");
  Check(transitions == 3, "closed->open->half-open->closed reported");
  Check(degrade::StateName(degrade::State::kHalfOpen) == "half-open",
        "StateName");

#if DEGRADE_CONSUMER_REDIS
  degrade::redis::HotListSourceSettings rs;
  rs.key = "hot_items";
  rs.port = 0;
  Check(absl::IsInvalidArgument(
            degrade::redis::HotListSource::Create(rs).status()),
        "redis: port 0 is refused");
  rs.port = 6379;
  auto source = degrade::redis::HotListSource::Create(rs);
  Check(source.ok() && !(*source)->connected(),
        "redis: Create validates and does not connect");
#endif

#if DEGRADE_CONSUMER_GRPC
  const absl::Status unavailable = degrade::grpc::FromGrpcStatus(
      ::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "down"));
  Check(absl::IsUnavailable(unavailable) && unavailable.message() == "down",
        "grpc: UNAVAILABLE crosses with its message");
  Check(degrade::grpc::ParsePushback("-1") < absl::ZeroDuration(),
        "grpc: pushback -1 is do-not-retry");
  Check(degrade::grpc::ToGrpcReply(degrade::ShedError("consumer", "busy"),
                                   nullptr)
                .error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED,
        "grpc: a shed replies RESOURCE_EXHAUSTED");
#endif

#if DEGRADE_CONSUMER_ETCD
  degrade::etcd::EtcdWatcherOptions eo;
  eo.endpoint = "127.0.0.1:0";
  degrade::etcd::EtcdPrefixWatcher watcher(eo);
  Check(absl::IsInvalidArgument(watcher.Start()),
        "etcd: port 0 is refused");
  Check(degrade::detail::etcd::PrefixEnd("a") == "b",
        "etcd: the range end of a prefix");
#endif

  if (failures != 0) return 1;
  std::printf("%s consumer: OK\n", DEGRADE_CONSUMER_KIND);
  return 0;
}
