"""Which edit format lets the real local model produce valid proposals? (issue: patch fidelity, measurement 3)

Runs 20 small, checkable tasks against the real llama.cpp server once per edit format, through the real CLI
(`local-llm-worker propose --json`), and counts per format: proposals that were valid AND did what the task asked
(the expected line is in the post-image), valid but not what was asked, and refusals.

    cargo build --release --locked
    python3 bench/edit_formats.py "$(scripts/local-model.sh start)" [--runs N]
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = os.environ.get("LLW_BIN", str(ROOT / "target/release/local-llm-worker"))
FORMATS = ["json", "udiff", "search_replace", "whole_file"]

# (file, content, task, acceptance criterion, line that must be in the result)
TASKS = [
    ("greeting.py", 'GREETING = "Hello"\nprint(GREETING + ", world!")\n', 'Change the value of GREETING from "Hello" to "Hi".', 'GREETING is "Hi"', 'GREETING = "Hi"'),
    ("config.py", "PORT = 8000\nDEBUG = False\n", "Set PORT to 9000.", "PORT is 9000", "PORT = 9000"),
    ("config.py", "DEBUG = False\nPORT = 8000\n", "Set DEBUG to True.", "DEBUG is True", "DEBUG = True"),
    ("limits.py", "MAX_RETRIES = 3\nTIMEOUT = 30\n", "Set MAX_RETRIES to 5.", "MAX_RETRIES is 5", "MAX_RETRIES = 5"),
    ("limits.py", "TIMEOUT = 30\nMAX_RETRIES = 3\n", "Set TIMEOUT to 60.", "TIMEOUT is 60", "TIMEOUT = 60"),
    ("util.py", "def add(a, b):\n    return a - b\n", "Fix add so that it returns the sum of a and b.", "add returns a + b", "    return a + b"),
    ("util.py", "def double(x):\n    return x * 3\n", "Fix double so that it returns x times 2.", "double returns x * 2", "    return x * 2"),
    ("util.py", "def is_even(n):\n    return n % 2 == 1\n", "Fix is_even: it must return True for even numbers.", "is_even uses == 0", "    return n % 2 == 0"),
    ("names.py", 'NAME = "world"\nprint("Hello, " + NAME)\n', 'Change NAME to "team".', 'NAME is "team"', 'NAME = "team"'),
    ("app.js", 'const PORT = 3000;\nconsole.log(PORT);\n', "Set PORT to 8080.", "PORT is 8080", "const PORT = 8080;"),
    ("app.js", 'const HOST = "localhost";\nconsole.log(HOST);\n', 'Set HOST to "0.0.0.0".', 'HOST is "0.0.0.0"', 'const HOST = "0.0.0.0";'),
    ("version.py", '__version__ = "1.2.3"\n', 'Bump __version__ to "1.2.4".', '__version__ is "1.2.4"', '__version__ = "1.2.4"'),
    ("colors.py", 'COLOR = "red"\nSIZE = 10\n', 'Change COLOR to "blue".', 'COLOR is "blue"', 'COLOR = "blue"'),
    ("colors.py", 'SIZE = 10\nCOLOR = "red"\n', "Set SIZE to 12.", "SIZE is 12", "SIZE = 12"),
    ("main.rs", 'fn main() {\n    println!("Hello");\n}\n', 'Make main print "Goodbye" instead of "Hello".', 'prints "Goodbye"', '    println!("Goodbye");'),
    ("lib.rs", "pub const LIMIT: u32 = 10;\n", "Set LIMIT to 20.", "LIMIT is 20", "pub const LIMIT: u32 = 20;"),
    ("greet.py", 'def greet(name):\n    return "Hello, " + name\n', 'Make greet say "Hi, " instead of "Hello, ".', 'greet returns "Hi, " + name', '    return "Hi, " + name'),
    ("flags.py", "ENABLED = False\n", "Set ENABLED to True.", "ENABLED is True", "ENABLED = True"),
    ("rate.py", "RATE = 0.5\nprint(RATE)\n", "Set RATE to 0.75.", "RATE is 0.75", "RATE = 0.75"),
    ("title.py", 'TITLE = "Draft"\n', 'Set TITLE to "Final".', 'TITLE is "Final"', 'TITLE = "Final"'),
]


def run_one(url: str, fmt: str, task) -> tuple[str, str]:
    file, content, text, criterion, want = task
    with tempfile.TemporaryDirectory() as ws:
        p = pathlib.Path(ws)
        (p / file).write_text(content)
        (p / "local-llm-worker.toml").write_text(
            f'[provider]\nkind = "llamacpp"\nbase_url = "{url}"\n\n[edit]\nformat = "{fmt}"\n\n'
            "[limits]\nmax_output_tokens = 400\n"
        )
        out = subprocess.run(
            [BIN, "propose", "--workspace-root", ws, "--task", text, "--accept", criterion,
             "--complexity", "low", "--file", file, "--json"],
            capture_output=True, text=True, timeout=300,
        )
        v = json.loads(out.stdout)
        if out.returncode != 0:
            return "refused", v["error"]["message"][:160]
        patch = v["patch"]
        added = [l[1:] for l in patch.splitlines() if l.startswith("+") and not l.startswith("+++")]
        return ("valid_correct" if want in added else "valid_other"), " | ".join(added)[:160]


def main() -> int:
    url = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    results = {f: {"valid_correct": 0, "valid_other": 0, "refused": 0, "seconds": 0.0} for f in FORMATS}
    for fmt in FORMATS:
        for _ in range(runs):
            for task in TASKS:
                t = time.time()
                outcome, detail = run_one(url, fmt, task)
                results[fmt]["seconds"] += time.time() - t
                results[fmt][outcome] += 1
                if "-v" in sys.argv:
                    print(f"{fmt:15} {task[0]:12} {outcome:14} {detail}")
    n = len(TASKS) * runs
    print(f"{n} tasks per format, real model at {url}")
    print(f"{'format':16}{'valid+correct':>15}{'valid, other':>14}{'refused':>10}{'s/task':>9}")
    for fmt in FORMATS:
        r = results[fmt]
        print(f"{fmt:16}{r['valid_correct']:>9} ({100 * r['valid_correct'] // n:>2}%)"
              f"{r['valid_other']:>14}{r['refused']:>10}{r['seconds'] / n:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
