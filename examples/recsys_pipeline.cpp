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
// FakeClock, so it needs no external service and this first part finishes
// in well under a second. For each phase it prints: requests, the share
// with a non-empty result, the mean degradation depth (stages that served
// their Plan B), which stages degraded and why, the breaker states at the
// end of the phase, and the simulated latency p50/p99. At the end:
// per-stage fallback counts and the depth distribution, read back from the
// pipeline's `StageMetrics`, and the event log's breaker lines
// (rate-limited per key).
//
// `--metrics-out FILE` also writes the Prometheus exposition of the run
// (every breaker, the hot list, the stage metrics) to FILE; CI checks it
// with `promtool check metrics`.
//
// The ranker reads its input's degradation tag: on default features (the
// global mean, which says nothing about the user) it lowers their weight
// (recsys::PersonalWeight, by the rung `tier()` names: 0.8 fresh ... 0.2
// global); the "ranked on default features" line counts those requests.
//
// Part 2 (after the scripted outage; `--no-ladder` skips it, `--ladder-only`
// runs only it): the feature stage on a last-known-good ladder
// (degrade::Ladder: fresh -> the user's own stale features -> segment mean
// -> global mean) at scale, examples/recsys/ladder_sim.hpp. 10,000,000 users
// drawn from Zipf(0.9) at 5,000 requests per simulated second, 39 country x
// platform segments, a LastGoodCache of 1,000,000 entries (10% of users,
// 16 floats each), a RecoveryRamp over 20 s; warm 400 s, the feature store
// down 60 s, recovery 40 s. At this commit (Release build):
//
//   phase        own features  oracle (top 10%)  segment  global
//   store down   64.5%         74.7%             98,363   8,257
//   cached users in the outage: 193,380 requests, all stale, 0 defaults
//   recovery: store calls 0.12 -> 1.00x the pre-outage rate along the
//   ramp, max 1.00x (target <= 1.2x)
//   quality (cosine with the true vector): fresh 1.000, stale-1m 1.000,
//   stale-10m 0.999, segment 0.813, global 0.692
//   cache: 134.9 MB charged after warm (160 bytes per entry); 2.3-2.9 s
//   of CPU in all
//
// A missed target (a cached user not served stale, a default served to a
// cached user, the recovery above 1.2x) prints MISSED: and exits 1.
// docs/examples/recsys-demo.md explains the figures.
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
// Exits 1 if any request came back empty or part 2 missed a target, 2 on a
// bad argument, 0 otherwise.
//
//   build/dev/examples/recsys_pipeline [--metrics-out FILE] [--no-ladder]
//   build/rel/examples/recsys_pipeline --ladder-only   # Release, timed
//   redis-cli ZADD hot_items 0.99 1001 0.98 1002 0.97 1003
//   build/dev/examples/recsys_pipeline --redis 127.0.0.1:6379/hot_items

#include <algorithm>
#include <array>
#include <chrono>
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
#include "recsys/ladder_sim.hpp"
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
               "usage: %s [--metrics-out FILE] [--redis host:port[/key]] "
               "[--no-ladder]\n       %s --ladder-only\n",
               argv0, argv0);
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

// "1,234,567", for the large counts of the ladder part.
std::string Count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                whole == 0 ? 0.0
                           : 100.0 * static_cast<double>(part) /
                                 static_cast<double>(whole));
  return buf;
}

// Part 2: the feature stage on a last-known-good ladder, at scale.
// Returns the number of targets missed.
int RunLadderPart(const recsys::ladder_sim::Config& config) {
  namespace ls = recsys::ladder_sim;
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<ls::Report> run = ls::Run(config);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (!run.ok()) {
    std::printf("\nFAIL: the ladder part could not start: %s\n",
                run.status().ToString().c_str());
    return 1;
  }
  const ls::Report& r = *run;
  std::printf(
      "\n== part 2: the feature stage on a last-known-good ladder ==\n"
      "%s users drawn from Zipf(%.1f), %s requests per simulated second; "
      "%zu segments (country x platform), the %zu of a new market without a "
      "segment default.\n"
      "Ladder: fresh -> the user's own last good features (LastGoodCache, "
      "%s entries = %.0f%% of users, %zu floats each, stale_if_error %s) -> "
      "segment mean -> global mean; breaker opens after 3 failures for %s; "
      "recovery ramp 10%% -> 100%% of the pre-outage rate over %s.\n",
      Count(config.users).c_str(), config.zipf_s,
      Count(static_cast<uint64_t>(config.rate)).c_str(),
      ls::Population::kSegments, ls::Population::kPlatforms,
      Count(config.cache_entries).c_str(),
      100.0 * static_cast<double>(config.cache_entries) /
          static_cast<double>(config.users),
      config.dimension, absl::FormatDuration(config.stale_if_error).c_str(),
      absl::FormatDuration(config.breaker_timeout).c_str(),
      absl::FormatDuration(config.ramp_period).c_str());

  std::printf("\n  %-24s %10s", "phase", "requests");
  for (std::size_t k = 0; k + 1 < ls::kRungs; ++k) {
    std::printf(" %10s", std::string(ls::kRungNames[k]).c_str());
  }
  std::printf(" %10s %10s\n", "own", "oracle");
  for (const ls::PhaseReport& ph : r.phases) {
    const std::string name =
        absl::StrCat(ph.name, " (", absl::FormatDuration(ph.length), ")");
    std::printf("  %-24s %10s", name.c_str(), Count(ph.requests).c_str());
    for (std::size_t k = 0; k + 1 < ls::kRungs; ++k) {
      std::printf(" %10s", Count(ph.rungs[k].requests).c_str());
    }
    std::printf(" %10s %10s\n", Percent(ph.own, ph.requests).c_str(),
                Percent(ph.oracle, ph.requests).c_str());
  }
  std::printf(
      "  (own: served the user's own features, fresh or stale; oracle: "
      "requests from the %s most frequent users, what a cache holding "
      "exactly them would serve)\n",
      Count(config.cache_entries).c_str());

  const ls::PhaseReport& warm = r.phases[0];
  std::printf(
      "\n  warm: %s requests; the cache then held %s entries, %s of the %s "
      "most frequent users, who make %.1f%% of their requests; %.1f MB "
      "charged (%.0f bytes per entry)\n",
      Count(warm.requests).c_str(), Count(r.cache_after_warm.entries).c_str(),
      Count(r.hot_held).c_str(), Count(config.cache_entries).c_str(),
      100.0 * r.hot_traffic_held,
      static_cast<double>(r.cache_after_warm.bytes) / (1 << 20),
      r.cache_after_warm.entries == 0
          ? 0.0
          : static_cast<double>(r.cache_after_warm.bytes) /
                static_cast<double>(r.cache_after_warm.entries));

  for (std::size_t p = 1; p < r.phases.size(); ++p) {
    const ls::PhaseReport& ph = r.phases[p];
    const uint64_t stale = ph.ladder.stale_total();
    std::printf("  %s: stale ages served:", ph.name.c_str());
    static constexpr std::array<const char*, 7> kAgeLabels = {
        "<=10s", "<=1m", "<=10m", "<=1h", "<=6h", "<=24h", ">24h"};
    for (std::size_t b = 0; b < ph.ladder.stale_age_buckets.size(); ++b) {
      if (ph.ladder.stale_age_buckets[b] == 0) continue;
      std::printf(" %s %s", kAgeLabels[b],
                  Count(ph.ladder.stale_age_buckets[b]).c_str());
    }
    std::printf("%s; mean %.0f s\n", stale == 0 ? " none" : "",
                stale == 0 ? 0.0
                           : ph.ladder.stale_age_sum_seconds /
                                 static_cast<double>(stale));
    std::printf(
        "    cached users' requests %s: stale %s, segment %s, global %s; "
        "store calls %s, refused by the ramp %s\n",
        Count(ph.cached).c_str(), Count(ph.cached_stale).c_str(),
        Count(ph.cached_segment).c_str(), Count(ph.cached_global).c_str(),
        Count(ph.store_calls).c_str(), Count(ph.ladder.ramp_refused).c_str());
  }

  std::printf(
      "\n  feature store calls per second in the recovery, as a share of the "
      "pre-outage %.0f/s (cap: the ramp's admitted share at the second's "
      "start, - = none):\n",
      r.pre_outage_rate);
  for (std::size_t s = 0; s < r.recovery_ratio.size(); s += 10) {
    std::printf("    +%2zus  calls", s);
    for (std::size_t i = s; i < s + 10 && i < r.recovery_ratio.size(); ++i) {
      std::printf(" %5.2f", r.recovery_ratio[i]);
    }
    std::printf("\n           cap  ");
    for (std::size_t i = s; i < s + 10 && i < r.recovery_cap.size(); ++i) {
      if (r.recovery_cap[i] < 0) {
        std::printf("     -");
      } else {
        std::printf(" %5.2f", r.recovery_cap[i]);
      }
    }
    std::printf("\n");
  }
  std::printf("    max %.2fx the pre-outage rate (target <= 1.2x)\n",
              r.max_recovery_ratio);

  std::printf(
      "\n  quality proxy per rung (not gated): mean cosine of the served "
      "vector with the user's true vector now; the ranker's personal "
      "weight\n");
  for (std::size_t k = 0; k + 1 < ls::kRungs; ++k) {
    ls::RungTally all;
    for (const ls::PhaseReport& ph : r.phases) {
      all.requests += ph.rungs[k].requests;
      all.cosine_sum += ph.rungs[k].cosine_sum;
    }
    static constexpr std::array<degrade::FallbackTier, ls::kRungs - 1> kTier = {
        degrade::FallbackTier::kUnspecified, degrade::FallbackTier::kStale1m,
        degrade::FallbackTier::kStale10m,    degrade::FallbackTier::kStale1h,
        degrade::FallbackTier::kStaleOld,    degrade::FallbackTier::kSegment,
        degrade::FallbackTier::kGlobal};
    if (all.requests == 0) {
      std::printf("    %-10s %10s requests\n",
                  std::string(ls::kRungNames[k]).c_str(), "0");
      continue;
    }
    std::printf("    %-10s %10s requests  cosine %.3f  weight %.2f\n",
                std::string(ls::kRungNames[k]).c_str(),
                Count(all.requests).c_str(), all.mean_cosine(),
                recsys::PersonalWeight(kTier[k], k >= 5));
  }
  std::printf(
      "\n  cache at the end: %s entries, %.1f MB charged, %s "
      "evicted for room\n",
      Count(r.cache_at_end.entries).c_str(),
      static_cast<double>(r.cache_at_end.bytes) / (1 << 20),
      Count(r.cache_at_end.evictions_size).c_str());
  std::printf("  ran in %.2f s (wall) for %s s of simulated time\n", wall,
              Count(static_cast<uint64_t>(absl::ToInt64Seconds(
                        config.warm + config.outage + config.recovery)))
                  .c_str());

  const std::vector<std::string> missed = ls::MissedTargets(r);
  for (const std::string& m : missed) {
    std::printf("  MISSED: %s\n", m.c_str());
  }
  if (missed.empty()) {
    std::printf(
        "  targets met: cached users served stale through the outage, no "
        "segment or global default for a cached user, the store's recovery "
        "rate <= 1.2x its pre-outage rate\n");
  }
  return static_cast<int>(missed.size());
}

}  // namespace

int main(int argc, char** argv) {
  const char* metrics_out = nullptr;
  std::optional<RedisAddress> redis_address;
  bool with_ladder = true;
  bool ladder_only = false;
  const recsys::ladder_sim::Config ladder_config;
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
    } else if (arg == "--no-ladder") {
      with_ladder = false;
    } else if (arg == "--ladder-only") {
      ladder_only = true;
    } else {
      return Usage(argv[0]);
    }
  }

  if (ladder_only) {
    if (!with_ladder || metrics_out != nullptr || redis_address.has_value()) {
      return Usage(argv[0]);
    }
    return RunLadderPart(ladder_config) == 0 ? 0 : 1;
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
  } else {
    std::printf("\nOK: every request got a non-empty result\n");
  }
  const int missed = with_ladder ? RunLadderPart(ladder_config) : 0;
  return empty != 0 || missed != 0 ? 1 : 0;
}
