//! The Pod and kube-proxy doubles for a Deployment like the chart's DNS server (`mcs-policy
//! dns`): a container with several ports whose readiness probe is on another port than the one
//! its Service forwards to, and which listens on `:PORT` (every address of the pod) for each.
//!
//! [`Workload`](super::Workload) models one port per container and appends `--listen`; here:
//!
//! - each replica has a loopback address of its own, 127.0.`100 + index`.`20 + replica` (the
//!   pod's IP), and every arg of the form `:PORT` becomes `POD_IP:PORT` (what `:PORT` binds in
//!   a pod's network namespace), so several replicas run side by side with the chart's args;
//! - the ServiceAccount token of the pod's ServiceAccount (TokenRequest API), its CA and
//!   namespace where kube's in-cluster configuration reads them (a mount namespace of the
//!   process's own, `unshare`), as the Pod double does: the process acts with the chart's RBAC;
//! - readiness is the container's `readinessProbe.httpGet`, on the port it names;
//! - [`DnsService`]: the Service's ClusterIP:port bound for TCP and UDP, each connection or
//!   datagram passed to a replica whose probe answered 2xx at its last run (every 250 ms).
//!
//! Not modelled: env, volumes, `command` (the DNS Deployment has none: asserted).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ControlPlane;
use super::pods::{ServiceAccount, selecting_service, start_with_token};
use super::process::Process;

/// One replica's addresses: the pod IP and the probe's `host:port`, shared with the proxy.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Replica {
    ip: IpAddr,
    probe: SocketAddr,
}

/// The replicas of one Deployment.
pub struct DnsPods<'a> {
    plane: &'a ControlPlane,
    namespace: String,
    template: Value,
    replicas: Vec<Option<Process>>,
    running: Arc<Mutex<Vec<Replica>>>,
}

impl<'a> DnsPods<'a> {
    /// The Deployment `name` of `namespace` as the API server holds it; no replica runs yet.
    pub fn deployment(plane: &'a ControlPlane, namespace: &str, name: &str) -> DnsPods<'a> {
        let deployment = plane
            .get("deployment", namespace, name)
            .unwrap_or_else(|| panic!("Deployment {namespace}/{name} exists"));
        let template = deployment["spec"]["template"].clone();
        let pod = &template["spec"];
        assert_eq!(pod["containers"].as_array().map(Vec::len), Some(1));
        let container = &pod["containers"][0];
        for unmodelled in ["command", "env", "envFrom", "volumeMounts"] {
            assert!(
                container[unmodelled].is_null(),
                "the DNS Pod double does not model {unmodelled}: {container}"
            );
        }
        assert!(pod["volumes"].is_null() && pod["initContainers"].is_null());
        let count = deployment["spec"]["replicas"].as_u64().unwrap_or(1) as usize;
        DnsPods {
            plane,
            namespace: namespace.to_string(),
            template,
            replicas: (0..count).map(|_| None).collect(),
            running: Arc::default(),
        }
    }

    fn container(&self) -> &Value {
        &self.template["spec"]["containers"][0]
    }

    /// The Deployment's replica count.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// The container port named `name` (`protocol` TCP or UDP).
    pub fn container_port(&self, name: &str, protocol: &str) -> u16 {
        let ports = self.container()["ports"].as_array().expect("ports");
        ports
            .iter()
            .find(|p| p["name"] == name && p["protocol"].as_str().unwrap_or("TCP") == protocol)
            .and_then(|p| p["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("no {protocol} container port named {name}")) as u16
    }

    /// Replica `i`'s pod IP.
    pub fn ip(&self, i: usize) -> IpAddr {
        format!("127.0.{}.{}", 100 + u16::from(self.plane.index), 20 + i)
            .parse()
            .unwrap()
    }

    /// The readiness probe's path and port (a name or a number).
    fn probe(&self, i: usize) -> (String, SocketAddr) {
        let get = &self.container()["readinessProbe"]["httpGet"];
        assert_ne!(
            get["scheme"], "HTTPS",
            "the DNS Pod double probes over HTTP"
        );
        let port = match &get["port"] {
            Value::String(name) => self.container_port(name, "TCP"),
            number => number.as_u64().expect("a probe port") as u16,
        };
        let path = get["path"].as_str().unwrap_or("/").to_string();
        (path, SocketAddr::new(self.ip(i), port))
    }

    /// The container's args for replica `i`: `:PORT` is the pod IP's PORT.
    pub fn args(&self, i: usize) -> Vec<String> {
        let ip = self.ip(i);
        self.container()["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap().to_string())
            .map(|a| match a.strip_prefix(':') {
                Some(port) if port.parse::<u16>().is_ok() => format!("{ip}:{port}"),
                _ => a,
            })
            .collect()
    }

    /// Starts every replica.
    pub fn start_all(&mut self) {
        for i in 0..self.replicas.len() {
            self.start(i);
        }
    }

    /// Starts replica `i` with a new token.
    pub fn start(&mut self, i: usize) {
        self.stop(i);
        let pod = &self.template["spec"];
        let account = pod["serviceAccountName"].as_str().unwrap_or("default");
        assert_ne!(
            pod["automountServiceAccountToken"], false,
            "the DNS server reads the API with its token"
        );
        let dir = self.plane.dir.join(format!("dns-pod-{i}"));
        let env = vec![
            (
                "KUBERNETES_SERVICE_HOST".to_string(),
                "127.0.0.1".to_string(),
            ),
            (
                "KUBERNETES_SERVICE_PORT".to_string(),
                self.plane.port.to_string(),
            ),
        ];
        let service_account = ServiceAccount {
            plane: self.plane,
            namespace: &self.namespace,
            name: account,
        };
        let name = format!("dns-pod-{i}");
        let log = dir.join("container.log");
        let process = start_with_token(&service_account, &name, &dir, &self.args(i), env, &log);
        self.replicas[i] = Some(process);
        let (_, probe) = self.probe(i);
        self.running.lock().unwrap().push(Replica {
            ip: self.ip(i),
            probe,
        });
    }

    /// Stops replica `i`; it leaves the Service's endpoints at once.
    pub fn stop(&mut self, i: usize) {
        let ip = self.ip(i);
        self.running.lock().unwrap().retain(|r| r.ip != ip);
        if let Some(slot) = self.replicas.get_mut(i) {
            drop(slot.take());
        }
    }

    /// Stops every replica.
    pub fn stop_all(&mut self) {
        for i in 0..self.replicas.len() {
            self.stop(i);
        }
    }

    /// Waits (60 s at most) until replica `i`'s readiness probe answers 2xx; panics with its
    /// log if it does not or the process exits.
    pub fn wait_ready(&mut self, i: usize) {
        let (path, address) = self.probe(i);
        let start = Instant::now();
        while !probe(address, &path) {
            let process = self.replicas[i].as_mut().expect("replica started");
            if !process.running() || start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "DNS replica {i} is not ready at http://{address}{path}:\n{}",
                    process.log_tail(30)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The tails of every replica's log.
    pub fn logs(&self) -> String {
        let logs: Vec<String> = self
            .replicas
            .iter()
            .flatten()
            .map(|p| p.log_tail(30))
            .collect();
        logs.join("\n")
    }

    /// The kube-proxy double for Service `name` of this namespace: its selector must pick the
    /// pods; each of its ports is forwarded (TCP and UDP) to the container port its targetPort
    /// names.
    pub fn service(&self, name: &str) -> DnsService {
        let service = selecting_service(self.plane, &self.namespace, name, &self.template);
        let ip: IpAddr = service["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(Mutex::new(Vec::<IpAddr>::new()));
        let mut threads = vec![spawn_prober(
            self.running.clone(),
            self.probe(0).0,
            ready.clone(),
            stop.clone(),
        )];
        for port in service["spec"]["ports"].as_array().unwrap() {
            let protocol = port["protocol"].as_str().unwrap_or("TCP");
            let target = match &port["targetPort"] {
                Value::String(named) => self.container_port(named, protocol),
                number => number.as_u64().unwrap() as u16,
            };
            let front = SocketAddr::new(ip, port["port"].as_u64().unwrap() as u16);
            let route = Route {
                target,
                ready: ready.clone(),
                next: Arc::default(),
                forwarded: forwarded.clone(),
            };
            threads.push(match protocol {
                "TCP" => forward_tcp(front, route, stop.clone()),
                "UDP" => forward_udp(front, route, stop.clone()),
                other => panic!("the proxy double forwards TCP and UDP, not {other}"),
            });
        }
        DnsService {
            ip,
            stop,
            threads,
            forwarded,
        }
    }
}

impl Drop for DnsPods<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

/// `GET path` over HTTP/1.1: a 2xx status.
fn probe(address: SocketAddr, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(2)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    if stream.write_all(request.as_bytes()).is_err() || stream.read_to_string(&mut text).is_err() {
        return false;
    }
    text.split_whitespace()
        .nth(1)
        .is_some_and(|code| code.starts_with('2'))
}

fn spawn_prober(
    running: Arc<Mutex<Vec<Replica>>>,
    path: String,
    ready: Arc<Mutex<Vec<IpAddr>>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let candidates = running.lock().unwrap().clone();
            let now: Vec<IpAddr> = candidates
                .iter()
                .filter(|r| probe(r.probe, &path))
                .map(|r| r.ip)
                .collect();
            *ready.lock().unwrap() = now;
            std::thread::sleep(Duration::from_millis(250));
        }
    })
}

/// Where one Service port sends its traffic.
struct Route {
    target: u16,
    ready: Arc<Mutex<Vec<IpAddr>>>,
    next: Arc<AtomicUsize>,
    forwarded: Arc<AtomicUsize>,
}

impl Route {
    /// A ready replica's target address, round robin; none when no replica is ready.
    fn pick(&self) -> Option<SocketAddr> {
        let ready = self.ready.lock().unwrap().clone();
        (!ready.is_empty()).then(|| {
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            let ip = ready[self.next.fetch_add(1, Ordering::Relaxed) % ready.len()];
            SocketAddr::new(ip, self.target)
        })
    }
}

fn forward_tcp(
    front: SocketAddr,
    route: Route,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let listener = TcpListener::bind(front).unwrap_or_else(|e| {
        panic!("the proxy double binds {front}/TCP: {e} (below 1024: root or CAP_NET_BIND_SERVICE)")
    });
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((inbound, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            // No ready endpoint: refused, as kube-proxy rejects it.
            let Some(target) = route.pick() else { continue };
            let _ = inbound.set_nonblocking(false);
            std::thread::spawn(move || {
                let Ok(outbound) = TcpStream::connect(target) else {
                    return;
                };
                let pipe = |mut from: TcpStream, mut to: TcpStream| {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                };
                let (a, b) = (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
                let back = std::thread::spawn(move || pipe(b, a));
                pipe(inbound, outbound);
                let _ = back.join();
            });
        }
    })
}

fn forward_udp(
    front: SocketAddr,
    route: Route,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let socket = UdpSocket::bind(front).unwrap_or_else(|e| {
        panic!("the proxy double binds {front}/UDP: {e} (below 1024: root or CAP_NET_BIND_SERVICE)")
    });
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 65_535];
        while !stop.load(Ordering::Relaxed) {
            let Ok((len, client)) = socket.recv_from(&mut buffer) else {
                continue;
            };
            let Some(target) = route.pick() else { continue };
            let datagram = buffer[..len].to_vec();
            let reply_to = socket.try_clone().unwrap();
            // Each datagram through a socket of its own, its answer sent back from the front.
            std::thread::spawn(move || {
                let relay = UdpSocket::bind("127.0.0.1:0").unwrap();
                relay
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut answer = [0u8; 65_535];
                if relay.send_to(&datagram, target).is_ok()
                    && let Ok((n, _)) = relay.recv_from(&mut answer)
                {
                    let _ = reply_to.send_to(&answer[..n], client);
                }
            });
        }
    })
}

/// A running Service double; stops on drop.
pub struct DnsService {
    /// The ClusterIP it serves.
    pub ip: IpAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    forwarded: Arc<AtomicUsize>,
}

impl DnsService {
    /// Connections and datagrams passed to a replica so far.
    pub fn forwarded(&self) -> usize {
        self.forwarded.load(Ordering::Relaxed)
    }
}

impl Drop for DnsService {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
