//! Where kube-sim deliberately answers differently from the recorded kube-apiserver 1.36,
//! and why. The conformance test fails when a step outside this list differs, and also when
//! a step on it no longer differs (the entry is then stale and must go). kube-sim's README
//! lists the same exceptions.

/// One deliberate difference.
pub struct Exception {
    pub file: &'static str,
    /// The steps (0-based); empty for every step of the file.
    pub steps: &'static [usize],
    pub reason: &'static str,
}

pub const EXCEPTIONS: &[Exception] = &[Exception {
    file: "13-authn-authz",
    // Step 0 is the admin's namespace create, which kube-sim answers as recorded.
    steps: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    reason: "needs client identities kube-sim does not model (TLS client certificates, RBAC); \
             kube-sim's --token gives the 401 of a wrong token only",
}];

/// The exception covering `step` of `file`, if any.
pub fn find(file: &str, step: usize) -> Option<&'static Exception> {
    EXCEPTIONS
        .iter()
        .find(|e| e.file == file && (e.steps.is_empty() || e.steps.contains(&step)))
}
