"""Scripted model endpoints on 127.0.0.1 for the host CLI checks (scripts/test-hosts.sh). Standard library only.

One server answers three APIs, every request is appended to a JSON-lines log (path, headers of interest, body):
  POST /v1/chat/completions   the WORKER's model (OpenAI-compatible): always the same JSON edit list, with usage.
  POST /v1/responses          the Codex HOST model (Responses API, SSE). When the user's message holds the marker
                              E2E-DELEGATE, it drives the delegation: call propose_patch, then call apply_patch with
                              the proposal_id and digest read from the tool output in the next request, then a
                              final message. Any other request gets one short assistant message.
  POST /v1/messages           the Claude Code HOST model (Messages API, SSE). Same script with tool_use blocks.
  GET  /v1/models             an empty model list.

Usage: python3 tests/hosts/scripted_models.py --port-file FILE --log FILE --workspace DIR
The server writes its port to FILE once it listens, and stops after --lifetime seconds (default 900) at the latest.
"""

import argparse
import hashlib
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = "E2E-DELEGATE"
WORKER_ANSWER = json.dumps({"edits": [{"path": "src/value.py", "old": "VALUE = 1", "new": "VALUE = 2"}]})
FINAL_TEXT = "Applied the reviewed patch: src/value.py now sets VALUE = 2."


def propose_arguments(workspace):
    return {
        "workspace_root": workspace,
        "task": "In src/value.py change the constant VALUE from 1 to 2.",
        "acceptance_criteria": ["src/value.py sets VALUE = 2"],
        "constraints": ["change nothing else"],
        "complexity": "low",
        "files": ["src/value.py"],
    }


def find_proposal(text):
    """The proposal_id and digest inside a tool result, however many times it was JSON-encoded."""
    for _ in range(4):
        pid = re.search(r'"proposal_id"\s*:\s*"([^"\\]+)"', text)
        dig = re.search(r'"digest"\s*:\s*"([0-9a-f]{64})"', text)
        if pid and dig:
            return pid.group(1), dig.group(1)
        text = text.replace('\\"', '"')
    return None


def all_text(value):
    return json.dumps(value, ensure_ascii=False)


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seq = 0

    def next_id(self, prefix):
        with self.lock:
            self.seq += 1
            return f"{prefix}_{self.seq}"

    def log(self, path, headers, body):
        entry = {"path": path, "headers": headers, "body": body, "time": time.time()}
        with self.lock, open(self.args.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def next_step(user_text, tool_outputs):
    """What the scripted host model does next: ("text", str) or ("call", tool, arguments or None for propose)."""
    if MARKER not in user_text:
        return ("text", "ok")
    if not tool_outputs:
        return ("call", "propose_patch", None)
    if len(tool_outputs) == 1:
        proposal = find_proposal(tool_outputs[0])
        if proposal is None:
            return ("text", "propose_patch gave no proposal: " + tool_outputs[0][:2000])
        return ("call", "apply_patch", {"proposal_id": proposal[0], "digest": proposal[1]})
    if re.search(r'\\*"applied\\*"\s*:\s*true', tool_outputs[1]):
        return ("text", FINAL_TEXT)
    return ("text", "apply_patch did not apply: " + tool_outputs[1][:2000])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, *_):
        pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return {"unparsed": raw.decode("utf-8", "replace")}

    def _send(self, status, body, ctype="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        self.state.log(self.path, {}, None)
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, json.dumps({"object": "list", "data": [], "models": []}))
        return self._send(200, "{}")

    def do_HEAD(self):
        self._send(200, "")

    def do_POST(self):
        body = self._body()
        path = self.path.split("?")[0]
        seen = {"user-agent": self.headers.get("user-agent", "")}
        auth = self.headers.get("authorization")
        if auth is not None:
            # Only a digest of the credential goes to the log, so the log itself never holds a key.
            seen["authorization-sha256"] = hashlib.sha256(auth.encode()).hexdigest()
        self.state.log(path, seen, body)
        if path.endswith("/chat/completions"):
            return self.chat_api(body)
        if path.endswith("/responses"):
            return self.responses_api(body)
        if path.endswith("/messages/count_tokens"):
            return self._send(200, json.dumps({"input_tokens": 1}))
        if path.endswith("/messages"):
            return self.messages_api(body)
        return self._send(404, json.dumps({"error": {"message": f"no scripted answer for {path}"}}))

    # The worker's model: an OpenAI-compatible chat completion.
    def chat_api(self, body):
        time.sleep(self.state.args.chat_delay)
        reply = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": (body or {}).get("model", "scripted-worker"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": WORKER_ANSWER}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        }
        self._send(200, json.dumps(reply))

    # Codex: the Responses API over SSE.
    def responses_api(self, body):
        items = (body or {}).get("input") or []
        user_text = "\n".join(
            all_text(i.get("content")) for i in items if isinstance(i, dict) and i.get("role") == "user"
        )
        outputs = [
            o if isinstance(o, str) else all_text(o)
            for o in (i.get("output") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
        ]
        step = next_step(user_text, outputs)
        rid = self.state.next_id("resp")
        events = [{"type": "response.created", "sequence_number": 0, "response": {"id": rid, "status": "in_progress"}}]
        if step[0] == "text":
            mid = self.state.next_id("msg")
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": step[1], "annotations": []}]}
            events += [
                {"type": "response.output_item.added", "output_index": 0,
                 "item": dict(item, status="in_progress", content=[])},
                {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0,
                 "delta": step[1]},
                {"type": "response.output_text.done", "item_id": mid, "output_index": 0, "content_index": 0,
                 "text": step[1]},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ]
            output = [item]
        else:
            tool, args = step[1], step[2]
            if args is None:
                args = propose_arguments(self.state.args.workspace)
            arguments = json.dumps(args)
            fid, call_id = self.state.next_id("fc"), self.state.next_id("call")
            item = {"type": "function_call", "id": fid, "call_id": call_id, "namespace": self.state.args.namespace,
                    "name": tool, "arguments": arguments, "status": "completed"}
            if not self.state.args.namespace:
                item.pop("namespace")
                item["name"] = tool if not self.state.args.tool_prefix else self.state.args.tool_prefix + tool
            half = len(arguments) // 2
            events += [
                {"type": "response.output_item.added", "output_index": 0,
                 "item": dict(item, arguments="", status="in_progress")},
                {"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": 0,
                 "delta": arguments[:half]},
                {"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": 0,
                 "delta": arguments[half:]},
                {"type": "response.function_call_arguments.done", "item_id": fid, "output_index": 0,
                 "arguments": arguments},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ]
            output = [item]
        events.append({"type": "response.completed", "response": {
            "id": rid, "status": "completed", "output": output,
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}}})
        for n, e in enumerate(events):
            e.setdefault("sequence_number", n)
        self._send(200, "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events),
                   "text/event-stream")

    # Claude Code: the Messages API over SSE.
    def messages_api(self, body):
        msgs = (body or {}).get("messages") or []
        user_text, outputs = "", []
        for m in msgs:
            content = m.get("content")
            if m.get("role") != "user":
                continue
            if isinstance(content, str):
                user_text += content + "\n"
                continue
            for block in content or []:
                if block.get("type") == "tool_result":
                    outputs.append(all_text(block.get("content")))
                elif block.get("type") == "text":
                    user_text += block.get("text", "") + "\n"
        step = next_step(user_text, outputs) if body.get("tools") else ("text", "ok")
        mid = self.state.next_id("msg")
        events = [{"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": body.get("model", "scripted"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 1}}}]
        if step[0] == "text":
            events += [
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step[1]}},
                {"type": "content_block_stop", "index": 0},
            ]
            stop = "end_turn"
        else:
            tool, args = step[1], step[2]
            if args is None:
                args = propose_arguments(self.state.args.workspace)
            name = self.state.args.claude_tool_prefix + tool
            arguments = json.dumps(args)
            events += [
                {"type": "content_block_start", "index": 0, "content_block": {
                    "type": "tool_use", "id": "toolu_" + self.state.next_id("t"), "name": name, "input": {}}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "input_json_delta", "partial_json": arguments}},
                {"type": "content_block_stop", "index": 0},
            ]
            stop = "tool_use"
        events += [
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 20}},
            {"type": "message_stop"},
        ]
        self._send(200, "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events),
                   "text/event-stream")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--workspace", default="/nonexistent")
    p.add_argument("--namespace", default="mcp__local_llm_worker",
                   help="Codex: the namespace of the MCP tools in function_call items ('' for flat names)")
    p.add_argument("--tool-prefix", default="", help="Codex with --namespace '': prefix of flat tool names")
    p.add_argument("--claude-tool-prefix", default="mcp__plugin_local-llm-delegator_local-llm-worker__")
    p.add_argument("--chat-delay", type=float, default=0, help="seconds the worker's model takes to answer")
    p.add_argument("--lifetime", type=float, default=900)
    args = p.parse_args()
    Handler.state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
