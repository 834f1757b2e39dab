"""List the worker's MCP tools with an independent client: the official Python `mcp` SDK.

Usage: python3 tests/external/list_tools.py target/release/local-llm-worker
Exits non-zero unless exactly propose_patch and delegate_task (read-only) and apply_patch (destructive) are listed
with their output schemas, the enum fields list their values, and a refusal (apply_patch of an unknown proposal)
comes back as an error result carrying its kind as structured content.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary: str) -> int:
    params = StdioServerParameters(command=binary, args=["mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = (await session.list_tools()).tools
            refused = await session.call_tool(
                "apply_patch", {"proposal_id": "p_unknown", "digest": "0" * 64})
    by_name = {t.name: t for t in tools}
    problems = []
    if sorted(by_name) != ["apply_patch", "delegate_task", "propose_patch"]:
        problems.append(f"unexpected tools: {sorted(by_name)}")
    else:
        p, a = by_name["propose_patch"].annotations, by_name["apply_patch"].annotations
        for name in ["propose_patch", "delegate_task"]:
            r = by_name[name].annotations
            if not (r and r.read_only_hint is True and r.destructive_hint is False):
                problems.append(f"{name} annotations: {r}")
        if not (a and a.read_only_hint is False and a.destructive_hint is True):
            problems.append(f"apply_patch annotations: {a}")
        for t in tools:
            if not t.output_schema:
                problems.append(f"{t.name} has no outputSchema")
        complexity = by_name["propose_patch"].input_schema["properties"].get("complexity", {})
        if complexity.get("enum") != ["low", "medium", "high"]:
            problems.append(f"propose_patch complexity lists no values: {complexity}")
        kind = by_name["delegate_task"].input_schema["properties"].get("task_kind", {})
        if "summarize" not in kind.get("enum", []):
            problems.append(f"delegate_task task_kind lists no values: {kind}")
    sc = refused.structured_content or {}
    if not refused.is_error or sc.get("kind") != "proposal" or "no proposal" not in sc.get("message", ""):
        problems.append(f"refusal without its kind: isError={refused.is_error} structuredContent={sc}")
    else:
        print(f"refusal: kind={sc['kind']}: {sc['message'][:60]}...")
    for t in tools:
        ann = t.annotations
        print(f"{t.name}: readOnlyHint={ann.read_only_hint} destructiveHint={ann.destructive_hint} "
              f"inputs={sorted(t.input_schema.get('properties', {}))}")
    print(f"server: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
