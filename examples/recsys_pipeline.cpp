// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// recsys_pipeline: a small recommendation service (features -> recall ->
// rank -> rerank, each stage behind its own circuit breaker, 100 ms budget
// and Plan B) on mock backends, driven through a scripted outage on
// simulated time:
//
//   healthy -> feature service down -> recall down -> ranking hanging ->
//   re-ranking throwing -> everything down -> recovery
//
// 20 s per phase, one request every 100 ms (about 1400 requests), all on a
// FakeClock, so it needs no external service and finishes in well under a
// second. For each phase it prints: requests, the share with a non-empty
// result, the mean degradation depth (stages that served their Plan B), which
// stages degraded and why, the breaker states at the end of the phase, and
// the simulated latency p50/p99. At the end: per-stage fallback counts and
// the depth distribution, read back from the pipeline's `StageMetrics`, and
// the event log's breaker lines (rate-limited per key).
//
// `--metrics-out FILE` also writes the Prometheus exposition of the run
// (every breaker, the hot list, the stage metrics) to FILE; CI checks it
// with `promtool check metrics`.
//
// The ranker reads its input's degradation tag: on default features (the
// global mean, which says nothing about the user) it lowers their weight;
// the "ranked on default features" line counts those requests.
//
// Budgets are enforced cooperatively on the simulated clock (see
// recsys/pipeline.hpp); in production `degrade::CallWithTimeout` cuts a
// blocking call off at the budget with a real thread pool.
//
// The hot list (recall's Plan B) is a built-in snapshot of 200 items. With
// `--redis host:port[/key]` (key default `hot_items`) it is read instead from
// that Redis sorted set, members being numeric item ids and scores their
// popularity, through degrade/redis/hot_list_source.hpp; if that read fails
// the demo says why and serves the built-in snapshot. Redis support is
// compiled in only when hiredis was found (DEGRADE_HAVE_REDIS).
//
// Exits 1 if any request came back empty, 2 on a bad argument, 0 otherwise.
//
//   build/dev/examples/recsys_pipeline [--metrics-out FILE]
//   redis-cli ZADD hot_items 0.99 1001 0.98 1002 0.97 1003
//   build/dev/examples/recsys_pipeline --redis 127.0.0.1:6379/hot_items

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metrics.hpp"
#include "degrade/stage_result.hpp"
#include "recsys/pipeline.hpp"

#if DEGRADE_HAVE_REDIS
#include <memory>

#include "degrade/redis/hot_list_source.hpp"
#endif

namespace {

struct PhaseStats {
  uint64_t requests = 0;
  uint64_t non_empty = 0;
  uint64_t depth_sum = 0;
  uint64_t ranked_on_defaults = 0;
  // "stage:reason" -> requests, ordered by stage (request order) then
  // reason, so the table reads like the pipeline.
  std::map<std::pair<std::size_t, std::string>, uint64_t> degraded;
  std::vector<absl::Duration> latencies;
  std::map<std::string, uint64_t> traces;  // encoded trace -> requests
};

// The q-quantile (nearest rank) of `v`, which it sorts.
absl::Duration Quantile(std::vector<absl::Duration>& v, double q) {
  if (v.empty()) return absl::ZeroDuration();
  std::sort(v.begin(), v.end());
  std::size_t rank =
      static_cast<std::size_t>(q * static_cast<double>(v.size()));
  if (rank >= v.size()) rank = v.size() - 1;
  return v[rank];
}

// Milliseconds with one decimal, so an instant answer reads "0.0 ms".
std::string Ms(absl::Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", absl::ToDoubleMilliseconds(d));
  return buf;
}

std::size_t StageIndexOf(absl::string_view stage) {
  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    if (recsys::kStageNames[s] == stage) return s;
  }
  return recsys::kStages;
}

struct RedisAddress {
  std::string host;
  int port = 0;
  std::string key = "hot_items";
};

// Parses "host:port[/key]".
absl::StatusOr<RedisAddress> ParseRedisAddress(absl::string_view text) {
  RedisAddress a;
  absl::string_view addr = text;
  if (const std::size_t slash = text.find('/');
      slash != absl::string_view::npos) {
    addr = text.substr(0, slash);
    a.key = std::string(text.substr(slash + 1));
  }
  const std::size_t colon = addr.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(addr.substr(colon + 1), &a.port) || a.key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--redis ", text, ": expected host:port[/key], e.g. 127.0.0.1:6379"));
  }
  a.host = std::string(addr.substr(0, colon));
  return a;
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--metrics-out FILE] [--redis host:port[/key]]\n",
               argv0);
  return 2;
}

#if DEGRADE_HAVE_REDIS
// A hot-list member is an item id; its score is the item's popularity.
absl::StatusOr<recsys::Candidate> CandidateFromMember(
    const degrade::redis::ScoredMember& m) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(m.member, &id)) {
    return absl::InvalidArgumentError("not a numeric item id");
  }
  return recsys::Candidate{id, static_cast<float>(m.score), 0};
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const char* metrics_out = nullptr;
  std::optional<RedisAddress> redis_address;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--redis" && i + 1 < argc) {
      absl::StatusOr<RedisAddress> a = ParseRedisAddress(argv[++i]);
      if (!a.ok()) {
        std::fprintf(stderr, "%s\n", std::string(a.status().message()).c_str());
        return Usage(argv[0]);
      }
      redis_address = *std::move(a);
    } else if (arg == "--metrics-out" && i + 1 < argc) {
      metrics_out = argv[++i];
    } else {
      return Usage(argv[0]);
    }
  }

  // The hot list's source, when one was given. It must outlive the
  // pipeline, whose hot list calls it.
  recsys::HotSource hot_source;
#if DEGRADE_HAVE_REDIS
  std::unique_ptr<degrade::redis::HotListSource> redis;
  if (redis_address.has_value()) {
    degrade::redis::HotListSourceOptions rs;
    rs.host = redis_address->host;
    rs.port = redis_address->port;
    rs.key = redis_address->key;
    rs.top_n = recsys::kHotListSize;
    absl::StatusOr<std::unique_ptr<degrade::redis::HotListSource>> created =
        degrade::redis::HotListSource::Create(rs);
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
      return 2;
    }
    redis = *std::move(created);
    hot_source = redis->SourceFor<recsys::Candidate>(&CandidateFromMember);
  }
#else
  if (redis_address.has_value()) {
    std::fprintf(stderr,
                 "--redis: this build has no Redis support (hiredis was not "
                 "found; on Debian: apt-get install libhiredis-dev, then "
                 "configure again)\n");
    return 2;
  }
#endif

  degrade::FakeClock clock;
  // A registry of the demo's own, whose event log keeps its lines for the
  // summary instead of writing them to stderr. The rate limit runs on the
  // simulated clock, like everything else here.
  std::vector<std::string> log_lines;
  degrade::EventLogOptions log;
  log.sink = [&log_lines](absl::string_view line) {
    log_lines.emplace_back(line);
  };
  log.clock = &clock;
  degrade::MetricsRegistry registry(std::move(log));
  recsys::Pipeline pipeline(&clock, &registry, "recsys", hot_source);

  const std::vector<recsys::Phase>& script = recsys::OutageScript();
  std::vector<PhaseStats> phases(script.size());
  uint64_t total = 0;
  uint64_t empty = 0;

  std::printf(
      "recsys_pipeline: features -> recall -> rank -> rerank; breakers trip "
      "after %d consecutive failures and stay open %s; stage budget %s.\n"
      "Phases of %s, one request every %s (simulated time).\n",
      static_cast<int>(recsys::kTripAfterFailures),
      absl::FormatDuration(recsys::kBreakerTimeout).c_str(),
      absl::FormatDuration(recsys::kStageBudget).c_str(),
      absl::FormatDuration(recsys::kPhaseLength).c_str(),
      absl::FormatDuration(recsys::kRequestInterval).c_str());
  if (redis_address.has_value()) {
    // Only with --redis, so the default output stays as it was.
    if (pipeline.hot_list_status().ok()) {
      std::printf("Hot list: %zu items from redis %s:%d key '%s'.\n",
                  pipeline.hot_list_size(), redis_address->host.c_str(),
                  redis_address->port, redis_address->key.c_str());
    } else {
      std::printf(
          "Hot list: reading it from Redis failed, serving the built-in "
          "snapshot:\n  %s\n",
          pipeline.hot_list_status().ToString().c_str());
    }
  }

  recsys::RunScript(
      clock, pipeline,
      [&](std::size_t p, absl::Duration, uint64_t, const recsys::Response& r) {
        PhaseStats& st = phases[p];
        const degrade::DegradationTrace& trace = r.result.trace();
        ++st.requests;
        ++total;
        if (!r.result.value().empty()) {
          ++st.non_empty;
        } else {
          ++empty;
        }
        st.depth_sum += trace.depth();
        if (r.ranked_on_default_features) ++st.ranked_on_defaults;
        for (const degrade::TraceEntry& e : trace) {
          const std::size_t s = StageIndexOf(e.stage());
          ++st.degraded[{s, std::string(degrade::ReasonName(e.reason()))}];
        }
        st.latencies.push_back(r.latency);
        ++st.traces[trace.Encode()];
      },
      [&](std::size_t p) {
        PhaseStats& st = phases[p];
        std::printf("\n== phase %zu: %s ==\n", p + 1, script[p].name.c_str());
        std::printf("  %-22s %llu\n", "requests",
                    static_cast<unsigned long long>(st.requests));
        std::printf("  %-22s %.1f%%\n", "non-empty",
                    st.requests == 0
                        ? 0.0
                        : 100.0 * static_cast<double>(st.non_empty) /
                              static_cast<double>(st.requests));
        std::printf("  %-22s %.2f\n", "mean depth",
                    st.requests == 0 ? 0.0
                                     : static_cast<double>(st.depth_sum) /
                                           static_cast<double>(st.requests));
        std::vector<std::string> degraded;
        for (const auto& [key, n] : st.degraded) {
          const std::string stage =
              key.first < recsys::kStages
                  ? std::string(recsys::kStageNames[key.first])
                  : "?";
          degraded.push_back(absl::StrCat(stage, ":", key.second, " ", n));
        }
        std::printf(
            "  %-22s %s\n", "degraded (stage:why)",
            degraded.empty() ? "-" : absl::StrJoin(degraded, ", ").c_str());
        // The most common trace, as a response header would carry it.
        const auto common = std::max_element(
            st.traces.begin(), st.traces.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
        if (common != st.traces.end()) {
          std::printf("  %-22s %s (%llu requests)\n", "most common trace",
                      common->first.c_str(),
                      static_cast<unsigned long long>(common->second));
        }
        std::vector<std::string> states;
        for (std::size_t s = 0; s < recsys::kStages; ++s) {
          states.push_back(
              absl::StrCat(recsys::kStageNames[s], "=",
                           degrade::StateName(pipeline.BreakerState(s))));
        }
        std::printf("  %-22s %s\n", "breakers at end",
                    absl::StrJoin(states, " ").c_str());
        std::printf("  %-22s %llu (personal-score weight 0.8 -> 0.2)\n",
                    "ranked on defaults",
                    static_cast<unsigned long long>(st.ranked_on_defaults));
        const absl::Duration p50 = Quantile(st.latencies, 0.50);
        const absl::Duration p99 = Quantile(st.latencies, 0.99);
        std::printf("  %-22s p50 %s, p99 %s\n", "latency (simulated)",
                    Ms(p50).c_str(), Ms(p99).c_str());
      });

  std::printf("\n== totals ==\n");
  std::printf("  %-22s %llu\n", "requests",
              static_cast<unsigned long long>(total));
  std::printf("  %-22s %llu\n", "empty results",
              static_cast<unsigned long long>(empty));
  // From the metrics the pipeline exports (degrade_fallbacks_total and the
  // degrade_request_degraded_stages histogram).
  const degrade::StageMetrics& metrics = pipeline.stage_metrics();
  std::printf("  fallbacks served per stage:\n");
  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    uint64_t n = 0;
    for (degrade::DegradeReason r : degrade::kAllDegradeReasons) {
      n += metrics.fallbacks(recsys::kStageNames[s], r);
    }
    std::printf("    %-10s %llu\n", std::string(recsys::kStageNames[s]).c_str(),
                static_cast<unsigned long long>(n));
  }
  std::printf("  degradation depth distribution:\n");
  for (std::size_t d = 0; d <= recsys::kStages; ++d) {
    const uint64_t n = metrics.requests_at_depth(d);
    std::printf("    depth %zu    %5llu  (%.1f%%)\n", d,
                static_cast<unsigned long long>(n),
                total == 0 ? 0.0
                           : 100.0 * static_cast<double>(n) /
                                 static_cast<double>(total));
  }
  std::printf(
      "  event log: %llu lines written, %llu suppressed by the "
      "per-key limit; the first breaker changes:\n",
      static_cast<unsigned long long>(registry.log().written_total()),
      static_cast<unsigned long long>(registry.log().suppressed_total()));
  std::size_t shown = 0;
  std::size_t breaker_lines = 0;
  for (const std::string& line : log_lines) {
    if (line.find("breaker_state_change") == std::string::npos) continue;
    if (++breaker_lines <= 4) {
      std::printf("    %s\n", line.c_str());
      ++shown;
    }
  }
  if (breaker_lines > shown) {
    std::printf("    ... and %zu more\n", breaker_lines - shown);
  }
  if (metrics_out != nullptr) {
    std::ofstream out(metrics_out, std::ios::binary | std::ios::trunc);
    out << registry.RenderPrometheus();
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", metrics_out);
      return 2;
    }
    std::printf("  metrics (Prometheus text format) written to %s\n",
                metrics_out);
  }

  if (empty != 0) {
    std::printf("\nFAIL: %llu request(s) came back empty\n",
                static_cast<unsigned long long>(empty));
    return 1;
  }
  std::printf("\nOK: every request got a non-empty result\n");
  return 0;
}
