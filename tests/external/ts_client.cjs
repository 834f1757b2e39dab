// The worker's MCP tools through the official TypeScript SDK client (pinned in tests/external/package.json), as
// every client built on it calls them: `callTool`, which checks structured content against the tool's output
// schema on refusals too, here with ajv in strict mode (2020-12). The model is a scripted fake (a small HTTP
// server in this script, not a real model): it answers the sample edit, or prose when the task asks for it.
//
// Usage: LLW_NODE_MODULES=DIR node tests/external/ts_client.cjs target/debug/local-llm-worker
// Prints one line per check and a closing `ts-client: N passed, M failed`; exits non-zero on a failure.
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const { createRequire } = require("node:module");

const modules = process.env.LLW_NODE_MODULES;
if (!modules) {
  console.error("set LLW_NODE_MODULES to the node_modules folder holding @modelcontextprotocol/sdk");
  process.exit(2);
}
const need = createRequire(path.join(modules, "noop.js"));
const { Client } = need("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = need("@modelcontextprotocol/sdk/client/stdio.js");
const { AjvJsonSchemaValidator } = need("@modelcontextprotocol/sdk/validation/ajv");
const Ajv2020 = need("ajv/dist/2020").default;

const EDIT = JSON.stringify({ edits: [{ path: "src/value.py", old: "VALUE = 1", new: "VALUE = 2" }] });

/** The scripted model: POST chat/completions answers EDIT (or prose when the request holds ANSWER-PROSE). */
function fakeModel() {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      const content = body.includes("ANSWER-PROSE") ? "I would change the constant, I think." : EDIT;
      const answer = {
        model: "scripted",
        choices: [{ message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      };
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** The worker binary under test, set by `main`; its state and ledger live under the run's temporary folder. */
let BINARY = null;
const workerEnv = (tmp) => ({
  PATH: process.env.PATH,
  HOME: tmp,
  LOCAL_LLM_STATE_DIR: path.join(tmp, "state"),
  LOCAL_LLM_LEDGER: path.join(tmp, "ledger.jsonl"),
});

/** A workspace with src/value.py and a policy pointing at `baseUrl`; a policy that names commands is trusted as
 * the user would trust it (`local-llm-worker trust`), in the run's own state folder. */
function workspace(tmp, name, baseUrl, extra = "") {
  const root = path.join(tmp, name);
  fs.mkdirSync(path.join(root, "src"), { recursive: true });
  fs.writeFileSync(path.join(root, "src/value.py"), "VALUE = 1\n");
  fs.writeFileSync(
    path.join(root, "local-llm-worker.toml"),
    `[provider]\nkind = "llamacpp"\nbase_url = "${baseUrl}"\n\n[paths]\nallowed = ["src/**"]\n${extra}`,
  );
  if (extra.includes("[validation]")) {
    require("node:child_process").execFileSync(path.resolve(BINARY), ["trust", "--workspace-root", root], {
      env: workerEnv(tmp),
      stdio: "ignore",
    });
  }
  return root;
}

const propose = (root, over = {}) => ({
  workspace_root: root,
  task: "Set VALUE to 2",
  acceptance_criteria: ["VALUE is 2"],
  complexity: "low",
  files: ["src/value.py"],
  ...over,
});

async function main(binary) {
  BINARY = binary;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "llw-ts-client."));
  const model = await fakeModel();
  const url = `http://127.0.0.1:${model.address().port}/v1`;
  let passed = 0;
  let failed = 0;
  const check = (name, ok, detail) => {
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: ${detail}`}`);
  };
  const transport = new StdioClientTransport({
    command: path.resolve(binary),
    args: ["mcp"],
    env: workerEnv(tmp),
    stderr: "ignore",
  });
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  const client = new Client(
    { name: "llw-ts-client", version: "1.0.0" },
    { jsonSchemaValidator: new AjvJsonSchemaValidator(ajv) },
  );
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    check("lists the three tools", names.join() === "apply_patch,delegate_task,propose_patch", names.join());
    for (const t of tools) {
      let compiled = true;
      try {
        ajv.compile(t.outputSchema);
        ajv.compile(t.inputSchema);
      } catch (e) {
        compiled = e.message;
      }
      check(`${t.name}: its schemas compile under ajv strict mode`, compiled === true, compiled);
    }
    // A call that must succeed: returns its structured result.
    const ok = async (name, tool, args) => {
      try {
        const r = await client.callTool({ name: tool, arguments: args });
        check(name, !r.isError && r.structuredContent, JSON.stringify(r).slice(0, 300));
        return r.structuredContent || {};
      } catch (e) {
        check(name, false, e.message);
        return {};
      }
    };
    // A call that must be refused with `kind`, read from the structured content the SDK validated.
    const refused = async (name, tool, args, kind) => {
      try {
        const r = await client.callTool({ name: tool, arguments: args });
        const sc = r.structuredContent || {};
        const text = (r.content || []).map((c) => c.text).join("");
        check(
          `${name}: refused with kind ${kind}`,
          r.isError === true && sc.kind === kind && text === sc.message,
          JSON.stringify(r).slice(0, 300),
        );
      } catch (e) {
        check(`${name}: refused with kind ${kind}`, false, `the SDK threw: ${e.message}`);
      }
    };

    const ws = workspace(tmp, "ws", url);
    const p = await ok("propose_patch succeeds", "propose_patch", propose(ws));
    await refused("apply_patch with another digest", "apply_patch",
      { proposal_id: p.proposal_id, digest: "0".repeat(64) }, "digest");
    const a = await ok("apply_patch succeeds", "apply_patch", { proposal_id: p.proposal_id, digest: p.digest });
    check("apply_patch wrote the file", a.applied === true &&
      fs.readFileSync(path.join(ws, "src/value.py"), "utf8") === "VALUE = 2\n", JSON.stringify(a));
    await refused("apply_patch of a used proposal", "apply_patch",
      { proposal_id: p.proposal_id, digest: p.digest }, "proposal");
    const d = await ok("delegate_task succeeds", "delegate_task",
      { ...propose(ws), task_kind: "summarize", task: "Summarize src/value.py" });
    check("delegate_task returns the answer", typeof d.content === "string" && d.content.length > 0, JSON.stringify(d));

    await refused("propose_patch with a complexity not offered", "propose_patch",
      propose(ws, { complexity: "hard" }), "invalid_argument");
    const missing = propose(ws);
    delete missing.task;
    await refused("propose_patch without its task", "propose_patch", missing, "invalid_argument");
    await refused("apply_patch with a number for proposal_id", "apply_patch",
      { proposal_id: 5, digest: "0" }, "invalid_argument");
    await refused("propose_patch with an unknown field", "propose_patch",
      propose(ws, { fils: ["src/value.py"] }), "invalid_argument");
    await refused("delegate_task without task_kind", "delegate_task", propose(ws), "invalid_argument");
    await refused("propose_patch of a file outside the scope", "propose_patch",
      propose(ws, { files: ["../outside.py"] }), "scope");
    const bare = path.join(tmp, "no-policy");
    fs.mkdirSync(bare);
    await refused("propose_patch in a folder without a policy", "propose_patch", propose(bare), "policy");
    await refused("propose_patch with the model server down", "propose_patch",
      propose(workspace(tmp, "down", "http://127.0.0.1:1/v1")), "provider");
    await refused("propose_patch answered in prose", "propose_patch",
      propose(ws, { task: "Set VALUE to 3. ANSWER-PROSE" }), "model_answer");
    const stale = workspace(tmp, "stale", url);
    const s = await ok("propose_patch succeeds (to go stale)", "propose_patch", propose(stale));
    fs.writeFileSync(path.join(stale, "src/value.py"), "VALUE = 7\n");
    await refused("apply_patch after the file changed", "apply_patch",
      { proposal_id: s.proposal_id, digest: s.digest }, "stale");
    const failing = workspace(tmp, "failing", url, '\n[validation]\ncommands = ["false"]\n');
    const f = await ok("propose_patch succeeds (to fail validation)", "propose_patch", propose(failing));
    await refused("apply_patch whose validation fails", "apply_patch",
      { proposal_id: f.proposal_id, digest: f.digest }, "validation_failed");
    check("a failed validation restored the file",
      fs.readFileSync(path.join(failing, "src/value.py"), "utf8") === "VALUE = 1\n", "the file changed");
  } catch (e) {
    check("the session ran", false, e.stack || e.message);
  } finally {
    await client.close().catch(() => {});
    model.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`ts-client: ${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main(process.argv[2] || "target/debug/local-llm-worker").then((code) => process.exit(code));
