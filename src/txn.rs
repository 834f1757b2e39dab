//! The apply transaction: the ONLY code that writes to a workspace.
//!
//! Given the exact canonical patch bytes the primary approved, it:
//! 1. parses them strictly and re-resolves every target under the current policy (component by component, no
//!    symlinks, inside `paths.allowed`, never `.git/`);
//! 2. checks every pre-image: the file's current git blob id and mode must equal the patch's (a file to create must
//!    still be absent); computes every post-image in memory and checks its promised blob id;
//! 3. writes each post-image to a temporary file beside its target (same folder, same permissions, fsynced), then
//!    renames them over the targets; any failure puts back the files already renamed;
//! 4. reads every target back and checks its blob id;
//! 5. runs the caller's validation; when it fails, restores the exact previous bytes (and removes created files and
//!    folders) and reports it.
//!
//! All files or none: a refusal in steps 1-2 writes nothing; a failure in 3-5 restores the pre-images.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::digest::git_blob_id;
use crate::error::{Error, Result};
use crate::patch::MODE_EXECUTABLE;
use crate::patch::canonical::{self, CanonicalFile};
use crate::scope::{OnDisk, Workspace};

/// One file the transaction will write.
struct Planned {
    rel: String,
    abs: PathBuf,
    pre: Option<Vec<u8>>,
    post: Vec<u8>,
    new_id: String,
    perms: fs::Permissions,
}

/// What a finished transaction changed, and what its validation reported.
#[derive(Debug)]
pub struct Applied<T> {
    pub files: Vec<String>,
    pub validation: T,
}

/// Limits the transaction enforces on the patch itself.
#[derive(Debug, Clone, Copy)]
pub struct PatchLimits {
    pub max_patch_bytes: u64,
    pub max_files: usize,
}

/// Parse and check `patch` against the workspace without writing anything: the post-image of every file.
pub fn plan(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<(String, Vec<u8>)>> {
    Ok(plan_files(ws, patch, limits)?
        .into_iter()
        .map(|p| (p.rel, p.post))
        .collect())
}

fn plan_files(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<Planned>> {
    if patch.len() as u64 > limits.max_patch_bytes {
        return Err(Error::Patch(format!(
            "the patch is {} bytes, over [limits] max_patch_bytes = {}",
            patch.len(),
            limits.max_patch_bytes
        )));
    }
    let files = canonical::parse(patch)?;
    if files.len() > limits.max_files {
        return Err(Error::Patch(format!(
            "the patch touches {} files, over [limits] max_files_per_patch = {}",
            files.len(),
            limits.max_files
        )));
    }
    files.iter().map(|f| plan_one(ws, f)).collect()
}

fn plan_one(ws: &Workspace, f: &CanonicalFile) -> Result<Planned> {
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
            let bytes = fs::read(&abs).map_err(|e| Error::Io(format!("cannot read {rel}: {e}")))?;
            if !f.creates() && mode != f.mode {
                return Err(Error::Stale(format!(
                    "{rel} has mode {mode:o} but the patch was made for {:o}; make a new proposal",
                    f.mode
                )));
            }
            let perms = fs::metadata(&abs)
                .map_err(|e| Error::Io(format!("cannot inspect {rel}: {e}")))?
                .permissions();
            (abs, Some(bytes), perms)
        }
    };
    let post = canonical::apply_file(f, current.as_deref())?;
    Ok(Planned {
        rel,
        abs,
        pre: current,
        post,
        new_id: f.new_id.clone(),
        perms,
    })
}

/// Apply `patch` to the workspace, then run `validate` (given the workspace root). See the module doc.
pub fn apply<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> Result<Applied<T>> {
    let planned = plan_files(ws, patch, limits)?;
    let mut undo = Undo::default();
    if let Err(e) = write_all(ws, &planned, &mut undo) {
        return Err(restore_after(ws, &planned, &undo, e));
    }
    for p in &planned {
        let back = fs::read(&p.abs)
            .map(|b| git_blob_id(&b))
            .unwrap_or_default();
        if back != p.new_id {
            let e = Error::Io(format!("{} does not read back as the written bytes", p.rel));
            return Err(restore_after(ws, &planned, &undo, e));
        }
    }
    match validate(ws.root()) {
        Ok(validation) => Ok(Applied {
            files: planned.iter().map(|p| p.rel.clone()).collect(),
            validation,
        }),
        Err(report) => Err(restore_after(
            ws,
            &planned,
            &undo,
            Error::ValidationFailed(report),
        )),
    }
}

/// What has been done so far, to undo it.
#[derive(Default)]
struct Undo {
    /// Indexes into the plan of files already renamed into place.
    renamed: Vec<usize>,
    /// Folders created for new files, outermost first.
    created_dirs: Vec<PathBuf>,
}

fn write_all(ws: &Workspace, planned: &[Planned], undo: &mut Undo) -> Result<()> {
    // Stage every post-image beside its target first, so a failure here changes no target.
    let mut staged = Vec::with_capacity(planned.len());
    for p in planned {
        let dir = p
            .abs
            .parent()
            .ok_or_else(|| Error::Io(format!("{} has no parent folder", p.rel)))?;
        create_dirs(ws.root(), dir, undo)?;
        staged.push(
            stage(dir, &p.post, &p.perms)
                .map_err(|e| Error::Io(format!("cannot stage {}: {e}", p.rel)))?,
        );
    }
    for (i, (p, tmp)) in planned.iter().zip(staged).enumerate() {
        // Re-check right before the rename: the target must still be what the plan saw.
        match ws.resolve(&p.rel)? {
            OnDisk::File { abs, .. } if p.pre.is_some() => {
                let now =
                    fs::read(&abs).map_err(|e| Error::Io(format!("cannot read {}: {e}", p.rel)))?;
                if Some(&now) != p.pre.as_ref() {
                    return Err(Error::Stale(format!(
                        "{} changed while the patch was being applied",
                        p.rel
                    )));
                }
            }
            OnDisk::Absent { .. } if p.pre.is_none() => {}
            _ => {
                return Err(Error::Stale(format!(
                    "{} appeared or vanished while the patch was being applied",
                    p.rel
                )));
            }
        }
        tmp.persist(&p.abs)
            .map_err(|e| Error::Io(format!("cannot write {}: {}", p.rel, e.error)))?;
        undo.renamed.push(i);
    }
    sync_dirs(planned);
    Ok(())
}

/// Write `bytes` to a new temporary file in `dir` with `perms`, flushed to disk.
fn stage(dir: &Path, bytes: &[u8], perms: &fs::Permissions) -> std::io::Result<tempfile::TempPath> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".llw-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().set_permissions(perms.clone())?;
    tmp.as_file().sync_all()?;
    Ok(tmp.into_temp_path())
}

fn create_dirs(root: &Path, dir: &Path, undo: &mut Undo) -> Result<()> {
    let rel = dir
        .strip_prefix(root)
        .map_err(|_| Error::Scope(format!("{} is outside the workspace", dir.display())))?;
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(Error::Scope(format!(
                    "{} is not a plain folder",
                    cur.display()
                )));
            }
            Err(_) => {
                fs::create_dir(&cur)
                    .map_err(|e| Error::Io(format!("cannot create {}: {e}", cur.display())))?;
                undo.created_dirs.push(cur.clone());
            }
        }
    }
    Ok(())
}

fn sync_dirs(planned: &[Planned]) {
    for p in planned {
        if let Some(dir) = p.abs.parent()
            && let Ok(d) = fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }
}

/// Put back every file already renamed, remove created files and folders, and return `cause` with what happened.
fn restore_after(ws: &Workspace, planned: &[Planned], undo: &Undo, cause: Error) -> Error {
    let mut problems = Vec::new();
    for &i in undo.renamed.iter().rev() {
        let p = &planned[i];
        let r = match &p.pre {
            Some(pre) => p
                .abs
                .parent()
                .ok_or_else(|| std::io::Error::other("no parent"))
                .and_then(|dir| stage(dir, pre, &p.perms))
                .and_then(|tmp| tmp.persist(&p.abs).map_err(|e| e.error)),
            None => fs::remove_file(&p.abs),
        };
        if let Err(e) = r {
            problems.push(format!("{}: {e}", p.rel));
        } else if let Some(pre) = &p.pre
            && fs::read(&p.abs).ok().as_ref() != Some(pre)
        {
            problems.push(format!(
                "{}: does not read back as its previous bytes",
                p.rel
            ));
        }
    }
    for d in undo.created_dirs.iter().rev() {
        let _ = fs::remove_dir(d);
    }
    sync_dirs(planned);
    if problems.is_empty() {
        return cause;
    }
    Error::Io(format!(
        "{cause}; RESTORING FAILED for {} in {}: check these files by hand",
        problems.join("; "),
        ws.root().display()
    ))
}
