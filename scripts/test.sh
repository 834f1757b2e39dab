#!/usr/bin/env bash
# The whole test suite: format and lints, unit and end-to-end tests (with the REAL local llama.cpp model server),
# third-party MCP clients (the official Python and TypeScript SDKs, MCP Inspector --strict, the conformance suite:
# scripts/test-external.sh), the plugin installed and driven in the real Claude Code and Codex CLIs (pinned, from
# npm) against scripted model endpoints, and the demo.
# Every stage runs even when an earlier one fails; the last lines list the stages that failed and the closing
# count ("tests: N passed, M failed"); the exit code is non-zero when any stage failed.
# The suite's model server has its own state folder and a free port: a server the user started with
# scripts/local-model.sh is never reused or stopped (the demo stage checks it still answers afterwards).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/local-llm-delegator

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/llw-test-run.XXXXXX")
LOG=$SCRATCH/cargo.log HOSTS_LOG=$SCRATCH/hosts.log DEMO_LOG=$SCRATCH/demo.log EXTERNAL_LOG=$SCRATCH/external.log
: >"$LOG"; : >"$HOSTS_LOG"; : >"$EXTERNAL_LOG"
FAILED_STAGES=()
SUITE_MODEL_STATE=$SCRATCH/model
cleanup() {
  LOCAL_MODEL_STATE=$SUITE_MODEL_STATE scripts/local-model.sh stop 2>/dev/null
  rm -rf -- "$SCRATCH"
}
trap cleanup EXIT

# stage NAME COMMAND...: run one stage; a failure is recorded, never the end of the run.
stage() {
  local name=$1; shift
  echo "== $name"
  if ! "$@"; then
    FAILED_STAGES+=("$name")
    echo "(stage failed: $name)"
  fi
}

stage "cargo fmt --check" cargo fmt --all -- --check
stage "cargo clippy" cargo clippy --all-targets --locked --quiet -- -D warnings
stage "no function in src/ over 100 lines (scripts/fn-lengths.py)" python3 scripts/fn-lengths.py --top 5
stage "the module graph has no circle and no upward import (scripts/import-graph.py)" python3 scripts/import-graph.py --quiet

echo "== local model server (the suite's own: its own state folder, a free port)"
URL=$(LOCAL_MODEL_STATE=$SUITE_MODEL_STATE LOCAL_MODEL_PORT=0 scripts/local-model.sh start) || {
  FAILED_STAGES+=("local model server"); URL=
}
echo "real model at ${URL:-(none)}"

cargo_tests() {
  LOCAL_LLM_TEST_URL=$URL LLW_REQUIRE_REAL_MODEL=1 cargo test --locked 2>&1 | tee "$LOG"
  return "${PIPESTATUS[0]}"
}
stage "cargo test" cargo_tests

external() {
  scripts/test-external.sh target/debug/local-llm-worker 2>&1 | tee "$EXTERNAL_LOG"
  return "${PIPESTATUS[0]}"
}
stage "third-party MCP clients (Python and TypeScript SDKs, MCP Inspector --strict, the conformance suite)" external

hosts() {
  cargo build --release --locked --quiet || { echo "hosts: 0 passed, 1 failed" >>"$HOSTS_LOG"; return 1; }
  scripts/test-hosts.sh 2>&1 | tee -a "$HOSTS_LOG"
  return "${PIPESTATUS[0]}"
}
stage "the plugin in the real host CLIs (Claude Code, Codex)" hosts

# The demo as a user runs it, while the user's own server (scripts/local-model.sh start, its default state folder)
# runs: the demo starts its own and must leave the user's running, and leave nothing in the temporary folder.
LOCAL_MODEL_STATE=$SUITE_MODEL_STATE scripts/local-model.sh stop
demo() {
  local left_before user_url user_was_running=0 ok=1
  leftovers() { find "${TMPDIR:-/tmp}" -maxdepth 1 \( -name 'llw-demo.*' -o -name 'llw-demo-state.*' \) 2>/dev/null | wc -l; }
  left_before=$(leftovers)
  if (scripts/local-model.sh url) >/dev/null 2>&1; then user_was_running=1; fi
  user_url=$(LOCAL_MODEL_PORT=0 scripts/local-model.sh start) || user_url=
  if scripts/demo.sh >"$DEMO_LOG" 2>&1; then
    tail -4 "$DEMO_LOG"
  else
    tail -40 "$DEMO_LOG"; ok=0
  fi
  if [ "$(leftovers)" != "$left_before" ]; then
    echo "the demo left a llw-demo.* folder in ${TMPDIR:-/tmp}"; ok=0
  fi
  if [ -n "$user_url" ] && ! python3 - "$user_url" <<'PY'
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rsplit("/v1", 1)[0] + "/health", timeout=5).read()
PY
  then
    echo "the demo stopped the user's model server at $user_url"; ok=0
  fi
  [ -n "$user_url" ] || { echo "the user's model server did not start"; ok=0; }
  [ "$user_was_running" = 1 ] || scripts/local-model.sh stop
  if [ "$ok" = 1 ]; then
    echo "demo: 1 passed, 0 failed" | tee -a "$HOSTS_LOG"
  else
    echo "demo: 0 passed, 1 failed" | tee -a "$HOSTS_LOG"
  fi
  [ "$ok" = 1 ]
}
stage "the demo (the README's first command), beside the user's own model server" demo

# One closing line for the whole run (cargo's last line is the doc-tests' and counts 0).
echo
for s in "${FAILED_STAGES[@]}"; do echo "failed stage: $s"; done
echo "${#FAILED_STAGES[@]} stage(s) failed"
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     /^(hosts|demo|external): [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$LOG" "$HOSTS_LOG" "$EXTERNAL_LOG"
[ "${#FAILED_STAGES[@]}" -eq 0 ]
