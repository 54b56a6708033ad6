//! The MultiClusterServices of a run (one provider each, every other member a consumer) and
//! their preload.

use super::*;

/// MCS `i` of a run: its Service name and its single provider (member index `i mod members`).
pub(crate) struct Mcs {
    pub(crate) name: String,
    pub(crate) provider: usize,
}

pub(crate) fn workload(count: usize, members: usize) -> Vec<Mcs> {
    (0..count)
        .map(|i| Mcs {
            name: format!("svc-{i:04}"),
            provider: i % members,
        })
        .collect()
}

/// The copy of native slice `slice` from `provider` (the component's naming, docs/sync.md#copies-the-endpoint-filter).
pub(crate) fn copy_name(fleet: &Fleet, provider: usize, slice: &str) -> String {
    format!("{}-{slice}", fleet.members[provider].0)
}

/// A distinct IPv4 address per `n`.
pub(crate) fn address(n: usize) -> String {
    format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

/// `(URL, collection path, body)` of each object to create: per MCS its hub Service, the MCS
/// (providers = its provider, consumers = all members) and the native `slices` in the provider.
pub(crate) fn preload_requests(
    fleet: &Fleet,
    ns: &str,
    all: &[Mcs],
    slices: &[&str],
) -> Vec<(String, String, Value)> {
    let ports = json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
    let mut requests = Vec::new();
    for (i, m) in all.iter().enumerate() {
        let at = ObjectRef::new(ns, &m.name);
        let provider = &fleet.members[m.provider];
        let spec = json!({"providerClusters": [{"name": provider.0}]});
        requests.push((
            fleet.hub.clone(),
            services_path(ns),
            service_of(&at, ports.clone()),
        ));
        requests.push((fleet.hub.clone(), mcs_path(ns), mcs_of(&at, spec)));
        for (s, suffix) in slices.iter().enumerate() {
            let slice = native_slice_of(&at, &format!("{}-{suffix}", m.name), &address(i * 8 + s));
            requests.push((provider.1.clone(), slices_path(ns), slice));
        }
    }
    requests
}

/// POSTs every request, [`PRELOAD_CONCURRENCY`] at a time.
pub(crate) async fn preload(http: &reqwest::Client, requests: Vec<(String, String, Value)>) {
    let queue = Arc::new(Mutex::new(requests.into_iter()));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..PRELOAD_CONCURRENCY {
        let (queue, http) = (queue.clone(), http.clone());
        tasks.spawn(async move {
            loop {
                let next = queue.lock().unwrap().next();
                let Some((url, path, body)) = next else { break };
                post(&http, &url, &path, &body).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}
