//! Where kube-sim deliberately answers differently from the recorded kube-apiserver 1.36,
//! and why. The conformance test fails when a step outside this list differs, and also when
//! a step on it no longer differs (the entry is then stale and must go). kube-sim's README
//! lists the same exceptions.

/// One deliberate difference.
pub struct Exception {
    pub file: &'static str,
    /// The step (0-based), or every step of the file.
    pub step: Option<usize>,
    pub reason: &'static str,
}

pub const EXCEPTIONS: &[Exception] = &[Exception {
    file: "13-authn-authz",
    step: None,
    reason: "needs client identities kube-sim does not model (TLS client certificates, RBAC); \
             kube-sim's --token gives the 401 of a wrong token only",
}];

/// The exception covering `step` of `file`, if any.
pub fn find(file: &str, step: usize) -> Option<&'static Exception> {
    EXCEPTIONS
        .iter()
        .find(|e| e.file == file && e.step.is_none_or(|s| s == step))
}
