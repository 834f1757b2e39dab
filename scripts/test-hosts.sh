#!/usr/bin/env bash
# The plugin bundle checked with the real host CLIs, pinned: Claude Code and Codex, installed with npm into a cache
# folder (reruns reuse it), each run in a throwaway HOME / CODEX_HOME, offline: the only model endpoints are scripted
# servers on 127.0.0.1 (tests/hosts/). Run from the repository root after `cargo build --release --locked`.
# It checks: manifests validate (the plugin directory's profile too, --strict); install from a local clone and from a
# git URL on both hosts; the MCP server starts (from Codex's cached copy too; through the PATH fallback when the git
# copy has no binary); the skill reaches the model only when invoked; one delegation end to end through each host
# (propose_patch, then apply_patch with the id and digest from the result, and the file changes on disk); the
# per-tool approval modes hold.
# Last line: "hosts: N passed, M failed"; exits non-zero on any failure.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1

CLAUDE_PKG=@anthropic-ai/claude-code@2.1.332
CODEX_PKG=@openai/codex@0.171.0
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/local-llm-delegator/hosts
BUILT=$ROOT/target/release/local-llm-worker
LIMIT=${HOSTS_STEP_TIMEOUT:-120} # seconds for any one host command
PLUGIN_ID=local-llm-delegator@local-llm-delegator
CLAUDE_TOOL=mcp__plugin_local-llm-delegator_local-llm-worker__
START_TIME=$SECONDS

passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok    %s\n' "$1"; }
bad() {
  failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; shift
  local f; for f in "$@"; do [ -s "$f" ] && sed -e 's/^/      | /' "$f" | tail -n 25; done
  return 0
}
RUN='' PIDS=()
stop_servers() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; PIDS=(); }
trap stop_servers EXIT
finish() {
  stop_servers
  if [ -n "$RUN" ]; then
    if [ "$failed" -eq 0 ]; then rm -rf "$RUN"; else echo "(logs kept in $RUN)"; fi
  fi
  printf 'hosts: %d passed, %d failed\n' "$passed" "$failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# ---------------------------------------------------------------- prerequisites
[ -x "$BUILT" ] || { bad "no $BUILT: run cargo build --release --locked first"; finish; }
for tool in python3 git; do
  command -v "$tool" >/dev/null || { bad "$tool is needed"; finish; }
done
if ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== npm missing: apt-get install nodejs npm"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } >/dev/null 2>&1
  fi
  command -v npm >/dev/null || { bad "npm is needed to install the host CLIs (apt-get install nodejs npm)"; finish; }
fi

echo "== host CLIs ($CLAUDE_PKG, $CODEX_PKG) in $CACHE"
NODE_BIN=$CACHE/node_modules/.bin
have_versions() {
  [ "$("$NODE_BIN/claude" --version 2>/dev/null | awk '{print $1}')" = "${CLAUDE_PKG##*@}" ] &&
    [ "$("$NODE_BIN/codex" --version 2>/dev/null | awk '{print $2}')" = "${CODEX_PKG##*@}" ]
}
if ! have_versions; then
  mkdir -p "$CACHE"
  t0=$SECONDS
  if ! timeout 900 npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error --save-exact \
      "$CLAUDE_PKG" "$CODEX_PKG" </dev/null >"$CACHE/npm.log" 2>&1; then
    bad "npm install of the host CLIs" "$CACHE/npm.log"; finish
  fi
  echo "   installed in $((SECONDS - t0)) s"
fi
if have_versions; then ok "host CLIs: claude $("$NODE_BIN/claude" --version | awk '{print $1}'), codex $("$NODE_BIN/codex" --version | awk '{print $2}')"
else bad "host CLI versions: $("$NODE_BIN/claude" --version 2>&1), $("$NODE_BIN/codex" --version 2>&1)"; finish; fi

# ---------------------------------------------------------------- a throwaway world
rm -rf "$CACHE"/run.* 2>/dev/null
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
L=$RUN/logs; mkdir -p "$L"

# The hosts see a PATH without any local-llm-worker (a user's cargo-installed one would hide the fallback cases).
HOST_PATH=$NODE_BIN
IFS=: read -r -a path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
  [ -n "$d" ] && [ ! -e "$d/local-llm-worker" ] && HOST_PATH=$HOST_PATH:$d
done
PATHBIN=$RUN/pathbin; mkdir -p "$PATHBIN"; cp "$BUILT" "$PATHBIN/local-llm-worker"

# host WORLD [VAR=VALUE...] CMD...: run a host CLI in the throwaway world named WORLD (its own HOME and CODEX_HOME),
# bounded in time, without stdin, with none of the caller's credentials, its temporary files in the world too.
host() {
  local world=$1; shift
  mkdir -p "$RUN/$world/home" "$RUN/$world/codex" "$RUN/$world/tmp"
  timeout "$LIMIT" env -u ANTHROPIC_API_KEY -u ANTHROPIC_AUTH_TOKEN -u ANTHROPIC_BASE_URL -u OPENAI_API_KEY \
    -u OPENAI_BASE_URL -u CODEX_API_KEY -u CLAUDE_CODE_OAUTH_TOKEN \
    -u LOCAL_LLM_WORKER_BIN -u LOCAL_LLM_CONFIG -u LOCAL_LLM_ALLOWED_ROOTS \
    HOME="$RUN/$world/home" CODEX_HOME="$RUN/$world/codex" XDG_CONFIG_HOME="$RUN/$world/home/.config" \
    XDG_CACHE_HOME="$RUN/$world/home/.cache" XDG_DATA_HOME="$RUN/$world/home/.local/share" \
    TMPDIR="$RUN/$world/tmp" \
    PATH="${EXTRA_PATH:+$EXTRA_PATH:}$HOST_PATH" \
    DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
    "$@" <"${HOST_STDIN:-/dev/null}"
}

# The scripted model endpoints (worker chat completions, Codex Responses, Claude Messages) on 127.0.0.1.
WS=$RUN/ws
MODELS_LOG=$L/models.jsonl
python3 tests/hosts/scripted_models.py --port-file "$RUN/models.port" --log "$MODELS_LOG" --workspace "$WS" \
  --lifetime 900 >"$L/models.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$RUN/models.port" ] && break; sleep 0.1; done
[ -s "$RUN/models.port" ] || { bad "the scripted model server did not start" "$L/models.out"; finish; }
MODELS=http://127.0.0.1:$(cat "$RUN/models.port")
touch "$MODELS_LOG"
log_mark() { wc -l <"$MODELS_LOG" | tr -d ' '; }

# reset_ws: a project with one file and a policy pointing the worker at the scripted chat endpoint.
reset_ws() {
  mkdir -p "$WS"; find "$WS" -mindepth 1 -delete; mkdir -p "$WS/src"
  printf 'VALUE = 1\n' >"$WS/src/value.py"
  printf '[provider]\nkind = "llamacpp"\nbase_url = "%s/v1"\n' "$MODELS" >"$WS/local-llm-worker.toml"
}
reset_ws

# ---------------------------------------------------------------- the repository's own pieces
echo "== repository"
if sh scripts/gen-skills.sh --check >"$L/gen-skills.log" 2>&1; then ok "skill mirrors match skills/ (scripts/gen-skills.sh --check)"
else bad "skill mirrors are stale: run scripts/gen-skills.sh" "$L/gen-skills.log"; fi

t0=$SECONDS
if LOCAL_LLM_BIN_DIR="$L/user-bin" timeout 900 scripts/install.sh </dev/null >"$L/install.log" 2>&1 &&
   cmp -s "$BUILT" plugins/local-llm-delegator/bin/local-llm-worker &&
   cmp -s "$BUILT" "$L/user-bin/local-llm-worker" &&
   LOCAL_LLM_BIN_DIR="$L/user-bin" timeout 900 scripts/install.sh </dev/null >"$L/install2.log" 2>&1 &&
   cmp -s "$BUILT" "$L/user-bin/local-llm-worker" &&
   grep -q "claude plugin install $PLUGIN_ID" "$L/install.log" &&
   grep -q "codex plugin add $PLUGIN_ID" "$L/install.log"; then
  ok "scripts/install.sh (run twice) placed the binary in the plugin and in LOCAL_LLM_BIN_DIR and printed the host commands ($((SECONDS - t0)) s)"
else bad "scripts/install.sh" "$L/install.log"; fi

# A clone as a user has it after scripts/install.sh: the marketplace, the plugin, the binary beside the launcher.
CLONE=$RUN/clone
mkdir -p "$CLONE"
cp -R .claude-plugin .agents plugins .gitignore "$CLONE/"
[ -x "$CLONE/plugins/local-llm-delegator/bin/local-llm-worker" ] || cp "$BUILT" "$CLONE/plugins/local-llm-delegator/bin/"

# ---------------------------------------------------------------- Claude Code, local clone
echo "== Claude Code: local clone"
cd "$RUN" || finish
if host claude claude plugin validate --strict "$CLONE" >"$L/c-validate-m.log" 2>&1; then ok "claude plugin validate --strict (marketplace)"
else bad "claude plugin validate --strict (marketplace)" "$L/c-validate-m.log"; fi
if host claude claude plugin validate --strict "$CLONE/plugins/local-llm-delegator" >"$L/c-validate-p.log" 2>&1; then
  ok "claude plugin validate --strict (plugin)"
else bad "claude plugin validate --strict (plugin)" "$L/c-validate-p.log"; fi
# The plugin directory's own check (icon, README, LICENSE, network.hosts), its warnings as errors.
if host claude claude plugin validate "$CLONE/plugins/local-llm-delegator" --profile directory --strict \
    >"$L/c-validate-d.log" 2>&1; then
  ok "claude plugin validate --profile directory --strict (plugin)"
else bad "claude plugin validate --profile directory --strict (plugin)" "$L/c-validate-d.log"; fi

if host claude claude plugin marketplace add "$CLONE" >"$L/c-add.log" 2>&1 &&
   host claude claude plugin install "$PLUGIN_ID" >>"$L/c-add.log" 2>&1; then
  ok "claude plugin marketplace add <clone> + claude plugin install $PLUGIN_ID"
else bad "claude plugin marketplace add + install" "$L/c-add.log"; fi

cd "$WS" || finish
host claude claude mcp list >"$L/c-mcp.log" 2>&1
if grep -q "plugin:local-llm-delegator:local-llm-worker:.*Connected" "$L/c-mcp.log"; then ok "claude mcp list: our server Connected"
else bad "claude mcp list does not show our server Connected" "$L/c-mcp.log"; fi

# claude_p LOGNAME ARGS...: a headless run against the scripted Messages endpoint, in the project.
claude_p() {
  local name=$1; shift
  host claude ANTHROPIC_BASE_URL="$MODELS" ANTHROPIC_API_KEY=sk-scripted CLAUDE_CODE_MAX_RETRIES=0 \
    ENABLE_TOOL_SEARCH=false claude -p "$@" >"$L/$name.log" 2>&1
}
m=$(log_mark)
claude_p c-plain "Say hello."
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" skill-absent "$MODELS_LOG" "$m"); then
  ok "Claude Code, skill not invoked: $r"
else echo "$r" >"$L/c-plain.why"; bad "Claude Code, skill not invoked" "$L/c-plain.why" "$L/c-plain.log"; fi

m=$(log_mark)
claude_p c-skill "/local-llm-delegator:delegate-local-worker set VALUE to 2 in src/value.py"
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" skill-injected "$MODELS_LOG" "$m" "set VALUE to 2 in src/value.py"); then
  ok "Claude Code, /local-llm-delegator:delegate-local-worker: $r"
else echo "$r" >"$L/c-skill.why"; bad "Claude Code, skill invoked" "$L/c-skill.why" "$L/c-skill.log"; fi

reset_ws
m=$(log_mark)
claude_p c-e2e --allowedTools "${CLAUDE_TOOL}propose_patch,${CLAUDE_TOOL}apply_patch" -- \
  "E2E-DELEGATE: set VALUE to 2 in src/value.py"
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" e2e "$MODELS_LOG" "$m") && grep -qx 'VALUE = 2' "$WS/src/value.py"; then
  ok "Claude Code end to end: $r; src/value.py now VALUE = 2"
else echo "$r" >"$L/c-e2e.why"; bad "Claude Code end to end" "$L/c-e2e.why" "$L/c-e2e.log"; fi

# The provider key through the plugin's user configuration: marked sensitive, so Claude Code keeps it in its own
# secure storage; it reaches the server as LOCAL_LLM_API_KEY, is sent in the Authorization header, and appears in no
# file the product writes. The scripted server is not OpenRouter's official endpoint, so the plugin's key goes there
# only because the policy names LOCAL_LLM_API_KEY itself, and that policy is trusted first (in the Claude world's
# HOME, where the plugin's server looks for the record).
CANARY=sk-userconfig-CANARY-$RANDOM$RANDOM$RANDOM
printf '{"provider_api_key":"%s"}' "$CANARY" >"$RUN/user-config.json"
reset_ws
printf '[provider]\nkind = "openrouter"\nbase_url = "%s/v1"\napi_key_env = "LOCAL_LLM_API_KEY"\n[edit]\nformat = "json"\n' \
  "$MODELS" >"$WS/local-llm-worker.toml"
host claude env -u LOCAL_LLM_STATE_DIR -u XDG_STATE_HOME "$BUILT" trust --workspace-root "$WS" >"$L/c-trust.log" 2>&1 ||
  bad "local-llm-worker trust for the userConfig key policy" "$L/c-trust.log"
m=$(log_mark)
if HOST_STDIN=$RUN/user-config.json host claude claude plugin configure "$PLUGIN_ID" --values-stdin >"$L/c-config.log" 2>&1 &&
   claude_p c-key --allowedTools "${CLAUDE_TOOL}propose_patch,${CLAUDE_TOOL}apply_patch" -- \
     "E2E-DELEGATE: set VALUE to 2 in src/value.py" &&
   r=$(python3 - "$MODELS_LOG" "$m" "$CANARY" <<'PY'
import hashlib, json, sys
log, mark, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
want = hashlib.sha256(f"Bearer {key}".encode()).hexdigest()
posts = [e for e in map(json.loads, open(log).read().splitlines()[mark:]) if e["path"].endswith("/chat/completions")]
sent = [e for e in posts if e["headers"].get("authorization-sha256") == want]
if not sent:
    sys.exit(f"no worker request carried the configured key ({len(posts)} worker requests)")
print(f"{len(sent)} worker request(s) sent it as the bearer key")
PY
) && grep -qx 'VALUE = 2' "$WS/src/value.py"; then
  leaked=$(grep -rlF "$CANARY" "$RUN" 2>/dev/null | grep -v -e '/\.credentials\.json$' -e "^$RUN/user-config.json$" || true)
  if [ -z "$leaked" ]; then
    ok "Claude Code userConfig key (sensitive): $r; src/value.py now VALUE = 2; the key is in no file but the host's credentials"
  else
    echo "$leaked" >"$L/c-key.why"; bad "Claude Code userConfig key leaked into files" "$L/c-key.why"
  fi
else echo "${r:-}" >"$L/c-key.why"; bad "Claude Code userConfig key" "$L/c-config.log" "$L/c-key.why" "$L/c-key.log"; fi

# ---------------------------------------------------------------- Codex, local clone
echo "== Codex: local clone"
cd "$RUN" || finish
if host codex codex plugin marketplace add "$CLONE" >"$L/x-add.log" 2>&1 &&
   host codex codex plugin add "$PLUGIN_ID" >>"$L/x-add.log" 2>&1; then
  ok "codex plugin marketplace add <clone> + codex plugin add $PLUGIN_ID"
else bad "codex plugin marketplace add + add" "$L/x-add.log"; fi

XCACHE=$RUN/codex/codex/plugins/cache/local-llm-delegator/local-llm-delegator
host codex codex mcp list >"$L/x-mcp.log" 2>&1
host codex codex mcp get --json local-llm-worker >"$L/x-mcp-get.json" 2>&1
if grep -q "^local-llm-worker .*\./bin/local-llm-worker-launcher .*enabled" "$L/x-mcp.log" &&
   grep -q "\"cwd\": \"$XCACHE/" "$L/x-mcp-get.json"; then
  ok "codex mcp list: our server, enabled, started in Codex's cached copy of the plugin"
else bad "codex mcp list / get" "$L/x-mcp.log" "$L/x-mcp-get.json"; fi

# From now on the clone has no binary: whatever starts must be Codex's cached copy.
rm -f "$CLONE/plugins/local-llm-delegator/bin/local-llm-worker"
cd "$WS" || finish
host codex codex debug prompt-input "Say hello." >"$L/x-prompt.json" 2>"$L/x-prompt.err"
if grep -q 'mcp__local_llm_worker' "$L/x-prompt.json"; then
  ok "codex debug prompt-input: the server started from the cached copy (its tools are offered)"
else bad "codex debug prompt-input: our server's tools are missing" "$L/x-prompt.err"; fi
if ! grep -q 'delegate-local-worker' "$L/x-prompt.json" && grep -q '<skills_instructions>' "$L/x-prompt.json"; then
  ok "codex debug prompt-input: the skill is not in the model's list"
else bad "codex debug prompt-input: the skill is listed although implicit invocation is off" "$L/x-prompt.json"; fi

# The Codex skill mirror against the pinned Codex's own skill validator (its system skill-creator, written into
# CODEX_HOME on first start); it needs PyYAML, installed into a cached venv when python3 lacks it.
VALIDATE=$RUN/codex/codex/skills/.system/skill-creator/scripts/quick_validate.py
PY=python3
if ! python3 -c 'import yaml' 2>/dev/null; then
  [ -x "$CACHE/skill-check/bin/python" ] || { python3 -m venv "$CACHE/skill-check" &&
    "$CACHE/skill-check/bin/pip" install -q --disable-pip-version-check 'PyYAML==6.0.2'; } >"$L/skill-check.log" 2>&1
  PY=$CACHE/skill-check/bin/python
fi
if [ ! -f "$VALIDATE" ]; then bad "Codex wrote no skill-creator/scripts/quick_validate.py into CODEX_HOME/skills/.system"
elif "$PY" "$VALIDATE" "$ROOT/plugins/local-llm-delegator/codex-skills/delegate-local-worker" >"$L/x-skill-valid.log" 2>&1 &&
     grep -q 'Skill is valid!' "$L/x-skill-valid.log"; then
  ok "Codex's skill-creator quick_validate.py: the Codex skill mirror is valid"
else bad "Codex's quick_validate.py refuses the Codex skill mirror" "$L/x-skill-valid.log" "$L/skill-check.log"; fi
if ls "$RUN/codex/codex/skills/.system" | grep -qi 'plugin'; then
  echo "   note: this Codex ships a plugin skill ($(ls "$RUN/codex/codex/skills/.system" | grep -i plugin | tr '\n' ' '))"
fi

# codex_exec LOGNAME ARGS...: a headless run against the scripted Responses endpoint, in the project.
codex_exec() {
  local name=$1; shift
  host codex codex exec --skip-git-repo-check -C "$WS" \
    -c model_provider=scripted -c 'model_providers.scripted.name="scripted"' \
    -c "model_providers.scripted.base_url=\"$MODELS/v1\"" -c 'model_providers.scripted.wire_api="responses"' \
    -c 'model_providers.scripted.request_max_retries=0' -c 'model_providers.scripted.stream_max_retries=0' \
    -c model=scripted-model "$@" >"$L/$name.log" 2>&1
}
m=$(log_mark)
codex_exec x-plain "Say hello."
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" skill-absent "$MODELS_LOG" "$m"); then ok "Codex, skill not invoked: $r"
else echo "$r" >"$L/x-plain.why"; bad "Codex, skill not invoked" "$L/x-plain.why" "$L/x-plain.log"; fi

m=$(log_mark)
# shellcheck disable=SC2016 # the $ is Codex's skill syntax, not a shell expansion
codex_exec x-skill '$local-llm-delegator:delegate-local-worker set VALUE to 2 in src/value.py'
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" skill-injected "$MODELS_LOG" "$m" "set VALUE to 2 in src/value.py"); then
  ok "Codex, \$local-llm-delegator:delegate-local-worker: $r"
else echo "$r" >"$L/x-skill.why"; bad "Codex, skill invoked" "$L/x-skill.why" "$L/x-skill.log"; fi

reset_ws
m=$(log_mark)
codex_exec x-approval "E2E-DELEGATE: set VALUE to 2 in src/value.py"
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" apply-refused "$MODELS_LOG" "$m") && grep -qx 'VALUE = 1' "$WS/src/value.py"; then
  ok "Codex approval modes: $r; src/value.py unchanged"
else echo "$r" >"$L/x-approval.why"; bad "Codex approval modes" "$L/x-approval.why" "$L/x-approval.log"; fi

reset_ws
m=$(log_mark)
codex_exec x-e2e --dangerously-bypass-approvals-and-sandbox "E2E-DELEGATE: set VALUE to 2 in src/value.py"
if r=$(python3 "$ROOT/tests/hosts/check_requests.py" e2e "$MODELS_LOG" "$m") && grep -qx 'VALUE = 2' "$WS/src/value.py"; then
  ok "Codex end to end: $r; src/value.py now VALUE = 2"
else echo "$r" >"$L/x-e2e.why"; bad "Codex end to end" "$L/x-e2e.why" "$L/x-e2e.log"; fi

# ---------------------------------------------------------------- both hosts, from a git URL
echo "== both hosts: from a git URL (committed files only: no binary in the plugin)"
GITSRC=$RUN/gitsrc
mkdir -p "$GITSRC" "$RUN/srv"
cp -R "$ROOT/.claude-plugin" "$ROOT/.agents" "$ROOT/plugins" "$ROOT/.gitignore" "$GITSRC/"
(cd "$GITSRC" && git init -q -b main . && git add -A &&
  git -c user.name=test -c user.email=test@localhost -c commit.gpgsign=false commit -qm plugin &&
  git clone -q --bare . "$RUN/srv/local-llm-delegator.git") >"$L/git.log" 2>&1
python3 "$ROOT/tests/hosts/git_http.py" "$RUN/srv" "$RUN/git.port" 900 >"$L/git-http.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$RUN/git.port" ] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat "$RUN/git.port" 2>/dev/null)/local-llm-delegator.git
if git -C "$GITSRC" ls-files | grep -q 'bin/local-llm-worker$'; then bad "the gitignored binary was committed"; fi

cd "$RUN" || finish
if host claude-git claude plugin marketplace add "$URL" >"$L/cg-add.log" 2>&1 &&
   host claude-git claude plugin install "$PLUGIN_ID" >>"$L/cg-add.log" 2>&1; then
  ok "claude plugin marketplace add <git URL> + install"
else bad "claude: install from a git URL" "$L/cg-add.log"; fi
CGCACHE=$(find "$RUN/claude-git/home/.claude/plugins/cache/local-llm-delegator/local-llm-delegator" -mindepth 1 \
  -maxdepth 1 -type d 2>/dev/null | head -1)
cd "$WS" || finish
host claude-git claude mcp list >"$L/cg-mcp-none.log" 2>&1
EXTRA_PATH=$PATHBIN host claude-git claude mcp list >"$L/cg-mcp-path.log" 2>&1
if [ -n "$CGCACHE" ] && [ ! -e "$CGCACHE/bin/local-llm-worker" ] &&
   grep -q "local-llm-worker:.*Failed" "$L/cg-mcp-none.log" &&
   grep -q "plugin:local-llm-delegator:local-llm-worker:.*Connected" "$L/cg-mcp-path.log"; then
  ok "Claude Code from git: the cached copy has no binary; fails without one on PATH, Connected with one"
else bad "Claude Code from git: PATH fallback" "$L/cg-mcp-none.log" "$L/cg-mcp-path.log"; fi

# The launcher in that cached copy, with no binary anywhere: at once, non-zero, one line naming the command.
t0=$(date +%s%N)
env -u LOCAL_LLM_WORKER_BIN PATH="$HOST_PATH" "$CGCACHE/bin/local-llm-worker-launcher" mcp </dev/null \
  >"$L/launcher.out" 2>"$L/launcher.err"
rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -ne 0 ] && [ "$(wc -l <"$L/launcher.err")" -eq 1 ] && grep -q 'cargo install --locked --path \.' "$L/launcher.err" &&
   [ "$ms" -lt 2000 ]; then
  ok "launcher without a binary: exit $rc in $ms ms: $(cat "$L/launcher.err")"
else bad "launcher without a binary (exit $rc, $ms ms)" "$L/launcher.err"; fi

cd "$RUN" || finish
if host codex-git codex plugin marketplace add "$URL" >"$L/xg-add.log" 2>&1 &&
   host codex-git codex plugin add "$PLUGIN_ID" >>"$L/xg-add.log" 2>&1; then
  ok "codex plugin marketplace add <git URL> + codex plugin add"
else bad "codex: install from a git URL" "$L/xg-add.log"; fi
cd "$WS" || finish
host codex-git codex debug prompt-input "Say hello." >"$L/xg-none.json" 2>&1
EXTRA_PATH=$PATHBIN host codex-git codex debug prompt-input "Say hello." >"$L/xg-path.json" 2>&1
if ! grep -q 'mcp__local_llm_worker' "$L/xg-none.json" && grep -q 'mcp__local_llm_worker' "$L/xg-path.json"; then
  ok "Codex from git: no server without a binary, the server through local-llm-worker on PATH"
else bad "Codex from git: PATH fallback" "$L/xg-none.json" "$L/xg-path.json"; fi

# ---------------------------------------------------------------- the README, as a user types it
echo "== README: the blocks marked runnable, as written, in a throwaway HOME"
REAL_CARGO_HOME=${CARGO_HOME:-$HOME/.cargo} REAL_RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
REAL_MODEL_HOME=${LOCAL_MODEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/local-llm-delegator/model}
R_HOME=$RUN/readme/home
# readme_block NAME LOG [VAR=VALUE...]: run README's block NAME in the repository root, as the user's shell would
# (with ~/.local/bin on PATH, cargo's own folders, and every command's failure stopping the block).
readme_block() {
  local name=$1 log=$2; shift 2
  local block
  block=$(python3 "$ROOT/tests/hosts/readme_block.py" "$ROOT/README.md" "$name") || { echo "$block" >"$log"; return 1; }
  printf '%s\n' "$block" >"$L/readme-$name.sh"
  (cd "$ROOT" && EXTRA_PATH=$R_HOME/.local/bin:$REAL_CARGO_HOME/bin LIMIT=900 host readme \
    CARGO_HOME="$REAL_CARGO_HOME" RUSTUP_HOME="$REAL_RUSTUP_HOME" "$@" bash -euo pipefail "$L/readme-$name.sh") >"$log" 2>&1
}
if readme_block install "$L/readme-install.log" &&
   [ -x "$R_HOME/.local/bin/local-llm-worker" ] &&
   host readme claude plugin list >"$L/readme-claude-list.log" 2>&1 && grep -q 'local-llm-delegator' "$L/readme-claude-list.log" &&
   host readme codex mcp list >"$L/readme-codex-list.log" 2>&1 && grep -q 'local-llm-worker' "$L/readme-codex-list.log"; then
  ok "README install block ran as written: the binary in ~/.local/bin, the plugin in both hosts"
else bad "README install block" "$L/readme-install.log" "$L/readme-claude-list.log" "$L/readme-codex-list.log"; fi

PROJECT=$RUN/readme-project; mkdir -p "$PROJECT"
printf 'def total(items):\n    return sum(items)\n' >"$PROJECT/cart.py"
printf 'import unittest\nfrom cart import total\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n' >"$PROJECT/test_cart.py"
if readme_block project "$L/readme-project.log" PROJECT="$PROJECT" LOCAL_MODEL_HOME="$REAL_MODEL_HOME" \
     LOCAL_MODEL_STATE="$RUN/readme-model" &&
   [ -f "$PROJECT/local-llm-worker.toml" ] && ! grep -q '^FAIL' "$L/readme-project.log"; then
  ok "README per-project block ran as written: the model on 127.0.0.1:8080, init-project, doctor all ok"
else bad "README per-project block (port 8080 must be free for it)" "$L/readme-project.log"; fi
LOCAL_MODEL_STATE="$RUN/readme-model" "$ROOT/scripts/local-model.sh" stop >"$L/readme-model-stop.log" 2>&1 || bad "stopping the README block's model server" "$L/readme-model-stop.log"

echo "== $((SECONDS - START_TIME)) s"
finish
