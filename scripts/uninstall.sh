#!/bin/sh
# Undoes scripts/install.sh: removes the binary from the plugin (plugins/local-llm-delegator/bin/) and from
# $LOCAL_LLM_BIN_DIR (default ~/.local/bin). The plugin itself is removed with the hosts' own commands (printed).
# Running it again is harmless.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
USER_BIN=${LOCAL_LLM_BIN_DIR:-$HOME/.local/bin}
for f in "$ROOT/plugins/local-llm-delegator/bin/local-llm-worker" "$USER_BIN/local-llm-worker"; do
  if [ -e "$f" ]; then rm -f "$f" && echo "removed $f"; else echo "not there: $f"; fi
done
cat <<NEXT

To remove the plugin from the hosts as well:
  claude plugin uninstall local-llm-delegator@local-llm-delegator
  codex plugin remove local-llm-delegator@local-llm-delegator
Your projects' local-llm-worker.toml files and the ledger (~/.local/state/local-llm-delegator) are left as they are.
NEXT
