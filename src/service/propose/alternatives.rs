//! An answer that offers conflicting edits of one region, read as one candidate per alternative instead of a
//! refusal ([`patch::changes_and_alternatives`] makes the alternatives; each is then checked and dry-run like any
//! answer).
//!
//! The choice among one answer's alternatives ([`read_and_choose`]): with validation on propose, they are
//! validated in turn in one sandbox copy and the first that passes is returned; when none passes, the first the
//! model wrote is returned with its failing checks, and its warning says that none of them passed. Without
//! validation nothing can tell them apart but the primary's review: the first the model wrote is returned, and
//! its warning names the regions, the count, and that none was checked, so the primary reviews it knowing the
//! model hesitated (and proposes again with a constraint that decides, if it is the wrong one). With several
//! answers asked (`[sampling] candidates`), every alternative of every answer is one candidate there, voted and
//! validated like the others ([`super::candidates`]).

use super::prepare::Prepared;
use super::read::{Candidate, candidate};
use super::validate::Validator;
use crate::checks::CheckResult;
use crate::error::{Error, Result};
use crate::patch;
use crate::provider::Watch;

/// Stage 3: read one answer into checked, dry-run canonical patches: one, or one per alternative the answer
/// offers (in the order written, those that dry-run); a cancellation stops the reading.
pub(super) fn read_all(p: &Prepared, answer: &str, watch: &Watch) -> Result<Vec<Candidate>> {
    let cancelled = || watch.is_cancelled();
    let alternatives = patch::changes_and_alternatives(
        answer,
        p.format,
        &p.selection.files,
        &p.selection.focus,
        patch::Cancel::new(&cancelled),
    )?;
    let mut out = Vec::new();
    let mut first_refusal = None;
    for alt in alternatives {
        match candidate(p, alt.changes, alt.notes) {
            Ok(c) => out.push(c),
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => {
                first_refusal.get_or_insert(e);
            }
        }
    }
    if out.is_empty() {
        return Err(first_refusal
            .unwrap_or_else(|| Error::ModelAnswer("the answer gave no usable patch".into())));
    }
    Ok(out)
}

/// Stage 3 for an answer without alternatives (the first of them otherwise).
#[cfg(test)]
pub(super) fn read(p: &Prepared, answer: &str, watch: &Watch) -> Result<Candidate> {
    read_all(p, answer, watch).map(|mut c| c.swap_remove(0))
}

/// Read one answer ([`read_all`]) and choose among its alternatives (see the module doc); with `validates`, the
/// chosen one's validation comes with it.
pub(super) fn read_and_choose(
    p: &Prepared,
    answer: &str,
    watch: &Watch,
    validates: bool,
) -> Result<(Candidate, Option<Vec<CheckResult>>)> {
    let mut cands = read_all(p, answer, watch)?;
    let count = cands.len();
    if !validates {
        let mut first = cands.swap_remove(0);
        if count > 1 {
            first.warnings.push(format!(
                "none of the {count} alternatives was validated (the policy runs no checks on propose): this is \
                 the first the model wrote; review it against the task, or propose again with a constraint that \
                 decides between them"
            ));
        }
        return Ok((first, None));
    }
    let validator = Validator::new(p, watch)?;
    let mut results = Vec::with_capacity(count);
    for cand in &cands {
        let v = validator.check(cand, watch)?;
        let passed = v.iter().all(|r| r.passed);
        results.push(v);
        if passed {
            break;
        }
    }
    let passed = results.iter().position(|v| v.iter().all(|r| r.passed));
    let k = passed.unwrap_or(0);
    let validation = results.swap_remove(k);
    let mut chosen = cands.swap_remove(k);
    if count > 1 {
        chosen.warnings.push(match passed {
            Some(k) => format!(
                "chosen of the {count} alternatives: alternative {}, the first whose validation passed",
                k + 1
            ),
            None => format!(
                "none of the {count} alternatives passed validation: this is the first the model wrote, with its \
                 failing checks"
            ),
        });
    }
    Ok((chosen, Some(validation)))
}
