//! The workload `scripts/build-release.sh` profiles the server under, and the check it runs on
//! the optimised binary.
//!
//!     pgo_workload --server BIN [--rounds N] [--check]
//!
//! Starts `BIN serve` on a free port with a self-signed certificate, then sends every validate and
//! mutate fixture (tests/fixtures) to the admission paths, over HTTP/1.1 (as curl and wrk speak)
//! and h2 (as the kube-apiserver speaks), eight requests in flight per protocol, `N` rounds
//! (default 20). A few requests take the other paths: probes, metrics, an unknown path, a body
//! that is not JSON. Then it stops the server with SIGTERM and waits for it to exit, which is
//! when an instrumented binary writes its profile.
//!
//! With `--check`, every answer to a fixture of the server's policy (`karmada-compatible`, given
//! explicitly) that needs no context file is checked against the fixture's `expect`: the fixture
//! tests' `check_response` (allowed, code, reason, message, warnings) and, for mutate, whether
//! there is a patch. Any mismatch fails the run: the binary built with the profile answers as the
//! plain build does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Certificate, Client, StatusCode};
use serde_json::Value;
use tests::fixtures::{AdmissionCase, check_response, load};

const IN_FLIGHT: usize = 8;
/// The policy the server runs (the default of `serve`, named so the check does not assume it).
const POLICY: &str = "karmada-compatible";

struct Options {
    server: PathBuf,
    rounds: usize,
    check: bool,
}

/// One request of the workload: the path, the review, and the expectation when it is checked.
struct Request {
    name: String,
    path: &'static str,
    review: Value,
    expect: Option<Value>,
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!(
                "pgo_workload: {message}\nusage: pgo_workload --server BIN [--rounds N] [--check]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(&options)) {
        Ok(summary) => {
            println!("pgo_workload: {summary}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("pgo_workload: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut server = None;
    let mut rounds = 20;
    let mut check = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--server" => server = args.next().map(PathBuf::from),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--rounds takes a number")?
            }
            "--check" => check = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let server = server.ok_or("--server BIN is required")?;
    Ok(Options {
        server,
        rounds,
        check,
    })
}

async fn run(options: &Options) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("mcs-policy-pgo-{}", std::process::id()));
    let mut server = Server::start(&options.server, &dir)?;
    let requests = Arc::new(requests(options.check));
    let started = Instant::now();
    let mut sent = 0;
    let mut problems = Vec::new();
    for http2 in [false, true] {
        let client = client(&dir.join("ca.crt"), http2)?;
        let (n, found) = drive(&client, &server.base, &requests, options.rounds).await?;
        sent += n;
        problems.extend(found);
        sent += other_paths(&client, &server.base).await?;
    }
    server.stop()?;
    let _ = std::fs::remove_dir_all(&dir);
    if !problems.is_empty() {
        return Err(format!(
            "{} answers differ from the fixtures:\n  {}",
            problems.len(),
            problems.join("\n  ")
        ));
    }
    let checked = requests.iter().filter(|r| r.expect.is_some()).count();
    Ok(format!(
        "{sent} requests in {:.1} s; {}",
        started.elapsed().as_secs_f64(),
        if options.check {
            format!(
                "{checked} of the {} requests of a round checked against their fixture, all as expected",
                requests.len()
            )
        } else {
            "answers not checked".to_string()
        }
    ))
}

/// Every validate and mutate fixture, on both names of its path; `expect` only where `check`
/// is on and the fixture runs with the server's policy and no context.
fn requests(check: bool) -> Vec<Request> {
    let mut requests = Vec::new();
    for (kind, paths) in [
        ("validate", ["/validate", "/validate-multiclusterservice"]),
        ("mutate", ["/mutate", "/mutate-multiclusterservice"]),
    ] {
        for fixture in load::<AdmissionCase>(kind) {
            let plain = fixture.case.context.is_none()
                && fixture.case.policy.as_deref().is_none_or(|p| p == POLICY);
            for path in paths {
                requests.push(Request {
                    name: format!("{kind}/{} on {path}", fixture.name),
                    path,
                    review: fixture.case.review.clone(),
                    expect: (check && plain).then(|| fixture.case.expect.clone()),
                });
            }
        }
    }
    requests
}

/// Sends `requests` `rounds` times with `IN_FLIGHT` requests at once; returns how many were sent
/// and the answers that did not match their expectation.
async fn drive(
    client: &Client,
    base: &str,
    requests: &Arc<Vec<Request>>,
    rounds: usize,
) -> Result<(usize, Vec<String>), String> {
    let total = requests.len() * rounds;
    let mut tasks = Vec::new();
    for worker in 0..IN_FLIGHT {
        let (client, base, requests) = (client.clone(), base.to_string(), Arc::clone(requests));
        tasks.push(tokio::spawn(async move {
            let mut problems = Vec::new();
            for i in (worker..total).step_by(IN_FLIGHT) {
                let request = &requests[i % requests.len()];
                let response = post(&client, &format!("{base}{}", request.path), &request.review)
                    .await
                    .map_err(|e| format!("{}: {e}", request.name))?;
                if let Some(expect) = &request.expect {
                    for problem in check(&response, expect) {
                        problems.push(format!("{}: {problem}", request.name));
                    }
                }
            }
            Ok::<_, String>(problems)
        }));
    }
    let mut problems = Vec::new();
    for task in tasks {
        problems.extend(task.await.map_err(|e| e.to_string())??);
    }
    problems.sort();
    problems.dedup();
    Ok((total, problems))
}

/// The fixture tests' response check, plus whether a mutate answer carries a patch.
fn check(response: &Value, expect: &Value) -> Vec<String> {
    let mut problems = check_response(response, expect);
    if let Some(want) = expect.get("patched").and_then(Value::as_bool) {
        let got = response["response"].get("patch").is_some();
        if got != want {
            problems.push(format!("patched: got {got}, want {want}"));
        }
    }
    problems
}

async fn post(client: &Client, url: &str, review: &Value) -> Result<Value, String> {
    let response = client
        .post(url)
        .json(review)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != StatusCode::OK {
        return Err(format!("answered {}", response.status()));
    }
    response.json().await.map_err(|e| e.to_string())
}

/// The paths besides admission, each once or a few times: probes, metrics, an unknown path and
/// a body that is not JSON (answered 400).
async fn other_paths(client: &Client, base: &str) -> Result<usize, String> {
    let mut sent = 0;
    for (path, want) in [
        ("/healthz", StatusCode::OK),
        ("/readyz", StatusCode::OK),
        ("/metrics", StatusCode::OK),
        ("/no-such-path", StatusCode::NOT_FOUND),
    ] {
        for _ in 0..10 {
            let got = client
                .get(format!("{base}{path}"))
                .send()
                .await
                .map_err(|e| format!("GET {path}: {e}"))?
                .status();
            if got != want {
                return Err(format!("GET {path} answered {got}, expected {want}"));
            }
            sent += 1;
        }
    }
    for _ in 0..10 {
        let got = client
            .post(format!("{base}/validate"))
            .header("Content-Type", "application/json")
            .body("{not json")
            .send()
            .await
            .map_err(|e| format!("POST malformed body: {e}"))?
            .status();
        if got != StatusCode::BAD_REQUEST {
            return Err(format!("a malformed body was answered {got}, expected 400"));
        }
        sent += 1;
    }
    Ok(sent)
}

fn client(ca: &Path, http2: bool) -> Result<Client, String> {
    let pem = std::fs::read(ca).map_err(|e| format!("reading {}: {e}", ca.display()))?;
    let cert = Certificate::from_pem(&pem).map_err(|e| e.to_string())?;
    let builder = Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(cert)
        .timeout(Duration::from_secs(30));
    let builder = if http2 {
        builder.http2_prior_knowledge()
    } else {
        builder.http1_only()
    };
    builder.build().map_err(|e| e.to_string())
}

/// The server under the workload, killed if the workload fails half-way.
struct Server {
    child: Option<Child>,
    base: String,
}

impl Server {
    fn start(binary: &Path, dir: &Path) -> Result<Server, String> {
        let mut child = Command::new(binary)
            .args(["serve", "--listen", "127.0.0.1:0", "--self-signed"])
            .args(["--policy", POLICY])
            .arg("--self-signed-dir")
            .arg(dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let Some(base) = tests::listening_url(&mut child) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} exited before listening", binary.display()));
        };
        Ok(Server {
            child: Some(child),
            base,
        })
    }

    /// SIGTERM, then waits for a clean exit (the drain of `serve`). On failure the child stays
    /// in `self.child`, for `Drop` to kill and reap.
    fn stop(&mut self) -> Result<(), String> {
        let child = self.child.as_mut().expect("stopped once");
        let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
        // SAFETY: kill(2) on our own child, which has not been reaped yet.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            return Err(format!("SIGTERM: {}", std::io::Error::last_os_error()));
        }
        let exit = child.wait().map_err(|e| e.to_string())?;
        self.child = None;
        if !exit.success() {
            return Err(format!("the server exited with {exit} after SIGTERM"));
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
