#!/usr/bin/env bash
# run.sh: degrade's one-command entry points (used by the README and .ci/run).
#
# Usage: cmake/run.sh <command>
#
#   demo    install missing Debian packages, configure + build the `dev` preset's
#           example, run build/dev/examples/recsys_pipeline (the recommendation
#           pipeline through a scripted outage on simulated time, then its
#           feature stage on a last-known-good ladder with 10M Zipf users;
#           about 8 s in this Debug build)
#   test    install missing Debian packages, `cmake --workflow --preset dev`
#           (configure, build, ctest --output-on-failure)
#   asan    same with the `asan-ubsan` workflow (clang++, ASan + UBSan)
#   tsan    same with the `tsan` workflow (clang++, ThreadSanitizer)
#   check [base]
#           the loop before a landing (HACKING.md): the `test` command, then
#           the test executables whose sources or headers differ from `base`
#           (default: where HEAD left its upstream or origin/main, else HEAD;
#           uncommitted and untracked files count) built and run under
#           ASan+UBSan, and those labelled `concurrency` under TSan too.
#           Which executables a file reaches is read from the dev build's
#           dependency records.
#   bench   `cmake --workflow --preset bench` (configure + build benchmarks)
#   soak    the chaos soak (tests/chaos_soak_test.cpp, 1,000,000 requests) in
#           an optimised build: `cmake --workflow --preset soak`
#   plain [Debug|Release|RelWithDebInfo ...]
#           the route a user takes, without presets: `cmake -S . -B <dir>
#           -DCMAKE_BUILD_TYPE=<type> && cmake --build <dir>`, with
#           -DDEGRADE_WERROR=ON so a warning that only -O2 shows fails here
#           rather than on a user's machine; builds everything, runs nothing.
#           Without types: g++ Release and clang++ Release, without the
#           tests (the library, examples and benchmarks: the builds no other
#           command compiles); with types: g++ and clang++ for each, tests
#           included
#   fuzz [seconds]
#           build the libFuzzer targets (`fuzz` preset, clang++ with
#           -fsanitize=fuzzer,address,undefined) and run each for `seconds`
#           (default 60) from its committed corpus (tests/fuzz/corpus/<target>/,
#           only read: new inputs go to a scratch directory); crashing inputs
#           are saved in build/fuzz/artifacts/<target>/
#
# The sanitizer commands first compile and run a tiny probe program. If the
# sanitizer runtime cannot start on this kernel (clang 14 TSan/ASan with
# vm.mmap_rnd_bits > 28: "FATAL: ThreadSanitizer: unexpected memory mapping"),
# the workflow is run under `setarch <arch> -R` (ASLR off for that process
# tree). If LeakSanitizer cannot run (e.g. ptrace is forbidden in a
# container), leak detection is switched off with a warning.
#
# Environment: DEGRADE_SKIP_DEPS=1 skips the package check.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

log() { printf '\n==> %s\n' "$*" >&2; }
die() {
  printf 'run.sh: ERROR: %s\n' "$*" >&2
  exit 1
}

usage() {
  sed -n '2,47p' "$0" | sed 's/^# \{0,1\}//'
}

check_cmake() {
  local v
  v="$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')"
  local major="${v%%.*}" rest="${v#*.}"
  local minor="${rest%%.*}"
  if ((major < 3 || (major == 3 && minor < 25))); then
    die "CMake >= 3.25 is required for workflow presets (found $v)"
  fi
}

ensure_deps() {
  log "checking Debian packages"
  "$root/cmake/ensure-debian-deps.sh" "$@"
  check_cmake
}

# Sanitizer runtime probe -----------------------------------------------------
# Sets the global array `wrapper` to the command prefix the sanitizer workflow
# must run under (empty, or setarch ... -R).
wrapper=()
probe_dirs=()
cleanup() { ((${#probe_dirs[@]} == 0)) || rm -rf "${probe_dirs[@]}"; }
trap cleanup EXIT

probe_sanitizer() {
  local kind="$1" flags="$2"
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/degrade-${kind}-probe.XXXXXX")"
  probe_dirs+=("$dir")
  cat >"$dir/probe.cpp" <<'CPP'
#include <atomic>
#include <memory>
#include <thread>
#include <vector>
int main() {
  std::atomic<int> n{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) ts.emplace_back([&n] { auto p = std::make_unique<int>(1); n += *p; });
  for (auto& t : ts) t.join();
  return n == 2 ? 0 : 1;
}
CPP
  log "probing the ${kind} runtime (clang++ ${flags})"
  # shellcheck disable=SC2086
  if ! clang++ -std=c++17 -g $flags "$dir/probe.cpp" -o "$dir/probe" >"$dir/build.log" 2>&1; then
    cat "$dir/build.log" >&2
    die "clang++ cannot build a ${kind} program; is libclang-rt-14-dev installed? (cmake/ensure-debian-deps.sh --sanitizers)"
  fi
  if timeout 60 "$dir/probe" >"$dir/run.log" 2>&1; then
    echo "    ${kind} runtime works as is" >&2
    wrapper=()
  else
    echo "    ${kind} probe failed:" >&2
    sed 's/^/      /' "$dir/run.log" 2>/dev/null | head -n 20 >&2 || true
    local arch
    arch="$(uname -m)"
    if setarch "$arch" -R true 2>/dev/null && timeout 60 setarch "$arch" -R "$dir/probe" >"$dir/run2.log" 2>&1; then
      echo "    works with ASLR disabled: running the workflow under 'setarch $arch -R'" >&2
      echo "    (kernel vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?'); clang 14 sanitizers need <= 28)" >&2
      wrapper=(setarch "$arch" -R)
    else
      sed 's/^/      /' "$dir/run2.log" 2>/dev/null | head -n 20 >&2 || true
      die "the ${kind} runtime does not start on this machine, even under 'setarch $arch -R'.
If the message above is 'unexpected memory mapping', lower ASLR entropy as root:
  sysctl -w vm.mmap_rnd_bits=28
(in a container, setarch needs the personality() syscall, which some seccomp profiles forbid)."
    fi
  fi

  if [[ "$kind" == asan ]]; then
    # LeakSanitizer needs ptrace-like thread suspension; some sandboxes forbid it.
    cat >"$dir/leak.cpp" <<'CPP'
#include <cstdlib>
void* volatile sink;
int main() { sink = std::malloc(7); sink = nullptr; return 0; }
CPP
    # shellcheck disable=SC2086
    clang++ -g $flags "$dir/leak.cpp" -o "$dir/leak" >/dev/null 2>&1 || die "cannot build the LSan probe"
    ASAN_OPTIONS=detect_leaks=1 timeout 60 "${wrapper[@]}" "$dir/leak" >"$dir/leak.log" 2>&1 || true
    if grep -q "detected memory leaks" "$dir/leak.log"; then
      echo "    LeakSanitizer works" >&2
    else
      echo "    WARNING: LeakSanitizer does not work here; running with detect_leaks=0:" >&2
      sed 's/^/      /' "$dir/leak.log" | head -n 5 >&2
      export DEGRADE_ASAN_OPTIONS="detect_leaks=0${DEGRADE_ASAN_OPTIONS:+:$DEGRADE_ASAN_OPTIONS}"
    fi
  fi
}

# Runs one fuzz target ($1) for $2 seconds with dictionary $3, reading its
# committed corpus and writing new inputs under $4, crashes under $5; the
# output goes to $4/<target>.log.
fuzz_one() {
  local target="$1" seconds="$2" dict="$3" work="$4" artifacts="$5" leaks=1
  [[ "${DEGRADE_ASAN_OPTIONS:-}" == *detect_leaks=0* ]] && leaks=0
  mkdir -p "$work/$target" "$artifacts/$target"
  env ASAN_OPTIONS="${DEGRADE_ASAN_OPTIONS:-}" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "${wrapper[@]}" "$root/build/fuzz/tests/fuzz/${target}_fuzzer" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -detect_leaks="$leaks" -print_final_stats=1 -dict="$dict" \
    -artifact_prefix="$artifacts/$target/" \
    "$work/$target" "$root/tests/fuzz/corpus/$target" \
    >"$work/$target.log" 2>&1
}

# Runs every fuzz target for $1 seconds under the probed wrapper. New inputs
# go to a scratch directory (removed at exit), never into the repository.
fuzz_targets=(config trace_decode default_features hot_list_baseline settings
              segment_defaults request_class trace_trailer control_document
              etcd_watch)
run_fuzzers() {
  local seconds="$1" work artifacts failed=() target dict
  work="$(mktemp -d "${TMPDIR:-/tmp}/degrade-fuzz.XXXXXX")"
  probe_dirs+=("$work")
  artifacts="$root/build/fuzz/artifacts"
  for target in "${fuzz_targets[@]}"; do
    case "$target" in
      trace_decode | trace_trailer) dict="$root/tests/fuzz/trace.dict" ;;
      request_class | control_document | etcd_watch)
        dict="$root/tests/fuzz/$target.dict" ;;
      *) dict="$root/tests/fuzz/json.dict" ;;
    esac
    # etcd_watch is built only with the etcd adapter (cpp-httplib).
    if [[ "$target" == etcd_watch &&
      ! -x "$root/build/fuzz/tests/fuzz/${target}_fuzzer" ]]; then
      log "skipping $target: the fuzz build has no etcd adapter (cpp-httplib)"
      continue
    fi
    log "fuzzing $target for ${seconds} s"
    if timed fuzz_one "$target" "$seconds" "$dict" "$work" "$artifacts"; then
      grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|peak_rss_mb)' \
        "$work/$target.log" | sed 's/^/    /' >&2 || true
    else
      tail -n 60 "$work/$target.log" >&2
      failed+=("$target")
    fi
  done
  ((${#failed[@]} == 0)) || die "fuzz targets failed: ${failed[*]}.
The crashing inputs are in $artifacts/<target>/: add each to
tests/fuzz/corpus/<target>/ and a regression test to the suite."
}

# Prints the test executables (target names) of build/dev whose objects
# depend on one of the files that differ from commit $1, one per line.
touched_tests() {
  local base="$1" changed deps
  changed="$(git -C "$root" diff --name-only "$base" -- &&
    git -C "$root" ls-files --others --exclude-standard)"
  [[ -n "$changed" ]] || return 0
  deps="$(ninja -C "$root/build/dev" -t deps)"
  # ninja -t deps: "<object>: #deps N, deps mtime ..." then one indented
  # path per dependency (absolute for headers, as given for the source).
  # Any target under tests/ whose name build/dev registers as a gtest
  # executable: the batches (unit_3, unit_concurrency_2) as well as the
  # ALONE files (<name>_test), and not the helpers (fleet_test_instance).
  printf '%s\n' "$changed" | sed "s|^|$root/|" | awk '
    FNR == 1 { file++ }
    file == 1 { want[$0] = 1; next }
    file == 2 { registered[$0] = 1; next }
    /^[^ ].*: #deps/ { obj = substr($0, 1, index($0, ": #deps") - 1); next }
    /^    / { f = substr($0, 5)
              if ((f in want) && obj ~ /^tests\/CMakeFiles\/[^\/]*\.dir\//) {
                t = obj; sub(/^tests\/CMakeFiles\//, "", t); sub(/\.dir\/.*/, "", t)
                if (t in registered) print t } }' \
    - "$root/build/dev/tests/registered_tests.txt" <(printf '%s\n' "$deps") | sort -u
}

# Builds and runs the test executables $2... of preset $1, each in the
# environment its test preset gives ctest, under the sanitizer wrapper, for
# at most 10 minutes.
run_touched() {
  local preset="$1" failed=() t
  shift
  (($# > 0)) || return 0
  timed cmake --build --preset "$preset" --target "$@"
  for t in "$@"; do
    log "$preset: $t"
    if ! (cd "$root/build/$preset/tests" &&
      env ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1:strict_string_checks=1:${DEGRADE_ASAN_OPTIONS:-}" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${DEGRADE_UBSAN_OPTIONS:-}" \
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${DEGRADE_TSAN_OPTIONS:-}" \
        timeout 600 "${wrapper[@]}" "./$t" --gtest_brief=1); then
      failed+=("$t")
    fi
  done
  ((${#failed[@]} == 0)) || die "$preset: failed: ${failed[*]}"
}

# The presets generate Ninja files; a build directory made before that, with
# another generator, is configured afresh rather than failing.
fresh_if_other_generator() {
  local cache="$root/build/$1/CMakeCache.txt"
  if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    log "build/$1 was made with another generator: configuring it afresh"
    rm -rf "$root/build/$1/CMakeCache.txt" "$root/build/$1/CMakeFiles"
    return
  fi
  # The dev preset compiles with clang++ since issue 30; a build/dev made
  # with g++ before would otherwise stop at CMake's "compiler changed".
  if [[ "$1" == dev && -f "$cache" ]] &&
    ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$cache"; then
    log "build/$1 was made with another compiler: configuring it afresh"
    rm -rf "$root/build/$1/CMakeCache.txt" "$root/build/$1/CMakeFiles"
  fi
}

timed() {
  local start=$SECONDS
  "$@"
  local rc=$?
  echo "    ($* took $((SECONDS - start)) s)" >&2
  return $rc
}

cmd="${1:-}"
case "$cmd" in
  demo)
    ensure_deps
    log "configuring and building the demo (preset dev)"
    fresh_if_other_generator dev
    timed cmake --preset dev
    timed cmake --build --preset dev --target recsys_pipeline
    log "running build/dev/examples/recsys_pipeline"
    exec "$root/build/dev/examples/recsys_pipeline"
    ;;
  test)
    ensure_deps
    fresh_if_other_generator dev
    log "cmake --workflow --preset dev"
    timed cmake --workflow --preset dev
    ;;
  asan)
    ensure_deps --sanitizers
    probe_sanitizer asan "-fsanitize=address,undefined -fno-omit-frame-pointer"
    fresh_if_other_generator asan-ubsan
    log "${wrapper[*]:+${wrapper[*]} }cmake --workflow --preset asan-ubsan"
    timed "${wrapper[@]}" cmake --workflow --preset asan-ubsan
    ;;
  tsan)
    ensure_deps --sanitizers
    probe_sanitizer tsan "-fsanitize=thread"
    fresh_if_other_generator tsan
    log "${wrapper[*]:+${wrapper[*]} }cmake --workflow --preset tsan"
    timed "${wrapper[@]}" cmake --workflow --preset tsan
    ;;
  soak)
    ensure_deps
    fresh_if_other_generator soak
    log "cmake --workflow --preset soak"
    timed cmake --workflow --preset soak
    ;;
  fuzz)
    seconds="${2:-60}"
    [[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "fuzz: seconds per target must be a positive integer (got '$seconds')"
    ensure_deps --sanitizers
    probe_sanitizer asan "-fsanitize=address,undefined -fno-omit-frame-pointer"
    log "building the fuzz targets (preset fuzz)"
    fresh_if_other_generator fuzz
    timed cmake --preset fuzz
    timed cmake --build --preset fuzz
    run_fuzzers "$seconds"
    ;;
  plain)
    ensure_deps
    shift
    # Without arguments: the builds whose warnings no other step sees. g++
    # optimising is where -Wmaybe-uninitialized and friends appear (Release,
    # -O3), clang++ Release covers the examples and benchmarks, which the
    # clang sanitizer and fuzz presets do not build. Both leave out the
    # tests: g++ compiles them in the dev preset and clang++ in the
    # sanitizer presets, each with -Werror, and the g++ -O3 test build alone
    # took 20 of CI's 90 minutes once the gRPC suites arrived (every header
    # is still compiled at -O3 through the examples and benchmarks).
    # `plain Release` builds the tests too, with both compilers. Without
    # arguments g++ also reads every test unit, header check and docs block
    # with -fsyntax-only (the dev preset compiles them with clang++), a
    # third of the cost of compiling them (cmake/syntax-check.py).
    builds=("g++ Release OFF" "clang++ Release OFF")
    if (($# > 0)); then
      builds=()
      for type in "$@"; do
        builds+=("g++ $type ON" "clang++ $type ON")
      done
    fi
    for build in "${builds[@]}"; do
      read -r cxx type tests <<<"$build"
      [[ "$type" =~ ^(Debug|Release|RelWithDebInfo)$ ]] || die "plain: unknown build type '$type'"
      dir="$root/build/plain-${cxx%++}-$type"
      log "plain build: $cxx $type (tests $tests) in $dir"
      timed cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE="$type" \
        -DCMAKE_CXX_COMPILER="$cxx" -DDEGRADE_WERROR=ON \
        -DDEGRADE_BUILD_TESTS="$tests" >/dev/null
      timed cmake --build "$dir" -j2
    done
    if (($# == 0)); then
      dir="$root/build/plain-g-syntax"
      fresh_if_other_generator plain-g-syntax
      log "g++ reading every test unit with -fsyntax-only in $dir"
      timed cmake --preset dev -B "$dir" -DCMAKE_CXX_COMPILER=g++ \
        -DDEGRADE_BUILD_EXAMPLES=OFF >/dev/null
      timed cmake --build "$dir" -j2 --target degrade_test_generated_sources
      timed python3 "$root/cmake/syntax-check.py" "$dir" --jobs 2
    fi
    ;;
  check)
    if [[ -n "${2:-}" ]]; then
      base="$2"
    elif upstream="$(git -C "$root" rev-parse -q --verify '@{upstream}' 2>/dev/null)"; then
      base="$(git -C "$root" merge-base HEAD "$upstream")"
    elif git -C "$root" rev-parse -q --verify origin/main >/dev/null; then
      base="$(git -C "$root" merge-base HEAD origin/main)"
    else
      base=HEAD
    fi
    git -C "$root" rev-parse -q --verify "$base^{commit}" >/dev/null || die "check: '$base' is not a commit"
    ensure_deps --sanitizers
    fresh_if_other_generator dev
    log "cmake --workflow --preset dev"
    timed cmake --workflow --preset dev
    touched_list="$(touched_tests "$base")"
    mapfile -t touched < <(printf '%s' "$touched_list" | sed '/^$/d')
    log "$(git -C "$root" diff --name-only "$base" -- | wc -l) files differ from $base ($(git -C "$root" rev-parse --short "$base")); they reach ${#touched[@]} test executables: ${touched[*]:-none}"
    ((${#touched[@]} > 0)) || exit 0
    probe_sanitizer asan "-fsanitize=address,undefined -fno-omit-frame-pointer"
    fresh_if_other_generator asan-ubsan
    timed cmake --preset asan-ubsan >/dev/null
    run_touched asan-ubsan "${touched[@]}"
    probe_sanitizer tsan "-fsanitize=thread"
    fresh_if_other_generator tsan
    timed cmake --preset tsan >/dev/null
    threaded=()
    for t in "${touched[@]}"; do
      grep -qx "$t" "$root/build/tsan/tests/registered_tests.txt" && threaded+=("$t")
    done
    run_touched tsan "${threaded[@]}"
    log "check passed: the dev suite; ${#touched[@]} executables under ASan+UBSan, ${#threaded[@]} of them under TSan"
    ;;
  bench)
    ensure_deps
    fresh_if_other_generator bench
    log "cmake --workflow --preset bench"
    timed cmake --workflow --preset bench
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    usage >&2
    [[ -n "$cmd" ]] && die "unknown command: $cmd"
    exit 2
    ;;
esac
