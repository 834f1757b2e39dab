//! The stdio MCP server: three tools over the [`Service`], nothing more. Arguments are translated, the service is
//! called on a blocking thread (it does file and network I/O), progress notifications are sent while the model
//! answers (when the client asked with a progress token), `notifications/cancelled` aborts the model request, and
//! refusals become `isError` results whose text is the refusal and whose structured content is
//! [`Refusal`](crate::error::Refusal) `{kind, message}`, so a primary can branch on the kind. Every line the client
//! sends gets to rmcp or an answer: `input` reads them (bounded) and answers what rmcp would drop.

mod input;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};

use crate::provider::Watch;
use crate::service::{
    ApplyRequest, ApplyResult, Call, DelegateRequest, DelegateResult, ProposeRequest,
    ProposeResult, Service,
};

/// What the server tells the primary model about when and how to use it.
pub const INSTRUCTIONS: &str = "This server hands small code changes to a cheap model and applies only what you approve.
Delegate only bounded, routine, easy-to-verify work (a rename, a small fix, a docstring, a test case). Keep with you:
architecture and design, complex debugging, ambiguous requirements, security and auth decisions, destructive work.
How to delegate:
1. Call propose_patch with workspace_root (absolute), a detailed self-contained task, 1-20 acceptance criteria,
   constraints, a plan when complexity is medium (high is refused), and only the files the change needs; for a
   large file, only the lines it needs as PATH:START-END (e.g. src/big.py:120-180; edits must stay inside them).
   `files` are existing files; name each NEW file the change creates in `create` (it must not exist yet).
2. Read the returned `patch` yourself: it is an untrusted draft. If it is wrong, do not apply it.
3. To accept it, call apply_patch with the proposal_id AND the digest. Exactly those bytes are written, only if the
   files are unchanged since the proposal; the project's validation commands then run, and a failure restores the
   previous bytes. When the policy allows a repair, that refusal may hold a NEW proposal built from the failure:
   review it like any other and approve it with its own proposal_id and digest, or drop it.
4. Re-read the changed files afterwards. Commits, pushes and commands stay with you.
delegate_task does read-only work (summaries, extraction, classification, drafts, routine reviews) and returns text:
treat it as an untrusted draft too.";

/// The MCP server: the tool router over one [`Service`].
#[derive(Clone)]
pub struct WorkerServer {
    service: Arc<Service>,
    tool_router: ToolRouter<Self>,
}

/// A refusal as a tool result: `isError`, the rendered message as text, `{kind, message}` as structured content.
pub fn refusal_result(e: &crate::Error) -> CallToolResult {
    let refusal = e.refusal();
    let mut r = CallToolResult::error(vec![ContentBlock::text(refusal.message.clone())]);
    r.structured_content = serde_json::to_value(&refusal).ok();
    r
}

/// Run `f` on a blocking thread with a [`Call`] wired to the request's progress token and cancellation.
async fn with_call<T: Send + 'static>(
    ctx: RequestContext<RoleServer>,
    f: impl FnOnce(Call) -> crate::Result<T> + Send + 'static,
) -> Result<T, CallToolResult> {
    let cancelled = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let call = Call {
        provider: None,
        watch: Watch {
            on_progress: Arc::new(move |n| {
                let _ = tx.send(n);
            }),
            cancelled: cancelled.clone(),
        },
        unrecorded: false,
    };
    let token = ctx.meta.get_progress_token();
    let peer = ctx.peer.clone();
    let forward = tokio::spawn(async move {
        let mut last_sent = 0;
        while let Some(n) = rx.recv().await {
            // At most one notification per 16 chunks: enough to show life, little traffic.
            if let Some(t) = &token
                && (last_sent == 0 || n >= last_sent + 16)
            {
                last_sent = n;
                let mut p = ProgressNotificationParam::new(t.clone(), n as f64);
                p.message = Some(format!("the model has written {n} chunks"));
                let _ = peer.notify_progress(p).await;
            }
        }
    });
    let ct = ctx.ct.clone();
    let flag = cancelled.clone();
    let watcher = tokio::spawn(async move {
        ct.cancelled().await;
        flag.store(true, Ordering::Relaxed);
    });
    let result = tokio::task::spawn_blocking(move || f(call)).await;
    watcher.abort();
    let _ = forward.await;
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(refusal_result(&e)),
        Err(e) => Err(refusal_result(&crate::Error::io_message(format!(
            "internal error: the worker thread failed: {e}"
        )))),
    }
}

/// The `format` values schemars writes for Rust integers (`uint`, `uint64`, `int32`...): not JSON Schema formats,
/// and Claude Code logs a warning for every field that carries one, on every call.
const NON_STANDARD_FORMATS: &[&str] = &[
    "uint", "uint8", "uint16", "uint32", "uint64", "uint128", "int", "int8", "int16", "int32",
    "int64", "int128", "float", "double",
];

/// Remove the non-standard `format` values from a tool schema, at any depth (the integer bounds stay).
fn strip_formats(schema: &mut serde_json::Map<String, serde_json::Value>) {
    if schema
        .get("format")
        .and_then(|f| f.as_str())
        .is_some_and(|f| NON_STANDARD_FORMATS.contains(&f))
    {
        schema.remove("format");
    }
    for v in schema.values_mut() {
        strip_value(v);
    }
}

fn strip_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => strip_formats(m),
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_value),
        _ => {}
    }
}

#[tool_router(router = tool_router)]
impl WorkerServer {
    /// The server over `service`, its tool schemas stripped of non-standard formats.
    pub fn new(service: Arc<Service>) -> Self {
        let mut tool_router = ToolRouter::new();
        for mut route in Self::tool_router() {
            if route.attr.name != "apply_patch" {
                // A patch or an answer may be long: hosts that read this hint show it whole (see `spill`).
                let mut meta = serde_json::Map::new();
                meta.insert(
                    "anthropic/maxResultSizeChars".into(),
                    crate::spill::SIZE_HINT_CHARS.into(),
                );
                route.attr.meta = Some(rmcp::model::MetaObject(meta));
            }
            strip_formats(Arc::make_mut(&mut route.attr.input_schema));
            if let Some(out) = route.attr.output_schema.as_mut() {
                strip_formats(Arc::make_mut(out));
            }
            tool_router.add_route(route);
        }
        Self {
            service,
            tool_router,
        }
    }

    /// Ask the cheap model for an edit and return it as a canonical patch with its digest. Reads the selected files
    /// (`files`: existing ones; name new files the change creates in `create`); never writes to the workspace.
    #[tool(
        name = "propose_patch",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn propose_patch(
        &self,
        Parameters(req): Parameters<ProposeRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ProposeResult>, CallToolResult> {
        let service = self.service.clone();
        with_call(ctx, move |call| service.propose(&req, &call))
            .await
            .map(Json)
    }

    /// Apply a proposal you reviewed: pass its proposal_id and digest. Writes exactly the approved bytes if the files
    /// are unchanged since the proposal, runs the project's validation commands, and restores the previous bytes if
    /// any fails. The only tool that writes.
    #[tool(
        name = "apply_patch",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn apply_patch(
        &self,
        Parameters(req): Parameters<ApplyRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ApplyResult>, CallToolResult> {
        let service = self.service.clone();
        with_call(ctx, move |call| service.apply_proposal(&req, &call))
            .await
            .map(Json)
    }

    /// Read-only delegation of bounded non-patch work (summaries, extraction, classification, routine transforms,
    /// drafts of docs/tests/code, routine reviews). Returns text to verify; never writes anything.
    #[tool(
        name = "delegate_task",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn delegate_task(
        &self,
        Parameters(req): Parameters<DelegateRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<DelegateResult>, CallToolResult> {
        let service = self.service.clone();
        with_call(ctx, move |call| service.delegate(&req, &call))
            .await
            .map(Json)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for WorkerServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "local-llm-worker",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serve MCP on stdin/stdout until the client closes the stream.
pub fn serve_stdio() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Finish or undo any apply a crash interrupted, on a thread of its own while the server answers (one readdir
    // when there is none): an apply to a workspace it has not finished with waits for it, or is refused saying why.
    if let Some(state) = crate::ledger::state_dir() {
        crate::txn::recover_in_background(state);
    }
    // Sandboxes left by killed workers go, on a thread of their own (one readdir when there are none).
    if let Ok(parent) = crate::sandbox::parent_dir() {
        let _ = std::thread::Builder::new()
            .name("sandbox-orphans".into())
            .spawn(move || crate::sandbox::remove_orphans(&parent));
    }
    rt.block_on(async {
        let server = WorkerServer::new(Arc::new(Service::new()));
        let (stdin, stdout) = rmcp::transport::stdio();
        let running = server.serve(input::Lines::new(stdin, stdout)).await?;
        running.waiting().await?;
        Ok(())
    })
}
