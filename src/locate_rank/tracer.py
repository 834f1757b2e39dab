"""Which lines of the selected files a check runs, for local-llm-worker's ranking of the places a task is about.

Installed as `sitecustomize` (through PYTHONPATH) only for the run of the project's checks before any edit, in the
sandbox copy. It records, for the files named in LOCAL_LLM_TRACE_FILES, each line a frame of theirs runs, and which
of those lines ran in the last call into them before a project frame first saw an AssertionError (the failing
assertion's call), and whether an earlier call ran them too. A failure that is an exception out of the files is
left to its traceback. At exit it writes one small text file into LOCAL_LLM_TRACE_OUT and nothing else; then it hands
over to any other `sitecustomize` on the path. It never changes what the program does.
"""


def _install():
    import os
    import sys
    import threading

    out = os.environ.get("LOCAL_LLM_TRACE_OUT")
    wanted = os.environ.get("LOCAL_LLM_TRACE_FILES")
    root = os.environ.get("LOCAL_LLM_TRACE_ROOT")
    if not out or not wanted or not root:
        return
    real = os.path.realpath
    here = real(os.path.dirname(os.path.abspath(__file__)))
    targets = {real(p): i for i, p in enumerate(wanted.split("\n")) if p}
    root = real(root) + os.sep
    limit = 20000
    kinds = {}
    hits = {}
    state = {"entry": 0, "failed": None, "lines": None}

    def kind(code):
        k = kinds.get(code)
        if k is None:
            name = code.co_filename or ""
            path = real(name) if not name.startswith("<") else ""
            t = targets.get(path, -1)
            # The project's own frames (its tests), and code given on a command line (`python -c`).
            project = t < 0 and (
                name in ("<string>", "<stdin>")
                or path.startswith(root)
                and not path.startswith(here)
                and "site-packages" not in path
            )
            k = (t, project)
            kinds[code] = k
        return k

    def snapshot():
        entry = state["entry"]
        return [(k, h[0] < entry) for k, h in hits.items() if h[1] == entry and h[3]]

    def local(frame, event, arg):
        t = kinds.get(frame.f_code, (-1, False))[0]
        if event == "line" and t >= 0:
            h = hits.get((t, frame.f_lineno))
            if h is None:
                if len(hits) < limit:
                    body = frame.f_code.co_name != "<module>"
                    entry = state["entry"]
                    hits[(t, frame.f_lineno)] = [entry, entry, 1, body]
            else:
                h[1] = state["entry"]
                h[2] += 1
        elif event == "exception" and state["failed"] is None:
            if isinstance(arg[0], type) and issubclass(arg[0], AssertionError):
                state["failed"] = state["entry"]
                state["lines"] = snapshot()
        return local

    def call(frame, event, arg):
        t, project = kind(frame.f_code)
        if t >= 0:
            back = frame.f_back
            if back is None or kind(back.f_code)[0] < 0:
                state["entry"] += 1
            return local
        return local if project else None

    def write():
        sys.settrace(None)
        threading.settrace(None)
        try:
            path = os.path.join(out, "trace-%d.txt" % os.getpid())
            with open(path, "w", encoding="utf-8") as f:
                f.write("local-llm-trace 1\n")
                f.write("entries %d\n" % state["entry"])
                if state["failed"] is not None:
                    f.write("failed %d\n" % state["failed"])
                for (t, line), h in sorted(hits.items()):
                    f.write("hit %d %d %d %s\n" % (t, line, h[2], "body" if h[3] else "module"))
                for (t, line), before in sorted(state["lines"] or []):
                    f.write("failing %d %d %s\n" % (t, line, "before" if before else "only"))
        except OSError:
            pass

    import atexit

    atexit.register(write)
    threading.settrace(call)
    sys.settrace(call)


def _hand_over():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


try:
    _install()
finally:
    _hand_over()
