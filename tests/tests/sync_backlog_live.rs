//! A live change goes first, whatever the backlog holds (docs/sync.md, "The order of passes"):
//! at start every MultiClusterService waits in the backlog, served in `namespace/name` order;
//! a change of a provider slice heard after start takes its MCS out of the backlog and passes
//! over it at once, even when that MCS is the very last the backlog would reach.

use std::collections::HashSet;
use std::fs::File;
use std::future::Future;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::sync::*;
use tests::{KillOnDrop, binary};

/// MCSs in the fleet: enough that the backlog takes seconds to drain on two cores.
const MCSS: usize = 300;

/// MCSs that must still be without their copies when the changed one's copy reaches every
/// consumer: the change did not wait for the backlog's turn.
const STILL_WAITING: usize = 100;

fn name(i: usize) -> String {
    format!("svc-{i:03}")
}

/// The native slice of MCS `name` in its provider, member1.
fn provider_slice(name: &str) -> String {
    format!("{name}-a")
}

/// Its copy in a consumer.
fn copy(name: &str) -> String {
    format!("member1-{}", provider_slice(name))
}

/// The first address of `slice`.
fn address(slice: &Value) -> Option<&str> {
    slice["endpoints"][0]["addresses"][0].as_str()
}

/// A hub and members `member1` to `member3` (kube-sims with room for hundreds of Services),
/// namespace `shop` in each, and the controller once started.
struct Fleet {
    http: reqwest::Client,
    hub: String,
    member1: String,
    member2: String,
    member3: String,
    dir: PathBuf,
    /// Dropped before the clusters.
    controller: Option<KillOnDrop>,
    _sims: Vec<KillOnDrop>,
}

impl Fleet {
    async fn start(test: &str) -> Fleet {
        let http = reqwest::Client::new();
        let names: Vec<String> = ["hub", "member1", "member2", "member3"]
            .map(String::from)
            .to_vec();
        let (sims, clusters) = start_clusters(&http, &names).await;
        for (_, url) in &clusters {
            ensure_namespace(&http, url, "shop").await;
        }
        let dir =
            std::env::temp_dir().join(format!("mcs-policy-sync-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = |i: usize| clusters[i].1.clone();
        Fleet {
            hub: url(0),
            member1: url(1),
            member2: url(2),
            member3: url(3),
            http,
            dir,
            controller: None,
            _sims: sims,
        }
    }

    /// Starts `mcs-policy sync` over the fleet with `extra` flags, its log in the test's
    /// directory.
    fn spawn_sync(&mut self, extra: &[&str]) {
        let contexts = [
            ("hub", self.hub.as_str()),
            ("member1", self.member1.as_str()),
            ("member2", self.member2.as_str()),
            ("member3", self.member3.as_str()),
        ];
        let kubeconfig = write_kubeconfig(&self.dir, &contexts);
        let log = File::create(self.dir.join("controller.log")).unwrap();
        let child = Command::new(binary("mcs-policy"))
            .arg("sync")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--hub", "hub"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mcs-policy sync starts");
        self.controller = Some(KillOnDrop(child));
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("controller.log")).unwrap_or_default()
    }

    /// Polls `probe` until it answers `Some`; fails with `what` and the controller's log after
    /// `limit`.
    async fn eventually<T, F, Fut>(&self, limit: Duration, what: &str, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; log:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Names of the slices in namespace `shop` of the cluster at `url`.
    async fn slice_names(&self, url: &str) -> HashSet<String> {
        let list = get(&self.http, url, SLICES).await.expect("slice list");
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
            .collect()
    }
}

/// Per MCS: its hub Service, the MCS (member1 to member2 and member3), its native slice in
/// member1; in reverse name order, so the last one created is the first the backlog serves.
async fn create_fleet(w: &Fleet) {
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]);
    let spec = json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}, {"name": "member3"}],
    });
    let mut tasks = tokio::task::JoinSet::new();
    let indexes: Vec<usize> = (0..MCSS).rev().collect();
    for chunk in indexes.chunks(MCSS / 8) {
        let (http, hub, member1) = (w.http.clone(), w.hub.clone(), w.member1.clone());
        let (chunk, ports, spec) = (chunk.to_vec(), ports.clone(), spec.clone());
        tasks.spawn(async move {
            for i in chunk {
                let name = name(i);
                let at = ObjectRef::new("shop", &name);
                post(&http, &hub, SERVICES, &service_of(&at, ports.clone())).await;
                let slice = native_slice_of(&at, &provider_slice(&name), "10.1.0.1");
                post(&http, &member1, SLICES, &slice).await;
                post(&http, &hub, MCS, &mcs_of(&at, spec.clone())).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("the fleet is created");
    }
}

/// How many MCSs of the fleet have their copy in `url`.
async fn copied(w: &Fleet, url: &str) -> usize {
    let names = w.slice_names(url).await;
    (0..MCSS)
        .filter(|i| names.contains(&copy(&name(*i))))
        .count()
}

/// Whether the copy of `name` in `url` shows `want`.
async fn copy_shows(w: &Fleet, url: &str, name: &str, want: &str) -> bool {
    let path = format!("{SLICES}/{}", copy(name));
    let slice = get(&w.http, url, &path).await;
    slice.as_ref().and_then(address) == Some(want)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_the_mcs_the_backlog_reaches_last_reaches_every_consumer_before_the_backlog_drains()
 {
    let mut w = Fleet::start("backlog-live").await;
    let member3 = w.member3.clone();
    create_fleet(&w).await;
    // The backlog serves the MCSs in `namespace/name` order: all are in `shop`, so the last
    // by name is the last it reaches.
    let last = name(MCSS - 1);
    let listen = free_addr();
    w.spawn_sync(&[
        "--resync-interval",
        "1h",
        "--metrics-listen",
        &listen,
        "--workers",
        "4",
    ]);
    // A change is live once the controller has listed and started its passes: before that it
    // is how things are, and its MCS's first pass writes it in the backlog's order.
    let metrics = format!("http://{listen}/metrics");
    w.eventually(
        Duration::from_secs(60),
        "the controller's first pass",
        || {
            let (http, metrics) = (w.http.clone(), metrics.clone());
            async move {
                let text = http.get(&metrics).send().await.ok()?.text().await.ok()?;
                (metric(&text, "mcs_policy_sync_reconciles_total")? > 0.0).then_some(())
            }
        },
    )
    .await;
    let before = get(&w.http, &w.member2, &format!("{SLICES}/{}", copy(&last))).await;
    assert!(
        before.is_none(),
        "{last} was copied before the change: the backlog reached it first (a fleet too small \
         for this machine?)"
    );

    let new_address = "10.1.9.9";
    let at = ObjectRef::new("shop", &last);
    let slice = native_slice_of(&at, &provider_slice(&last), new_address);
    let path = format!("{}/{}", slices_path("shop"), provider_slice(&last));
    let changed = Instant::now();
    put(&w.http, &w.member1, &path, &slice).await;
    let consumers = [w.member2.clone(), member3.clone()];
    w.eventually(
        Duration::from_secs(60),
        "the change in every consumer",
        || {
            let w = &w;
            let (last, consumers) = (&last, &consumers);
            async move {
                for url in consumers {
                    if !copy_shows(w, url, last, new_address).await {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
    let delay = changed.elapsed();
    // Counted after the copy arrived: at most as many were still waiting when it did.
    let waiting = [
        MCSS - copied(&w, &w.member2).await,
        MCSS - copied(&w, &member3).await,
    ];
    println!(
        "the change of {last} reached both consumers {:.2} s after it was made; MCSs without \
         their copy then: {} in member2, {} in member3 (of {MCSS})",
        delay.as_secs_f64(),
        waiting[0],
        waiting[1],
    );
    assert!(
        waiting.iter().all(|w| *w >= STILL_WAITING),
        "the change waited for the backlog: only {waiting:?} of {MCSS} MCSs were still without \
         their copies when it arrived; logs:\n{}",
        w.log()
    );

    // The rest of the backlog still drains: every MCS reaches both consumers.
    w.eventually(Duration::from_secs(60), "every copy", || {
        let (w, member3) = (&w, &member3);
        async move {
            let done = copied(w, &w.member2).await == MCSS && copied(w, member3).await == MCSS;
            done.then_some(())
        }
    })
    .await;
    assert!(copy_shows(&w, &w.member2, &last, new_address).await);
}
