"""Checks on the requests a host CLI sent to the scripted model endpoints (tests/hosts/scripted_models.py's log).

Usage: python3 tests/hosts/check_requests.py CHECK LOG START [ARG]
  START is the number of log lines written before the step (only later requests are looked at).
Checks:
  skill-absent           no request mentions the skill delegate-local-worker, by name or by text
  skill-injected ARG     some request holds the skill's text, and the user's words ARG where its arguments go
  e2e                    propose_patch was called, then apply_patch with exactly the proposal_id and digest of the
                         propose_patch result, and apply_patch reported applied: true
  apply-refused          propose_patch ran and gave a proposal, and the host refused to run apply_patch unapproved
Prints one line; exits 1 when the check fails.
"""

import json
import re
import sys

SKILL_NAME = "delegate-local-worker"
SKILL_TEXT = "# Delegate a small code change to the local worker"


def load(log, start):
    with open(log, encoding="utf-8") as f:
        lines = f.read().splitlines()[start:]
    return [json.loads(line) for line in lines if line.strip()]


def host_requests(entries):
    return [e for e in entries if e["path"].endswith("/responses") or e["path"].endswith("/messages")]


def calls_and_results(entries):
    """(tool calls, tool results) of the host conversation, from its last request, in order.

    A call is (name, arguments dict, call id); a result is (call id, text)."""
    reqs = host_requests(entries)
    if not reqs:
        return [], []
    body = reqs[-1]["body"]
    calls, results = [], []
    if "input" in body:  # Responses API (Codex)
        for item in body["input"]:
            if item.get("type") == "function_call":
                calls.append((item.get("name"), json.loads(item.get("arguments") or "{}"), item.get("call_id")))
            elif item.get("type") == "function_call_output":
                out = item.get("output")
                results.append((item.get("call_id"), out if isinstance(out, str) else json.dumps(out)))
    else:  # Messages API (Claude Code)
        for msg in body.get("messages", []):
            if not isinstance(msg.get("content"), list):
                continue
            for block in msg["content"]:
                if block.get("type") == "tool_use":
                    calls.append((block["name"].rsplit("__", 1)[-1], block.get("input") or {}, block.get("id")))
                elif block.get("type") == "tool_result":
                    results.append((block.get("tool_use_id"), json.dumps(block.get("content"))))
    return calls, results


def proposal_in(text):
    for _ in range(3):
        pid = re.search(r'"proposal_id\\*"\s*:\s*\\*"([^"\\]+)', text)
        dig = re.search(r'"digest\\*"\s*:\s*\\*"([0-9a-f]{64})', text)
        if pid and dig:
            return pid.group(1), dig.group(1)
        text = text.replace('\\"', '"')
    return None


def main():
    check, log, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    arg = sys.argv[4] if len(sys.argv) > 4 else None
    entries = load(log, start)
    reqs = host_requests(entries)
    if not reqs:
        return fail("the host sent no request to the scripted endpoint")
    texts = [json.dumps(r["body"], ensure_ascii=False) for r in reqs]

    if check == "skill-absent":
        hits = [n for n, t in enumerate(texts) if SKILL_NAME in t or SKILL_TEXT in t]
        if hits:
            return fail(f"request {hits[0] + 1} of {len(texts)} mentions the skill although it was not invoked")
        return ok(f"{len(texts)} request(s), none lists or holds the skill")

    if check == "skill-injected":
        for t in texts:
            if SKILL_TEXT in t:
                if "$ARGUMENTS" in t:
                    return fail("the skill text was sent with $ARGUMENTS unreplaced")
                if arg and arg not in t:
                    return fail(f"the skill text was sent but the user's words {arg!r} are not in the request")
                return ok("the skill's text is in the request, with the user's words")
        return fail(f"no request ({len(texts)}) holds the skill's text")

    calls, results = calls_and_results(entries)
    names = [c[0] for c in calls]
    by_id = dict(results)
    if check == "e2e":
        if names != ["propose_patch", "apply_patch"]:
            return fail(f"tool calls were {names}, expected propose_patch then apply_patch")
        proposal = proposal_in(by_id.get(calls[0][2], ""))
        if proposal is None:
            return fail("the propose_patch result holds no proposal_id and digest: " + by_id.get(calls[0][2], "")[:300])
        args = calls[1][1]
        if (args.get("proposal_id"), args.get("digest")) != proposal:
            return fail(f"apply_patch got {args}, the proposal was {proposal}")
        applied = by_id.get(calls[1][2], "")
        if not re.search(r'applied\\*"\s*:\s*true', applied):
            return fail("apply_patch did not report applied: true: " + applied[:300])
        return ok(f"propose_patch -> {proposal[0][:10]}..., apply_patch with that id and digest {proposal[1][:12]}...")

    if check == "apply-refused":
        if names != ["propose_patch", "apply_patch"]:
            return fail(f"tool calls were {names}, expected propose_patch then apply_patch")
        if proposal_in(by_id.get(calls[0][2], "")) is None:
            return fail("propose_patch did not run unprompted: " + by_id.get(calls[0][2], "")[:300])
        refused = by_id.get(calls[1][2], "")
        if "approval" not in refused or re.search(r'applied\\*"\s*:\s*true', refused):
            return fail("apply_patch was not refused for want of approval: " + refused[:300])
        return ok("propose_patch ran unprompted; apply_patch was held for approval")

    return fail(f"unknown check {check}")


def ok(msg):
    print(msg)
    return 0


def fail(msg):
    print(msg)
    return 1


if __name__ == "__main__":
    sys.exit(main())
