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
#
# BIN is the quota_driver test executable (default build/dev/tests/
# quota_driver). --demand is requests a second per instance; with --skew
# the first instance offers 80% of the fleet's demand and the others share
# 20%. The window measured is from 4 s after the start to 1 s before the
# end (start-up excluded). Prints admitted / (limit x window), the lease
# calls (round trips) per 1,000 admitted and per second, and Redis's own
# count of script runs (INFO commandstats) over the whole run.
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
while [[ $# -gt 0 ]]; do
  case "$1" in
    --driver) driver="$2"; shift 2 ;;
    --instances) instances="$2"; shift 2 ;;
    --limit) limit="$2"; shift 2 ;;
    --demand) demand="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --skew) skew=1; shift ;;
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
for p in "${pids[@]}"; do wait "$p"; done
pids=()
calls="$(redis-cli -p "$port" info commandstats | tr -d '\r' |
  awk -F'[:=,]' '/^cmdstat_(evalsha|eval):/ {n += $3} END {print n + 0}')"

python3 - "$work" "$instances" "$limit" "$start_ns" "$seconds" "$calls" <<'EOF'
import sys
work, n, limit, t0, seconds, calls = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
w0, w1 = t0 + 4e9, t0 + (seconds - 1) * 1e9
def at(rows, t):
    last = (0, 0, 0, 0)
    for r in rows:
        if r[0] > t: break
        last = r
    return last
adm = trips = admitted_all = 0
for i in range(n):
    rows = []
    for line in open(f"{work}/m{i}.log"):
        p = line.split()
        if p and p[0] in ("S", "END"):
            rows.append((int(p[1]), int(p[2]), int(p[3]), int(p[4])))
    a, b = at(rows, w0), at(rows, w1)
    adm += b[1] - a[1]
    trips += b[3] - a[3]
    admitted_all += rows[-1][1]
win = (w1 - w0) / 1e9
print(f"instances {n}, limit {limit:g}/s, window {win:g} s")
print(f"admitted/limit {adm / (limit * win):.4f}")
print(f"round trips per 1,000 admitted {1000 * trips / max(1, adm):.2f}; per second {trips / win:.1f} (instances / refresh period = {n / 0.5:g})")
print(f"redis script runs over the whole run {calls}, per 1,000 admitted {1000 * calls / max(1, admitted_all):.2f}")
EOF
