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

# place SRC DEST: copy SRC to DEST through a temporary file created here, in DEST's folder (mktemp: a new name,
# never an existing file or a symlink someone planted there), then renamed over DEST: a running server keeps its
# old binary, and a half-copied file is never started. A folder others may write to is refused first.
TMP=""
trap 'if [ -n "$TMP" ]; then rm -f "$TMP"; fi' EXIT
place() {
  src=$1 dest=$2 dir=$(dirname "$2")
  safe_folder "$dir"
  if [ -L "$dest" ] || [ -d "$dest" ]; then
    echo "install.sh: $dest is a symlink or a folder, not a program this script placed; remove it (rm \"$dest\") if it is yours, then run scripts/install.sh again" >&2
    exit 1
  fi
  TMP=$(mktemp "$dir/.local-llm-worker.XXXXXX")
  cp "$src" "$TMP"
  chmod 0755 "$TMP"
  mv -f "$TMP" "$dest"
  TMP=""
  if [ -L "$dest" ] || [ ! -f "$dest" ] || [ ! -O "$dest" ]; then
    echo "install.sh: $dest is not the file just written (someone replaced it); remove it and choose a folder only you can write to (LOCAL_LLM_BIN_DIR)" >&2
    exit 1
  fi
}

# safe_folder DIR: refuse a folder where another user could replace or plant the program: one owned by another user
# (root aside), or one anyone may write to without the sticky bit (anyone may rename over files there).
safe_folder() {
  if [ ! -O "$1" ] && [ -z "$(find "$1" -maxdepth 0 -user 0)" ]; then
    echo "install.sh: $1 belongs to another user, who could replace the program placed there; set LOCAL_LLM_BIN_DIR to a folder of your own (the default is ~/.local/bin) and run scripts/install.sh again" >&2
    exit 1
  fi
  if [ -n "$(find "$1" -maxdepth 0 -perm -0002 ! -perm -1000)" ]; then
    echo "install.sh: anyone may write to $1 (mode o+w without the sticky bit), so anyone could replace the program placed there; make it yours alone (chmod o-w \"$1\") or set LOCAL_LLM_BIN_DIR to a folder of your own, then run scripts/install.sh again" >&2
    exit 1
  fi
}

# Both folders are checked before the build, so a refusal comes at once.
USER_BIN=${LOCAL_LLM_BIN_DIR:-$HOME/.local/bin}
mkdir -p "$USER_BIN"
safe_folder "$BIN_DIR"
safe_folder "$USER_BIN"

echo "== cargo build --release --locked"
cargo build --release --locked

place "${CARGO_TARGET_DIR:-target}/release/local-llm-worker" "$DEST"

# For your shell: the same binary in ~/.local/bin (the XDG folder for a user's programs), placed the same way.
place "$DEST" "$USER_BIN/local-llm-worker"
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
