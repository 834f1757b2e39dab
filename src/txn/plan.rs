//! Planning an apply: the strict parse of the canonical patch, every target re-resolved under the policy, every
//! pre-image checked against the file (blob id and mode), every post-image computed and checked. Writes nothing.

use crate::error::IoContext;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::digest::git_blob_id;
use crate::error::{Error, Result};
use crate::patch::MODE_EXECUTABLE;
use crate::patch::canonical::{self, CanonicalFile};
use crate::scope::{OnDisk, Workspace};

use super::*;

/// One file the transaction will write.
pub(super) struct Planned {
    pub(super) rel: String,
    pub(super) abs: PathBuf,
    pub(super) pre: Option<Vec<u8>>,
    /// The git blob id of `pre`, checked against the file when planned.
    pub(super) pre_id: Option<String>,
    pub(super) post: Vec<u8>,
    pub(super) new_id: String,
    pub(super) perms: fs::Permissions,
}

/// Parse and check `patch` against the workspace without writing anything: the post-image of every file.
pub fn plan(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<(String, Vec<u8>)>> {
    Ok(plan_files(ws, patch, limits)?
        .into_iter()
        .map(|p| (p.rel, p.post))
        .collect())
}

/// Parse `patch` strictly and check it against `limits`, without looking at any file.
pub fn parse_within(patch: &[u8], limits: PatchLimits) -> Result<Vec<CanonicalFile>> {
    if patch.len() as u64 > limits.max_patch_bytes {
        return Err(Error::Patch(format!(
            "the patch is {} bytes, over [limits] max_patch_bytes = {}",
            patch.len(),
            limits.max_patch_bytes
        )));
    }
    let files = canonical::parse(patch)?;
    let hunks = patch
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"@@ "))
        .count();
    if hunks > limits.max_hunks {
        return Err(Error::Patch(format!(
            "the patch has {hunks} hunks, over [limits] max_hunks_per_patch = {}",
            limits.max_hunks
        )));
    }
    if files.len() > limits.max_files {
        return Err(Error::Patch(format!(
            "the patch touches {} files, over [limits] max_files_per_patch = {}",
            files.len(),
            limits.max_files
        )));
    }
    Ok(files)
}

pub(super) fn plan_files(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
) -> Result<Vec<Planned>> {
    let files = parse_within(patch, limits)?;
    // Reading, checking and applying are independent per file: with several files, on every core.
    let lanes = match files.len() {
        0..PARALLEL_PLAN_FROM => 1,
        n => std::thread::available_parallelism().map_or(1, |p| p.get().min(n).min(8)),
    };
    in_lanes(&files, lanes, |chunk| {
        chunk.iter().map(|f| plan_one(ws, f)).collect()
    })
}

/// From how many files on planning runs on several threads.
pub(super) const PARALLEL_PLAN_FROM: usize = 4;

pub(super) fn plan_one(ws: &Workspace, f: &CanonicalFile) -> Result<Planned> {
    let rel = f.path.clone();
    let (abs, current, perms) = match ws.resolve(&rel)? {
        OnDisk::Absent { abs } => {
            let perms = fs::Permissions::from_mode(if f.mode == MODE_EXECUTABLE {
                0o755
            } else {
                0o644
            });
            (abs, None, perms)
        }
        OnDisk::File { abs, mode } => {
            if !f.creates() && mode != f.mode {
                return Err(Error::Stale(format!(
                    "{rel} has mode {mode:o} but the patch was made for {:o}; make a new proposal",
                    f.mode
                )));
            }
            let read = || -> std::io::Result<(Vec<u8>, fs::Permissions, u64)> {
                use std::io::Read;
                use std::os::unix::fs::MetadataExt;
                let mut file = fs::File::open(&abs)?;
                let meta = file.metadata()?;
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                file.read_to_end(&mut bytes)?;
                Ok((bytes, meta.permissions(), meta.nlink()))
            };
            let (bytes, perms, links) = read().at("cannot read", &rel)?;
            if links > 1 {
                return Err(Error::Scope(hard_link_refusal(&rel, links)));
            }
            (abs, Some(bytes), perms)
        }
    };
    if let Some(now) = &current
        && f.old_id.as_deref() != Some(f.new_id.as_str())
        && git_blob_id(now) == f.new_id
    {
        return Err(Error::Stale(format!(
            "{rel} already holds exactly what this patch makes of it: the patch is already applied; nothing was \
             written"
        )));
    }
    let post = canonical::apply_file(f, current.as_deref())?;
    Ok(Planned {
        rel,
        abs,
        pre: current,
        // `apply_file` has just checked the current bytes against it.
        pre_id: f.old_id.clone(),
        post,
        new_id: f.new_id.clone(),
        perms,
    })
}
