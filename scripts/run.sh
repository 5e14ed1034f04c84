#!/usr/bin/env bash
# The end of `./build.sh run`: start the server, then leave a browser with the extension
# connected (Chromium, configured through the Options page), or say how to load it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-8787}"
bin=target/debug/browser-operator
token=$("$bin" token | awk '$1 == "Token" && NF == 2 {print $2}')
url="ws://127.0.0.1:$port/ws"

"$bin" serve --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "The server did not start (is port $port taken? PORT=… ./build.sh run)" >&2; exit 1; }
  sleep 0.1
done
kill -0 "$server" 2>/dev/null || { echo "The server did not start (is port $port taken? PORT=… ./build.sh run)" >&2; exit 1; }

manual() {
  cat <<MSG

To use your own Chrome instead:
  1. chrome://extensions → Developer mode → Load unpacked → choose $(pwd)
  2. Extension Options: Server URL $url, Token $token → Save & connect
MSG
}

chromium=""
for c in "${CHROMIUM:-}" /usr/lib/chromium/chromium /usr/bin/chromium /usr/bin/google-chrome; do
  [ -n "$c" ] && [ -x "$c" ] && { chromium=$c; break; }
done
if [ -n "$chromium" ]; then
  export CHROMIUM="$chromium"
  cargo build -q -p browser-operator-e2e --bin launch
  manual
  port_flag=""; [ "$port" = 8787 ] || port_flag=" --port $port"
  TRY="target/debug/browser-operator call tabs_context_mcp '{\"createIfEmpty\": true}'$port_flag" \
    target/debug/launch "$url" "$token" "$(pwd)/.tools/profile"
else
  echo "No Chromium found (./build.sh setup installs it on Debian)."
  manual
  echo "The server keeps running; press Ctrl-C to stop it."
  wait "$server"
fi
