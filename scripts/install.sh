#!/bin/sh
# Builds local-llm-worker, places it in the plugin (plugins/local-llm-delegator/bin/), where the plugin's launcher
# finds it first, and in $LOCAL_LLM_BIN_DIR (default ~/.local/bin) for your shell; then prints the commands that add
# the plugin to Claude Code and to Codex. Running it again replaces both copies. scripts/uninstall.sh removes them.
# Usage: scripts/install.sh            (from anywhere inside a clone of local-llm-delegator)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN_DIR=$ROOT/plugins/local-llm-delegator/bin
DEST=$BIN_DIR/local-llm-worker

command -v cargo >/dev/null 2>&1 || {
  echo "install.sh: cargo not found; install Rust 1.88 or newer (https://rustup.rs), then run scripts/install.sh again" >&2
  exit 1
}

echo "== cargo build --release --locked"
cargo build --release --locked

# Copy beside, then rename: a running server keeps its old binary, and a half-copied file is never started.
trap 'rm -f "$DEST.new"' EXIT
cp "${CARGO_TARGET_DIR:-target}/release/local-llm-worker" "$DEST.new"
chmod 0755 "$DEST.new"
mv -f "$DEST.new" "$DEST"
trap - EXIT

# For your shell: the same binary in ~/.local/bin (the XDG folder for a user's programs), copied the same way.
USER_BIN=${LOCAL_LLM_BIN_DIR:-$HOME/.local/bin}
mkdir -p "$USER_BIN"
trap 'rm -f "$USER_BIN/local-llm-worker.new"' EXIT
cp "$DEST" "$USER_BIN/local-llm-worker.new"
mv -f "$USER_BIN/local-llm-worker.new" "$USER_BIN/local-llm-worker"
trap - EXIT
case ":$PATH:" in
  *":$USER_BIN:"*) ON_PATH="" ;;
  *) ON_PATH="
NOTE: $USER_BIN is not on your PATH, so \`local-llm-worker\` is not found by name yet. Add this to your shell's
startup file (~/.bashrc, ~/.zshrc) and open a new terminal:
  export PATH=\"$USER_BIN:\$PATH\"
" ;;
esac

# The launcher must find it, and the server must answer an MCP handshake (then stop, as stdin closes).
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install.sh","version":"0"}}}'
if ! printf '%s\n%s\n' "$INIT" '{"jsonrpc":"2.0","method":"notifications/initialized"}' |
    env -u LOCAL_LLM_WORKER_BIN "$BIN_DIR/local-llm-worker-launcher" mcp 2>&1 | grep -q '"serverInfo":{"name":"local-llm-worker"'; then
  echo "install.sh: the MCP server did not answer; run $BIN_DIR/local-llm-worker-launcher mcp and read its message" >&2
  exit 1
fi

cat <<NEXT

Installed $("$DEST" --version 2>/dev/null || echo local-llm-worker) as $DEST and $USER_BIN/local-llm-worker
$ON_PATH
Claude Code (runs the plugin from this folder, so a later scripts/install.sh is picked up on the next start):
  claude plugin marketplace add $ROOT
  claude plugin install local-llm-delegator@local-llm-delegator
  claude mcp list            # plugin:local-llm-delegator:local-llm-worker ... Connected

Codex (copies the plugin, binary included: run the add again after every scripts/install.sh):
  codex plugin marketplace add $ROOT
  codex plugin add local-llm-delegator@local-llm-delegator
  codex mcp list             # local-llm-worker ... enabled

Then, in each project you delegate from (in its folder):
  local-llm-worker init-project --provider llamacpp
and review the local-llm-worker.toml it writes. The skill: /local-llm-delegator:delegate-local-worker (Claude Code),
\$local-llm-delegator:delegate-local-worker (Codex). Details and troubleshooting: docs/INSTALL.md
NEXT
