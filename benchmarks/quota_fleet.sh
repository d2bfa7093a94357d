#!/usr/bin/env bash
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
#
# quota_fleet.sh: a fleet of real processes sharing one redis::ClusterQuota
# through one redis-server on loopback, each offering twice its share of
# demand. A benchmark, not a test: docs/performance.md has a run and says
# where.
#
#   benchmarks/quota_fleet.sh [--driver BIN] [--instances 20] [--limit 10000]
#                             [--demand 1000] [--seconds 14] [--skew]
#                             [--pause-at S --pause-for D]
#
# BIN is the quota_driver test executable (default build/dev/tests/
# quota_driver). --demand is requests a second per instance; with --skew
# the first instance offers 80% of the fleet's demand and the others share
# 20%. The window measured is from 4 s after the start to 1 s before the
# end (start-up excluded). Prints admitted / (limit x window), the lease
# calls (round trips) per 1,000 admitted and per second, and Redis's own
# count of script runs (INFO commandstats) over the whole run.
#
# With --pause-at S --pause-for D, Redis is stopped (SIGSTOP) S seconds
# after the start for D seconds, then continued. The measured window then
# ends at the pause, and the script also prints: when each instance left
# leasing and reached the fair share; the fleet's admitted rate over the
# pause from lease_horizon + grace (3 s) after it began; the request path's
# p99 before and during the pause (the highest of the instances' per-second
# p99s); and the most lease calls an instance sent in the first second
# after Redis came back.
#
# Every process the script starts is stopped when it exits, also on failure
# or Ctrl-C (the EXIT trap).

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
driver="$root/build/dev/tests/quota_driver"
instances=20
limit=10000
demand=1000
seconds=14
skew=0
pause_at=0
pause_for=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --driver) driver="$2"; shift 2 ;;
    --instances) instances="$2"; shift 2 ;;
    --limit) limit="$2"; shift 2 ;;
    --demand) demand="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --skew) skew=1; shift ;;
    --pause-at) pause_at="$2"; shift 2 ;;
    --pause-for) pause_for="$2"; shift 2 ;;
    *) echo "quota_fleet.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$driver" ]] || { echo "quota_fleet.sh: no driver at $driver (build quota_driver)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/degrade-quota-fleet-XXXXXX")"
pids=()
redis_pid=""
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [[ -n "$redis_pid" ]]; then
    kill -CONT "$redis_pid" 2>/dev/null || true
    kill -TERM "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --save '' \
  --appendonly no --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done

total=$((instances * demand))
start_ns="$(date +%s%N)"
for i in $(seq 0 $((instances - 1))); do
  d="$demand"
  if [[ "$skew" == 1 ]]; then
    if [[ "$i" == 0 ]]; then d=$((total * 8 / 10)); else d=$((total * 2 / 10 / (instances - 1))); fi
  fi
  "$driver" "port=$port" name=bench "limit=$limit" "demand=$d" \
    "seconds=$seconds" "member=m$i" "expected=$instances" >"$work/m$i.log" 2>&1 &
  pids+=($!)
done
if [[ "$pause_for" != 0 ]]; then
  (
    sleep "$pause_at"
    date +%s%N >"$work/paused"
    kill -STOP "$redis_pid"
    sleep "$pause_for"
    kill -CONT "$redis_pid"
    date +%s%N >"$work/resumed"
  ) &
  pauser=$!
fi
for p in "${pids[@]}"; do wait "$p"; done
pids=()
if [[ "$pause_for" != 0 ]]; then wait "$pauser"; fi
calls="$(redis-cli -p "$port" info commandstats | tr -d '\r' |
  awk -F'[:=,]' '/^cmdstat_(evalsha|eval):/ {n += $3} END {print n + 0}')"

python3 - "$work" "$instances" "$limit" "$start_ns" "$seconds" "$calls" <<'EOF'
import os, sys
work, n, limit, t0, seconds, calls = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
paused = resumed = None
if os.path.exists(f"{work}/paused"):
    paused = int(open(f"{work}/paused").read())
    resumed = int(open(f"{work}/resumed").read())
w0, w1 = t0 + 4e9, (paused if paused else t0 + (seconds - 1) * 1e9)
def at(rows, t):
    last = (0, 0, 0, 0)
    for r in rows:
        if r[0] > t: break
        last = r
    return last
adm = trips = admitted_all = 0
logs = []
for i in range(n):
    rows, secs, modes = [], [], []
    for line in open(f"{work}/m{i}.log"):
        p = line.split()
        if p and p[0] in ("S", "END"):
            rows.append((int(p[1]), int(p[2]), int(p[3]), int(p[4])))
            modes.append((int(p[1]), int(p[5])))
        elif p and p[0] == "P":
            secs.append((int(p[1]), int(p[2]), int(p[4]), int(p[5])))
    logs.append((rows, secs, modes))
    a, b = at(rows, w0), at(rows, w1)
    adm += b[1] - a[1]
    trips += b[3] - a[3]
    admitted_all += rows[-1][1]
win = (w1 - w0) / 1e9
print(f"instances {n}, limit {limit:g}/s, window {win:g} s")
print(f"admitted/limit {adm / (limit * win):.4f}")
print(f"round trips per 1,000 admitted {1000 * trips / max(1, adm):.2f}; per second {trips / win:.1f} (instances / refresh period = {n / 0.5:g})")
print(f"redis script runs over the whole run {calls}, per 1,000 admitted {1000 * calls / max(1, admitted_all):.2f}")
if paused:
    print(f"redis paused {(resumed - paused) / 1e9:.1f} s from {(paused - t0) / 1e9:.1f} s")
    left, fair = [], []
    for rows, secs, modes in logs:
        l = next((t for t, m in modes if t >= paused and m != 0), None)
        f = next((t for t, m in modes if t >= paused and m == 2), None)
        left.append((l - paused) / 1e9 if l else float("nan"))
        fair.append((f - paused) / 1e9 if f else float("nan"))
    print(f"left leasing after {min(left):.2f}-{max(left):.2f} s; fair share after {min(fair):.2f}-{max(fair):.2f} s")
    p0, p1 = paused + 3e9, resumed
    got = sum(at(r, p1)[1] - at(r, p0)[1] for r, _, _ in logs)
    print(f"fleet admitted during the pause (from +3 s) / limit {got / (limit * (p1 - p0) / 1e9):.4f}")
    def p99(lo, hi):
        vals = [s[2] for _, secs, _ in logs for s in secs if lo <= s[0] and s[0] + 1e9 <= hi]
        mx = [s[3] for _, secs, _ in logs for s in secs if lo <= s[0] and s[0] + 1e9 <= hi]
        return (max(vals) if vals else 0, sorted(vals)[len(vals) // 2] if vals else 0, max(mx) if mx else 0, len(vals))
    b = p99(w0, paused)
    d = p99(paused, resumed)
    print(f"request path p99 (highest of the per-second p99s; median of them; slowest call): before {b[0]} ns ({b[1]}; {b[2]}) over {b[3]} instance-seconds, during the pause {d[0]} ns ({d[1]}; {d[2]}) over {d[3]}")
    after = [at(r, resumed + 1e9)[3] - at(r, resumed)[3] for r, _, _ in logs]
    print(f"lease calls per instance in the first second after Redis resumed: at most {max(after)} (mean {sum(after) / n:.2f})")
EOF
