"""A minimal stdio MCP server built with the official Python `mcp` SDK (2.3.0), for the cold-start comparison in
`benches/overhead.rs`: the same three tool names with similar arguments and annotations as `local-llm-worker mcp`,
no bodies. It exists only to be timed from spawn to the `tools/list` response.

Run by the bench as: ~/.cache/local-llm-delegator/bench-venv/bin/python bench/minimal_mcp_server.py
"""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("minimal-python-mcp", version="0.1.0")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=True))
def propose_patch(workspace_root: str, task: str, acceptance_criteria: list[str], complexity: str,
                  files: list[str], constraints: list[str] | None = None, plan: list[str] | None = None,
                  context: str | None = None, model: str | None = None) -> dict:
    """Ask the cheap model for an edit and return it as a canonical patch with its digest."""
    return {}


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False))
def apply_patch(proposal_id: str, digest: str) -> dict:
    """Apply a proposal you reviewed: pass its proposal_id and digest."""
    return {}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=True))
def delegate_task(workspace_root: str, task_kind: str, task: str, acceptance_criteria: list[str],
                  complexity: str, files: list[str] | None = None) -> dict:
    """Read-only delegation of bounded non-patch work."""
    return {}


if __name__ == "__main__":
    server.run("stdio")
