//! Planning an apply: the strict parse of the canonical patch, every target re-resolved under the policy, every
//! pre-image checked against the file (blob id and mode), every post-image computed and checked. Writes nothing.

use crate::digest::{NULL_BLOB_ID, git_blob_id};
use crate::error::{Error, Result};
use crate::patch::canonical::CanonicalFile;
use crate::patch::plan::{PatchLimits, parse_within, post_image};
use crate::workspace::{OnDisk, Workspace};

use super::fsat;

/// Run `work` over `items` in up to `lanes` chunks at once (the first on this thread), in order; the first error in
/// item order wins. Every chunk finishes before this returns, whatever happened to the others.
pub(super) fn in_lanes<I: Sync, O: Send>(
    items: &[I],
    lanes: usize,
    work: impl Fn(&[I]) -> Result<Vec<O>> + Sync,
) -> Result<Vec<O>> {
    let per_lane = items.len().div_ceil(lanes.max(1)).max(1);
    let mut chunks = items.chunks(per_lane);
    let Some(first) = chunks.next() else {
        return Ok(Vec::new());
    };
    let results: Vec<Result<Vec<O>>> = std::thread::scope(|s| {
        let others: Vec<_> = chunks.map(|c| s.spawn(|| work(c))).collect();
        let mut results = vec![work(first)];
        for h in others {
            results.push(
                h.join()
                    .unwrap_or_else(|_| Err(Error::io_message("a worker thread panicked"))),
            );
        }
        results
    });
    let mut out = Vec::with_capacity(items.len());
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// The refusal for a file that now has more than one name.
pub(super) fn hard_link_refusal(rel: &str, links: u64) -> String {
    format!(
        "{rel} has {links} hard links; writing it would change the file behind its other names too, which the policy \
         cannot see. Give it a name of its own (for example `cp {rel} {rel}.tmp && mv {rel}.tmp {rel}`) and propose again"
    )
}

/// A workspace-relative path as (its folder, "" at the root; its file name).
pub(super) fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// One file the transaction will write.
pub(super) struct Planned {
    pub(super) rel: String,
    pub(super) pre: Option<Vec<u8>>,
    /// The git blob id of `pre`, checked against the file when planned.
    pub(super) pre_id: Option<String>,
    pub(super) post: Vec<u8>,
    pub(super) new_id: String,
    /// The git mode (`0o100644` or `0o100755`): the file's, checked when planned, or the one a new file gets.
    pub(super) mode: u32,
    /// For a new file whose folder does not exist yet: the index of the first component of its folder that is
    /// missing (every folder from there down is created by the apply).
    pub(super) created_from: Option<usize>,
    /// The apply removes the file (a deletion, or the source of a move): `post` is empty, `new_id` 40 zeros, and the
    /// file is gone afterwards.
    pub(super) removes: bool,
    /// For a file the apply removes: its permission bits, to create it again exactly when the apply is undone.
    pub(super) perm: Option<u32>,
}

/// The permission bits a file with the mode `mode` (a git mode, or a version 2 journal's `st_mode`) is created
/// with: 0755 when it is executable, else 0644; never anything else.
pub(super) fn permission_bits(mode: u32) -> u32 {
    if mode & 0o111 != 0 { 0o755 } else { 0o644 }
}

/// Parse and check `patch` against the workspace without writing anything: the post-image of every file (empty for
/// a file the patch removes).
pub fn plan(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<(String, Vec<u8>)>> {
    Ok(plan_files(ws, patch, limits)?
        .into_iter()
        .map(|p| (p.rel, p.post))
        .collect())
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
        let mut out = Vec::with_capacity(chunk.len());
        for f in chunk {
            out.extend(plan_one(ws, f)?);
        }
        Ok(out)
    })
}

/// From how many files on planning runs on several threads.
pub(super) const PARALLEL_PLAN_FROM: usize = 4;

pub(super) fn plan_one(ws: &Workspace, f: &CanonicalFile) -> Result<Vec<Planned>> {
    let source = f.source();
    let (current, created_from, perm) = read_current(ws, source, f.creates(), f.mode)?;
    if let Some(now) = &current
        && f.from.is_none()
        && f.old_id.as_deref() != Some(f.new_id.as_str())
        && git_blob_id(now) == f.new_id
    {
        return Err(Error::Stale(format!(
            "{} already holds exactly what this patch makes of it: the patch is already applied; nothing was \
             written",
            f.path
        )));
    }
    let post = post_image(f, current.as_deref())?;
    // `post_image` has just checked the current bytes against the pre-image's blob id.
    let removal = |rel: &str, pre: Option<Vec<u8>>| Planned {
        rel: rel.to_string(),
        pre,
        pre_id: f.old_id.clone(),
        post: Vec::new(),
        new_id: NULL_BLOB_ID.to_string(),
        mode: f.mode,
        created_from: None,
        removes: true,
        perm,
    };
    if f.deletes {
        return Ok(vec![removal(&f.path, current)]);
    }
    let Some(from) = &f.from else {
        return Ok(vec![Planned {
            rel: f.path.clone(),
            pre: current,
            pre_id: f.old_id.clone(),
            post,
            new_id: f.new_id.clone(),
            mode: f.mode,
            created_from,
            removes: false,
            perm: None,
        }]);
    };
    // A move: the source goes, the destination is created (it must not exist).
    let (there, dest_from, _) = read_current(ws, &f.path, true, f.mode)?;
    if there.is_some() {
        return Err(Error::Stale(format!(
            "{} now exists, but the patch moves {from} there; make a new proposal against the current files",
            f.path
        )));
    }
    Ok(vec![
        removal(from, current),
        Planned {
            rel: f.path.clone(),
            pre: None,
            pre_id: None,
            post,
            new_id: f.new_id.clone(),
            mode: f.mode,
            created_from: dest_from,
            removes: false,
            perm: None,
        },
    ])
}

/// What a path holds now, as [`read_current`] finds it: (its bytes, the first folder component to create, its
/// permission bits).
type Current = (Option<Vec<u8>>, Option<usize>, Option<u32>);

/// What `rel` holds now: its bytes (`None` when absent), for an absent file the first folder component the apply
/// must create, and its permission bits. Refuses a file whose mode is not `mode` (unless `creates`), a file with
/// other hard links, and anything but a regular file; read through a handle on its folder, never following a
/// symlink and never blocking.
fn read_current(ws: &Workspace, rel: &str, creates: bool, mode: u32) -> Result<Current> {
    use std::os::unix::fs::PermissionsExt;
    match ws.resolve(rel)? {
        OnDisk::Absent { .. } => Ok((None, missing_from(ws.root(), rel)?, None)),
        OnDisk::File { mode: now, .. } => {
            if !creates && now != mode {
                return Err(Error::Stale(format!(
                    "{rel} has mode {now:o} but the patch was made for {mode:o}; make a new proposal"
                )));
            }
            // What was a regular file a moment ago may be a FIFO now.
            let found = fsat::open_parent(ws.root(), rel)
                .and_then(|(dir, name)| dir.look(&name, false))
                .map_err(|e| Error::Scope(format!("cannot read {rel}: {e}")))?;
            match found {
                fsat::Found::File { file, bytes, links } => {
                    if links > 1 {
                        return Err(Error::Scope(hard_link_refusal(rel, links)));
                    }
                    let perm = file
                        .metadata()
                        .map(|m| m.permissions().mode() & 0o777)
                        .map_err(|e| Error::Scope(format!("cannot read {rel}: {e}")))?;
                    Ok((Some(bytes), None, Some(perm)))
                }
                fsat::Found::Absent => Err(Error::Stale(format!(
                    "{rel} was removed while the patch was being applied"
                ))),
                fsat::Found::Other(kind) => Err(Error::Scope(format!(
                    "{rel} is {kind} now, not a regular file; the worker never opens one. Put the file back, then \
                     propose again"
                ))),
            }
        }
    }
}

/// For a file to create at `rel`: the index of the first component of its folder that does not exist (`None` when
/// the folder exists), found through folder handles from `root` in one pass.
pub(super) fn missing_from(root: &std::path::Path, rel: &str) -> Result<Option<usize>> {
    let (folder, _) = split_rel(rel);
    if folder.is_empty() {
        return Ok(None);
    }
    let scope = |e: std::io::Error| Error::Scope(format!("{rel}: {e}"));
    let mut dir = fsat::Dir::root(root).map_err(scope)?;
    for (i, comp) in folder.split('/').enumerate() {
        match dir.open_plain(comp, rel) {
            Ok(d) => dir = d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(i)),
            Err(e) => return Err(scope(e)),
        }
    }
    Ok(None)
}
