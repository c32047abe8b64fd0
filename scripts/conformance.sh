#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the
# Node 22 it needs in scripts/conformance/package-lock.json) against protomcp:
#
#   - every server scenario against examples/conformance/server, one CLI run per scenario;
#   - every client scenario (the suite's `list --client`: initialize, tools_call,
#     elicitation-sep1034-client-defaults, sse-retry and the auth/* scenarios) with
#     examples/conformance/client.
#
# A scenario passes when none of its checks is a FAILURE or a WARNING (the CLI's --strict
# meaning), and for client scenarios the client also exited 0 in time. Prints one row per
# scenario and a last line "N passed, M failed"; exits 1 unless every scenario passed, 2 when
# the harness itself cannot run.
#
# The npm packages go to .cache/conformance (MCP_CONFORMANCE_CACHE overrides it) and are
# installed with npm ci when missing or when the lock file changed. Raw results of the last 5
# runs are kept in .cache/conformance/results/<time>/. Needs Go and npm (any Node to run it).
#
# Usage: scripts/conformance.sh [scenario ...]   (no argument: all of them)
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG=$ROOT/scripts/conformance
CACHE=${MCP_CONFORMANCE_CACHE:-$ROOT/.cache/conformance}
NODE=$CACHE/node_modules/.bin/node
SUITE=$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js
SERVER_TIMEOUT=60 # seconds per server scenario
CLIENT_TIMEOUT=30 # seconds the suite gives the client

die() {
  echo "conformance: $*" >&2
  exit 2
}

install_suite() {
  local stamp=$CACHE/.installed want
  want=$(cat "$PKG/package.json" "$PKG/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [[ -x $NODE && -f $SUITE && -f $stamp && $(cat "$stamp") == "$want" ]]; then
    return
  fi
  command -v npm >/dev/null || die "npm is needed to install the suite into $CACHE"
  echo "installing the conformance suite and Node 22 into $CACHE ..." >&2
  mkdir -p "$CACHE" || die "cannot create $CACHE"
  rm -rf "$CACHE/node_modules" "$stamp"
  cp "$PKG/package.json" "$PKG/package-lock.json" "$CACHE/" || die "cannot copy the package files"
  (cd "$CACHE" && timeout 600 npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $CACHE"
  [[ -x $NODE ]] || die "$NODE is missing after npm ci"
  "$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' || die "$NODE is not Node 22 or newer"
  echo "$want" >"$stamp"
}

install_suite
cd "$ROOT" || die "cannot cd to $ROOT"
go build -o bin/conformance-server ./examples/conformance/server || die "building the server failed"
go build -o bin/conformance-client ./examples/conformance/client || die "building the client failed"

OUT=$CACHE/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" || die "cannot create $OUT"
# Keep the results of the last 5 runs only.
find "$CACHE/results" -mindepth 1 -maxdepth 1 -type d | sort | head -n -5 | while read -r old; do rm -rf -- "$old"; done

# Start the server on a free loopback port; it prints its URL once it is listening.
bin/conformance-server -addr 127.0.0.1:0 >"$OUT/server.url" 2>"$OUT/server.log" &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null' EXIT
trap 'exit 130' INT TERM
URL=""
for _ in $(seq 1 100); do
  URL=$(head -n1 "$OUT/server.url" 2>/dev/null)
  [[ -n $URL ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited: $(cat "$OUT/server.log")"
  sleep 0.1
done
[[ -n $URL ]] || die "the server did not print its URL within 10s"

mapfile -t SERVER_SCENARIOS < <("$NODE" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*$/\1/p')
[[ ${#SERVER_SCENARIOS[@]} -gt 0 ]] || die "the suite lists no server scenarios"
mapfile -t CLIENT_SCENARIOS < <("$NODE" "$SUITE" list --client | sed -n 's/^  - \([^ ]*\).*$/\1/p')
[[ ${#CLIENT_SCENARIOS[@]} -gt 0 ]] || die "the suite lists no client scenarios"

# Only the scenarios named on the command line, if any.
if [[ $# -gt 0 ]]; then
  pick() {
    local s a
    for s; do for a in "${ARGS[@]}"; do [[ $s == "$a" ]] && echo "$s"; done; done
  }
  ARGS=("$@")
  mapfile -t SERVER_SCENARIOS < <(pick "${SERVER_SCENARIOS[@]}")
  mapfile -t CLIENT_SCENARIOS < <(pick "${CLIENT_SCENARIOS[@]}")
  [[ $((${#SERVER_SCENARIOS[@]} + ${#CLIENT_SCENARIOS[@]})) -eq $# ]] || die "unknown scenario among: $*"
fi

echo "MCP conformance $("$NODE" "$SUITE" --version) | server $URL | results $OUT"
echo
printf '%-6s %-48s %-6s %-7s %-6s %s\n' KIND SCENARIO RESULT P/F/W TIME NOTE

PASSED=0 FAILED=0
# row KIND SCENARIO DIR RC T0 [EXTRA-NOTE]: prints the scenario's row and counts it.
row() {
  local kind=$1 name=$2 dir=$3 rc=$4 t0=$5 extra=${6:-} p f w note res=PASS secs
  secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1fs", (b - a) / 1e9 }')
  IFS=$'\t' read -r p f w note < <("$NODE" "$PKG/summarize.mjs" "$dir")
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    extra="timed out${extra:+; $extra}"
  fi
  [[ -n $extra ]] && note="$extra${note:+; $note}"
  if [[ $f -gt 0 || $w -gt 0 || $p -eq 0 || -n $extra ]]; then
    res=FAIL
    FAILED=$((FAILED + 1))
  else
    PASSED=$((PASSED + 1))
  fi
  printf '%-6s %-48s %-6s %-7s %-6s %s\n' "$kind" "$name" "$res" "$p/$f/$w" "$secs" "$note"
}

for s in "${SERVER_SCENARIOS[@]}"; do
  d=$OUT/server/$s
  mkdir -p "$d"
  t0=$(date +%s%N)
  timeout -k 5 "$SERVER_TIMEOUT" "$NODE" "$SUITE" server --url "$URL" --scenario "$s" -o "$d" >"$d/cli.log" 2>&1
  row server "$s" "$d" $? "$t0"
done

for s in "${CLIENT_SCENARIOS[@]}"; do
  d=$OUT/client/$s
  mkdir -p "$d"
  t0=$(date +%s%N)
  timeout -k 5 $((CLIENT_TIMEOUT + 30)) "$NODE" "$SUITE" client --command bin/conformance-client \
    --scenario "$s" --timeout $((CLIENT_TIMEOUT * 1000)) -o "$d" >"$d/cli.log" 2>&1
  rc=$?
  extra=""
  grep -q 'CLIENT TIMED OUT' "$d/cli.log" && extra="client timed out"
  grep -q 'CLIENT EXITED WITH ERROR' "$d/cli.log" && extra="client exited non-zero"
  row client "$s" "$d" "$rc" "$t0" "$extra"
done

echo
echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]] || {
  echo "details: $OUT/{server,client}/<scenario>/cli.log, server log: $OUT/server.log" >&2
  exit 1
}
