//! A real Kubernetes control plane for the tests, as controller-runtime's envtest gives one to Go
//! controllers: etcd and kube-apiserver (v1.36) started from the binaries of `KUBEBUILDER_ASSETS`
//! (or what `scripts/envtest-assets.sh` finds), with an admin kubeconfig; and the two doubles
//! that stand in for what such a control plane lacks, the kubelet and kube-proxy:
//!
//! - [`pods::Workload`] runs the replicas of a Deployment read back from the API server as local
//!   `mcs-policy` processes: the container's args and env (downward API, `$(VAR)`), its Secret
//!   and emptyDir volumes in temp dirs (paths under a mountPath rewritten), the ServiceAccount's
//!   token from the TokenRequest API where kube's in-cluster configuration reads it;
//! - [`proxy::ServiceProxy`] binds the Service's ClusterIP:port (a loopback address: the service
//!   CIDR is a /16 of 127/8) and forwards each connection to a ready replica, so the real API
//!   server calls a webhook through its Service.
//!
//! Every process is stopped when its guard drops, and also when the test process ends however
//! it ends ([`process::Process`]).

pub mod certificates;
pub mod cold_start;
pub mod control_plane;
pub mod dns_pods;
pub mod fleet;
pub mod pods;
pub mod process;
pub mod proxy;

pub use control_plane::ControlPlane;
pub use pods::Workload;
pub use proxy::ServiceProxy;

use std::path::PathBuf;
use std::process::Command;

/// The binaries every control plane needs.
pub const BINARIES: [&str; 3] = ["kube-apiserver", "etcd", "kube-controller-manager"];

/// The directory of kube-apiserver, etcd and kube-controller-manager: `$KUBEBUILDER_ASSETS`, or
/// else what `scripts/envtest-assets.sh` prints (setup-envtest, or the shared folder beside the
/// clone). Panics, saying how to provide them, when neither yields the binaries: a test that
/// needs a real API server fails rather than skips.
pub fn assets() -> PathBuf {
    static ASSETS: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    ASSETS
        .get_or_init(find_assets)
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

fn complete(dir: &std::path::Path) -> bool {
    BINARIES.iter().all(|b| dir.join(b).is_file())
}

fn find_assets() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if complete(&dir) {
            return Ok(dir);
        }
        return Err(format!(
            "KUBEBUILDER_ASSETS={} does not hold all of {BINARIES:?}: point it at a directory \
             that does, or unset it so that scripts/envtest-assets.sh looks for them",
            dir.display()
        ));
    }
    let script = crate::workspace_root().join("scripts/envtest-assets.sh");
    let out = Command::new(&script)
        .output()
        .map_err(|e| format!("{} does not run: {e}", script.display()))?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && complete(std::path::Path::new(&printed)) {
        return Ok(PathBuf::from(printed));
    }
    Err(format!(
        "these tests need a real kube-apiserver, etcd and kube-controller-manager, and none were \
         found: KUBEBUILDER_ASSETS is unset and scripts/envtest-assets.sh says:\n{}",
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// The first `name` on PATH (helm, kubectl: scripts/k8s-tools.sh puts them there in the suite).
pub fn tool(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not on PATH: run with PATH=\"$(scripts/k8s-tools.sh):$PATH\" \
                 (scripts/test.sh does)"
            )
        })
}

/// Runs `future` to its end on a runtime of its own (the harness is synchronous; the tests call
/// it from plain `#[test]`s).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// Polls `check` every 200 ms until it gives `Some`, or panics with `what` and the last
/// `Err` after `deadline`.
pub fn wait_for<T>(
    what: &str,
    deadline: std::time::Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if start.elapsed() > deadline => {
                panic!("{what}: not within {deadline:?}; last: {last}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}
