//! How much a selected list costs kube-sim: starts a kube-sim binary, fills namespace `bench`
//! with EndpointSlices (SERVICES services x SLICES slices each, plus as many in namespace
//! `other`), then times LISTS lists of one service's slices
//! (`labelSelector=kubernetes.io/service-name=svc-N`) over one kept-alive connection and reports
//! the wall time and the CPU time the kube-sim process used (from /proc, Linux only).
//!
//! ```sh
//! cargo build --release -p kube-sim --locked
//! cargo run -p kube-sim --example list_bench -- target/release/kube-sim [LISTS] [SERVICES] [SLICES]
//! ```
//!
//! Defaults: 5000 lists, 50 services x 40 slices (2,000 slices, 40 selected by each list).
//! It prints a digest of the listed names so two builds can be checked for the same answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// A kube-sim process, killed on drop.
struct Sim {
    child: Child,
    address: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    fn start(binary: &str) -> Self {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {binary}: {e}"));
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("kube-sim prints its address");
        let address = line
            .trim()
            .strip_prefix("listening on http://")
            .expect("first line is `listening on URL`")
            .to_owned();
        Self { child, address }
    }

    /// User plus system CPU time of the process so far, in seconds (clock ticks of 1/100 s).
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("/proc/PID/stat is readable");
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = &stat[stat.rfind(')').expect("stat has a command name") + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks as f64 / 100.0
    }
}

/// A minimal HTTP/1.1 client over one kept-alive connection.
struct Connection {
    reader: BufReader<TcpStream>,
    address: String,
}

impl Connection {
    fn open(address: &str) -> Self {
        let stream = TcpStream::connect(address).expect("kube-sim accepts connections");
        stream.set_nodelay(true).expect("nodelay");
        Self {
            reader: BufReader::new(stream),
            address: address.to_owned(),
        }
    }

    /// Sends a request and returns the status code and body.
    fn request(&mut self, method: &str, path: &str, body: &str) -> (u16, String) {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        );
        let stream = self.reader.get_mut();
        stream.write_all(request.as_bytes()).expect("request sent");
        let mut status_line = String::new();
        self.reader
            .read_line(&mut status_line)
            .expect("status line");
        let code: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status code");
        let mut length = None;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("header line");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.expect("responses carry Content-Length")];
        self.reader.read_exact(&mut body).expect("body");
        (code, String::from_utf8(body).expect("UTF-8 body"))
    }
}

fn slice(namespace: &str, service: usize, index: usize) -> String {
    format!(
        r#"{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{{"name":"svc-{service}-{index}","namespace":"{namespace}","labels":{{"kubernetes.io/service-name":"svc-{service}","endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io","app":"bench"}},"annotations":{{"endpoints.kubernetes.io/last-change-trigger-time":"2024-01-01T00:00:00Z"}}}},"addressType":"IPv4","endpoints":[{{"addresses":["10.0.{service}.{index}"],"conditions":{{"ready":true}}}}],"ports":[{{"name":"http","port":80,"protocol":"TCP"}}]}}"#
    )
}

/// The `"name":"..."` values of a list body, in order.
fn names(body: &str) -> Vec<&str> {
    body.split(r#""name":""#)
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|n| n.starts_with("svc-"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let binary = args
        .first()
        .cloned()
        .unwrap_or_else(|| "target/release/kube-sim".to_owned());
    let arg = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |a| a.parse().expect("a number"))
    };
    let (lists, services, slices) = (arg(1, 5000), arg(2, 50), arg(3, 40));

    let sim = Sim::start(&binary);
    let mut connection = Connection::open(&sim.address);
    let started = Instant::now();
    for namespace in ["bench", "other"] {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{namespace}"}}}}"#
        );
        let (code, answer) = connection.request("POST", "/api/v1/namespaces", &body);
        assert_eq!(code, 201, "{answer}");
        let path = format!("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices");
        for index in 0..slices {
            for service in 0..services {
                let (code, body) =
                    connection.request("POST", &path, &slice(namespace, service, index));
                assert_eq!(code, 201, "{body}");
            }
        }
    }
    println!(
        "created {} slices in {:.2}s",
        2 * services * slices,
        started.elapsed().as_secs_f64()
    );

    let mut digest: u64 = 0;
    let mut run = |label: &str, make_path: &dyn Fn(usize) -> String, expected: usize| {
        let cpu_before = sim.cpu_seconds();
        let started = Instant::now();
        for i in 0..lists {
            let (code, body) = connection.request("GET", &make_path(i % services), "");
            assert_eq!(code, 200, "{body}");
            let listed = names(&body);
            assert_eq!(listed.len(), expected, "{label}: {listed:?}");
            for name in listed {
                for b in name.bytes() {
                    digest = digest.wrapping_mul(31).wrapping_add(u64::from(b));
                }
            }
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = sim.cpu_seconds() - cpu_before;
        println!(
            "{label}: {lists} lists in {wall:.2}s wall ({:.0} us/list), kube-sim CPU {cpu:.2}s ({:.0} us/list)",
            wall * 1e6 / lists as f64,
            cpu * 1e6 / lists as f64,
        );
    };
    let base = "/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices";
    run(
        "service-name=svc-N",
        &|s| format!("{base}?labelSelector=kubernetes.io/service-name%3Dsvc-{s}"),
        slices,
    );
    run(
        "service-name in (svc-N),app=bench (all namespaces)",
        &|s| {
            format!(
                "/apis/discovery.k8s.io/v1/endpointslices?labelSelector=kubernetes.io/service-name%20in%20(svc-{s}),app%3Dbench"
            )
        },
        2 * slices,
    );
    run(
        "no equality term: app,!legacy + fieldSelector metadata.name",
        &|s| format!("{base}?labelSelector=app,!legacy&fieldSelector=metadata.name%3Dsvc-{s}-0"),
        1,
    );
    println!("digest of listed names: {digest:016x}");
}
