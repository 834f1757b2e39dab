//! The apply transaction: the ONLY code that writes to a workspace.
//!
//! Given the exact canonical patch bytes the primary approved, it:
//! 1. takes the workspace's lock (an `flock` in the worker's state folder), so two applies never interleave;
//! 2. parses the patch strictly and re-resolves every target under the current policy (component by component, no
//!    symlinks, inside `paths.allowed`, never `.git/`);
//! 3. checks every pre-image: the file's current git blob id and mode must equal the patch's (a file to create must
//!    still be absent); computes every post-image in memory and checks its promised blob id;
//! 4. writes a journal (the pre-images, the post-images, the folders it will create) to the state folder as one
//!    file and flushes it and its folder, before the first byte of the workspace changes; a state folder inside the
//!    workspace is refused first;
//! 5. opens every existing target through a handle on its folder (never through a symlink, never blocking: a FIFO
//!    or device is refused by its type on the open handle) and re-reads it: it must still hold exactly the planned
//!    pre-image and have no other hard link; every file to create must still be absent; then creates the new
//!    folders (one pass of handles down from the root per new file), rewrites existing files in place and creates
//!    new ones (`O_EXCL`); any failure puts back what was written;
//! 6. reads every target back and compares it with the post-image;
//! 7. runs the caller's validation; when it fails, restores the exact previous bytes in place of every file that
//!    still holds what the apply wrote (one that someone else changed meanwhile keeps its newer bytes, and the
//!    message says so), removes created files and folders, and reports it;
//! 8. flushes every written file, then each folder that gained an entry, and only then empties the journal (and
//!    flushes that): until then, a power loss is undone from the journal like a kill. When a restore fails, the
//!    journal is kept for `recover`.
//!
//! All files or none: a refusal in steps 1-5 before the first write changes nothing; a failure after it restores
//! the pre-images. A kill at any moment leaves a journal; [`recover_all`] (run in the background when the MCP
//! server starts, and by `local-llm-worker recover`, which gives up after [`recover_timeout`]) checks every entry
//! of it as strictly as a patch, then puts the workspace back to exactly the pre-images, or, when every file already
//! holds its post-image, flushes and keeps that, and says which; a file that holds neither is left alone and
//! reported. Leftover temporary files are removed. Nothing here opens, writes, flushes or removes a workspace file
//! or folder by a path string: every step goes through folder handles, so a path longer than PATH_MAX is written,
//! undone and flushed like any other, in time linear in its depth.
//!
//! One concept a file, each writing through the file layer [`crate::workspace::fs`]: `plan` (pre-image checks),
//! `apply` (write, verify, flush, roll back), `journal` (and `journal_v1`, the isolated version 1 reader), `lock`,
//! `recover` (validation, recovery, its background run and timeout); `tests` and `edge_tests`.

mod apply;
#[cfg(test)]
mod edge_tests;
mod journal;
mod journal_doc;
mod journal_v1;
mod lock;
mod plan;
mod recover;
#[cfg(test)]
mod tests;

use std::path::Path;

use crate::error::{Error, Result, ValidationFailure};
use crate::workspace::Workspace;
/// The file layer, by the name the transaction's modules know it (file handles `at` a folder).
use crate::workspace::fs as fsat;

pub use crate::patch::plan::{PatchLimits, parse_within};
pub use crate::workspace::fs::TEMP_PREFIX;
use apply::{apply_planned, crash_point};
use journal::Journal;
use lock::WorkspaceLock;
pub use plan::plan;
use plan::plan_files;
use recover::state_inside;
pub use recover::{
    Outcome, Recovery, recover_all, recover_all_within, recover_in_background, recover_timeout,
    wait_for_recovery,
};

/// What a finished transaction changed, and what its validation reported.
#[derive(Debug)]
pub struct Applied<T> {
    /// The files written, workspace-relative, in the patch's order.
    pub files: Vec<String>,
    /// What the validation reported.
    pub validation: T,
}

/// Apply `patch` to the workspace durably (lock, journal), then run `validate` (given the workspace root).
/// `state` is the worker's state folder; without one (no HOME), the apply is refused rather than made unrecoverable.
pub fn apply<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    state: Option<&Path>,
    validate: impl FnOnce(&Path) -> std::result::Result<T, Box<ValidationFailure>>,
) -> Result<Applied<T>> {
    let state = state.ok_or_else(|| {
        Error::io_message("no state folder for the apply journal: set LOCAL_LLM_STATE_DIR (or HOME) so a crash stays recoverable")
    })?;
    if state_inside(state, ws.root()) {
        return Err(Error::Scope(format!(
            "the state folder {} lies inside the workspace {}: the apply journal (copies of the files) would be \
             written into the workspace, where a patch or a check could change it. Set LOCAL_LLM_STATE_DIR to a \
             folder outside the workspace, then apply again; nothing was written",
            state.display(),
            ws.root().display()
        )));
    }
    wait_for_recovery(state, ws.root(), "apply")?;
    let _lock = WorkspaceLock::take(state, ws.root())?;
    let mut journal = Journal::open(state, ws.root())?;
    let planned = plan_files(ws, patch, limits)?;
    journal.write(ws.root(), &planned)?;
    crash_point();
    let result = apply_planned(ws, &planned, Durability::Flushed, validate);
    crash_point();
    if let Err(f) = &result
        && !f.restored
    {
        // The journal holds the only copy of what could not be put back: it stays for `recover`.
        return result.map_err(|f| f.error);
    }
    let result = result.map_err(|f| f.error);
    match journal.clear() {
        Ok(()) => result,
        Err(e) => Err(Error::io_message(format!(
            "{}; then its journal could not be cleared ({e}): run `local-llm-worker recover`",
            match &result {
                Ok(_) => "the patch was applied".to_string(),
                Err(cause) => format!("the apply failed ({cause})"),
            }
        ))),
    }
}

/// Whether an apply flushes what it wrote before it reports success.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// The workspace: every written file and changed folder is flushed before the journal goes.
    Flushed,
    /// A throwaway copy: nothing of value is at stake, and nothing is flushed.
    Throwaway,
}

/// Apply `patch` to a throwaway copy (the validation sandbox) and run `validate` there: the same steps
/// and checks, without lock or journal, since nothing of value is at stake in a copy.
pub fn apply_throwaway<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    validate: impl FnOnce(&Path) -> std::result::Result<T, Box<ValidationFailure>>,
) -> Result<Applied<T>> {
    let planned = plan_files(ws, patch, limits)?;
    apply_planned(ws, &planned, Durability::Throwaway, validate).map_err(|f| f.error)
}
