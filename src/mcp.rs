//! The stdio MCP server: three tools over the [`Service`], nothing more. Arguments are translated, the service is
//! called on a blocking thread (it does file and network I/O), progress notifications are sent while the model
//! answers (when the client asked with a progress token), `notifications/cancelled` aborts the model request, and
//! refusals become `isError` results whose text is the refusal and whose structured content is
//! [`Refusal`](crate::error::Refusal) `{kind, message}`, so a primary can branch on the kind. Every line the client
//! sends gets to rmcp or an answer: `input` reads them (bounded) and answers what rmcp would drop.

mod input;
mod schema;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

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
A refusal of kind `trust` is for the user: show it to them (they read the policy and run the command it names);
never run `local-llm-worker trust` yourself.
delegate_task does read-only work (summaries, extraction, classification, drafts, routine reviews) and returns text:
treat it as an untrusted draft too.";

/// The MCP server: the tool router over one [`Service`].
#[derive(Clone)]
pub struct WorkerServer {
    service: Arc<Service>,
    tool_router: ToolRouter<Self>,
    /// Turns true when the client closes its input: every call in flight is cancelled.
    input_closed: tokio::sync::watch::Receiver<bool>,
}

/// A refusal as a tool result: `isError`, the rendered message as text, `{kind, message}` as structured content.
/// Every tool's output schema admits it (see [`admit_refusal`]), so clients that check structured content against
/// the output schema on errors too (the TypeScript SDK's `callTool`, and so MCP Inspector) show the refusal.
pub fn refusal_result(e: &crate::Error) -> CallToolResult {
    let refusal = e.refusal();
    let mut r = CallToolResult::error(vec![ContentBlock::text(refusal.message.clone())]);
    r.structured_content = serde_json::to_value(&refusal).ok();
    r
}

/// The interval between two progress notifications while a call runs (when the client gave a progress token).
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// Send a progress notification every [`HEARTBEAT`] from the first, until `done` fires: progress is the seconds
/// elapsed (it grows with every notification, as MCP requires, even while the model is silent), the message also
/// says how many answer chunks (roughly tokens) came so far.
async fn heartbeat(
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
    tokens: Arc<AtomicU64>,
    mut done: tokio::sync::oneshot::Receiver<()>,
) {
    let start = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(start + HEARTBEAT, HEARTBEAT);
    let mut beats = 0u64;
    loop {
        tokio::select! {
            _ = &mut done => return,
            _ = ticks.tick() => {
                beats += 1;
                let seconds = beats * HEARTBEAT.as_secs();
                let n = tokens.load(Ordering::Relaxed);
                let mut p = ProgressNotificationParam::new(token.clone(), seconds as f64);
                p.message = Some(format!("working: {seconds} s, {n} tokens from the model so far"));
                let _ = peer.notify_progress(p).await;
            }
        }
    }
}

/// Run `f` on a blocking thread with a [`Call`] wired to the request's progress token and cancellation. The call
/// is cancelled by `notifications/cancelled` and by the client closing its input (`input_closed`): the model's
/// connection is then closed at once (see [`crate::provider::http`]) and the call ends as `cancelled`.
async fn with_call<T: Send + 'static>(
    ctx: RequestContext<RoleServer>,
    mut input_closed: tokio::sync::watch::Receiver<bool>,
    f: impl FnOnce(Call) -> crate::Result<T> + Send + 'static,
) -> Result<T, CallToolResult> {
    let cancelled = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(AtomicU64::new(0));
    let seen = tokens.clone();
    let call = Call {
        provider: None,
        watch: Watch {
            on_progress: Arc::new(move |n| seen.store(n, Ordering::Relaxed)),
            cancelled: cancelled.clone(),
        },
        unrecorded: false,
    };
    let (done, stop_beats) = tokio::sync::oneshot::channel();
    let beats = ctx
        .meta
        .get_progress_token()
        .map(|t| tokio::spawn(heartbeat(ctx.peer.clone(), t, tokens, stop_beats)));
    let ct = ctx.ct.clone();
    let flag = cancelled.clone();
    let watcher = tokio::spawn(async move {
        tokio::select! {
            _ = ct.cancelled() => {}
            _ = input_closed.wait_for(|closed| *closed) => {}
        }
        flag.store(true, Ordering::Relaxed);
    });
    let result = tokio::task::spawn_blocking(move || f(call)).await;
    watcher.abort();
    let _ = done.send(());
    if let Some(b) = beats {
        let _ = b.await;
    }
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

/// The handler of one tool, as rmcp's router holds it.
type Handler = Arc<rmcp::handler::server::tool::DynCallToolHandler<WorkerServer>>;

/// The prefix of rmcp's message for arguments that do not deserialize into the tool's input type.
const DECODING_FAILED: &str = "failed to deserialize parameters:";

/// Wrap `inner` so that arguments that do not decode (a missing field, a wrong type) are refused like every other
/// bad argument: an `isError` result of kind `invalid_argument` naming the tool and the field, instead of rmcp's
/// bare text.
fn decoding_refused_with_kind(tool: String, inner: Handler) -> Handler {
    Arc::new(move |ctx| {
        let (inner, tool) = (inner.clone(), tool.clone());
        Box::pin(async move {
            match inner(ctx).await {
                Err(e)
                    if e.code == rmcp::model::ErrorCode::INVALID_PARAMS
                        && e.message.starts_with(DECODING_FAILED) =>
                {
                    let why = e.message.trim_start_matches(DECODING_FAILED).trim();
                    Ok(refusal_result(&crate::Error::InvalidArgument(format!(
                        "the arguments of {tool} do not match its input schema: {why}; see the tool's input schema \
                         for the fields it takes and their types"
                    )))
                    .into())
                }
                other => other,
            }
        })
    })
}

#[tool_router(router = tool_router)]
impl WorkerServer {
    /// The server over `service`, its tool schemas portable (see [`schema`]) and stripped of non-standard formats,
    /// its argument-decoding failures refusals with their kind. `input_closed` turns true when the client closes
    /// its input.
    pub fn new(service: Arc<Service>, input_closed: tokio::sync::watch::Receiver<bool>) -> Self {
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
            let input = Arc::make_mut(&mut route.attr.input_schema);
            strip_formats(input);
            schema::single_types(input);
            schema::closed(input);
            if let Some(out) = route.attr.output_schema.as_mut() {
                let out = Arc::make_mut(out);
                schema::admit_refusal(out);
                strip_formats(out);
                schema::single_types(out);
            }
            route.call = decoding_refused_with_kind(route.attr.name.to_string(), route.call);
            tool_router.add_route(route);
        }
        Self {
            service,
            tool_router,
            input_closed,
        }
    }

    /// Ask the cheap model for an edit and return it as a canonical patch with its digest. Reads the selected files
    /// (`files`: existing ones; name new files the change creates in `create`); never writes to the workspace.
    #[tool(
        name = "propose_patch",
        title = "Propose a patch from the cheap model",
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
        with_call(ctx, self.input_closed.clone(), move |call| {
            service.propose(&req, &call)
        })
        .await
        .map(Json)
    }

    /// Apply a proposal you reviewed: pass its proposal_id and digest. Writes exactly the approved bytes if the files
    /// are unchanged since the proposal, runs the project's validation commands, and restores the previous bytes if
    /// any fails. The only tool that writes.
    #[tool(
        name = "apply_patch",
        title = "Apply an approved patch",
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
        with_call(ctx, self.input_closed.clone(), move |call| {
            service.apply_proposal(&req, &call)
        })
        .await
        .map(Json)
    }

    /// Read-only delegation of bounded non-patch work (summaries, extraction, classification, routine transforms,
    /// drafts of docs/tests/code, routine reviews). Returns text to verify; never writes anything.
    #[tool(
        name = "delegate_task",
        title = "Delegate read-only work to the cheap model",
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
        with_call(ctx, self.input_closed.clone(), move |call| {
            service.delegate(&req, &call)
        })
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

/// Serve MCP on stdin/stdout until the client closes the stream; a call in flight then is cancelled (its model
/// connection closed at once), answered as `cancelled` and recorded, before the server exits.
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
        let (closed, input_closed) = tokio::sync::watch::channel(false);
        let server = WorkerServer::new(Arc::new(Service::new()), input_closed);
        let (stdin, stdout) = rmcp::transport::stdio();
        let lines = input::Lines::new(stdin, stdout).on_close(closed);
        let running = server.serve(lines).await?;
        running.waiting().await?;
        Ok(())
    })
}
