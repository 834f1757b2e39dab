//! The worker's command line as the tests run it: [`Cli`] is a `local-llm-worker` command with the tests'
//! environment (no policy variable inherited from the caller's, the tests' own ledger and state folder: see
//! [`test_ledger`] and [`test_state`]), which a test changes only where it means to; [`Cli::propose`] starts from
//! the usual request and [`Cli::mcp`] from the MCP server, which [`Cli::serve`] connects rmcp's client to.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use super::{BIN, test_ledger, test_state};

/// An rmcp client connected to a worker's MCP server over its stdio.
pub type McpClient = RunningService<RoleClient, ()>;

/// The request [`Cli::propose`] sends unless a test says otherwise.
#[derive(Clone)]
struct Request {
    root: OsString,
    task: String,
    accept: Vec<String>,
    complexity: String,
    files: Vec<String>,
}

/// A `local-llm-worker` command with the tests' environment, built step by step and run with [`Cli::run`] (or
/// turned into a [`Command`] to spawn with [`Cli::command`]).
#[derive(Clone)]
pub struct Cli {
    head: Vec<OsString>,
    request: Option<Request>,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl Cli {
    /// `local-llm-worker ARGS...`.
    pub fn new<I, S>(args: I) -> Cli
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Cli {
            head: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            request: None,
            args: Vec::new(),
            envs: Vec::new(),
            dir: None,
        }
    }

    /// `local-llm-worker propose --workspace-root ROOT --task "Set VALUE to 2" --accept "VALUE is 2" --complexity
    /// low`, then a `--file` for each [`Cli::file`] and the [`Cli::arg`]s.
    pub fn propose(root: impl AsRef<OsStr>) -> Cli {
        let mut cli = Cli::new(["propose"]);
        cli.request = Some(Request {
            root: root.as_ref().to_owned(),
            task: "Set VALUE to 2".into(),
            accept: vec!["VALUE is 2".into()],
            complexity: "low".into(),
            files: Vec::new(),
        });
        cli
    }

    /// `local-llm-worker apply --workspace-root ROOT --patch PATCH --digest DIGEST`.
    pub fn apply(
        root: impl AsRef<OsStr>,
        patch: impl AsRef<OsStr>,
        digest: impl AsRef<OsStr>,
    ) -> Cli {
        Cli::new(["apply".as_ref(), "--workspace-root".as_ref(), root.as_ref()]).args([
            "--patch".as_ref(),
            patch.as_ref(),
            "--digest".as_ref(),
            digest.as_ref(),
        ])
    }

    /// `local-llm-worker mcp`: the MCP server, to spawn or to [`Cli::serve`].
    pub fn mcp() -> Cli {
        Cli::new(["mcp"])
    }

    fn request(&mut self) -> &mut Request {
        self.request
            .as_mut()
            .expect("a request field on a command that is not Cli::propose")
    }

    /// The propose's `--task`.
    pub fn task(mut self, task: &str) -> Cli {
        self.request().task = task.into();
        self
    }

    /// The propose's `--accept` criteria (in place of the usual one).
    pub fn accept(mut self, criteria: &[&str]) -> Cli {
        self.request().accept = criteria.iter().map(|c| c.to_string()).collect();
        self
    }

    /// The propose's `--complexity`.
    pub fn complexity(mut self, complexity: &str) -> Cli {
        self.request().complexity = complexity.into();
        self
    }

    /// One more `--file` of the propose.
    pub fn file(mut self, file: &str) -> Cli {
        self.request().files.push(file.into());
        self
    }

    /// A `--file` of the propose for each of `files`.
    pub fn files(mut self, files: &[&str]) -> Cli {
        self.request()
            .files
            .extend(files.iter().map(|f| f.to_string()));
        self
    }

    /// One more argument, after those of the request.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cli {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// More arguments, after those of the request.
    pub fn args<I, S>(mut self, args: I) -> Cli
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set the variable `key` for the worker (over the tests' own value, if it has one).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cli {
        self.envs
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Set each of `envs` for the worker.
    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(self, envs: &[(K, V)]) -> Cli {
        envs.iter().fold(self, |c, (k, v)| c.env(k, v))
    }

    /// Leave the variable `key` out of the worker's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Cli {
        self.envs.push((key.as_ref().to_owned(), None));
        self
    }

    /// The worker's state folder (`LOCAL_LLM_STATE_DIR`), in place of the tests' own.
    pub fn state(self, state: impl AsRef<Path>) -> Cli {
        self.env("LOCAL_LLM_STATE_DIR", state.as_ref())
    }

    /// The worker's ledger (`LOCAL_LLM_LEDGER`), in place of the tests' own.
    pub fn ledger(self, ledger: impl AsRef<Path>) -> Cli {
        self.env("LOCAL_LLM_LEDGER", ledger.as_ref())
    }

    /// The folder the worker starts in.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Cli {
        self.dir = Some(dir.as_ref().to_owned());
        self
    }

    /// The command, ready to spawn.
    pub fn command(&self) -> Command {
        let mut c = Command::new(BIN);
        c.args(&self.head);
        if let Some(r) = &self.request {
            c.arg("--workspace-root").arg(&r.root);
            c.args(["--task", &r.task]);
            for a in &r.accept {
                c.args(["--accept", a]);
            }
            c.args(["--complexity", &r.complexity]);
            for f in &r.files {
                c.args(["--file", f]);
            }
        }
        c.args(&self.args)
            .env_remove("LOCAL_LLM_CONFIG")
            .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
            .env("LOCAL_LLM_LEDGER", test_ledger())
            .env("LOCAL_LLM_STATE_DIR", test_state());
        for (k, v) in &self.envs {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c
    }

    /// The command's arguments (for a test that adds to them or runs them its own way).
    pub fn argv(&self) -> Vec<String> {
        self.command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// Run the command to its end.
    pub fn run(&self) -> Output {
        self.command().output().unwrap()
    }

    /// Spawn the command (an MCP server: [`Cli::mcp`]) and connect rmcp's client to its stdio.
    pub async fn serve(&self) -> McpClient {
        self.serve_with(()).await
    }

    /// [`Cli::serve`] with the client's own `handler` (of notifications, progress).
    pub async fn serve_with<H: ClientHandler>(&self, handler: H) -> RunningService<RoleClient, H> {
        let t = TokioChildProcess::new(tokio::process::Command::from(self.command())).unwrap();
        handler.serve(t).await.unwrap()
    }
}
