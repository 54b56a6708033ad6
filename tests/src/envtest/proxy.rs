//! The kube-proxy double: a TCP forwarder bound on a Service's ClusterIP:port, passing each
//! connection to one of the Service's ready endpoints, round robin.
//!
//! What kube-proxy and the EndpointSlice controller do for a ClusterIP Service, in one piece:
//! endpoints come from a [`Workload`](super::Workload) (the replicas the Pod double runs, which
//! the Service's selector matched), and an endpoint takes connections only while its readiness
//! probe (the container's `readinessProbe.httpGet`, run every 250 ms as the kubelet would) answers
//! 2xx. TCP is passed through untouched, so TLS is between the API server and the replica.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The addresses of a Service's endpoints (the replicas running), shared with the Pod double.
pub type Endpoints = Arc<Mutex<Vec<SocketAddr>>>;

/// A readiness probe: `GET path` over HTTPS (certificate not verified, as the kubelet does) or
/// HTTP.
#[derive(Clone, Debug)]
pub struct Probe {
    pub path: String,
    pub https: bool,
}

/// A running forwarder; stops on drop.
pub struct ServiceProxy {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    connections: Arc<AtomicUsize>,
}

impl ServiceProxy {
    /// Binds `address` (ClusterIP:port) and forwards to `endpoints` that pass `probe`.
    pub fn start(address: SocketAddr, endpoints: Endpoints, probe: Probe) -> ServiceProxy {
        let listener = std::net::TcpListener::bind(address).unwrap_or_else(|e| {
            panic!(
                "the kube-proxy double binds the Service's ClusterIP {address}: {e} (a port below \
                 1024 needs root or CAP_NET_BIND_SERVICE)"
            )
        });
        listener.set_nonblocking(true).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(serve(listener, endpoints, probe, stopped, counted));
        });
        ServiceProxy {
            address,
            stop: Some(stop),
            thread: Some(thread),
            connections,
        }
    }

    /// Connections forwarded so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }
}

async fn serve(
    listener: std::net::TcpListener,
    endpoints: Endpoints,
    probe: Probe,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    connections: Arc<AtomicUsize>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let ready: Arc<Mutex<Vec<SocketAddr>>> = Arc::default();
    tokio::spawn(probe_loop(endpoints.clone(), probe, ready.clone()));
    let next = AtomicUsize::new(0);
    loop {
        let (mut inbound, _) = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        // Ready at the last probe and still running (a stopped replica leaves at once).
        let target = {
            let running = endpoints.lock().unwrap().clone();
            let ready: Vec<SocketAddr> = ready
                .lock()
                .unwrap()
                .iter()
                .filter(|a| running.contains(a))
                .copied()
                .collect();
            (!ready.is_empty()).then(|| ready[next.fetch_add(1, Ordering::Relaxed) % ready.len()])
        };
        // No ready endpoint: the connection is refused, as kube-proxy rejects it.
        let Some(target) = target else {
            drop(inbound);
            continue;
        };
        connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

async fn probe_loop(endpoints: Endpoints, probe: Probe, ready: Arc<Mutex<Vec<SocketAddr>>>) {
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    loop {
        let candidates = endpoints.lock().unwrap().clone();
        let mut now_ready = Vec::new();
        for address in candidates {
            let scheme = if probe.https { "https" } else { "http" };
            let url = format!("{scheme}://{address}{}", probe.path);
            if client
                .get(&url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                now_ready.push(address);
            }
        }
        *ready.lock().unwrap() = now_ready;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

impl Drop for ServiceProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
