//! The container image (`scripts/build-image.sh`, the image `policies/deploy/Dockerfile`
//! builds) run as a Pod runs it: its own USER (65532), a read-only root, no capabilities,
//! `no-new-privileges`, under podman with the runc runtime on the host's network.
//!
//! - the binary in the image is the one it was built from (same sha256), and `--version`
//!   runs inside;
//! - `serve` answers an AdmissionReview over TLS with a certificate mounted read-only, and
//!   `/healthz`, in a process whose uid is 65532 with no capability;
//! - `sync` reaches kube-sim clusters on the host network through a mounted kubeconfig, is
//!   ready, and copies each member's EndpointSlice into the other.
//!
//! The image and the binary come from `MCS_POLICY_IMAGE` and `MCS_POLICY_IMAGE_BINARY`
//! (scripts/test.sh builds the image from its release build and sets both). Without them, the
//! test builds the image itself from `target/release/mcs-policy`, and fails when that is
//! missing: it never passes without running the image.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::{Certificate, Client, StatusCode};
use serde_json::Value;
use tests::fixtures::{AdmissionCase, load};
use tests::sync::{World, free_addr};
use tests::workspace_root;

/// The image under test and the binary it was built from.
struct Image {
    tag: String,
    binary: PathBuf,
}

fn image() -> &'static Image {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let podman = Command::new("podman").arg("--version").output();
        assert!(
            podman.as_ref().is_ok_and(|o| o.status.success()),
            "podman is needed to run the image (Debian: `apt-get install -y podman buildah runc`; \
             scripts/test.sh installs them): {podman:?}"
        );
        let tag = std::env::var("MCS_POLICY_IMAGE").ok();
        let binary = std::env::var_os("MCS_POLICY_IMAGE_BINARY").map(PathBuf::from);
        match (tag, binary) {
            (Some(tag), Some(binary)) => Image { tag, binary },
            (None, None) => build_image(),
            (tag, binary) => panic!(
                "MCS_POLICY_IMAGE ({tag:?}) and MCS_POLICY_IMAGE_BINARY ({binary:?}) go together: \
                 the image and the binary it was built from"
            ),
        }
    })
}

/// `scripts/build-image.sh` over the release binary, when there is one.
fn build_image() -> Image {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let binary = target.join("release/mcs-policy");
    assert!(
        binary.is_file(),
        "MCS_POLICY_IMAGE is not set and there is no release binary at {} to build the image \
         from: run scripts/test.sh (it builds both and sets MCS_POLICY_IMAGE and \
         MCS_POLICY_IMAGE_BINARY), or `cargo build --release -p mcs-policy` first",
        binary.display()
    );
    let out = Command::new(workspace_root().join("scripts/build-image.sh"))
        .arg(&binary)
        .output()
        .expect("scripts/build-image.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/build-image.sh {}: {}\n{stdout}{}",
        binary.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let tag = stdout
        .lines()
        .find_map(|l| l.strip_prefix("built ")?.split_whitespace().next())
        .unwrap_or_else(|| panic!("scripts/build-image.sh names no tag:\n{stdout}"))
        .to_string();
    Image { tag, binary }
}

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("podman {args:?}: {e}"))
}

fn podman_ok(args: &[&str]) -> String {
    let out = podman(args);
    assert!(
        out.status.success(),
        "podman {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `podman run` as a Pod with `securityContext` `runAsNonRoot`, `readOnlyRootFilesystem`,
/// `capabilities: {drop: [ALL]}`, `allowPrivilegeEscalation: false` runs the image (the
/// Deployments' settings): no `--user` (the image's USER must be the non-root one), no tmpfs
/// podman would add to a read-only root. runc, not podman's default crun, and rlimits lowered
/// rather than raised, for this kind of machine (hybrid cgroups; raising rlimits is refused).
fn run_args(name: &str) -> Vec<String> {
    [
        "--runtime",
        "runc",
        "run",
        "--rm",
        "--pull=never",
        "--name",
        name,
        "--network",
        "host",
        "--read-only",
        "--read-only-tmpfs=false",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=4096:4096",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A unique container name for this test process.
fn container_name(what: &str) -> String {
    format!("mcs-policy-image-test-{}-{what}", std::process::id())
}

/// Removes container `name` (stopping it at once) when dropped, so a failing test leaves no
/// container running; `podman run --rm` in the foreground then returns.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--time", "0", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The process of running container `name`, once it runs: its host pid.
fn container_pid(name: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = podman(&["inspect", "--format", "{{.State.Pid}}", name]);
        let pid: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        if out.status.success() && pid != 0 {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "container {name} is not running: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The container's process as the kernel sees it: uid and gid 65532 (real, effective, saved,
/// filesystem), no effective, permitted or bounding capability, no_new_privs set.
fn assert_runs_as_a_restricted_pod(name: &str) {
    let pid = container_pid(name);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("{key} in /proc/{pid}/status:\n{status}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(field("Uid"), ["65532"; 4], "{status}");
    assert_eq!(field("Gid"), ["65532"; 4], "{status}");
    for caps in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(field(caps), ["0000000000000000"], "{caps}: {status}");
    }
    assert_eq!(field("NoNewPrivs"), ["1"], "{status}");
    // What podman reports, as `kubectl exec ... id -u` would.
    let users = podman_ok(&["top", name, "user", "huser"]);
    assert!(
        users.lines().skip(1).all(|l| {
            let cols: Vec<_> = l.split_whitespace().collect();
            cols == ["nonroot", "65532"]
        }) && users.lines().count() > 1,
        "podman top {name} user huser:\n{users}"
    );
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum (coreutils) runs");
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-policy-image-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_image_holds_the_binary_it_was_built_from_and_runs_it_as_nonroot() {
    let image = image();
    let host_version = Command::new(&image.binary)
        .arg("--version")
        .output()
        .unwrap();
    let host_version = String::from_utf8(host_version.stdout).unwrap();
    let version = host_version
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("`mcs-policy --version`: {host_version:?}"))
        .trim_start_matches('v')
        .to_string();

    // The file at /mcs-policy, copied out of a container that never runs.
    let dir = temp_dir("binary");
    let name = container_name("binary");
    let created = podman_ok(&["create", "--pull=never", "--name", &name, &image.tag]);
    let _container = Container(name.clone());
    assert!(!created.trim().is_empty());
    let copy = dir.join("mcs-policy");
    podman_ok(&["cp", &format!("{name}:/mcs-policy"), copy.to_str().unwrap()]);
    assert_eq!(
        sha256(&copy),
        sha256(&image.binary),
        "/mcs-policy in {} is not {}",
        image.tag,
        image.binary.display()
    );

    // It runs there, with only what the image holds.
    let mut args = run_args(&container_name("version"));
    args.extend([image.tag.clone(), "--version".into()]);
    let out = Command::new("podman").args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "podman {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), host_version);

    // Its configuration: the non-root user, the entrypoint, the labels.
    let config: Value = serde_json::from_str(&podman_ok(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config}}",
        &image.tag,
    ]))
    .unwrap();
    assert_eq!(config["User"], "65532:65532", "{config:#}");
    assert_eq!(config["Entrypoint"], serde_json::json!(["/mcs-policy"]));
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], version.as_str());
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    if let Some(commit) = host_version
        .split("(commit ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .filter(|c| *c != "unknown")
    {
        let revision = labels["org.opencontainers.image.revision"]
            .as_str()
            .unwrap_or_default();
        assert!(
            revision.starts_with(commit),
            "revision label {revision:?}, binary's commit {commit}"
        );
    }
    // The Dockerfile's own default version (a `docker build` without --build-arg VERSION) is
    // the binary's.
    let dockerfile =
        std::fs::read_to_string(workspace_root().join("policies/deploy/Dockerfile")).unwrap();
    assert!(
        dockerfile
            .lines()
            .any(|l| l.trim() == format!("ARG VERSION={version}")),
        "policies/deploy/Dockerfile's `ARG VERSION=` is not {version}, the crate's version"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_an_admission_review_over_tls_as_uid_65532() {
    let image = image();
    // The serving certificate, made on the host and mounted read-only as a Secret would be.
    let dir = temp_dir("serve");
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    let made = mcs_policy::tls::write_self_signed(&tls).expect("a CA and a certificate");
    for file in [&made.files.cert, &made.files.key] {
        // A Secret volume's files are readable by the Pod's user.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let inside = |file: &Path| format!("/tls/{}", file.file_name().unwrap().to_str().unwrap());
    let addr = free_addr();
    let name = container_name("serve");
    let mut args = run_args(&name);
    args.extend([
        "--volume".into(),
        format!("{}:/tls:ro", tls.display()),
        image.tag.clone(),
        "serve".into(),
        "--listen".into(),
        addr.clone(),
        "--tls-cert".into(),
        inside(&made.files.cert),
        "--tls-key".into(),
        inside(&made.files.key),
    ]);
    let log = dir.join("serve.log");
    let mut child = tests::KillOnDrop(
        Command::new("podman")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("podman run starts"),
    );
    let container = Container(name.clone());
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();

    let ca = Certificate::from_pem(&std::fs::read(&made.ca_bundle).unwrap()).unwrap();
    let client = Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let base = format!("https://{addr}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let healthz = loop {
        if let Ok(resp) = client.get(format!("{base}/healthz")).send().await {
            break (resp.status(), resp.text().await.unwrap_or_default());
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "the container exited ({status}) before serving:\n{}",
                logs()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no answer at {base}/healthz:\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(healthz.0, StatusCode::OK, "/healthz: {healthz:?}");

    let fixture = load::<AdmissionCase>("validate")
        .into_iter()
        .find(|f| f.name == "rejects_duplicate_port_names")
        .expect("tests/fixtures/validate/rejects_duplicate_port_names.json")
        .case;
    let resp = client
        .post(format!("{base}/validate"))
        .json(&fixture.review)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST /validate: {e}\n{}", logs()));
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    let response = &body["response"];
    assert_eq!(response["uid"], fixture.review["request"]["uid"]);
    assert_eq!(response["allowed"], fixture.expect["allowed"], "{body:#}");
    assert_eq!(
        response["status"]["code"], fixture.expect["code"],
        "{body:#}"
    );
    assert_eq!(response["status"]["reason"], fixture.expect["reason"]);
    assert_eq!(response["status"]["message"], fixture.expect["message"]);

    assert_runs_as_a_restricted_pod(&name);
    drop(container);
    drop(child);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_reaches_kube_sims_on_the_host_network_and_copies_the_slices() {
    let image = image();
    let mut w = World::clusters("image", false).await;
    // The kubeconfig (a context per kube-sim, on 127.0.0.1), mounted read-only as the
    // members' Secret would be.
    let kubeconfig = w.kubeconfig();
    let metrics = free_addr();
    let name = container_name("sync");
    let mut args = run_args(&name);
    args.extend([
        "--volume".into(),
        format!("{}:/k:ro", w.dir.display()),
        image.tag.clone(),
        "sync".into(),
        "--kubeconfig".into(),
        format!("/k/{}", kubeconfig.file_name().unwrap().to_str().unwrap()),
        "--hub".into(),
        "hub".into(),
        "--resync-interval".into(),
        "500ms".into(),
        "--metrics-listen".into(),
        metrics.clone(),
    ]);
    let mut command = Command::new("podman");
    command.args(&args);
    // Dropped after the container is removed (declared later, dropped first).
    w.spawn_command(command);
    let _container = Container(name.clone());

    let ready = w
        .eventually("/readyz of the controller in the container", || async {
            let resp = w
                .http
                .get(format!("http://{metrics}/readyz"))
                .send()
                .await
                .ok()?;
            let status = resp.status();
            let body = resp.text().await.ok()?;
            (status == StatusCode::OK).then_some(body)
        })
        .await;
    assert!(ready.starts_with("ok: "), "{ready}");
    w.sync_a_slice_from_each_member().await;
    let text = w
        .http
        .get(format!("http://{metrics}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let reconciles = tests::sync::metric(&text, "mcs_policy_sync_reconciles_total");
    assert!(reconciles.is_some_and(|n| n >= 1.0), "/metrics:\n{text}");
    assert_runs_as_a_restricted_pod(&name);
}
