#!/usr/bin/env bash
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
#
# inference_server.sh: examples/inference_server driven past its capacity on
# loopback by the bundled open-loop generator (inference_load), with and
# without degrade's overload control. A benchmark, not a test: the figures
# depend on the machine (docs/overload/server.md has a run and says where).
#
#   benchmarks/inference_server.sh [--build-dir DIR] [--seconds S]
#                                  [--loads "1 3"] [--modes "plain discipline"]
#                                  [--clients "close keep-alive fan-out"]
#                                  [--server-args "--flag=value ..."]
#   benchmarks/inference_server.sh --smoke --server BIN --load BIN
#
# Without --server/--load it configures and builds the two targets in
# DIR (default build/inference-server, Release). Each run starts a server on
# a free port (--port=0; the script reads the port it prints), sends
# load x capacity requests a second for S seconds (20) with the class mix
# 25% CRITICAL_PLUS, 40% CRITICAL, 20% SHEDDABLE_PLUS, 15% SHEDDABLE and a
# 1 s deadline, stops the server (which prints its counters on stderr), and
# prints each run's per-class table, then a summary table. Client shapes
# (--clients, default "close"): `close`, a new connection per request;
# `keep-alive`, a pool of HTTP/1.1 keep-alive connections that grows on
# demand (inference_load --keep-alive); `fan-out`, the same pool with
# requests due 32 at a time (--burst=32), as a caller fanning out.
#
# --smoke (the ctest inference_server_smoke): 2 s at low load in discipline
# mode; checks that requests are answered in time, that a malformed class
# gets 400, that a keep-alive client is answered in time too, and that the
# server is gone afterwards.
#
# Every process the script starts is stopped when it exits, also on failure
# or Ctrl-C (the EXIT trap), and every wait is bounded.

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build_dir="$root/build/inference-server"
server_bin=""
load_bin=""
seconds=20
loads="1 3"
modes="plain discipline"
clients="close"
smoke=0
server_args=""
# The model's full batch (32 requests) takes 180 ms: 177.8 requests a second.
batch_ms=180
capacity=$(awk -v b="$batch_ms" 'BEGIN { printf "%.1f", 32 * 1000 / b }')

while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --server) server_bin="$2"; shift 2 ;;
    --load) load_bin="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --loads) loads="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --server-args) server_args="$2"; shift 2 ;;
    -h|--help) sed -n '4,30p' "$0"; exit 0 ;;
    *) echo "inference_server.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d "${TMPDIR:-/tmp}/inference_server.XXXXXX")"
server_pid=""

stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  # The server answers what it holds and exits; give it 10 s, then kill it.
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    echo "inference_server.sh: server $server_pid did not stop; killing it" >&2
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$server_bin" ] || [ -z "$load_bin" ]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDEGRADE_BUILD_TESTS=OFF \
        -DDEGRADE_BUILD_BENCHMARKS=OFF >"$work/configure.log" ||
    { cat "$work/configure.log" >&2; exit 1; }
  cmake --build "$build_dir" -j2 --target inference_server inference_load >"$work/build.log" ||
    { cat "$work/build.log" >&2; exit 1; }
  server_bin="$build_dir/examples/inference_server"
  load_bin="$build_dir/examples/inference_load"
fi
for bin in "$server_bin" "$load_bin"; do
  [ -x "$bin" ] || { echo "inference_server.sh: $bin is missing (is cpp-httplib installed? Debian: libcpp-httplib-dev)" >&2; exit 1; }
done

# start_server MODE [FLAG...]: starts it in the background with FLAGs; sets
# server_pid, port, and out and err (the files its stdout and stderr go to).
runs=0
start_server() {
  runs=$((runs + 1))
  out="$work/server.$runs.out"
  err="$work/server.$runs.err"
  # shellcheck disable=SC2086  # server_args is a list of flags
  local mode="$1"
  shift
  "$server_bin" --mode="$mode" --port=0 --batch-ms="$batch_ms" $server_args "$@" >"$out" 2>"$err" &
  server_pid=$!
  port=""
  for _ in $(seq 100); do
    port="$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$out")"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "inference_server.sh: the server did not start:" >&2
    cat "$err" >&2
    exit 1
  fi
  sed -n 's/^listening on //p' "$out" >&2
}

if [ "$smoke" = 1 ]; then
  start_server discipline
  "$load_bin" --port="$port" --rate=40 --seconds=2 --label=smoke | tee "$work/smoke.txt"
  good="$(sed -n 's/^total .* good=\([0-9]*\) .*/\1/p' "$work/smoke.txt")"
  [ "${good:-0}" -gt 0 ] || { echo "FAIL: no request answered within its deadline" >&2; exit 1; }
  "$load_bin" --port="$port" --rate=40 --seconds=2 --keep-alive --label=smoke-keep-alive \
    | tee "$work/smoke-ka.txt"
  ka_good="$(sed -n 's/^total .* good=\([0-9]*\) .*/\1/p' "$work/smoke-ka.txt")"
  ka_opened="$(sed -n 's/^total .* connections_opened=\([0-9]*\) .*/\1/p' "$work/smoke-ka.txt")"
  ka_sent="$(sed -n 's/^total .* sent=\([0-9]*\) .*/\1/p' "$work/smoke-ka.txt")"
  [ "${ka_good:-0}" -gt 0 ] ||
    { echo "FAIL: no keep-alive request answered within its deadline" >&2; exit 1; }
  # Reused connections: far fewer opened than requests sent.
  [ "${ka_opened:-0}" -gt 0 ] && [ "$((ka_opened * 2))" -lt "${ka_sent:-0}" ] ||
    { echo "FAIL: the keep-alive client opened $ka_opened connections for $ka_sent requests" >&2; exit 1; }
  "$load_bin" --port="$port" --once --class=NOT_A_CLASS:1 >"$work/bad.txt" || true
  grep -q '^status=400' "$work/bad.txt" ||
    { echo "FAIL: a malformed class was not refused with 400:" >&2; cat "$work/bad.txt" >&2; exit 1; }
  "$load_bin" --port="$port" --once --class=CRITICAL_PLUS:0 >"$work/good.txt" || true
  grep -q '^status=200' "$work/good.txt" ||
    { echo "FAIL: a single request was not served:" >&2; cat "$work/good.txt" >&2; exit 1; }
  pid="$server_pid"
  stop_server
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: server $pid still running" >&2; exit 1; fi
  # This server trusted no address: every CRITICAL_PLUS claim (a quarter of
  # the load's) was lowered to CRITICAL and counted.
  capped="$(sed -n 's/^inference_server: stats .* class_capped=\([0-9]*\).*/\1/p' "$err")"
  [ "${capped:-0}" -gt 0 ] ||
    { echo "FAIL: no claim was capped by a server that trusts no one:" >&2; cat "$err" >&2; exit 1; }
  # Trusting the load's address, the same claim is believed.
  start_server discipline --trust=127.0.0.1
  "$load_bin" --port="$port" --once --class=CRITICAL_PLUS:0 >"$work/trusted.txt" || true
  grep -q '^status=200' "$work/trusted.txt" ||
    { echo "FAIL: a trusted request was not served:" >&2; cat "$work/trusted.txt" >&2; exit 1; }
  stop_server
  trusted_capped="$(sed -n 's/^inference_server: stats .* class_capped=\([0-9]*\).*/\1/p' "$err")"
  [ "${trusted_capped:-x}" = 0 ] ||
    { echo "FAIL: a claim from a trusted address was capped:" >&2; cat "$err" >&2; exit 1; }
  echo "PASS: answered $good requests in time ($ka_good on $ka_opened keep-alive connections), 400 for a malformed class, $capped untrusted CRITICAL_PLUS claims capped and a trusted one believed, server stopped"
  exit 0
fi

summary="$work/summary.txt"
for load in $loads; do
  for mode in $modes; do
  for client in $clients; do
    case "$client" in
      close) client_args="" ;;
      keep-alive) client_args="--keep-alive" ;;
      fan-out) client_args="--keep-alive --burst=32" ;;
      *) echo "inference_server.sh: unknown client $client (close, keep-alive, fan-out)" >&2; exit 2 ;;
    esac
    rate=$(awk -v c="$capacity" -v l="$load" 'BEGIN { printf "%.1f", c * l }')
    label="$mode@${load}x"
    [ "$clients" = close ] || label="$label/$client"
    echo "== $label: $rate requests/s for ${seconds}s"
    # The load generator plays the front end that assigns classes.
    start_server "$mode" --trust=127.0.0.1
    # shellcheck disable=SC2086  # client_args is a list of flags
    "$load_bin" --port="$port" --rate="$rate" --seconds="$seconds" --label="$label" $client_args \
      | tee "$work/run.txt"
    stop_server
    stats="$(sed -n 's/^inference_server: stats //p' "$err")"
    echo "server: $stats"
    full_ms="$(sed -n 's/.*full_batch_ms=\([0-9.]*\).*/\1/p' <<<"$stats")"
    awk -v label="$label" -v cap="$capacity" -v full="${full_ms:-0}" '
      /^total / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); t[kv[1]] = kv[2] }
        printf "%-28s %8s %8.3f %8s %8s %8.1f %9.1f %9.1f\n", label, t["sent"],
               t["goodput_rps"] / cap, t["shed"], t["timeout"], full, t["p50_ms"], t["p99_ms"]
      }
      /^class / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); c[kv[1]] = kv[2] }
        line = line sprintf("  %-28s %-14s sent %6s  good %6.1f%%  shed %6.1f%%  p50 %8.1f  p99 %8.1f\n",
                            label, c["class"], c["sent"],
                            c["sent"] ? 100 * c["good"] / c["sent"] : 0,
                            c["sent"] ? 100 * c["shed"] / c["sent"] : 0, c["p50_ms"], c["p99_ms"])
      }
      END { printf "%s", line }' "$work/run.txt" >>"$summary"
  done
  done
done

echo
echo "capacity: 32 requests per ${batch_ms} ms batch = $capacity requests/s (full_batch_ms: as measured)"
printf "%-28s %8s %8s %8s %8s %8s %9s %9s\n" run sent goodput shed timeout batch_ms p50_ms p99_ms
cat "$summary"
