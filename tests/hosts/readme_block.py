"""Print the shell block of README.md marked `<!-- runnable: NAME ... -->` on the line before its fence.

Usage: python3 tests/hosts/readme_block.py README.md NAME
Exits non-zero when there is no such block, so a README edit that drops or renames one fails the host tests.
"""

import re
import sys


def main(path: str, name: str) -> int:
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"<!-- runnable: {re.escape(name)}\b", line) and i + 1 < len(lines) and lines[i + 1] == "```sh":
            body = []
            for l in lines[i + 2:]:
                if l == "```":
                    print("\n".join(body))
                    return 0
                body.append(l)
    print(f"no shell block marked 'runnable: {name}' in {path}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
