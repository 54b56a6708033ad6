//! Test support: starting a kube-sim process, kube-rs clients for it, raw HTTP requests, and
//! bounded polling.

use std::future::Future;
use std::process::Stdio;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout};

/// How long any single wait in a test may take.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// The token the test clients send.
pub const TOKEN: &str = "test-token";

/// A running kube-sim; killed on drop.
pub struct Sim {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// `127.0.0.1:PORT`
    pub address: String,
    _child: Child,
}

impl Sim {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts kube-sim with extra flags and waits for its `listening on` line.
    pub async fn start_with(args: &[&str]) -> Self {
        let log = std::env::var("KUBE_SIM_LOG").unwrap_or_else(|_| "warn".to_owned());
        let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("kube-sim starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let first = timeout(PATIENCE, lines.next_line())
            .await
            .expect("kube-sim prints its address in time");
        let first = first
            .expect("stdout is readable")
            .expect("kube-sim printed a line");
        let url = first
            .strip_prefix("listening on ")
            .expect("first line is `listening on URL`")
            .to_owned();
        let address = url
            .strip_prefix("http://")
            .expect("plain http URL")
            .to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            url,
            address,
            _child: child,
        }
    }

    /// A kubeconfig for this server: cluster, token user and context `sim`, namespace default.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: tester\n  user:\n    token: {TOKEN}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: tester\n    namespace: default\ncurrent-context: sim\n",
            url = self.url
        )
    }

    /// A kube-rs config from the kubeconfig, with kube's default retries switched off so tests
    /// see every answer.
    pub async fn config(&self) -> kube::Config {
        let kubeconfig = Kubeconfig::from_yaml(&self.kubeconfig_yaml()).expect("kubeconfig parses");
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("kubeconfig is usable");
        config.default_retry = false;
        config
    }

    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client builds")
    }

    /// A raw request with a JSON (or other) body.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> std::io::Result<Reply> {
        raw_request(&self.address, method, path, content_type, body).await
    }

    /// Creates the namespace `name`, as a client must before writing objects into it.
    pub async fn create_namespace(&self, name: &str) {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let reply = self
            .request(
                "POST",
                "/api/v1/namespaces",
                "application/json",
                &body.to_string(),
            )
            .await
            .expect("namespace create answered");
        assert_eq!(reply.status, 201, "namespace {name}: {}", reply.body);
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, "application/json", "")
            .await
            .expect("GET answered")
    }

    /// How many watch streams the server has open.
    pub async fn open_watches(&self) -> u64 {
        self.get("/_sim/state").await.json()["openWatches"]
            .as_u64()
            .expect("openWatches is a count")
    }

    /// Waits until the server has `count` open watch streams.
    pub async fn wait_for_open_watches(&self, count: u64) {
        eventually(&format!("{count} open watches"), || async {
            self.open_watches().await == count
        })
        .await;
    }

    /// POSTs JSON to the admin API and expects success.
    pub async fn admin(&self, path: &str, body: Value) -> Value {
        let reply = self
            .request("POST", path, "application/json", &body.to_string())
            .await
            .expect("admin API answers");
        assert!(
            reply.status < 300,
            "{path} answered {}: {}",
            reply.status,
            reply.body
        );
        reply.json()
    }
}

/// A raw HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// False when a chunked body was cut before its final chunk.
    pub complete: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is JSON ({e}): {}", self.body))
    }

    /// The body as newline-delimited JSON (watch events).
    pub fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).expect("event is JSON"))
            .collect()
    }
}

/// A raw GET on a fresh connection.
pub async fn raw_get(address: &str, path: &str) -> std::io::Result<Reply> {
    raw_request(address, "GET", path, "application/json", "").await
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer.
/// An error means the connection closed without a response.
async fn raw_request(
    address: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(address).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut raw = Vec::new();
    let read = timeout(PATIENCE, stream.read_to_end(&mut raw)).await;
    read.map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::TimedOut, "no complete answer in time")
    })??;
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> std::io::Result<Reply> {
    let closed = || {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed without a response",
        )
    };
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(closed)?;
    let mut head_lines = head.lines();
    let status_line = head_lines.next().ok_or_else(closed)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(closed)?;
    let headers: Vec<(String, String)> = head_lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let (body, complete) = if chunked {
        dechunk(body)
    } else {
        (body.to_owned(), true)
    };
    Ok(Reply {
        status,
        headers,
        body,
        complete,
    })
}

/// Decodes a chunked body; the flag tells whether the final (empty) chunk arrived.
fn dechunk(mut rest: &str) -> (String, bool) {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            return (body, true);
        }
        if after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    (body, false)
}

/// Polls `check` until it holds, failing the test after `PATIENCE`.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// The `ErrorResponse` status of a failed kube-rs call.
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}
