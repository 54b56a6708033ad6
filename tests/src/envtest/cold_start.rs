//! A live change during a cold start, on real API servers (`tests/tests/real_sync_live.rs`,
//! `tests/benches/real_live.rs`): a [`Fleet`] of a hub and members `member1` (the provider)
//! and `member2`, `member3` (the consumers) holds MultiClusterServices `shop/svc-000`,
//! `shop/svc-001`, ... with their hub Services and one native slice each in `member1`, all
//! made before the controller starts. The controller starts with every MCS in its backlog,
//! served in `namespace/name` order; once it has started its first pass, the provider slice
//! of the last MCS by name (the last the backlog reaches) gets a new address, and the
//! scenario records when each consumer's watch shows it and how many MCSs had no copy there
//! then.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

use super::fleet::{Fleet, get_ok};
use crate::sync::{
    ObjectRef, free_addr, mcs_of, mcs_path, metric, native_slice_of, post, service_of,
    services_path, slices_path, watch,
};

/// The provider of every MCS.
pub const PROVIDER: &str = "member1";
/// The consumers of every MCS.
pub const CONSUMERS: [&str; 2] = ["member2", "member3"];
/// The address the change gives the last MCS's provider slice.
pub const NEW_ADDRESS: &str = "10.1.9.9";

/// The `i`th MCS (and its hub Service).
pub fn name(i: usize) -> String {
    format!("svc-{i:04}")
}

/// The native slice of MCS `name` in the provider.
pub fn provider_slice(name: &str) -> String {
    format!("{name}-a")
}

/// Its copy in a consumer.
pub fn copy(name: &str) -> String {
    format!("{PROVIDER}-{}", provider_slice(name))
}

/// How the scenario runs.
pub struct Settings {
    /// MCSs in the fleet.
    pub mcss: usize,
    /// The controller binary.
    pub binary: PathBuf,
    /// `--workers`.
    pub workers: u16,
    /// The change is made once the controller has started its first pass, and not before
    /// this long after its spawn.
    pub after: Duration,
    /// The controller's `RUST_LOG`.
    pub log: String,
    /// Longest wait for the change, and then for every copy.
    pub deadline: Duration,
    /// Whether to wait, after the change, until every copy is in every consumer.
    pub await_every_copy: bool,
}

/// What a run saw.
#[derive(Debug)]
pub struct Outcome {
    /// From the controller's spawn to the change.
    pub changed_after: Duration,
    /// Whether a consumer had the last MCS's copy when the change was made (the backlog had
    /// reached it: the run shows nothing).
    pub last_copied_before: bool,
    /// Per consumer (as [`CONSUMERS`]): from just before the change to the watch event that
    /// shows it there.
    pub reached: Vec<Duration>,
    /// Per consumer: MCSs without their copy there, counted once the change had reached every
    /// consumer (at most as many were without it when it arrived).
    pub waiting: Vec<usize>,
    /// From the controller's spawn until every copy is in every consumer, when awaited.
    pub all_copied: Option<Duration>,
}

/// Creates `count` MCSs (provider [`PROVIDER`], consumers [`CONSUMERS`]), their hub Services
/// and their provider slices, 8 requests at a time.
pub async fn create_mcss(fleet: &Fleet, count: usize) {
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]);
    let consumers: Vec<_> = CONSUMERS.iter().map(|c| json!({"name": c})).collect();
    let spec = json!({"providerClusters": [{"name": PROVIDER}], "consumerClusters": consumers});
    let (hub, provider) = (&fleet.hub, fleet.member(PROVIDER));
    let mut tasks = tokio::task::JoinSet::new();
    let indexes: Vec<usize> = (0..count).collect();
    for chunk in indexes.chunks(count.div_ceil(8)) {
        let (hub_http, hub_url) = (hub.http.clone(), hub.url.clone());
        let (member_http, member_url) = (provider.http.clone(), provider.url.clone());
        let (chunk, ports, spec) = (chunk.to_vec(), ports.clone(), spec.clone());
        tasks.spawn(async move {
            for i in chunk {
                let name = name(i);
                let at = ObjectRef::new("shop", &name);
                let service = service_of(&at, ports.clone());
                post(&hub_http, &hub_url, &services_path("shop"), &service).await;
                let slice = native_slice_of(&at, &provider_slice(&name), "10.1.0.1");
                post(&member_http, &member_url, &slices_path("shop"), &slice).await;
                let mcs = mcs_of(&at, spec.clone());
                post(&hub_http, &hub_url, &mcs_path("shop"), &mcs).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("the MCSs are created");
    }
}

/// How many of the `count` MCSs have their copy in consumer `name`.
pub async fn copied(fleet: &Fleet, consumer: &str, count: usize) -> usize {
    let member = fleet.member(consumer);
    let Some(list) = get_ok(&member.http, &member.url, &slices_path("shop")).await else {
        return 0;
    };
    let names: std::collections::HashSet<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    (0..count)
        .filter(|i| names.contains(copy(&name(*i)).as_str()))
        .count()
}

/// Polls `check` every 10 ms until it is true; panics with `what` and the controller's log
/// after `deadline`.
async fn wait_until<F, Fut>(fleet: &Fleet, deadline: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        if started.elapsed() > deadline {
            panic!(
                "{what}: not within {deadline:?}; the controller's log:\n{}",
                fleet.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs the scenario on `fleet`, whose MCSs [`create_mcss`] made (`settings.mcss` of them).
pub async fn live_change(fleet: &mut Fleet, settings: &Settings) -> Outcome {
    let last = name(settings.mcss - 1);
    // Watches on the last MCS's copy in each consumer, opened before the controller starts.
    let (events_tx, mut events) = unbounded_channel();
    let mut watches = Vec::new();
    let path = format!(
        "{}?watch=true&fieldSelector=metadata.name%3D{}",
        slices_path("shop"),
        copy(&last)
    );
    for (tag, consumer) in CONSUMERS.iter().enumerate() {
        let member = fleet.member(consumer);
        let events_tx = events_tx.clone();
        watches.push(watch(&member.http, &member.url, &path, tag, events_tx).await);
    }

    let listen = free_addr();
    let workers = settings.workers.to_string();
    let flags = [
        "--resync-interval",
        "1h",
        "--metrics-listen",
        &listen,
        "--workers",
        &workers,
    ];
    let spawned = Instant::now();
    fleet.spawn_sync(&settings.binary, &flags, &settings.log);
    let fleet: &Fleet = fleet;
    // A change is live once the controller has listed and started its passes: before that it
    // is how things are, and its MCS's first pass writes it in the backlog's order.
    let metrics = format!("http://{listen}/metrics");
    let plain = reqwest::Client::new();
    wait_until(
        fleet,
        settings.deadline,
        "the controller's first pass",
        || async {
            let Ok(resp) = plain.get(&metrics).send().await else {
                return false;
            };
            let text = resp.text().await.unwrap_or_default();
            metric(&text, "mcs_policy_sync_reconciles_total").is_some_and(|n| n > 0.0)
        },
    )
    .await;
    if let Some(rest) = settings.after.checked_sub(spawned.elapsed()) {
        tokio::time::sleep(rest).await;
    }

    let provider = fleet.member(PROVIDER);
    let copy_path = format!("{}/{}", slices_path("shop"), copy(&last));
    let mut last_copied_before = false;
    for consumer in CONSUMERS {
        let member = fleet.member(consumer);
        last_copied_before |= get_ok(&member.http, &member.url, &copy_path)
            .await
            .is_some();
    }
    let patch = json!({"endpoints": [{"addresses": [NEW_ADDRESS], "conditions": {"ready": true}}]});
    let slice_path = format!("{}/{}", slices_path("shop"), provider_slice(&last));
    let changed = Instant::now();
    let changed_after = changed - spawned;
    let resp = provider
        .http
        .patch(format!("{}{slice_path}", provider.url))
        .header("Content-Type", "application/merge-patch+json")
        .body(patch.to_string())
        .send()
        .await
        .expect("the provider answers");
    assert!(
        resp.status().is_success(),
        "PATCH {slice_path}: {}",
        resp.status()
    );

    let mut reached: Vec<Option<Duration>> = vec![None; CONSUMERS.len()];
    let deadline = changed + settings.deadline;
    while reached.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Some(event)) if event.first_address.as_deref() == Some(NEW_ADDRESS) => {
                reached[event.tag].get_or_insert(event.at - changed);
            }
            Ok(Some(_)) => {}
            _ => panic!(
                "the change of {last} did not reach every consumer within {:?} ({reached:?}); \
                 the controller's log:\n{}",
                settings.deadline,
                fleet.log()
            ),
        }
    }
    let mut waiting = Vec::new();
    for consumer in CONSUMERS {
        waiting.push(settings.mcss - copied(fleet, consumer, settings.mcss).await);
    }
    for w in watches {
        w.abort();
    }

    let mut all_copied = None;
    if settings.await_every_copy {
        let every_copy = || async {
            for consumer in CONSUMERS {
                if copied(fleet, consumer, settings.mcss).await < settings.mcss {
                    return false;
                }
            }
            true
        };
        let what = "every copy in every consumer";
        wait_until(fleet, settings.deadline, what, every_copy).await;
        all_copied = Some(spawned.elapsed());
    }
    Outcome {
        changed_after,
        last_copied_before,
        reached: reached.into_iter().map(Option::unwrap).collect(),
        waiting,
        all_copied,
    }
}
