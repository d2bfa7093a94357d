#!/usr/bin/env python3
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
"""A real Prometheus scrapes examples/metrics_server.

Starts two metrics_server processes on loopback, each holding one phase of
the recommendation pipeline's outage script (--hold-phase), checks their
/metrics with `promtool check metrics` (no error, no lint problem), then
starts `prometheus` with a scrape config pointing at both (scrape interval
1 s), waits until it has scraped them, and asks its HTTP API for:

  up{job="degrade"}                              1 for both targets
  degrade_breaker_state{job="degrade"}           per breaker, see SCENARIOS
  degrade_level{job="degrade",manager="recsys"}  per scenario
  degrade_fallbacks_total{...,stage=<failed>}    > 0
  degrade_admission_threshold{admission="front"} per scenario (OVERLOAD)
  degrade_admission_shed_total, sheddable        > 0 only at level 3
  degrade_limiter_acquired_total, degrade_queue_sojourn_seconds_count,
  degrade_limiter_limit                          > 0 (the overload trio
                                                 in front of the pipeline)
  degrade_fleet_version, degrade_fleet_in_force  3 and 1: the control file
                                                 this test writes (a floor
                                                 of level 1, which changes
                                                 neither scenario's level)
  degrade_file_watcher_last_poll_ok,             1 and >= 1 for that file's
  degrade_file_watcher_reloads_total             watcher ("control")
  degrade_fleet_documents_refused_total          a series per reason
  degrade_etcd_watcher_state,                    3 (outage) and >= 1, when
  degrade_etcd_watcher_outages_total             the server has degrade::etcd:
                                                 it follows an etcd at a port
                                                 where nothing listens
  degrade_default_features_dimension{default_features="features"}  8
  degrade_default_features_reloads_total, accepted                 >= 1
  degrade_default_features_age_seconds           finite, >= 0
  degrade_grpc_client_calls_total                with --grpc (the server was
    {grpc_client="features"}                     built with degrade::grpc):
                                                 outcome "accepted" > 0, and
                                                 "shed" > 0 only at level 3
  degrade_grpc_server_calls_total                outcome "accepted" > 0, and
    {grpc_server="features"}                     "shed" > 0 only at level 3
                                                 (the server's ServerCall
                                                 asks the same admission
                                                 controller as the front)
  degrade_grpc_server_malformed_metadata_total   > 0 (every 20th call sends a
                                                 malformed request class)
  degrade_gpu_source_available{gpu_source="gpu0"}  with --nvml PATH (an NVML
  degrade_gpu_source_reads_total                 library, the test suite's
                                                 fake one from CMake): 1 and
                                                 > 0
  the last-known-good tier ("user_features",     > 0 each, at once: its
  metrics_server_extras.hpp): served fresh,      store's scripted outage
  stale, segment and global; store calls and     (3 s in every 10 s) has
  ramp refusals; ramps begun; cache hits,        run, the breaker has closed
  misses and evictions; coalesced leaders,       and the ramp has let calls
  joins and time-outs; segment lookups hit and   back
  unknown; segment reloads accepted and refused

A breaker that is open reads 1 (half-open) for the instant between its open
timeout and the next request's probe, so the values are polled until they
all match (or the deadline passes) rather than read once.

With --dashboard, every PromQL expression of that Grafana dashboard
(monitoring/grafana/degrade.json) is then run against the same Prometheus
and must return data (a non-empty result), polled until the deadline since
a rate needs two scrapes in its window. The exceptions are the panels on
families this run's servers do not export: the etcd watcher's without
degrade::etcd (not run), the gRPC panels without --grpc, the GPU panels
without --nvml, and always the fleet-quota panels (degrade_quota_*:
redis::ClusterQuota needs a Redis, which metrics_server does not run).
Those must be valid PromQL, which Prometheus checks, but may return
nothing; their series are then checked by name only in the unit tests
(tests/grpc/grpc_{client,server}_test, tests/gpu_signal_test,
tests/redis/redis_quota_test). The local rate limits' panels
(degrade_rate_limit_*, degrade_keyed_rate_limit_*) must return data:
metrics_server runs a RateLimiter and a KeyedRateLimiter.

Every process is stopped in a `finally` block (SIGTERM, then SIGKILL after
a bound); the servers must exit 0 on SIGTERM. Python 3 standard library
only. Exit status 0 on success, 1 on failure, 77 if a tool is missing.

  prometheus_scrape_test.py --server build/dev/examples/metrics_server \
      [--prometheus prometheus] [--promtool promtool] [--timeout 90] \
      [--dashboard monitoring/grafana/degrade.json] [--grpc] \
      [--nvml build/dev/tests/libfake_nvml.so]
"""

import argparse
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

JOB = "degrade"
BREAKERS = ("features", "recall", "rank", "rerank")

# scenario label -> (--hold-phase, breaker states, manager level, stages that
# must have served fallbacks). Breaker states: 0 closed, 1 half-open, 2 open.
SCENARIOS = {
    "recall_down": (
        "recall down",
        {"features": 0, "recall": 2, "rank": 0, "rerank": 0},
        1,
        ("recall",),
    ),
    "everything_down": (
        "everything down",
        {"features": 2, "recall": 2, "rank": 2, "rerank": 2},
        3,
        ("features", "recall", "rank", "rerank"),
    ),
}

# scenario label -> (admission threshold, whether sheddable requests are
# shed). Level 3's "admit" floor in metrics_server admits nothing below
# CRITICAL (threshold 256, FloorRank(SHEDDABLE_PLUS, 0)); level 1 has none.
OVERLOAD = {
    "recall_down": (512, False),
    "everything_down": (256, True),
}
# The control document the servers follow (--control-file): version 3, a
# floor of level 1 under the manager, ending a day from now.
CONTROL_VERSION = 3
REFUSAL_REASONS = ("malformed", "stale", "unknown_target", "invalid",
                   "install_failed")
ETCD_OUTAGE = 3  # degrade_etcd_watcher_state

OVERLOAD_POSITIVE = (
    "degrade_limiter_acquired_total",
    "degrade_limiter_limit",
    "degrade_queue_popped_total",
    "degrade_queue_sojourn_seconds_count",
)
# Metric-name prefixes of the dashboard's panels that metrics_server exports
# only with --grpc, or only with --nvml (see the docstring).
GRPC_FAMILIES = ("degrade_grpc_client_", "degrade_grpc_server_")
GPU_FAMILIES = ("degrade_gpu_source_",)
# Never exported by metrics_server: the fleet quota needs a Redis.
QUOTA_FAMILIES = ("degrade_quota_",)
# The names metrics_server gives its gRPC counters and GPU source.
GRPC_NAME = "features"
GPU_NAME = "gpu0"

# The last-known-good tier metrics_server runs (metrics_server_extras.hpp):
# what must have happened, as label matchers per family, each > 0 (summed).
LAST_GOOD = "user_features"
LAST_GOOD_POSITIVE = {
    "fresh": ("degrade_ladder_served_total", 'ladder', 'tier="fresh"'),
    "stale": ("degrade_ladder_served_total", 'ladder', 'tier=~"stale-.*"'),
    "segment": ("degrade_ladder_served_total", 'ladder', 'tier="segment"'),
    "global": ("degrade_ladder_served_total", 'ladder', 'tier="global"'),
    "stale_ages": ("degrade_stale_age_seconds_count", 'ladder', ''),
    "store_calls": ("degrade_ladder_store_calls_total", 'ladder', ''),
    "ramp_refused": ("degrade_ladder_ramp_refused_total", 'ladder', ''),
    "ramps": ("degrade_recovery_ramps_total", 'ramp', ''),
    "cache_hits": ("degrade_cache_lookups_total", 'cache', 'result="hit"'),
    "cache_misses": ("degrade_cache_lookups_total", 'cache', 'result="miss"'),
    "evictions": ("degrade_cache_evictions_total", 'cache', ''),
    "leaders": ("degrade_coalesce_total", 'coalescer', 'role="leader"'),
    "joined": ("degrade_coalesce_total", 'coalescer', 'role="joined"'),
    "timed_out": ("degrade_coalesce_timed_out_total", 'coalescer', ''),
    "segment_hits": ("degrade_segment_defaults_lookups_total",
                     'segment_defaults', 'result="hit"'),
    "segment_unknown": ("degrade_segment_defaults_lookups_total",
                        'segment_defaults', 'result="unknown"'),
    "reloads_accepted": ("degrade_segment_defaults_reloads_total",
                         'segment_defaults', 'result="accepted"'),
    "reloads_refused": ("degrade_segment_defaults_reloads_total",
                        'segment_defaults', 'result="refused"'),
}

# The recommendation pipeline's default features (examples/recsys).
FEATURES = "features"
FEATURE_DIM = 8


class TestFailure(Exception):
    pass


def log(msg):
    print(f"[prometheus_scrape] {msg}", flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5.0):
    """Returns (status, headers, body text); raises on connection errors."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode("utf-8", "replace")


def tail(path, lines=30):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(cannot read {path}: {e})"


class Proc:
    """A child process with its stderr in a file, stopped by stop()."""

    def __init__(self, name, argv, workdir, stdout=subprocess.DEVNULL):
        self.name = name
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        self._stderr = open(self.stderr_path, "wb")
        log(f"starting {name}: {' '.join(argv)}")
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=self._stderr, cwd=workdir)
        self.returncode = None

    def alive(self):
        return self.popen.poll() is None

    def stop(self, grace=10.0):
        """SIGTERM, wait up to `grace` s, then SIGKILL. Returns the exit
        status (negative: killed by that signal) and whether it needed the
        SIGKILL."""
        killed = False
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                killed = True
                self.popen.kill()
                self.popen.wait(timeout=10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        self._stderr.close()
        self.returncode = self.popen.returncode
        return self.returncode, killed


def write_control_file(workdir):
    """The control document the servers follow, in a file."""
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    doc = {"degrade_control": {
        "version": CONTROL_VERSION, "expires_at": expires,
        "reason": "prometheus_scrape_test",
        "managers": {"recsys": {"level": 1}}}}
    path = os.path.join(workdir, "control.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def server_has_etcd(binary):
    """Whether metrics_server was built with degrade::etcd (--etcd works)."""
    r = subprocess.run([binary, "--etcd", "127.0.0.1:1", "--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30, check=False)
    return b"built without degrade::etcd" not in r.stdout


def start_server(binary, scenario, workdir, lifetime, extra_args):
    hold = SCENARIOS[scenario][0]
    proc = Proc(
        f"metrics_server-{scenario}",
        [binary, "--port", "0", "--bind", "127.0.0.1", "--hold-phase", hold,
         "--phase-seconds", "20", "--rate", "100",
         "--duration-seconds", str(int(lifetime)), "--quiet"] + extra_args,
        workdir, stdout=subprocess.PIPE)
    # Read the "listening on" line without blocking forever.
    lines = queue.Queue()
    threading.Thread(
        target=lambda: lines.put(proc.popen.stdout.readline()),
        daemon=True).start()
    try:
        line = lines.get(timeout=20).decode("utf-8", "replace").strip()
    except queue.Empty:
        line = ""
    prefix = "listening on http://127.0.0.1:"
    if not line.startswith(prefix) or not line.endswith("/metrics"):
        proc.stop()
        raise TestFailure(
            f"{proc.name} did not print '{prefix}PORT/metrics' (got "
            f"{line!r}); stderr:\n{tail(proc.stderr_path)}")
    port = int(line[len(prefix):-len("/metrics")])
    log(f"{proc.name} is listening on 127.0.0.1:{port}")
    return proc, port


def check_endpoints(name, port):
    base = f"http://127.0.0.1:{port}"
    status, headers, body = http_get(f"{base}/metrics")
    ctype = headers.get("Content-Type", "")
    if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
        raise TestFailure(f"{name} /metrics: HTTP {status}, Content-Type {ctype!r}")
    if "degrade_breaker_state{" not in body:
        raise TestFailure(f"{name} /metrics has no degrade_breaker_state:\n{body[:2000]}")
    status, _, health = http_get(f"{base}/healthz")
    if status != 200 or health.strip() != "ok":
        raise TestFailure(f"{name} /healthz: HTTP {status}, {health!r}")
    status, _, js = http_get(f"{base}/metrics.json")
    names = {m["name"] for m in json.loads(js)["metrics"]} if status == 200 else set()
    if "degrade_breaker_state" not in names:
        raise TestFailure(f"{name} /metrics.json: HTTP {status}, families {sorted(names)}")
    # No endpoint takes a body: one is refused (413), not read into memory.
    # Not form-encoded: cpp-httplib caps those at 8 KiB by itself.
    post = urllib.request.Request(f"{base}/metrics", data=b"x" * (1 << 20), method="POST",
                                  headers={"Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(post, timeout=5.0) as resp:
            status = resp.status
    except urllib.error.HTTPError as e:
        status = e.code
    if status != 413:
        raise TestFailure(f"{name} POST /metrics with a 1 MiB body: HTTP {status}, expected 413")
    return body


def promtool_check(promtool, name, exposition):
    """`promtool check metrics` must exit 0 and print nothing: it reports
    lint problems (exit 3) and parse errors (exit 1) on stderr."""
    r = subprocess.run([promtool, "check", "metrics"], input=exposition.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60, check=False)
    out = r.stdout.decode("utf-8", "replace").strip()
    if r.returncode != 0 or out:
        raise TestFailure(
            f"promtool check metrics on {name}'s /metrics: exit {r.returncode}\n{out}")
    log(f"promtool check metrics: {name}'s exposition "
        f"({len(exposition.splitlines())} lines) is clean")


def write_config(workdir, targets):
    """targets: scenario -> port. Plain YAML, written by hand (stdlib only)."""
    lines = [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "  evaluation_interval: 15s",
        "scrape_configs:",
        f"  - job_name: {JOB}",
        "    metrics_path: /metrics",
        "    static_configs:",
    ]
    for scenario, port in sorted(targets.items()):
        lines += [
            f"      - targets: ['127.0.0.1:{port}']",
            "        labels:",
            f"          scenario: {scenario}",
        ]
    path = os.path.join(workdir, "prometheus.yml")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start_prometheus(binary, config, workdir, deadline):
    """Starts prometheus on a free loopback port; retries a few times if the
    port was taken in between. Returns (proc, port) once /-/ready is 200."""
    for attempt in range(3):
        port = free_port()
        tsdb = os.path.join(workdir, f"tsdb{attempt}")
        proc = Proc(
            f"prometheus{attempt}",
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=info"],
            workdir)
        while time.monotonic() < deadline:
            if not proc.alive():
                break
            try:
                status, _, _ = http_get(f"http://127.0.0.1:{port}/-/ready", timeout=2)
                if status == 200:
                    log(f"prometheus is ready on 127.0.0.1:{port}")
                    return proc, port
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        err = tail(proc.stderr_path)
        proc.stop()
        if "address already in use" not in err or time.monotonic() >= deadline:
            raise TestFailure(f"prometheus did not become ready; stderr:\n{err}")
        log(f"port {port} was taken; retrying")
    raise TestFailure("prometheus could not find a free port")


def query(prom_port, promql):
    url = (f"http://127.0.0.1:{prom_port}/api/v1/query?"
           + urllib.parse.urlencode({"query": promql}))
    status, _, body = http_get(url)
    data = json.loads(body)
    if status != 200 or data.get("status") != "success":
        raise TestFailure(f"query {promql!r}: HTTP {status}: {body[:500]}")
    return [(r["metric"], float(r["value"][1])) for r in data["data"]["result"]]


def observe(prom_port):
    """What Prometheus has now, as {scenario: {...}}."""
    seen = {s: {"up": None, "breakers": {}, "level": None, "fallbacks": {},
                "threshold": None, "shed_sheddable": None, "overload": {},
                "fleet": {}, "refused": {},
                "features_dim": None, "features_accepted": None,
                "features_age": None, "grpc_client": {}, "grpc_server": {},
                "grpc_malformed": None, "gpu_available": None,
                "gpu_reads": None, "last_good": {}}
            for s in SCENARIOS}

    def each(promql, store):
        """Calls store(entry, metric, value) for each result of a scenario."""
        for metric, value in query(prom_port, promql):
            if metric.get("scenario") in seen:
                store(seen[metric["scenario"]], metric, value)

    def put(key):
        return lambda e, _m, v: e.__setitem__(key, v)

    def put_in(key, label):
        return lambda e, m, v: e[key].__setitem__(m.get(label), v)

    each(f'up{{job="{JOB}"}}', put("up"))
    each(f'degrade_breaker_state{{job="{JOB}"}}', put_in("breakers", "breaker"))
    each(f'degrade_level{{job="{JOB}",manager="recsys"}}', put("level"))
    each(f'sum by (scenario, stage) (degrade_fallbacks_total{{job="{JOB}",pipeline="recsys"}})',
         put_in("fallbacks", "stage"))
    each(f'degrade_admission_threshold{{job="{JOB}",admission="front"}}', put("threshold"))
    each(f'sum by (scenario) (degrade_admission_shed_total{{job="{JOB}",'
         f'admission="front",criticality=~"SHEDDABLE.*"}})', put("shed_sheddable"))
    for name in OVERLOAD_POSITIVE:
        each(f'sum by (scenario) ({name}{{job="{JOB}"}})',
             lambda e, _m, v, name=name: e["overload"].__setitem__(name, v))

    def put_fleet(key):
        return lambda e, _m, v: e["fleet"].__setitem__(key, v)

    fleet = f'job="{JOB}",fleet_control="recsys"'
    control = f'job="{JOB}",watcher="control",document="control"'
    each(f'degrade_fleet_version{{{fleet}}}', put_fleet("version"))
    each(f'degrade_fleet_in_force{{{fleet}}}', put_fleet("in_force"))
    each(f'degrade_fleet_documents_refused_total{{{fleet}}}',
         put_in("refused", "reason"))
    each(f'degrade_file_watcher_last_poll_ok{{{control}}}', put_fleet("poll_ok"))
    each(f'degrade_file_watcher_reloads_total{{{control}}}', put_fleet("reloads"))
    each(f'degrade_etcd_watcher_state{{job="{JOB}"}}', put_fleet("etcd_state"))
    each(f'degrade_etcd_watcher_outages_total{{job="{JOB}"}}',
         put_fleet("etcd_outages"))
    feat = f'job="{JOB}",default_features="{FEATURES}"'
    each(f'degrade_default_features_dimension{{{feat}}}', put("features_dim"))
    each(f'degrade_default_features_reloads_total{{{feat},result="accepted"}}',
         put("features_accepted"))
    each(f'degrade_default_features_age_seconds{{{feat}}}', put("features_age"))
    client = f'job="{JOB}",grpc_client="{GRPC_NAME}"'
    server = f'job="{JOB}",grpc_server="{GRPC_NAME}"'
    each(f'degrade_grpc_client_calls_total{{{client}}}',
         put_in("grpc_client", "outcome"))
    each(f'degrade_grpc_server_calls_total{{{server}}}',
         put_in("grpc_server", "outcome"))
    each(f'degrade_grpc_server_malformed_metadata_total{{{server}}}',
         put("grpc_malformed"))
    for key, (name, label, match) in LAST_GOOD_POSITIVE.items():
        matchers = ",".join(m for m in (f'job="{JOB}"', f'{label}="{LAST_GOOD}"',
                                        match) if m)
        each(f'sum by (scenario) ({name}{{{matchers}}})',
             lambda e, _m, v, key=key: e["last_good"].__setitem__(key, v))
    gpu = f'job="{JOB}",gpu_source="{GPU_NAME}"'
    each(f'degrade_gpu_source_available{{{gpu}}}', put("gpu_available"))
    each(f'degrade_gpu_source_reads_total{{{gpu}}}', put("gpu_reads"))
    return seen


def dashboard_exprs(path):
    """Every target expression of a Grafana dashboard JSON, with its panel."""
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    out = []
    for panel in dash.get("panels", []):
        for target in panel.get("targets", []):
            if target.get("expr"):
                out.append((panel.get("title", "?"), target["expr"]))
    if not out:
        raise TestFailure(f"{path}: no panel has a PromQL expression")
    return out


def check_dashboard(prom_port, path, deadline, etcd=True, grpc=True, gpu=True):
    """Polls until every expression returns data, or fails naming those
    that do not. Without etcd (a server built without degrade::etcd) the
    etcd watcher's panels have nothing to show and are not run; without
    grpc or gpu (servers run without --grpc or --nvml) those panels must
    only parse, and so must the fleet quota's, always."""
    exprs = dashboard_exprs(path)
    if not etcd:
        exprs = [(t, e) for t, e in exprs if "degrade_etcd_watcher_" not in e]
    not_exported = ((() if grpc else GRPC_FAMILIES) +
                    (() if gpu else GPU_FAMILIES) + QUOTA_FAMILIES)
    # Not exported this run: valid PromQL (query() fails otherwise), and
    # nothing more is asked of them.
    absent = [(t, e) for t, e in exprs if any(p in e for p in not_exported)]
    for _, e in absent:
        query(prom_port, e)
    empty = [(t, e) for t, e in exprs if (t, e) not in absent]
    while True:
        empty = [(t, e) for t, e in empty if not query(prom_port, e)]
        if not empty or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if empty:
        raise TestFailure(
            f"{path}: {len(empty)} of {len(exprs)} expressions return no data:\n  "
            + "\n  ".join(f"{t}: {e}" for t, e in empty))
    log(f"dashboard {os.path.basename(path)}: {len(exprs) - len(absent)} "
        f"expressions return data, {len(absent)} (not exported this run) parse")


def fleet_mismatches(scenario, got, etcd):
    """The fleet side: the control file in force, its watcher healthy, a
    refusal series per reason, and (with etcd) the outage state."""
    problems = []
    want = {"version": CONTROL_VERSION, "in_force": 1, "poll_ok": 1}
    for key, value in want.items():
        if got["fleet"].get(key) != float(value):
            problems.append(f"{scenario}: fleet {key} = {got['fleet'].get(key)}, "
                            f"want {value}")
    if not got["fleet"].get("reloads", 0) >= 1:
        problems.append(f"{scenario}: degrade_file_watcher_reloads_total = "
                        f"{got['fleet'].get('reloads')}, want >= 1")
    if sorted(got["refused"]) != sorted(REFUSAL_REASONS):
        problems.append(f"{scenario}: degrade_fleet_documents_refused_total "
                        f"reasons {sorted(got['refused'])}, want "
                        f"{sorted(REFUSAL_REASONS)}")
    if etcd:
        if got["fleet"].get("etcd_state") != float(ETCD_OUTAGE):
            problems.append(f"{scenario}: degrade_etcd_watcher_state = "
                            f"{got['fleet'].get('etcd_state')}, want {ETCD_OUTAGE}")
        if not got["fleet"].get("etcd_outages", 0) >= 1:
            problems.append(f"{scenario}: degrade_etcd_watcher_outages_total = "
                            f"{got['fleet'].get('etcd_outages')}, want >= 1")
    return problems


def grpc_mismatches(scenario, got, sheds):
    """--grpc: calls answered by the server; sheds (client and server side)
    exactly where the front door sheds; malformed request classes counted."""
    problems = []
    for side in ("grpc_client", "grpc_server"):
        if not got[side].get("accepted", 0) > 0:
            problems.append(f"{scenario}: degrade_{side}_calls_total"
                            f"{{outcome=\"accepted\"}} = "
                            f"{got[side].get('accepted')}, want > 0")
        shed = got[side].get("shed")
        if (shed is not None and shed > 0) != sheds:
            problems.append(f"{scenario}: degrade_{side}_calls_total"
                            f"{{outcome=\"shed\"}} = {shed}, want "
                            f"{'> 0' if sheds else '0'}")
    if not (got["grpc_malformed"] or 0) > 0:
        problems.append(f"{scenario}: degrade_grpc_server_malformed_metadata_total"
                        f" = {got['grpc_malformed']}, want > 0")
    return problems


def gpu_mismatches(scenario, got):
    """--nvml: the source's last read succeeded, and it has been read."""
    problems = []
    if got["gpu_available"] != 1.0:
        problems.append(f"{scenario}: degrade_gpu_source_available = "
                        f"{got['gpu_available']}, want 1")
    if not (got["gpu_reads"] or 0) > 0:
        problems.append(f"{scenario}: degrade_gpu_source_reads_total = "
                        f"{got['gpu_reads']}, want > 0")
    return problems


def mismatches(seen, etcd, grpc=False, gpu=False):
    problems = []
    for scenario, (_, breakers, level, failed) in SCENARIOS.items():
        got = seen[scenario]
        problems += fleet_mismatches(scenario, got, etcd)
        if grpc:
            problems += grpc_mismatches(scenario, got, OVERLOAD[scenario][1])
        if gpu:
            problems += gpu_mismatches(scenario, got)
        if got["up"] != 1.0:
            problems.append(f"{scenario}: up = {got['up']}, want 1")
        for b, want in breakers.items():
            if got["breakers"].get(b) != float(want):
                problems.append(
                    f"{scenario}: degrade_breaker_state{{breaker=\"{b}\"}} = "
                    f"{got['breakers'].get(b)}, want {want}")
        extra = set(got["breakers"]) - set(BREAKERS)
        if extra:
            problems.append(f"{scenario}: unexpected breakers {sorted(extra)}")
        if got["level"] != float(level):
            problems.append(
                f"{scenario}: degrade_level{{manager=\"recsys\"}} = {got['level']}, "
                f"want {level}")
        for stage in failed:
            if not got["fallbacks"].get(stage, 0) > 0:
                problems.append(
                    f"{scenario}: degrade_fallbacks_total{{stage=\"{stage}\"}} = "
                    f"{got['fallbacks'].get(stage)}, want > 0")
        threshold, sheds = OVERLOAD[scenario]
        if got["threshold"] != float(threshold):
            problems.append(
                f"{scenario}: degrade_admission_threshold = {got['threshold']}, "
                f"want {threshold}")
        shed = got["shed_sheddable"]
        if (shed is not None and shed > 0) != sheds:
            problems.append(
                f"{scenario}: sheddable requests shed = {shed}, want "
                f"{'> 0' if sheds else '0'}")
        for name in OVERLOAD_POSITIVE:
            if not got["overload"].get(name, 0) > 0:
                problems.append(
                    f"{scenario}: {name} = {got['overload'].get(name)}, want > 0")
        if got["features_dim"] != float(FEATURE_DIM):
            problems.append(
                f"{scenario}: degrade_default_features_dimension = "
                f"{got['features_dim']}, want {FEATURE_DIM}")
        if not (got["features_accepted"] or 0) >= 1:
            problems.append(
                f"{scenario}: degrade_default_features_reloads_total accepted = "
                f"{got['features_accepted']}, want >= 1")
        for key, (name, _, match) in LAST_GOOD_POSITIVE.items():
            if not got["last_good"].get(key, 0) > 0:
                problems.append(
                    f"{scenario}: {name}{{{match}}} (the last-known-good tier) = "
                    f"{got['last_good'].get(key)}, want > 0")
        age = got["features_age"]
        if age is None or not 0 <= age < float("inf"):
            problems.append(
                f"{scenario}: degrade_default_features_age_seconds = {age}, "
                f"want finite and >= 0")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True, help="the metrics_server binary")
    ap.add_argument("--prometheus", default="prometheus")
    ap.add_argument("--promtool", default="promtool")
    ap.add_argument("--timeout", type=float, default=90.0,
                    help="seconds to wait for the expected series (default 90)")
    ap.add_argument("--dashboard", default=None,
                    help="a Grafana dashboard JSON whose expressions must return data")
    ap.add_argument("--grpc", action="store_true",
                    help="the server was built with degrade::grpc: run it with "
                         "--grpc and check the degrade_grpc_* series")
    ap.add_argument("--nvml", default=None,
                    help="an NVML library (the fake one) for the servers' --nvml: "
                         "check the degrade_gpu_source_* series")
    args = ap.parse_args()

    tools = {}
    for name in ("server", "prometheus", "promtool"):
        path = shutil.which(getattr(args, name))
        if path is None:
            log(f"SKIP: {name} '{getattr(args, name)}' not found")
            return 77
        tools[name] = os.path.abspath(path)

    started = time.monotonic()
    deadline = started + args.timeout
    workdir = tempfile.mkdtemp(prefix="degrade-prometheus-")
    procs = []
    ok = False
    try:
        # The servers stop on their own shortly after this test's own bound,
        # should the test itself be killed.
        lifetime = args.timeout + 60
        # The fleet side: a control file, and an etcd where nothing listens
        # (the port is free once free_port() returns), so its watcher is in
        # an outage.
        fleet_args = ["--control-file", write_control_file(workdir)]
        etcd = server_has_etcd(tools["server"])
        if etcd:
            fleet_args += ["--etcd", f"127.0.0.1:{free_port()}"]
        else:
            log("metrics_server has no degrade::etcd: not checking the etcd watcher")
        extra_args = list(fleet_args)
        if args.grpc:
            extra_args.append("--grpc")
        else:
            log("no --grpc: the gRPC series are not checked")
        if args.nvml:
            extra_args += ["--nvml", os.path.abspath(args.nvml)]
        else:
            log("no --nvml: the GPU source's series are not checked")
        ports = {}
        for scenario in SCENARIOS:
            proc, port = start_server(tools["server"], scenario, workdir, lifetime,
                                      extra_args)
            procs.append(proc)
            ports[scenario] = port
        servers = list(procs)

        # 1. The exposition is valid and lint-clean.
        for scenario, port in ports.items():
            exposition = check_endpoints(scenario, port)
            promtool_check(tools["promtool"], scenario, exposition)

        # 2. A real Prometheus scrapes it.
        config = write_config(workdir, ports)
        r = subprocess.run([tools["promtool"], "check", "config", config],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60, check=False)
        if r.returncode != 0:
            raise TestFailure(f"promtool check config:\n{r.stdout.decode()}")
        prom, prom_port = start_prometheus(tools["prometheus"], config, workdir, deadline)
        procs.append(prom)

        seen, problems, polls = None, ["no query yet"], 0
        while time.monotonic() < deadline:
            for p in procs:
                if not p.alive():
                    raise TestFailure(
                        f"{p.name} exited with {p.popen.returncode}:\n{tail(p.stderr_path)}")
            polls += 1
            seen = observe(prom_port)
            problems = mismatches(seen, etcd, args.grpc, bool(args.nvml))
            if not problems:
                break
            time.sleep(0.5)
        if problems:
            raise TestFailure(
                f"after {args.timeout:.0f} s ({polls} polls) Prometheus still has:\n  "
                + "\n  ".join(problems)
                + f"\nlast observation: {json.dumps(seen, sort_keys=True)}"
                + f"\nprometheus stderr:\n{tail(prom.stderr_path)}")
        log(f"Prometheus has the expected series after {polls} poll(s), "
            f"{time.monotonic() - started:.1f} s into the test:")
        for scenario, (hold, _, _, _) in SCENARIOS.items():
            got = seen[scenario]
            states = ", ".join(f"{b}={got['breakers'][b]:g}" for b in BREAKERS)
            fallbacks = ", ".join(f"{s}={v:g}" for s, v in sorted(got["fallbacks"].items()))
            log(f"  {scenario} (--hold-phase '{hold}'): up=1; degrade_breaker_state "
                f"{states}; degrade_level{{manager=\"recsys\"}}={got['level']:g}; "
                f"degrade_fallbacks_total by stage: {fallbacks}; admission threshold "
                f"{got['threshold']:g}, sheddable shed {got['shed_sheddable']:g}")
            log(f"  {scenario}: fleet {json.dumps(got['fleet'], sort_keys=True)}")
            log(f"  {scenario}: last-known-good tier "
                f"{json.dumps(got['last_good'], sort_keys=True)}")
            if args.grpc:
                log(f"  {scenario}: gRPC client {json.dumps(got['grpc_client'], sort_keys=True)}"
                    f", server {json.dumps(got['grpc_server'], sort_keys=True)}, "
                    f"malformed metadata {got['grpc_malformed']:g}")
            if args.nvml:
                log(f"  {scenario}: GPU source available {got['gpu_available']:g}, "
                    f"reads {got['gpu_reads']:g}")

        # 3. The dashboard's every expression returns data.
        if args.dashboard:
            check_dashboard(prom_port, args.dashboard, deadline, etcd, args.grpc,
                            bool(args.nvml))

        # 4. The servers stop cleanly on SIGTERM.
        for p in servers:
            code, killed = p.stop()
            if killed or code != 0:
                raise TestFailure(
                    f"{p.name} did not exit 0 on SIGTERM (exit {code}, "
                    f"{'SIGKILLed' if killed else 'not killed'}):\n{tail(p.stderr_path)}")
            log(f"{p.name} exited 0 on SIGTERM: {tail(p.stderr_path, 1).strip()}")
        ok = True
    except TestFailure as e:
        log(f"FAIL: {e}")
    except Exception as e:  # pylint: disable=broad-except
        log(f"FAIL: {type(e).__name__}: {e}")
    finally:
        for p in reversed(procs):
            if p.returncode is None:
                code, killed = p.stop()
                log(f"stopped {p.name}: exit {code}{' (SIGKILL)' if killed else ''}")
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs kept in {workdir}")
    log(f"{'PASS' if ok else 'FAIL'} in {time.monotonic() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
