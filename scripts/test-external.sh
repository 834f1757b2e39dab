#!/usr/bin/env bash
# The worker's MCP server through clients no one on this project wrote, all pinned: the official Python SDK
# (tests/external/list_tools.py), the TypeScript SDK client calling every tool for a success and a refusal of each
# kind it can provoke (tests/external/ts_client.cjs), MCP Inspector's CLI `--strict` on tools/list (0 errors, 0
# warnings), and the official conformance suite's scenarios that apply to a tools-only server (server-initialize,
# ping, tools-list) through supergateway (stdio to Streamable HTTP). The npm packages (tests/external/package.json
# and its lock, Node 22 among them for Inspector and the conformance suite) and the Python venv are installed once
# into a cache folder outside the repository and reused; the npm registry and PyPI are only asked when the pins
# change. Prints `external: N passed, M failed` last; exits non-zero on a failure.
#
# Usage: scripts/test-external.sh [path/to/local-llm-worker]   (default: target/debug/local-llm-worker)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=$(realpath "${1:-target/debug/local-llm-worker}")
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/local-llm-delegator
NPM_DIR=$CACHE/external
PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && [ -f "$2" ] && tail -30 "$2"; }
RUN=$(mktemp -d "${TMPDIR:-/tmp}/llw-external.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$RUN"
}
trap cleanup EXIT
finish() {
  echo "external: $PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
  exit
}
[ -x "$BIN" ] || { fail "no worker binary at $BIN (cargo build first)"; finish; }
# The worker's own state in this run's folder, never the user's.
export LOCAL_LLM_STATE_DIR=$RUN/state LOCAL_LLM_LEDGER=$RUN/ledger.jsonl
unset LOCAL_LLM_CONFIG LOCAL_LLM_ALLOWED_ROOTS

# The npm packages, installed again only when the pins change.
STAMP=$(cat tests/external/package.json tests/external/package-lock.json | sha256sum | cut -c1-16)
if [ "$(cat "$NPM_DIR/.stamp" 2>/dev/null)" != "$STAMP" ] || [ ! -d "$NPM_DIR/node_modules" ]; then
  rm -rf "$NPM_DIR" && mkdir -p "$NPM_DIR"
  cp tests/external/package.json tests/external/package-lock.json "$NPM_DIR/"
  if (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error >"$RUN/npm.log" 2>&1); then
    echo "$STAMP" >"$NPM_DIR/.stamp"
  else
    fail "npm ci of tests/external/package.json" "$RUN/npm.log"
    finish
  fi
fi
MODULES=$NPM_DIR/node_modules
NODE22=$MODULES/.bin
if ! "$NODE22/node" --version | grep -q '^v22\.'; then
  fail "Node 22 from npm (package node) is not in $NODE22"
  finish
fi

echo "== the official Python SDK (mcp, pinned)"
if [ ! -x "$CACHE/mcp-client/bin/python" ] || ! "$CACHE/mcp-client/bin/python" -c 'import mcp' 2>/dev/null; then
  python3 -m venv "$CACHE/mcp-client"
  "$CACHE/mcp-client/bin/pip" install -q --disable-pip-version-check 'mcp==2.3.0'
fi
if "$CACHE/mcp-client/bin/python" tests/external/list_tools.py "$BIN" >"$RUN/python.log" 2>&1; then
  pass "Python SDK: tools listed, a refusal read with its kind"
else
  fail "Python SDK (tests/external/list_tools.py)" "$RUN/python.log"
fi

echo "== the TypeScript SDK client (@modelcontextprotocol/sdk, pinned; ajv strict)"
LLW_NODE_MODULES=$MODULES timeout 300 node tests/external/ts_client.cjs "$BIN" >"$RUN/ts.log" 2>&1
grep -E '^(ok  |FAIL) ' "$RUN/ts.log"
TS_PASSED=$(sed -n 's/^ts-client: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$RUN/ts.log")
TS_FAILED=$(sed -n 's/^ts-client: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$RUN/ts.log")
if [ -n "$TS_PASSED" ]; then
  PASSED=$((PASSED + TS_PASSED))
  FAILED=$((FAILED + TS_FAILED))
else
  fail "the TypeScript SDK client did not finish" "$RUN/ts.log"
fi

echo "== MCP Inspector CLI --strict (pinned), on Node 22"
WS=$RUN/ws && mkdir -p "$WS"
if (cd "$WS" && PATH=$NODE22:$PATH timeout 120 "$NODE22/mcp-inspector" --cli --strict --method tools/list "$BIN" mcp \
  >"$RUN/inspector.json" 2>"$RUN/inspector.err"); then
  if grep -qE '^(Warning|Error)|[1-9][0-9]* (errors|warnings)' "$RUN/inspector.err"; then
    fail "Inspector --strict reports problems" "$RUN/inspector.err"
  elif ! grep -q '"propose_patch"' "$RUN/inspector.json"; then
    fail "Inspector listed no tools" "$RUN/inspector.json"
  else
    pass "Inspector --strict: 0 errors, 0 warnings"
  fi
else
  fail "Inspector --strict exited with an error" "$RUN/inspector.err"
fi

echo "== the conformance suite (@modelcontextprotocol/conformance, pinned) through supergateway, on Node 22"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$WS" && PATH=$NODE22:$PATH exec "$NODE22/supergateway" --stdio "$BIN mcp" --outputTransport streamableHttp \
  --port "$PORT" --streamableHttpPath /mcp >"$RUN/gateway.log" 2>&1) &
PIDS+=($!)
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
  sleep 0.1
done
for scenario in server-initialize ping tools-list; do
  if PATH=$NODE22:$PATH timeout 120 "$NODE22/conformance" server --url "http://127.0.0.1:$PORT/mcp" \
    --scenario "$scenario" >"$RUN/conformance-$scenario.log" 2>&1 &&
    grep -q 'Passed: [0-9]*/[0-9]*, 0 failed' "$RUN/conformance-$scenario.log"; then
    pass "conformance $scenario"
  else
    fail "conformance $scenario" "$RUN/conformance-$scenario.log"
  fi
done
finish
