//! The stdio MCP server: two tools over the [`Service`], nothing more. Arguments are translated, the service is
//! called on a blocking thread (it does file and network I/O), and its refusals become `isError` results.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{Json, ServerHandler, ServiceExt, tool, tool_handler, tool_router};

use crate::service::{ApplyRequest, ApplyResult, ProposeRequest, ProposeResult, Service};

/// What the server tells the primary model about when and how to use it.
pub const INSTRUCTIONS: &str = "This server hands small code changes to a cheap model and applies only what you approve.
Delegate only bounded, routine, easy-to-verify work (a rename, a small fix, a docstring, a test case). Keep with you:
architecture and design, complex debugging, ambiguous requirements, security and auth decisions, destructive work.
How to delegate:
1. Call propose_patch with workspace_root (absolute), a detailed self-contained task, 1-20 acceptance criteria,
   constraints, a plan when complexity is medium (high is refused), and only the files the change needs.
2. Read the returned `patch` yourself: it is an untrusted draft. If it is wrong, do not apply it.
3. To accept it, call apply_patch with the proposal_id AND the digest. Exactly those bytes are written, only if the
   files are unchanged since the proposal; the project's validation commands then run, and a failure restores the
   previous bytes.
4. Re-read the changed files afterwards. Commits, pushes and commands stay with you.";

#[derive(Clone)]
pub struct WorkerServer {
    service: Arc<Service>,
    tool_router: ToolRouter<Self>,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("internal error: the worker thread failed: {e}")),
    }
}

#[tool_router(router = tool_router)]
impl WorkerServer {
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            tool_router: Self::tool_router(),
        }
    }

    /// Ask the cheap model for an edit and return it as a canonical patch with its digest. Reads the selected files;
    /// never writes to the workspace.
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
    ) -> Result<Json<ProposeResult>, String> {
        let service = self.service.clone();
        blocking(move || service.propose(&req)).await.map(Json)
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
    ) -> Result<Json<ApplyResult>, String> {
        let service = self.service.clone();
        blocking(move || service.apply_proposal(&req))
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
    rt.block_on(async {
        let server = WorkerServer::new(Arc::new(Service::new()));
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok(())
    })
}
