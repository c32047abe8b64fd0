#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the
# Node 22 it needs in scripts/conformance/package-lock.json) against protomcp's conformance
# examples, for each requirement set the suite defines (`conformance list --requirements R`:
# 2025-11-25 and 2026-07-28), at that revision's wire:
#
#   - every server scenario R requires against examples/conformance/server, one CLI run per
#     scenario (--scenario S --spec-version R);
#   - every client scenario R requires with examples/conformance/client, likewise.
#
# Those rows are scored, strictly: a scenario passes when none of its checks is a FAILURE or a
# WARNING (the CLI's --strict meaning), and for client scenarios the client also exited 0 in
# time. There is no expected-failures list.
#
# Then the scenarios the suite runs but never scores (extension, pending, added-after-release,
# and the rest of the CLI's --suite all beyond the requirement sets) run the same way and are printed with
# their results as REC rows, recorded in the results directory, but never fail the run (the
# tasks-* extension scenarios among them: docs/conformance.md says which pass).
#
# Prints one row per scenario and a last line "N passed, M failed" counting the scored rows;
# exits 1 unless every scored scenario passed, 2 when the harness itself cannot run.
#
# The npm packages go to .cache/conformance (MCP_CONFORMANCE_CACHE overrides it) and are
# installed with npm ci when missing or when the lock file changed. Raw results of the last 5
# runs are kept in .cache/conformance/results/<time>/<set>/{server,client}/<scenario>/. Needs
# Go and npm (any Node to run it).
#
# Usage: scripts/conformance.sh [scenario ...]   (no argument: all of them; with names, only
# those, in every set that lists them)
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

SETS=(2025-11-25 2026-07-28)

# scored SET KIND: the KIND (server or client) scenarios that requirement set SET scores.
scored() {
  "$NODE" "$SUITE" list --requirements "$1" | awk -v kind="$2" '
    /^Run and reported/ { exit }
    /^Server scenarios/ { on = kind == "server"; next }
    /^Client scenarios/ { on = kind == "client"; next }
    on && /^  - / { print $2 }'
}

# unscored KIND: the KIND scenarios that some set runs but does not score (extension,
# pending, added-after-release), each once, with the newest set that lists it.
unscored() {
  local set
  for set in "${SETS[@]}"; do
    "$NODE" "$SUITE" list --requirements "$set" | awk -v kind="[$1]" -v set="$set" '
      /^Run and reported/ { on = 1; next }
      on && /^    - / && $3 == kind { print $2 "\t" set }'
  done | tac | awk -F'\t' '!seen[$1]++' | tac
  # And what --suite all has beyond both sets (the skills extension, the 2025-03-26 OAuth
  # fallbacks), at the suite's default version.
  comm -23 <("$NODE" "$SUITE" list "--$1" | sed -n 's/^  - \([^ ]*\).*$/\1/p' | sort -u) \
    <(for set in "${SETS[@]}"; do "$NODE" "$SUITE" list --requirements "$set" | sed -n 's/^ *- \([^ ]*\).*$/\1/p'; done | sort -u) |
    sed 's/$/\tall/'
}

# wanted NAME: whether NAME was asked for on the command line (every name when none was).
wanted() {
  local a
  [[ ${#ARGS[@]} -eq 0 ]] && return 0
  for a in "${ARGS[@]}"; do [[ $a == "$1" ]] && return 0; done
  return 1
}
ARGS=("$@")

echo "MCP conformance $("$NODE" "$SUITE" --version) | server $URL | results $OUT"
echo
printf '%-6s %-10s %-46s %-8s %-7s %-6s %s\n' KIND SET SCENARIO RESULT P/F/W TIME NOTE

PASSED=0 FAILED=0 RECORDED=0 SEEN=0
declare -A ASKED=()
# row KIND SET SCENARIO DIR RC T0 SCORED [EXTRA-NOTE]: prints the scenario's row and counts it
# when SCORED is 1.
row() {
  local kind=$1 set=$2 name=$3 dir=$4 rc=$5 t0=$6 score=$7 extra=${8:-} p f w note res=PASS secs
  secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1fs", (b - a) / 1e9 }')
  IFS=$'\t' read -r p f w note < <("$NODE" "$PKG/summarize.mjs" "$dir")
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    extra="timed out${extra:+; $extra}"
  fi
  [[ -n $extra ]] && note="$extra${note:+; $note}"
  if [[ $f -gt 0 || $w -gt 0 || $p -eq 0 || -n $extra ]]; then
    res=FAIL
  fi
  if [[ $score -eq 1 ]]; then
    if [[ $res == PASS ]]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
  else
    res="REC:$res"
    RECORDED=$((RECORDED + 1))
  fi
  printf '%-6s %-10s %-46s %-8s %-7s %-6s %s\n' "$kind" "$set" "$name" "$res" "$p/$f/$w" "$secs" "$note"
}

# run KIND SET SCENARIO SCORED: runs one scenario at SET's wire and prints its row.
run() {
  local kind=$1 set=$2 s=$3 score=$4 d rc t0 extra="" opts=(--spec-version "$set")
  wanted "$s" || return 0
  # The suite skips extension scenarios at a dated version unless forced; those of no
  # requirement set ("all") run at its default version.
  [[ $score -eq 0 ]] && opts+=(--force)
  [[ $set == all ]] && opts=()
  ASKED[$s]=1
  SEEN=$((SEEN + 1))
  d=$OUT/$set/$kind/$s
  mkdir -p "$d"
  t0=$(date +%s%N)
  if [[ $kind == server ]]; then
    timeout -k 5 "$SERVER_TIMEOUT" "$NODE" "$SUITE" server --url "$URL" --scenario "$s" "${opts[@]}" -o "$d" >"$d/cli.log" 2>&1
    rc=$?
  else
    timeout -k 5 $((CLIENT_TIMEOUT + 30)) "$NODE" "$SUITE" client --command bin/conformance-client \
      --scenario "$s" "${opts[@]}" --timeout $((CLIENT_TIMEOUT * 1000)) -o "$d" >"$d/cli.log" 2>&1
    rc=$?
    grep -q 'CLIENT TIMED OUT' "$d/cli.log" && extra="client timed out"
    grep -q 'CLIENT EXITED WITH ERROR' "$d/cli.log" && extra="client exited non-zero"
  fi
  row "$kind" "$set" "$s" "$d" "$rc" "$t0" "$score" "$extra"
}

for set in "${SETS[@]}"; do
  for kind in server client; do
    mapfile -t SCENARIOS < <(scored "$set" "$kind")
    [[ ${#SCENARIOS[@]} -gt 0 ]] || die "the suite lists no $kind scenarios for $set"
    for s in "${SCENARIOS[@]}"; do run "$kind" "$set" "$s" 1; done
  done
done
echo
echo "not scored (extension, pending, added-after-release): recorded, never failing the run"
for kind in server client; do
  while IFS=$'\t' read -r s set; do run "$kind" "$set" "$s" 0; done < <(unscored "$kind")
done
if [[ ${#ARGS[@]} -gt 0 ]]; then
  for a in "${ARGS[@]}"; do [[ -n ${ASKED[$a]:-} ]] || die "unknown scenario: $a"; done
fi

echo
echo "recorded $RECORDED unscored scenario run(s); details in $OUT"
echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 && $SEEN -gt 0 ]] || {
  echo "details: $OUT/<set>/{server,client}/<scenario>/cli.log, server log: $OUT/server.log" >&2
  exit 1
}
