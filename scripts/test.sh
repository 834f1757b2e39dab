#!/usr/bin/env bash
# The whole test suite: format and lints, unit and end-to-end tests (with the REAL local llama.cpp model server),
# third-party MCP clients (the official Python and TypeScript SDKs, MCP Inspector --strict, the conformance suite:
# scripts/test-external.sh), the plugin installed and driven in the real Claude Code and Codex CLIs (pinned, from
# npm) against scripted model endpoints, and the demo.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked --quiet -- -D warnings

echo "== local model server"
URL=$(LOCAL_MODEL_PORT=${LOCAL_MODEL_PORT:-0} scripts/local-model.sh start)
trap 'scripts/local-model.sh stop' EXIT
echo "real model at $URL"

echo "== cargo test"
LOG=$(mktemp)
LOCAL_LLM_TEST_URL=$URL LLW_REQUIRE_REAL_MODEL=1 cargo test --locked 2>&1 | tee "$LOG"

echo "== third-party MCP clients (Python and TypeScript SDKs, MCP Inspector --strict, the conformance suite)"
EXTERNAL_LOG=$(mktemp)
if scripts/test-external.sh target/debug/local-llm-worker 2>&1 | tee "$EXTERNAL_LOG"; then
  EXTERNAL_FAILED=0
else
  EXTERNAL_FAILED=1
fi

echo "== the plugin in the real host CLIs (Claude Code, Codex)"
cargo build --release --locked --quiet
HOSTS_LOG=$(mktemp)
scripts/test-hosts.sh 2>&1 | tee "$HOSTS_LOG"

echo "== the demo (the README's first command), on a freshly started model server as a user runs it"
scripts/local-model.sh stop
DEMO_LOG=$(mktemp)
leftovers() { find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'llw-demo.*' 2>/dev/null | wc -l; }
LEFT_BEFORE=$(leftovers)
if scripts/demo.sh >"$DEMO_LOG" 2>&1 && [ "$(leftovers)" = "$LEFT_BEFORE" ]; then
  tail -4 "$DEMO_LOG"
  echo "demo: 1 passed, 0 failed" | tee -a "$HOSTS_LOG"
  DEMO_FAILED=0
else
  tail -40 "$DEMO_LOG"
  [ "$(leftovers)" = "$LEFT_BEFORE" ] || echo "the demo left a llw-demo.* folder in ${TMPDIR:-/tmp}"
  echo "demo: 0 passed, 1 failed" | tee -a "$HOSTS_LOG"
  DEMO_FAILED=1
fi

# One closing line for the whole run (cargo's last line is the doc-tests' and counts 0).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     /^(hosts|demo|external): [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$LOG" "$HOSTS_LOG" "$EXTERNAL_LOG"
rm -f "$LOG" "$HOSTS_LOG" "$DEMO_LOG" "$EXTERNAL_LOG"
exit $((DEMO_FAILED || EXTERNAL_FAILED))
