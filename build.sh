#!/usr/bin/env bash
# Browser Operator: one entry point for developers and CI.
#   ./build.sh setup     install what is missing (idempotent; skips what is there)
#   ./build.sh build     the wasm worker into extension/pkg, and the server
#   ./build.sh run       build, start the server, open Chromium with the extension connected
#   ./build.sh test      setup, build, lint, and every test (browser tests included)
#   ./build.sh lint      cargo fmt --check, clippy (native and wasm32), no import circles
#   ./build.sh bench     every speed goal beside its baseline, into docs/BENCHMARKS.md (`bench all`: the older bench_* too)
#   ./build.sh soak      commands under faults over every transport (SOAK_COMMANDS=10000 each)
#   ./build.sh brand     apply brand.json (name, icons, version) to manifest.json
#   ./build.sh package   the Chrome Web Store zip in dist/, checked to load in Chromium
#   ./build.sh fuzz      every fuzz target for FUZZ_SECONDS each (default 60; FUZZ_SEED replays)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

WASM_BINDGEN_VERSION=0.2.130   # must equal the wasm-bindgen crate version in crates/worker
BINARYEN_VERSION=132.0.0       # Debian's binaryen corrupts wasm-bindgen output; npm's works
AXE_VERSION=4.11.1             # accessibility checker used by tests/tests/pairing.rs
PLAYWRIGHT_MCP_VERSION=0.0.83  # the peer ./build.sh bench measures beside ours (tests/src/bench/playwright.rs)
PY_VENV="$ROOT/.tools/py"      # the Python driver's venv: clients/python with its pinned anthropic SDK
TOOLS="$ROOT/.tools"
WASM_OPT="$TOOLS/node_modules/binaryen/bin/wasm-opt"
PKG="$ROOT/extension/pkg"
PORT="${PORT:-8787}"


say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else return 1; fi; }

# Installs that mostly download run in the background while the build compiles: bg_start NAME
# starts one (its output in .tools/NAME.log), bg_wait NAME waits for it where its result is
# first used; a failure prints the log and ends the command.
declare -A BG_PID=()
bg_log() { echo "$TOOLS/$1.log"; }
bg_start() {
  local name=$1; shift
  mkdir -p "$TOOLS"
  "$@" >"$(bg_log "$name")" 2>&1 &
  BG_PID[$name]=$!
}
bg_wait() {
  local name=$1 pid=${BG_PID[$1]:-}
  [ -n "$pid" ] || return 0
  unset "BG_PID[$name]"
  if ! wait "$pid"; then
    cat "$(bg_log "$name")" >&2
    echo "$name failed (the log above, kept in $(bg_log "$name"))" >&2
    exit 1
  fi
}
bg_wait_all() { local n; for n in "${!BG_PID[@]}"; do bg_wait "$n"; done; }
trap bg_wait_all EXIT

chromium_bin() {
  for c in "${CHROMIUM:-}" /usr/lib/chromium/chromium /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}

setup_rust() {
  have cargo || { echo "Rust is missing: install it with rustup first." >&2; exit 1; }
  rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || { say "adding the wasm32 target"; rustup target add wasm32-unknown-unknown; }
  for comp in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$comp" \
      || { say "adding $comp"; rustup component add "$comp"; }
  done
  if [ -z "${BG_PID[wasm-bindgen]:-}" ] && [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
    # It compiles beside the other installs and the worker's own compile (5-6 min on 2 cores
    # beside them; at opt-level 1 without LTO no quicker, measured on two fresh runs).
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION in the background (a few minutes, once; log: $(bg_log wasm-bindgen))"
    # --locked fails: a locked dependency version is no longer published.
    bg_start wasm-bindgen cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
  if [ ! -x "$WASM_OPT" ] || [ "$("$WASM_OPT" --version 2>/dev/null | grep -o '[0-9]\+' | head -1)" != "${BINARYEN_VERSION%%.*}" ]; then
    have npm || { say "installing npm"; as_root apt-get update -qq; as_root apt-get install -y -qq npm; }
    say "installing wasm-opt (npm binaryen@$BINARYEN_VERSION)"
    mkdir -p "$TOOLS"
    npm install --prefix "$TOOLS" --no-save --no-audit --no-fund "binaryen@$BINARYEN_VERSION" "axe-core@$AXE_VERSION" >/dev/null
  fi
  # The accessibility checker the pairing tests run on the popup, Options and /pair pages.
  if [ ! -f "$TOOLS/node_modules/axe-core/axe.min.js" ]; then
    have npm || { as_root apt-get update -qq; as_root apt-get install -y -qq npm; }
    say "installing axe-core $AXE_VERSION (accessibility checks in the tests)"
    npm install --prefix "$TOOLS" --no-save --no-audit --no-fund "binaryen@$BINARYEN_VERSION" "axe-core@$AXE_VERSION" >/dev/null
  fi
  setup_ts_client
}

# The TypeScript driver's dependencies (the SDK it is tested with, TypeScript), from its lock
# file; skipped while node_modules holds what that lock file names.
setup_ts_client() {
  local dir="$ROOT/clients/typescript"
  cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json" 2>/dev/null && return 0
  have npm || { say "installing npm"; as_root apt-get update -qq; as_root apt-get install -y -qq npm; }
  say "installing the TypeScript driver's dependencies (npm ci in clients/typescript)"
  (cd "$dir" && npm ci --no-audit --no-fund >/dev/null)
  cp "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"
}

# Playwright MCP, the peer of ./build.sh bench, in a folder of its own (an npm install into
# $TOOLS would remove the packages it does not name). It runs the system Chromium: no download.
setup_playwright_mcp() {
  local dir="$TOOLS/playwright-mcp" pkg="$TOOLS/playwright-mcp/node_modules/@playwright/mcp/package.json"
  [ "$(node -p 'require(process.argv[1]).version' "$pkg" 2>/dev/null)" = "$PLAYWRIGHT_MCP_VERSION" ] && return 0
  have npm || { say "installing npm"; as_root apt-get update -qq; as_root apt-get install -y -qq npm; }
  say "installing Playwright MCP $PLAYWRIGHT_MCP_VERSION (the benchmark's peer)"
  mkdir -p "$dir"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$dir" --no-save --no-audit --no-fund \
    "@playwright/mcp@$PLAYWRIGHT_MCP_VERSION" >/dev/null
}

# Debian's packages, by what needs them. setup_system installs what is missing of the named
# needs in one apt transaction in the background; need_system waits for it and checks each.
#   wasm_cc   clang, lld, llvm: the code-mode sandbox embeds QuickJS (C), compiled for wasm32
#   chromium  the browser the tests, the bench and ./build.sh run drive
#   xvfb      a virtual display for the test that drives a windowed (headful) Chromium
#   venv      python3-venv: the Python driver's tests run in a venv
#   fleet     redis-server, nginx, openssl: the fleet tests (crates/server/tests/fleet.rs,
#             tests/tests/fleet.rs) and the bench's fleet rows start their own on free loopback
#             ports, no system service; openssl makes the TLS test's certificates
have_nginx() { have nginx || [ -x /usr/sbin/nginx ]; }
system_ok() {
  case $1 in
    wasm_cc) have clang && have llvm-ar && clang -print-targets 2>/dev/null | grep -q wasm32 ;;
    chromium) chromium_bin >/dev/null ;;
    xvfb) have Xvfb ;;
    venv) have python3 && python3 -c 'import ensurepip, venv' 2>/dev/null ;;
    fleet) have redis-server && have_nginx && have openssl ;;
  esac
}
system_packages() {
  case $1 in
    wasm_cc) echo clang lld llvm ;;
    chromium) echo chromium ;;
    xvfb) echo xvfb ;;
    venv) echo python3 python3-venv ;;
    fleet) echo redis-server nginx openssl ;;
  esac
}
apt_install() {
  as_root apt-get update -qq
  # A package whose service fails to start (port 80 or 6379 taken, no init system) still leaves
  # its binary, which is all that is used: need_system checks the binaries, not this status.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" || true
}
setup_system() {
  local need pkgs=()
  bg_wait apt
  for need in "$@"; do
    if ! system_ok "$need"; then
      read -ra more <<<"$(system_packages "$need")"
      pkgs+=("${more[@]}")
    fi
  done
  [ ${#pkgs[@]} -gt 0 ] || return 0
  if have apt-get && as_root true 2>/dev/null; then
    say "installing ${pkgs[*]} (Debian packages, in the background; log: $(bg_log apt))"
    bg_start apt apt_install "${pkgs[@]}"
  fi
}
need_system() {
  local need missing=()
  bg_wait apt
  for need in "$@"; do
    system_ok "$need" || missing+=("$need")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ -s "$(bg_log apt)" ] && cat "$(bg_log apt)" >&2
  for need in "${missing[@]}"; do
    echo "missing: $(system_packages "$need") (Debian packages) for $need; install them, or run this as root or with sudo." >&2
  done
  [[ " ${missing[*]} " == *" chromium "* ]] && echo "Or set CHROMIUM=/path/to/chrome." >&2
  return 1
}

# The Python driver's tests (tests/tests/driver_python.rs) run in a venv with the SDK version
# clients/python/pyproject.toml pins, installed the way a user installs the driver; in the
# background when python3-venv is there already, else once need_system has installed it.
python_client_ok() {
  local pin
  pin=$(grep -o '"anthropic==[^"]*"' "$ROOT/clients/python/pyproject.toml" | tr -d '"' | cut -d= -f3)
  [ "$("$PY_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("anthropic"))' 2>/dev/null)" = "$pin" ]
}
install_python_client() {
  rm -rf "$PY_VENV"
  python3 -m venv "$PY_VENV"
  "$PY_VENV/bin/pip" install -q --disable-pip-version-check --no-input "$ROOT/clients/python"
}
setup_python_client() {
  # Already there, or waits for python3-venv's install (need_python_client makes it then).
  if python_client_ok || ! system_ok venv; then return 0; fi
  say "making $PY_VENV: pip install ./clients/python (in the background; log: $(bg_log pip))"
  bg_start pip install_python_client
}
# The venv, ready: the background install's, or now (once python3-venv is installed).
need_python_client() {
  bg_wait pip
  python_client_ok && return 0
  need_system venv
  say "making $PY_VENV: pip install ./clients/python"
  install_python_client
}

# wasm-opt, at the level that makes each module's gzip smallest (measured on 8f0c1a2's
# build: the worker 418,779 bytes gzip at -O1 against 469,024 at -Oz and 467,123 at -Oz
# --converge, whose inlining and outlining compress worse; the sandbox 298,193 at -Oz against
# 301,703 at -O1). --converge saved under 0.5 % for minutes of CI time, so it is not used.
# --low-memory-unused: the first 1 KB is the far end of the 1 MB stack and no valid address
# plus a small constant wraps past 4 GB into it, so such a sum folds into the load's offset.
wasm_opt() {
  "$WASM_OPT" "$2" --low-memory-unused --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-reference-types --enable-multivalue --enable-mutable-globals "$1" -o "$1.opt"
  mv "$1.opt" "$1"
}

build_worker() {
  say "building the wasm worker"
  cargo build --release -p browser-operator-worker --target wasm32-unknown-unknown
  if [ -n "${BG_PID[wasm-bindgen]:-}" ]; then
    bg_wait wasm-bindgen
    say "wasm-bindgen-cli $WASM_BINDGEN_VERSION installed"
  fi
  rm -rf "$PKG"
  wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir "$PKG" "$ROOT/target/wasm32-unknown-unknown/release/browser_operator_worker.wasm"
  local wasm="$PKG/browser_operator_worker_bg.wasm"
  wasm_opt "$wasm" -O1
  say "worker: $(wc -c <"$wasm") bytes raw, $(gzip -9c "$wasm" | wc -c) bytes gzip"
  build_sandbox
}

# Code mode's sandbox (QuickJS): its own wasm module, which extension/sandbox.js loads on first use.
build_sandbox() {
  say "building the code-mode sandbox"
  need_system wasm_cc
  cargo build --release -p browser-operator-sandbox --target wasm32-unknown-unknown
  wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir "$PKG/sandbox" "$ROOT/target/wasm32-unknown-unknown/release/browser_operator_sandbox.wasm"
  local wasm="$PKG/sandbox/browser_operator_sandbox_bg.wasm"
  wasm_opt "$wasm" -Oz
  say "sandbox: $(wc -c <"$wasm") bytes raw, $(gzip -9c "$wasm" | wc -c) bytes gzip"
}

# brand.json and the workspace version are the source of truth; manifest.json follows them.
apply_brand() {
  python3 - "$ROOT" <<'PY'
import json, re, sys
from pathlib import Path
root = Path(sys.argv[1])
brand = json.loads((root / "brand.json").read_text())
cargo = (root / "Cargo.toml").read_text()
version = re.search(r'\[workspace\.package\][^\[]*?version\s*=\s*"([^"]+)"', cargo, re.S).group(1)
path = root / "manifest.json"
before = path.read_text()
m = json.loads(before)
m["name"] = brand["productName"]
m["version"] = version
m["icons"] = brand["icons"]
m.setdefault("action", {})["default_title"] = brand["productName"]
m["action"]["default_icon"] = brand["icons"]
for size, rel in brand["icons"].items():
    if not (root / rel).is_file():
        sys.exit(f"brand.json names {rel} for {size}px but it does not exist (python3 scripts/icons.py draws them)")
after = json.dumps(m, indent=2, ensure_ascii=False) + "\n"
if after != before:
    path.write_text(after)
    print("manifest.json updated from brand.json", file=sys.stderr)
PY
}

package() {
  apply_brand
  build_worker
  package_zip
}

# The zip of what build_worker built; its path is left in PACKAGE_ZIP.
package_zip() {
  local version dist zip
  version=$(python3 -c 'import json; print(json.load(open("manifest.json"))["version"])')
  dist="$ROOT/dist"; zip="$dist/browser-operator-$version.zip"
  # The files the extension loads, followed from the manifest and each file's imports (not a
  # hand list); the store assigns the id, so the manifest's "key" is dropped.
  rm -f "$zip"
  python3 "$ROOT/scripts/package.py" zip "$zip" "$ROOT"
  say "checking that the zip loads in Chromium"
  need_system chromium
  local check profile port worker=""
  check=$(mktemp -d); profile=$(mktemp -d)
  python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$check"
  "$(chromium_bin)" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
    --load-extension="$check" --disable-extensions-except="$check" --remote-debugging-port=0 about:blank \
    >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 50); do
    if [ -s "$profile/DevToolsActivePort" ]; then
      port=$(head -1 "$profile/DevToolsActivePort")
      worker=$(curl -s "http://127.0.0.1:$port/json/list" | grep -o 'chrome-extension://[a-p]*/extension/worker.js' | head -1 || true)
      [ -n "$worker" ] && break
    fi
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  # Chromium's helper processes can outlive the main one for a moment and still write to the
  # profile: a removal that meets them is tried again, and a leftover temp dir fails nothing.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf "$check" "$profile" 2>/dev/null && break
    sleep 0.2
  done
  [ -n "$worker" ] || { echo "the packaged extension did not start its service worker in Chromium" >&2; exit 1; }
  say "$zip ($(wc -c <"$zip") bytes): loads in Chromium ($worker)"
  PACKAGE_ZIP="$zip"
}

build_server() {
  say "building the server"
  cargo build -p browser-operator-server
}

# cargo-nextest runs every test binary at once (groups and priorities in .config/nextest.toml):
# the suite's time is then its work, not the sum of its timer waits.
setup_nextest() {
  cargo nextest --version >/dev/null 2>&1 && return 0
  say "installing cargo-nextest (once)"
  cargo install cargo-nextest --locked || cargo install cargo-nextest
}

run_tests() {
  say "tests (unit, server, and headless Chromium end to end)"
  need_system chromium xvfb fleet
  need_python_client
  # Only these crates have doc examples; the worker's and the sandbox's native libraries would
  # be built for nothing else.
  cargo test --doc -q -p browser-operator-e2e -p browser-operator-server -p browser-operator-protocol
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast
  else
    echo "cargo-nextest could not be installed: running the tests one binary at a time" >&2
    RUST_TEST_THREADS="${RUST_TEST_THREADS:-3}" cargo test --workspace --no-fail-fast
  fi
}

lint() {
  say "cargo fmt --check"
  cargo fmt --all -- --check
  say "clippy (native)"
  cargo clippy --workspace --all-targets -- -D warnings
  say "clippy (wasm32)"
  need_system wasm_cc
  cargo clippy -p browser-operator-worker -p browser-operator-sandbox --target wasm32-unknown-unknown -- -D warnings
  say "import circles (worker, server)"
  python3 scripts/import_cycles.py crates/worker/src crates/server/src
}

# The fuzz targets are ordinary tests (a quick pass in `test`); here each runs FUZZ_SECONDS.
fuzz() {
  local secs="${FUZZ_SECONDS:-60}" log status=0
  say "fuzzing: ${secs} s per target (FUZZ_SECONDS); the inputs are a function of FUZZ_SEED"
  log=$(mktemp)
  FUZZ_SECONDS="$secs" cargo test --release -p browser-operator-protocol --lib fuzz_ -- --nocapture --test-threads=1 >"$log" 2>&1 || status=1
  FUZZ_SECONDS="$secs" cargo test --release -p browser-operator-server --test fuzz -- --nocapture --test-threads=1 >>"$log" 2>&1 || status=1
  grep -aoE 'fuzz [a-z -]+: [0-9]+ inputs.*|^  statuses.*|panicked.*|^test result.*' "$log" || true
  if [ "$status" != 0 ]; then
    echo "a fuzz target failed (replay with the FUZZ_SEED it printed); the whole log: $log" >&2
    exit 1
  fi
  rm -f "$log"
}

cmd="${1:-help}"
case "$cmd" in
  setup)
    setup_rust; setup_system wasm_cc chromium xvfb venv fleet; setup_python_client
    need_system wasm_cc chromium xvfb venv fleet; need_python_client; bg_wait_all
    ;;
  build) setup_rust; setup_system wasm_cc; apply_brand; build_worker; build_server ;;
  brand) apply_brand ;;
  package) setup_rust; setup_system wasm_cc chromium; package ;;
  lint) setup_rust; setup_system wasm_cc; lint ;;
  fuzz) setup_rust; fuzz ;;
  test)
    setup_rust; setup_system wasm_cc chromium xvfb venv fleet; setup_python_client; setup_nextest || true
    # The server is built with the tests (run_tests): built alone first, its dependencies
    # (tokio, axum, rmcp, redis) get fewer features than the workspace's tests give them, and
    # were compiled twice (2 min on 2 cores).
    build_worker
    lint
    # The store zip, which tests/tests/package.rs unpacks and drives in Chromium.
    apply_brand; package_zip
    BROWSER_OPERATOR_PACKAGE="$PACKAGE_ZIP" FUZZ_SECONDS="${FUZZ_SECONDS:-1}" run_tests
    ;;
  bench)
    # One run (tests/src/bin/bench.rs) measures every goal of the speed issue beside its
    # baseline and writes docs/BENCHMARKS.md and docs/benchmarks.svg; BENCH_ROUNDS and
    # BENCH_ONLY=<section> shorten it. `./build.sh bench all` then runs the older bench_*
    # binaries too (each its own measure and baseline, printed).
    setup_rust; setup_system wasm_cc chromium fleet; setup_playwright_mcp
    build_worker
    need_system chromium fleet
    say "building the server and the bench (release)"
    cargo build --release -p browser-operator-server -p browser-operator-e2e --bin browser-operator --bin bench
    say "bench (load: $(cut -d' ' -f1-3 /proc/loadavg))"
    "${CARGO_TARGET_DIR:-$ROOT/target}/release/bench"
    if [ "${2:-}" = all ]; then
      cargo build --release -q -p browser-operator-e2e --bins
      for b in tests/src/bin/bench_*.rs; do
        name=$(basename "$b" .rs)
        say "$name"
        cargo run --release -q -p browser-operator-e2e --bin "$name"
      done
    fi
    ;;
  soak)
    # 10,000 commands per network transport (SOAK_COMMANDS, SOAK_TRANSPORTS, SOAK_MINUTES: see
    # tests/src/bin/soak.rs) with the server restarted every 1,000 and the worker stopped three
    # times. The report goes to stdout; the in-process server's log to a file.
    setup_rust; setup_system wasm_cc chromium
    build_worker; build_server
    need_system chromium
    cargo build -q -p browser-operator-e2e --bin soak
    log="$ROOT/target/soak-server.log"
    say "soak (server log: $log; load: $(cut -d' ' -f1-3 /proc/loadavg))"
    "$ROOT/target/debug/soak" 2>"$log"
    ;;
  run)
    setup_rust; setup_system wasm_cc chromium
    build_worker; build_server
    need_system chromium || true
    exec "$ROOT/scripts/run.sh" "$PORT"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = help ] || exit 2
    ;;
esac
