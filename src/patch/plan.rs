//! The one plan of a canonical patch, pure: the patch bytes parsed strictly within the policy's limits
//! ([`parse_within`]), and each file's post-image computed from its pre-image ([`post_image`], [`post_images`]),
//! the pre-image's blob id checked first. Bytes in, post-images or a typed refusal out; no I/O.
//!
//! It serves the three places that need it: the dry run of a proposal (pre-images as read for the model),
//! `calibrate` (the case's file) and the transaction (`txn::plan`, which reads each pre-image through a handle
//! and hands the bytes here).

use crate::error::{Error, Result};
use crate::patch::canonical::{self, CanonicalFile};

/// Limits the transaction enforces on the patch itself.
#[derive(Debug, Clone, Copy)]
pub struct PatchLimits {
    /// The largest patch, in bytes.
    pub max_patch_bytes: u64,
    /// The most files it may change.
    pub max_files: usize,
    /// The most hunks it may hold.
    pub max_hunks: usize,
    /// Whether it may delete files (`[paths] allow_delete`).
    pub allow_delete: bool,
    /// Whether it may move files (`[paths] allow_move`).
    pub allow_move: bool,
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
    allowed_ops(&files, limits)?;
    Ok(files)
}

/// Refuse a deletion or a move the policy does not allow (`[paths] allow_delete`, `allow_move`).
pub fn allowed_ops(files: &[CanonicalFile], limits: PatchLimits) -> Result<()> {
    for f in files {
        if f.deletes && !limits.allow_delete {
            return Err(Error::Scope(format!(
                "the patch deletes {}, and the policy does not allow deleting files; set [paths] allow_delete = \
                 true in local-llm-worker.toml to allow it, or delete the file yourself",
                crate::names::shown(&f.path)
            )));
        }
        if let Some(from) = &f.from
            && !limits.allow_move
        {
            return Err(Error::Scope(format!(
                "the patch moves {} to {}, and the policy does not allow moving files; set [paths] allow_move = \
                 true in local-llm-worker.toml to allow it, or move the file yourself",
                crate::names::shown(from),
                crate::names::shown(&f.path)
            )));
        }
    }
    Ok(())
}

/// What `file` becomes, given the bytes it holds now (`None`: it does not exist): the current bytes are checked
/// against the patch's pre-image blob id, then the hunks are applied strictly.
pub fn post_image(file: &CanonicalFile, current: Option<&[u8]>) -> Result<Vec<u8>> {
    canonical::apply_file(file, current)
}

/// The post-image of every file of `files`, in order, each from the pre-image `pre_of` gives for it (`None`: absent).
pub fn post_images<'a>(
    files: &[CanonicalFile],
    pre_of: impl Fn(&CanonicalFile) -> Option<&'a [u8]>,
) -> Result<Vec<Vec<u8>>> {
    files.iter().map(|f| post_image(f, pre_of(f))).collect()
}
