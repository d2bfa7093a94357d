#!/usr/bin/env bash
# ensure-debian-deps.sh: install the Debian 12 packages degrade needs, if missing.
#
# Usage: cmake/ensure-debian-deps.sh [--sanitizers] [--dry-run]
#
#   (default)      build tools: cmake g++ clang make ninja-build (the presets
#                               generate Ninja files)
#                  libraries:   libabsl-dev nlohmann-json3-dev libgtest-dev
#                               libgmock-dev libbenchmark-dev
#                  metrics:     libcpp-httplib-dev (the HTTP server of
#                               examples/metrics_server), prometheus (the
#                               integration test scrapes that server with a
#                               real Prometheus; its promtool checks the
#                               demo's exposition), python3 (runs that test)
#                  Redis:       libhiredis-dev (the optional degrade::redis
#                               adapter) and redis-server (its tests start
#                               private instances; the package's own system
#                               service is not used by them). Installed by
#                               default so `run.sh test` and CI run those
#                               tests; without them degrade still builds and
#                               tests everything else.
#                  etcd:        etcd-server etcd-client (the optional
#                               degrade::etcd adapter's tests start private
#                               etcd processes on loopback; the adapter
#                               itself needs libcpp-httplib-dev, and
#                               libssl-dev for TLS to etcd).
#                               Without them those tests are not built.
#   gRPC:        libgrpc++-dev libprotobuf-dev protobuf-compiler
#                               protobuf-compiler-grpc (the optional
#                               degrade::grpc adapter; its tests start gRPC
#                               servers on loopback inside the test process).
#                               Without them degrade builds and tests the
#                               rest.
#   TLS:         openssl (the command: the mutual-TLS tests and the gRPC
#                               demo make their certificates with it, per
#                               run, in their own temporary directories)
#   --sanitizers   also clang's sanitizer runtimes (libclang-rt-14-dev), which
#                  Debian's clang only Recommends, so minimal installs lack it
#   --dry-run      only report what is missing; exit 1 if anything is
#
# Never prompts: apt-get runs with -y and DEBIAN_FRONTEND=noninteractive, and
# sudo is only used if it works without a password (`sudo -n true`).
# Set DEGRADE_SKIP_DEPS=1 to skip the check entirely (e.g. non-Debian hosts
# with the dependencies installed some other way).
set -euo pipefail

log() { printf 'ensure-debian-deps: %s\n' "$*" >&2; }

want_sanitizers=0
dry_run=0
for arg in "$@"; do
  case "$arg" in
    --sanitizers) want_sanitizers=1 ;;
    --dry-run) dry_run=1 ;;
    -h | --help)
      sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      log "unknown argument: $arg"
      exit 2
      ;;
  esac
done

if [[ "${DEGRADE_SKIP_DEPS:-0}" == 1 ]]; then
  log "DEGRADE_SKIP_DEPS=1: not checking packages"
  exit 0
fi

packages=(cmake g++ clang make ninja-build
  libabsl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  prometheus libcpp-httplib-dev libssl-dev python3
  libhiredis-dev redis-server
  etcd-server etcd-client
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  openssl)
if ((want_sanitizers)); then
  packages+=(libclang-rt-14-dev)
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  log "not a Debian-like system (no dpkg-query/apt-get); make sure these are installed:"
  log "  ${packages[*]}"
  log "continuing; CMake will report anything that is missing"
  exit 0
fi

is_installed() {
  local status
  status="$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)"
  [[ "$status" == installed ]]
}

missing=()
for pkg in "${packages[@]}"; do
  if ! is_installed "$pkg"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  log "all required packages are installed (${packages[*]})"
  exit 0
fi

log "missing packages: ${missing[*]}"
install_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"

if ((dry_run)); then
  log "to install them, run as root: $install_cmd"
  exit 1
fi

if [[ "$(id -u)" == 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null </dev/null; then
  as_root=(sudo -n)
else
  log "ERROR: cannot install ${missing[*]}: not root and passwordless sudo is unavailable."
  log "Install them yourself, e.g.:"
  log "  sudo sh -c '$install_cmd'"
  exit 1
fi

log "running: ${as_root[*]:+${as_root[*]} }apt-get update"
"${as_root[@]}" apt-get update </dev/null
log "installing: ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}" </dev/null

still_missing=()
for pkg in "${missing[@]}"; do
  is_installed "$pkg" || still_missing+=("$pkg")
done
if ((${#still_missing[@]} != 0)); then
  log "ERROR: still missing after apt-get install: ${still_missing[*]}"
  exit 1
fi
log "installed: ${missing[*]}"
