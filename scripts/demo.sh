#!/usr/bin/env bash
# The main job, end to end against a REAL local model: build the worker, start llama.cpp with SmolLM2-135M, make a
# small sample project, write its policy, propose a patch, apply exactly the approved bytes, show the result.
# Exits non-zero, saying why, when the model's answer is unusable.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Validation on propose (below) runs the model's code confined, with bubblewrap.
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "install bubblewrap (the confinement for the model's code)"
    apt-get install -y -qq bubblewrap >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
  else
    echo "the demo validates the model's edit in a confinement: install bubblewrap (sudo apt-get install bubblewrap) and retry" >&2
    exit 1
  fi
fi

step "build (cargo build --release --locked)"
cargo build --release --locked
BIN=$ROOT/target/release/local-llm-worker

# The demo's own state, never the user's: its model server (a free port, its pid/url/log in a folder of its own, so a
# server the user started with scripts/local-model.sh is neither reused nor stopped), and the worker's state folder
# and ledger (the user's `stats` never counts the demo). All of it goes when the demo ends.
DEMO_STATE=$(mktemp -d "${TMPDIR:-/tmp}/llw-demo-state.XXXXXX")
export LOCAL_MODEL_STATE=$DEMO_STATE/model
export LOCAL_LLM_STATE_DIR=$DEMO_STATE/worker
# DEMO_LEDGER=FILE keeps the demo's ledger lines in FILE instead (to run `stats` on several demo runs).
export LOCAL_LLM_LEDGER=${DEMO_LEDGER:-$DEMO_STATE/worker/ledger.jsonl}
# The sample project and the patch file go when the demo ends (KEEP_DEMO=1 keeps them to look at; KEEP_MODEL=1
# leaves the demo's model server running, its state in $DEMO_STATE/model).
cleanup() {
  if [ "${KEEP_MODEL:-0}" != 1 ]; then
    scripts/local-model.sh stop
    rm -rf -- "$DEMO_STATE"
  fi
  [ "${KEEP_DEMO:-0}" = 1 ] || { [ -z "${WS:-}" ] || rm -rf -- "$WS" "$WS.patch"; }
}
trap cleanup EXIT

step "start the demo's own local model server (llama.cpp + SmolLM2-135M, one thread, a free port)"
URL=$(LOCAL_MODEL_PORT=0 scripts/local-model.sh start)
echo "model server: $URL"

WS=$(mktemp -d "${TMPDIR:-/tmp}/llw-demo.XXXXXX")
step "sample project in $WS"
cat >"$WS/greeting.py" <<'PY'
GREETING = "Hello"
print(GREETING + ", world!")
PY
cat "$WS/greeting.py"
# The project's test of the change, which the policy runs as its check.
cat >"$WS/test_greeting.py" <<'PY'
import greeting

assert greeting.GREETING == "Hi", f"GREETING is {greeting.GREETING!r}, want 'Hi'"
PY

step "init-project --provider llamacpp"
"$BIN" init-project --workspace-root "$WS" --provider llamacpp
# Point the policy at the server just started, and make the project's test its check.
sed -i "s#^base_url = .*#base_url = \"$URL\"#" "$WS/local-llm-worker.toml"
sed -i 's#^commands = .*#commands = ["python3 test_greeting.py"]#' "$WS/local-llm-worker.toml"
# Greedy decoding for the first answer (the other candidates are sampled hotter, each pinned to a likely line).
sed -i 's#^temperature = .*#temperature = 0.0#' "$WS/local-llm-worker.toml"
# Validate every proposal in a confined sandbox copy before it is returned (the default 4 candidates, the first that
# passes the test wins), with the one repair round when none does: the tiny model's answers often leave JSON debris
# in the line (`"Hi"}], `) or change the wrong thing; the test catches both.
sed -i 's#^on_propose = .*#on_propose = true#; s#^attempts = .*#attempts = 1#' "$WS/local-llm-worker.toml"
grep -E '^(kind|base_url|temperature|allowed|commands|on_propose|attempts) =' "$WS/local-llm-worker.toml"
# init-project trusted the file it wrote; the edits above made it another policy, which must be trusted again.
step "trust (the edited policy)"
"$BIN" trust --workspace-root "$WS"

TASK='Change the value of GREETING from "Hello" to "Hi".'
step "propose"
echo "task: $TASK"
PATCH=$WS.patch
rc=0
"$BIN" propose --workspace-root "$WS" --task "$TASK" --accept 'GREETING is "Hi"' \
  --complexity low --file greeting.py --out "$PATCH" || rc=$?
if [ "$rc" = 3 ]; then
  echo
  echo "DEMO FAILED: the model's patch fails the project's test (exit 3, output above), so it is not applied. The 135M model is weak; run the demo again." >&2
  exit 1
elif [ "$rc" != 0 ]; then
  echo
  echo "DEMO FAILED: the model's answer was refused (reason above). The 135M model is weak; run the demo again." >&2
  exit 1
fi

DIGEST=$(sha256sum "$PATCH" | cut -d' ' -f1)
step "apply the approved bytes (digest $DIGEST)"
"$BIN" apply --workspace-root "$WS" --patch "$PATCH" --digest "$DIGEST"

step "greeting.py now"
cat "$WS/greeting.py"
if ! grep -q '^GREETING = "Hi"$' "$WS/greeting.py"; then
  echo "DEMO FAILED: the patch applied, but the model did not make the asked change (see the patch above)." >&2
  exit 1
fi
echo
echo "done: the model's edit was proposed, approved by digest, applied and validated."
