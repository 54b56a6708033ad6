//! etcd + kube-apiserver on loopback, with an admin kubeconfig.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::certificates::{Ca, service_account_keys};
use super::process::Process;

/// A running etcd and kube-apiserver. Dropping it stops the API server, then etcd, and prints
/// their logs' tails when the thread is panicking (then the temp dir is kept).
pub struct ControlPlane {
    /// Its temp dir: certificates, kubeconfig, logs, etcd's data.
    pub dir: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    pub port: u16,
    /// The admin kubeconfig (system:masters).
    pub kubeconfig: PathBuf,
    /// The CA that signed the API server's serving certificate, PEM.
    pub ca_pem: String,
    /// Services get ClusterIPs in 127.`100 + index`.0.0/16; distinct per running control plane.
    pub index: u8,
    apiserver: Mutex<Option<Process>>,
    etcd: Mutex<Option<Process>>,
    /// The stdin of a `sh` that removes `dir` when it closes (also at the test process's exit,
    /// for control planes in statics, which are never dropped), unless told `keep`.
    cleaner: Mutex<Option<std::process::ChildStdin>>,
    /// Holds the index: bound while this control plane runs (other processes' too).
    _reservation: TcpListener,
}

/// The port bound on 127.`100 + index`.255.254 to reserve an index across processes.
const RESERVATION_PORT: u16 = 47_999;

fn reserve_index() -> (u8, TcpListener) {
    for index in 0..150u8 {
        let address = format!("127.{}.255.254:{RESERVATION_PORT}", 100 + u16::from(index));
        if let Ok(listener) = TcpListener::bind(&address) {
            return (index, listener);
        }
    }
    panic!("no free service CIDR 127.100-249.0.0/16: 150 control planes running?")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver (RBAC, token admin, ServiceAccount tokens) and waits
    /// until /readyz answers ok (60 s at most).
    pub fn start(tag: &str) -> ControlPlane {
        let assets = super::assets();
        let (index, reservation) = reserve_index();
        let dir = std::env::temp_dir().join(format!(
            "mcs-policy-envtest-{tag}-{}-{index}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cleaner = Command::new("sh")
            .args([
                "-c",
                r#"read -r what; [ "$what" = keep ] || { sleep 1; rm -rf "$1"; }"#,
                "sh",
            ])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh starts")
            .stdin
            .take();

        let ca = Ca::new("envtest-ca");
        let serving = ca.serving(&["127.0.0.1", "localhost", "kubernetes.default.svc"]);
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let ca_file = write("ca.crt", &ca.pem());
        let cert = write("apiserver.crt", &serving.cert_pem);
        let key = write("apiserver.key", &serving.key_pem);
        let (sa_private, sa_public) = service_account_keys();
        let sa_key = write("sa.key", &sa_private);
        let sa_pub = write("sa.pub", &sa_public);
        let token = format!("admin-{}-{index}", std::process::id());
        let tokens = write(
            "tokens.csv",
            &format!("{token},envtest-admin,envtest-admin,system:masters\n"),
        );

        let etcd_port = free_port();
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{}", free_port());
        let etcd = Process::start(
            "etcd",
            &assets.join("etcd"),
            &[
                "--data-dir",
                dir.join("etcd").to_str().unwrap(),
                "--unsafe-no-fsync",
                "--listen-client-urls",
                &etcd_url,
                "--advertise-client-urls",
                &etcd_url,
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
                "--initial-cluster",
                &format!("default={peer_url}"),
                "--log-level",
                "warn",
            ],
            &[],
            &dir.join("etcd.log"),
        );

        let port = free_port();
        let url = format!("https://127.0.0.1:{port}");
        let path = |p: &Path| p.to_str().unwrap().to_string();
        let apiserver = Process::start(
            "kube-apiserver",
            &assets.join("kube-apiserver"),
            &[
                "--etcd-servers".to_string(),
                etcd_url,
                "--bind-address".into(),
                "127.0.0.1".into(),
                "--advertise-address".into(),
                "127.0.0.1".into(),
                "--secure-port".into(),
                port.to_string(),
                "--tls-cert-file".into(),
                path(&cert),
                "--tls-private-key-file".into(),
                path(&key),
                "--token-auth-file".into(),
                path(&tokens),
                "--authorization-mode".into(),
                "RBAC".into(),
                "--service-account-issuer".into(),
                "https://kubernetes.default.svc".into(),
                "--service-account-key-file".into(),
                path(&sa_pub),
                "--service-account-signing-key-file".into(),
                path(&sa_key),
                "--service-cluster-ip-range".into(),
                format!("127.{}.0.0/16", 100 + u16::from(index)),
                "--cert-dir".into(),
                path(&dir.join("certs")),
            ],
            &[],
            &dir.join("kube-apiserver.log"),
        );

        let kubeconfig = write(
            "kubeconfig",
            &format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    \
                 server: {url}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    \
                 token: {token}\ncontexts:\n- name: envtest\n  context: {{cluster: envtest, user: \
                 admin}}\ncurrent-context: envtest\n",
                ca_file.display()
            ),
        );
        let plane = ControlPlane {
            dir,
            url,
            port,
            kubeconfig,
            ca_pem: ca.pem(),
            index,
            apiserver: Mutex::new(Some(apiserver)),
            etcd: Mutex::new(Some(etcd)),
            cleaner: Mutex::new(cleaner),
            _reservation: reservation,
        };
        plane.wait_ready();
        plane
    }

    fn wait_ready(&self) {
        let client = self.http();
        let url = format!("{}/readyz", self.url);
        let start = std::time::Instant::now();
        loop {
            let ready = super::block_on(async {
                match client.get(&url).send().await {
                    Ok(r) => r.text().await.unwrap_or_default() == "ok",
                    Err(_) => false,
                }
            });
            if ready {
                return;
            }
            let died = [&self.etcd, &self.apiserver]
                .iter()
                .any(|p| p.lock().unwrap().as_mut().is_some_and(|p| !p.running()));
            if died || start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "the control plane in {} is not ready after {:?}{}:\n{}",
                    self.dir.display(),
                    start.elapsed(),
                    if died { " (a process exited)" } else { "" },
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A client trusting the API server's CA (no credentials).
    pub fn http(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).unwrap())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    }

    /// The tails of etcd's and kube-apiserver's logs.
    pub fn logs(&self) -> String {
        [&self.etcd, &self.apiserver]
            .iter()
            .filter_map(|p| {
                p.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map(|p| p.log_tail(40))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A guard that prints the logs' tails if the thread panics while it lives: for control
    /// planes shared through a static, which are never dropped.
    pub fn logs_on_panic(&self) -> LogsOnPanic<'_> {
        LogsOnPanic(self)
    }

    /// `kubectl --kubeconfig ADMIN args...`, its output whatever the status.
    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run(&super::tool("kubectl"), &self.kubeconfig, args, stdin)
    }

    /// `kubectl` that must succeed; its stdout.
    pub fn kubectl(&self, args: &[&str]) -> String {
        succeeded("kubectl", args, self.kubectl_output(args, None))
    }

    /// `kubectl` with `stdin`, which must succeed; its stdout.
    pub fn kubectl_in(&self, args: &[&str], stdin: &str) -> String {
        succeeded("kubectl", args, self.kubectl_output(args, Some(stdin)))
    }

    /// `helm --kubeconfig ADMIN args...`, its output whatever the status.
    pub fn helm_output(&self, args: &[&str]) -> Output {
        run(&super::tool("helm"), &self.kubeconfig, args, None)
    }

    /// `helm` that must succeed; its stdout.
    pub fn helm(&self, args: &[&str]) -> String {
        succeeded("helm", args, self.helm_output(args))
    }

    /// The object `kind/name` (namespace `ns`, "" for cluster-scoped) as JSON; `None` when it
    /// does not exist.
    pub fn get(&self, kind: &str, ns: &str, name: &str) -> Option<serde_json::Value> {
        let target = format!("{kind}/{name}");
        let mut args = vec!["get", target.as_str(), "-o", "json", "--ignore-not-found"];
        if !ns.is_empty() {
            args.extend(["-n", ns]);
        }
        let out = self.kubectl(&args);
        (!out.trim().is_empty()).then(|| serde_json::from_str(&out).unwrap())
    }

    /// A token of ServiceAccount `sa` of `ns` from the TokenRequest API.
    pub fn token(&self, ns: &str, sa: &str) -> String {
        self.kubectl(&["create", "token", sa, "-n", ns, "--duration", "1h"])
            .trim()
            .to_string()
    }

    /// Keeps the temp dir (logs, etcd's data) when the test process ends: after a failure.
    pub fn keep_dir(&self) {
        use std::io::Write;
        if let Some(mut stdin) = self
            .cleaner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = stdin.write_all(b"keep\n");
        }
    }

    /// Stops the API server, then etcd.
    pub fn stop(&self) {
        for p in [&self.apiserver, &self.etcd] {
            drop(p.lock().unwrap_or_else(|e| e.into_inner()).take());
        }
    }
}

fn run(program: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .current_dir(crate::workspace_root())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn succeeded(tool: &str, args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "{tool} {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
            eprintln!("(kept {})", self.dir.display());
            self.keep_dir();
            self.stop();
        } else {
            self.stop();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// See [`ControlPlane::logs_on_panic`].
pub struct LogsOnPanic<'a>(&'a ControlPlane);

impl Drop for LogsOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}\n(kept {})", self.0.logs(), self.0.dir.display());
            self.0.keep_dir();
        }
    }
}
