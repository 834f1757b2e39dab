//! Stage 3 of a proposal: one model answer read into a checked canonical patch and dry-run in memory. Imports only
//! [`prepare`](super::prepare) of the other stages.

use std::collections::BTreeMap;

use super::prepare::Prepared;
use crate::error::{Error, Result};
use crate::patch::canonical::CanonicalFile;
use crate::patch::{self, PreImage};
use crate::policy;
use crate::prompt;
use crate::service::patch_limits;
use crate::workspace::Workspace;

/// One model answer turned into a checked, dry-run canonical patch.
pub(super) struct Candidate {
    pub(super) changes: Vec<patch::FileChange>,
    pub(super) patch_bytes: Vec<u8>,
    pub(super) patch_text: String,
    /// What the primary should look at before approving (the result's `warnings`).
    pub(super) warnings: Vec<String>,
}

/// The located `changes` of one answer (and the reader's `warnings`) as a checked canonical patch, dry-run in
/// memory (stage 3; [`super::alternatives::read_all`] reads an answer into its alternatives' candidates).
pub(super) fn candidate(
    p: &Prepared,
    changes: Vec<patch::FileChange>,
    mut warnings: Vec<String>,
) -> Result<Candidate> {
    let pre_images = &p.selection.files;
    if let Some(line) = prompt::copied_example(p.format, &changes, &p.task) {
        return Err(Error::ModelAnswer(format!(
            "the answer copied the prompt's worked example (it adds `{line}`, which neither the files nor the task \
             hold) instead of doing the task; retry, or state the change more concretely"
        )));
    }
    if changes.len() > p.policy.limits.max_files_per_patch {
        return Err(Error::ModelAnswer(format!(
            "the answer edits {} files, over [limits] max_files_per_patch = {}",
            changes.len(),
            p.policy.limits.max_files_per_patch
        )));
    }
    let patch_bytes = patch::canonical::render(&changes);
    dry_run(&p.ws, &p.policy, pre_images, &changes, &patch_bytes)?;
    let patch_text = String::from_utf8(patch_bytes.clone())
        .map_err(|_| Error::Patch("the rendered patch is not UTF-8".into()))?;
    warnings.extend(hidden_added(&changes));
    Ok(Candidate {
        changes,
        patch_bytes,
        patch_text,
        warnings,
    })
}

/// The most places [`hidden_added`] names.
const HIDDEN_PLACES_SHOWN: usize = 10;

/// The warning for a patch that adds lines holding control or invisible characters ([`crate::screen`]): where
/// (`a.py:3`, the line in the new file) and which code points. A line the file already held is not added.
pub(super) fn hidden_added(changes: &[patch::FileChange]) -> Option<String> {
    let mut places = Vec::new();
    let mut seen: Vec<char> = Vec::new();
    for c in changes {
        let pre = String::from_utf8_lossy(c.pre.as_deref().unwrap_or_default());
        let old: std::collections::HashSet<&str> = pre.split_inclusive('\n').collect();
        let post = String::from_utf8_lossy(&c.post);
        for (n, line) in post.split_inclusive('\n').enumerate() {
            let hidden = crate::screen::hidden_chars(line);
            if hidden.is_empty() || old.contains(line) {
                continue;
            }
            let points: Vec<String> = hidden
                .iter()
                .map(|&h| crate::screen::code_point(h))
                .collect();
            places.push(format!(
                "{}:{} ({})",
                crate::names::shown(&c.path),
                n + 1,
                points.join(", ")
            ));
            for h in hidden {
                if !seen.contains(&h) {
                    seen.push(h);
                }
            }
        }
    }
    let first = *seen.first()?;
    let more = match places.len().saturating_sub(HIDDEN_PLACES_SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more line(s)"),
    };
    places.truncate(HIDDEN_PLACES_SHOWN);
    Some(format!(
        "this patch adds control or invisible characters at {}{more}: the patch and its digest hold the characters \
         themselves; the CLI shows each as its code point (<{}>); look at those lines before approving",
        places.join(", "),
        crate::screen::code_point(first)
    ))
}

/// The dry run, in memory: parse the canonical patch with the transaction's strict parser and limits, check its paths
/// against the policy, compute the post-images from copies of the pre-images already read by the one plan the
/// transaction uses ([`patch::plan`]: pre- and post-image blob ids included), and check that every file then holds
/// exactly the intended post-image. Nothing touches a disk; the transaction repeats all of it against the files
/// themselves at apply time.
pub(super) fn dry_run(
    ws: &Workspace,
    policy: &policy::Policy,
    pre_images: &BTreeMap<String, Option<PreImage>>,
    changes: &[patch::FileChange],
    patch_bytes: &[u8],
) -> Result<()> {
    let bug =
        |what: String| Error::Patch(format!("dry run: {what}; this is a bug, please report it"));
    let files = patch::plan::parse_within(patch_bytes, patch_limits(policy))?;
    if files.len() != changes.len() {
        return Err(bug(format!(
            "the canonical patch has {} files for {} changes",
            files.len(),
            changes.len()
        )));
    }
    let pre_of = |f: &CanonicalFile| pre_images.get(f.source()).and_then(|p| p.as_ref());
    let mut intended = Vec::with_capacity(files.len());
    for f in &files {
        ws.check_path(&f.path)?;
        ws.check_path(f.source())?;
        let change = changes.iter().find(|c| c.path == f.path).ok_or_else(|| {
            bug(format!(
                "the canonical patch names {}, which no change does",
                f.path
            ))
        })?;
        if let Some(pre) = pre_of(f)
            && !f.creates()
            && pre.mode != f.mode
        {
            return Err(bug(format!(
                "the canonical patch gives {} another mode",
                f.path
            )));
        }
        intended.push(change);
    }
    let posts = patch::plan::post_images(&files, |f| pre_of(f).map(|p| p.text.as_bytes()))?;
    for ((f, post), change) in files.iter().zip(posts).zip(intended) {
        if post != change.post {
            return Err(bug(format!(
                "the canonical patch does not reproduce the intended {}",
                f.path
            )));
        }
    }
    Ok(())
}
