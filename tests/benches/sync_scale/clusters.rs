//! The clusters of a run (a hub and members, kube-sim) and the controller over them.

use super::*;

/// A hub and members (kube-sim) in a scratch directory, and the controller once started.
pub(crate) struct Fleet {
    pub(crate) http: reqwest::Client,
    pub(crate) hub: String,
    /// `(name, URL)` of each member, in kubeconfig order.
    pub(crate) members: Vec<(String, String)>,
    pub(crate) dir: PathBuf,
    /// Dropped (killed) before the clusters.
    pub(crate) controller: Option<KillOnDrop>,
    pub(crate) metrics: String,
    pub(crate) sims: Vec<KillOnDrop>,
}

impl Fleet {
    /// `hub` and `member01`..: `members` of them.
    pub(crate) async fn start(label: &str, members: usize) -> Fleet {
        let names: Vec<String> = std::iter::once("hub".to_string())
            .chain((1..=members).map(member_name))
            .collect();
        let http = reqwest::Client::new();
        let (sims, mut clusters) = start_clusters(&http, &names).await;
        let (_, hub) = clusters.remove(0);
        let dir = std::env::temp_dir().join(format!(
            "mcs-policy-sync-bench-{}-{label}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Fleet {
            http,
            hub,
            members: clusters,
            dir,
            controller: None,
            metrics: free_addr(),
            sims,
        }
    }

    /// Creates namespace `ns` in the hub and every member, as where the workload runs.
    pub(crate) async fn ensure_namespace(&self, ns: &str) {
        ensure_namespace(&self.http, &self.hub, ns).await;
        for (_, url) in &self.members {
            ensure_namespace(&self.http, url, ns).await;
        }
    }

    /// Starts `mcs-policy sync` over every cluster, its stderr in `<dir>/controller.log`.
    pub(crate) fn start_controller(&mut self, workers: u16, settings: &Settings) {
        self.start_binary(&settings.bin, workers, settings);
    }

    /// [`Fleet::start_controller`] with the binary `bin`.
    pub(crate) fn start_binary(&mut self, bin: &Path, workers: u16, settings: &Settings) {
        self.start_over(bin, self.members.len(), workers, settings);
    }

    /// [`Fleet::start_binary`] over the hub and the first `members` members only (a controller
    /// with fewer clusters, for a baseline), on a metrics address of its own.
    pub(crate) fn start_over(
        &mut self,
        bin: &Path,
        members: usize,
        workers: u16,
        settings: &Settings,
    ) {
        self.controller = None;
        self.metrics = free_addr();
        let mut contexts = vec![("hub", self.hub.as_str())];
        let members = self.members.iter().take(members);
        contexts.extend(members.map(|(n, u)| (n.as_str(), u.as_str())));
        let kubeconfig = write_kubeconfig(&self.dir, &contexts);
        let log = File::create(self.log_path()).unwrap();
        let child = Command::new(bin)
            .arg("sync")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--hub", "hub", "--metrics-listen", &self.metrics])
            .args(["--workers", &workers.to_string()])
            .args(["--resync-interval", &settings.resync])
            .args(&settings.args)
            .env("RUST_LOG", &settings.log)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mcs-policy sync starts");
        self.controller = Some(KillOnDrop(child));
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.join("controller.log")
    }

    pub(crate) fn controller_pid(&self) -> u32 {
        self.controller.as_ref().expect("controller started").0.id()
    }

    /// The CPU-seconds every kube-sim of the fleet has spent so far.
    pub(crate) fn sims_cpu(&self) -> f64 {
        self.sims.iter().map(|s| cpu_seconds(s.0.id())).sum()
    }

    pub(crate) fn member_url(&self, index: usize) -> &str {
        &self.members[index].1
    }

    /// The controller's `/metrics` text (empty while it does not answer).
    pub(crate) async fn metrics(&self) -> String {
        let url = format!("http://{}/metrics", self.metrics);
        match self.http.get(url).send().await {
            Ok(resp) => resp.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Every cluster's URL, the hub first.
    pub(crate) fn urls(&self) -> Vec<&str> {
        std::iter::once(self.hub.as_str())
            .chain(self.members.iter().map(|(_, u)| u.as_str()))
            .collect()
    }

    /// Forgets the request log of every cluster.
    pub(crate) async fn clear_request_logs(&self) {
        for url in self.urls() {
            clear_request_log(&self.http, url).await;
        }
    }

    /// The resource requests every cluster received since the logs were cleared.
    pub(crate) async fn request_logs(&self) -> Vec<Request> {
        let mut all = Vec::new();
        for url in self.urls() {
            all.extend(resource_requests(&self.http, url).await);
        }
        all
    }

    /// Opens a watch of our copies in namespace `ns` on every member; events are tagged with
    /// the member's index.
    pub(crate) async fn watch_copies(&self, ns: &str) -> UnboundedReceiver<WatchEvent> {
        let (sender, events) = unbounded_channel();
        let path = format!(
            "{}?watch=true&labelSelector={MANAGED_BY}%3D{DISPATCH}",
            slices_path(ns)
        );
        for (index, (_, url)) in self.members.iter().enumerate() {
            watch(&self.http, url, &path, index, sender.clone()).await;
        }
        events
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.controller = None;
        self.sims.clear();
    }
}

pub(crate) fn member_name(index: usize) -> String {
    format!("member{index:02}")
}
