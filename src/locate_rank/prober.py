"""Many mutants of the selected files in one run of a check, for local-llm-worker's mutation probe.

Installed as `sitecustomize` (through PYTHONPATH) only for the probe's one run of the failing check, in the sandbox
copy, inside the same confinement as any check of unapproved code. It reads the mutants from the file
LOCAL_LLM_PROBE_IN (each a selected file's path and a whole text for it). The first time the program imports a
selected file, this process stops being the check: it forks one child per mutant, in order, a few at a time; each
child imports its mutant's text in place of that file (compiled from memory: nothing is written, no bytecode cache
is read) and goes on as the check would, its output thrown away, killed when it outlives
LOCAL_LLM_PROBE_TIMEOUT_MS, its data held to LOCAL_LLM_PROBE_MEMORY_MB (RLIMIT_DATA: past it, an allocation fails). A child that exits 0 passed. Forking stops at LOCAL_LLM_PROBE_BUDGET_MS, or once a
mutant has passed and every mutant before it has ended (unless the mutants' file asks for every one). The parent then writes one small text file into
LOCAL_LLM_PROBE_OUT (`<index> pass|fail|time` a line, for the mutants run; then `at <index> <step> <line> <file>`
for each child whose check failed: where it first failed, its last frame outside the selected files and the test
runner; index -1 is the unmutated program's own run, forked first) and exits. A script fails by an uncaught
exception (step 0); under pytest (a plugin named in PYTEST_PLUGINS) or unittest (its results patched in the child),
the first failing test counts, `step` its place in the run. A check that never imports a
selected file (it runs the file as a script) writes nothing, and the probe runs one check a mutant instead. It
hands over to any other `sitecustomize` on the path first.
"""


PLUGIN = "local_llm_probe_pytest"


def _runner_plugin(state):
    """pytest's side: a plugin (named in PYTEST_PLUGINS, a module made here) that counts the tests as they run and
    tells a child's first failure; a no-op outside the probe's children."""
    import os
    import sys
    import types

    plugin = types.ModuleType(PLUGIN)

    def pytest_configure(config):
        # Named only for this run's own pytest: a program it starts does not inherit the name.
        names = [n for n in os.environ.get("PYTEST_PLUGINS", "").split(",") if n and n.strip() != PLUGIN]
        if names:
            os.environ["PYTEST_PLUGINS"] = ",".join(names)
        else:
            os.environ.pop("PYTEST_PLUGINS", None)

    def pytest_runtest_makereport(item, call):
        told = state.get("test_failed")
        if told is None:
            return None
        if call.when == "setup":
            state["step"] += 1
        excinfo = call.excinfo
        if excinfo is None or call.when == "teardown" or item.get_closest_marker("xfail") is not None:
            return None
        if type(excinfo.value).__name__ in ("Skipped", "XFailed"):
            return None
        told(excinfo.tb)
        return None

    plugin.pytest_configure = pytest_configure
    plugin.pytest_runtest_makereport = pytest_runtest_makereport
    sys.modules[PLUGIN] = plugin


def _count_unittest(state):
    """unittest's side, in a child: its results count the tests as they start and tell the first failure or error."""
    import sys

    result = sys.modules.get("unittest.result")
    if result is None:
        return
    cls = result.TestResult
    start, failure, error, sub = cls.startTest, cls.addFailure, cls.addError, cls.addSubTest

    def start_test(self, test):
        state["step"] += 1
        return start(self, test)

    def add_failure(self, test, err):
        state["test_failed"](err[2])
        return failure(self, test, err)

    def add_error(self, test, err):
        state["test_failed"](err[2])
        return error(self, test, err)

    def add_sub_test(self, test, subtest, err):
        if err is not None:
            state["test_failed"](err[2])
        return sub(self, test, subtest, err)

    cls.startTest, cls.addFailure, cls.addError, cls.addSubTest = start_test, add_failure, add_error, add_sub_test


def _install():
    import os
    import sys

    source = os.environ.get("LOCAL_LLM_PROBE_IN")
    out = os.environ.get("LOCAL_LLM_PROBE_OUT")
    if not source or not out:
        if PLUGIN in os.environ.get("PYTEST_PLUGINS", "").split(","):
            _runner_plugin({})  # a program the probed check started: the name is there, the plugin does nothing
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
    # A pytest check tells its failures through a plugin; the name reaches pytest through its own variable.
    _runner_plugin(state)
    listed = os.environ.get("PYTEST_PLUGINS")
    os.environ["PYTEST_PLUGINS"] = listed + "," + PLUGIN if listed else PLUGIN

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

        def tell(step, tb):
            # Where the check first failed: its last frame before the selected files' code (the assertion, or the
            # call into them that raised) that is not the test runner's own, told to the parent in one write
            # (atomic below PIPE_BUF). `step` is the test's place in the run (0 for a script).
            if state["told"]:
                return
            state["told"] = True
            runner = tuple(
                os.path.dirname(getattr(sys.modules[name], "__file__", None) or "/") + os.sep
                for name in ("_pytest", "pluggy", "unittest")
                if name in sys.modules
            )
            place = None
            while tb is not None:
                path = tb.tb_frame.f_code.co_filename
                if real(path) in targets:
                    break
                if not path.startswith(runner):
                    place = (tb.tb_lineno, path)
                tb = tb.tb_next
            if place is not None and "\n" not in place[1]:
                try:
                    said_at = "%d %d %d %s\n" % (index, step, place[0], place[1][:1024])
                    os.write(state["places"], said_at.encode("utf-8", "replace"))
                except Exception:
                    pass

        def failed(kind, value, tb):
            tell(0, tb)
            os._exit(1)

        def test_failed(tb):
            tell(state["step"], tb)

        state["told"] = False
        state["step"] = 0
        state["test_failed"] = test_failed
        _count_unittest(state)
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
