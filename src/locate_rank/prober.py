"""Many mutants of the selected files in one run of a check, for local-llm-worker's mutation probe.

Installed as `sitecustomize` (through PYTHONPATH) only for the probe's one run of the failing check, in the sandbox
copy, inside the same confinement as any check of unapproved code. It reads the mutants from the file
LOCAL_LLM_PROBE_IN (each a selected file's path and a whole text for it). The first time the program imports a
selected file, this process stops being the check: it forks one child per mutant, in order, a few at a time; each
child imports its mutant's text in place of that file (compiled from memory: nothing is written, no bytecode cache
is read) and goes on as the check would, its output thrown away, killed when it outlives
LOCAL_LLM_PROBE_TIMEOUT_MS, its data held to LOCAL_LLM_PROBE_MEMORY_MB (RLIMIT_DATA: past it, an allocation fails). A child that exits 0 passed. Forking stops at LOCAL_LLM_PROBE_BUDGET_MS, or once a
mutant has passed and every mutant before it has ended (unless the mutants' file asks for every one). The parent then writes one small text file into
LOCAL_LLM_PROBE_OUT (`<index> pass|fail|time` a line, for the mutants run; then `at <index> <line> <file>` for
each child whose check failed by an uncaught exception: its last frame outside the selected files, where the check
stopped; index -1 is the unmutated program's own run, forked first) and exits. A check that never imports a
selected file (it runs the file as a script) writes nothing, and the probe runs one check a mutant instead. It
hands over to any other `sitecustomize` on the path first.
"""


def _install():
    import os
    import sys

    source = os.environ.get("LOCAL_LLM_PROBE_IN")
    out = os.environ.get("LOCAL_LLM_PROBE_OUT")
    if not source or not out:
        return
    for name in ("LOCAL_LLM_PROBE_IN", "LOCAL_LLM_PROBE_OUT"):
        os.environ.pop(name, None)
    try:
        timeout = max(0.05, int(os.environ.get("LOCAL_LLM_PROBE_TIMEOUT_MS", "1000")) / 1000.0)
        memory = max(64, int(os.environ.get("LOCAL_LLM_PROBE_MEMORY_MB", "1024"))) * 1024 * 1024
        budget = max(0.05, int(os.environ.get("LOCAL_LLM_PROBE_BUDGET_MS", "3000")) / 1000.0)
        jobs = max(1, min(8, int(os.environ.get("LOCAL_LLM_PROBE_JOBS", "2"))))
        with open(source, "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return
    real = os.path.realpath
    mutants = []
    # `local-llm-probe 1` (` every`: run them all, not stopping at a pass), then per mutant `<path bytes> <text
    # bytes>` and the two, back to back.
    head, _, rest = data.partition(b"\n")
    if head not in (b"local-llm-probe 1", b"local-llm-probe 1 every"):
        return
    every = head.endswith(b" every")
    at = 0
    while at < len(rest):
        end = rest.find(b"\n", at)
        if end < 0:
            return
        try:
            p, t = (int(x) for x in rest[at:end].split(b" "))
        except ValueError:
            return
        path = rest[end + 1 : end + 1 + p].decode("utf-8", "surrogateescape")
        text = rest[end + 1 + p : end + 1 + p + t]
        mutants.append((real(path), text))
        at = end + 1 + p + t
    targets = {path for path, _ in mutants}
    state = {"forked": False, "mutant": None}

    import importlib.abc
    import importlib.machinery
    import time

    class Loader(importlib.machinery.SourceFileLoader):
        """A selected file's module, compiled from the mutant's text instead of the file's bytes."""

        def get_code(self, fullname):
            return compile(state["mutant"][1], self.path, "exec", dont_inherit=True)

    def run_all():
        """The parent: every mutant in a child of its own, the verdicts written, then exit."""
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        verdicts = {}
        running = {}
        first_pass = None
        following = 0
        # Where each failing child's check failed, written by the child (`<index> <line> <file>`); the unmutated
        # program's own run (index -1) first, to measure the others against.
        reader, state["places"] = os.pipe()
        os.set_blocking(reader, False)
        heard = []

        def listen():
            while True:
                try:
                    chunk = os.read(reader, 65536)
                except OSError:  # nothing more to read now (BlockingIOError), or the pipe is gone
                    return
                if not chunk:
                    return
                heard.append(chunk)

        pid = os.fork()
        if pid == 0:
            child(-1)
            return
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        running[pid] = (-1, time.monotonic())
        while True:
            done_before = first_pass is not None and all(i in verdicts for i in range(first_pass))
            can_start = (
                following < len(mutants)
                and first_pass is None
                and time.monotonic() - started < budget
            )
            if not running and (not can_start or done_before):
                break
            if can_start and len(running) < jobs:
                index = following
                following += 1
                pid = os.fork()
                if pid == 0:
                    child(index)
                    return
                try:
                    os.setpgid(pid, pid)
                except OSError:
                    pass
                running[pid] = (index, time.monotonic())
                continue
            listen()
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for other, (index, since) in list(running.items()):
                    if now - since > timeout:
                        try:
                            os.killpg(other, 9)
                        except OSError:
                            pass
                        if index >= 0:
                            verdicts[index] = "time"
                time.sleep(0.0005)
                continue
            entry = running.pop(pid, None)
            if entry is None:
                continue
            index = entry[0]
            if index < 0:
                continue
            passed = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            verdicts.setdefault(index, "pass" if passed else "fail")
            if verdicts[index] == "pass" and not every and (first_pass is None or index < first_pass):
                first_pass = index
        listen()
        try:
            with open(os.path.join(out, "probe-%d.txt" % os.getpid()), "w") as f:
                f.write("local-llm-probe 1\n")
                for index in sorted(verdicts):
                    f.write("%d %s\n" % (index, verdicts[index]))
                for line in b"".join(heard).decode("utf-8", "replace").split("\n"):
                    if line:
                        f.write("at %s\n" % line)
        except OSError:
            pass
        os._exit(0)

    def child(index):
        """A child: its mutant's text for its file, its output thrown away, its own process group and alarm."""
        try:
            os.setpgid(0, 0)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            import signal

            signal.setitimer(signal.ITIMER_REAL, timeout)
        except Exception:
            os._exit(3)
        try:
            # At most `memory` bytes of data: a mutant that builds a huge list fails (MemoryError) instead of
            # taking the machine's memory until its alarm.
            import resource

            _, hard = resource.getrlimit(resource.RLIMIT_DATA)
            soft = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
            resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
        except Exception:
            pass
        state["mutant"] = mutants[index] if index >= 0 else None
        # The verdict without the interpreter's slow shutdown, where it is known: an uncaught exception fails, a
        # `sys.exit` gives its status. A program that ends otherwise shuts down as usual.
        said = []
        real_exit = sys.exit

        def fast_exit(status=None):
            said.append(status)
            real_exit(status)

        def at_exit():
            if said:
                status = said[-1]
                code = 0 if status is None else status if isinstance(status, int) else 1
                os._exit(code & 0xFF)

        import atexit

        def failed(kind, value, tb):
            # Where the check failed: its last frame before the selected files' code (the assertion, or the call
            # into them that raised), told to the parent in one write (atomic below PIPE_BUF).
            place = None
            while tb is not None:
                path = tb.tb_frame.f_code.co_filename
                if real(path) in targets:
                    break
                place = (tb.tb_lineno, path)
                tb = tb.tb_next
            if place is not None and "\n" not in place[1]:
                try:
                    said_at = "%d %d %s\n" % (index, place[0], place[1][:1024])
                    os.write(state["places"], said_at.encode("utf-8", "replace"))
                except Exception:
                    pass
            os._exit(1)

        sys.exit = fast_exit
        sys.excepthook = failed
        atexit.register(at_exit)

    class Finder(importlib.abc.MetaPathFinder):
        """Finds the selected files as usual; the first time, forks the children; in a child, loads its mutant."""

        def find_spec(self, fullname, path, target=None):
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            origin = getattr(spec, "origin", None) if spec is not None else None
            if not origin or real(origin) not in targets:
                return None
            if not state["forked"]:
                state["forked"] = True
                run_all()
            mutant = state["mutant"]
            if mutant is not None and mutant[0] == real(origin):
                spec.loader = Loader(fullname, origin)
            return spec

    sys.meta_path.insert(0, Finder())


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
    _hand_over()
finally:
    _install()
