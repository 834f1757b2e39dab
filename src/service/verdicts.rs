//! The validation verdicts of one proposal's patches, by their bytes: a patch that failed the project's checks once
//! (a candidate's) is not validated again when another answer gives the same post-images (the repair round often
//! does): its failing results are reused. Within one proposal the canonical patch is a function of the post-images
//! (the pre-images are the same), so equal bytes are equal post-images.

use std::sync::Mutex;

use crate::checks::CheckResult;

/// The failing validation results of the patches validated so far.
#[derive(Default)]
pub(super) struct Verdicts {
    failed: Mutex<Vec<(Vec<u8>, Vec<CheckResult>)>>,
}

impl Verdicts {
    /// The results `patch` failed with, when it was validated before and failed.
    pub(super) fn failed(&self, patch: &[u8]) -> Option<Vec<CheckResult>> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed
            .iter()
            .find(|(p, _)| p == patch)
            .map(|(_, r)| r.clone())
    }

    /// Keep `results` as `patch`'s when they fail.
    pub(super) fn record(&self, patch: &[u8], results: &[CheckResult]) {
        if results.iter().all(|r| r.passed) {
            return;
        }
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if !failed.iter().any(|(p, _)| p == patch) {
            failed.push((patch.to_vec(), results.to_vec()));
        }
    }
}
