//! A hub and member clusters for `mcs-policy sync`, each a real control plane
//! ([`ControlPlane`]): the MultiClusterService CRD of `policies/crds/` in the hub, namespace
//! `shop` in every cluster, one kubeconfig with a context per cluster (its CA, its admin
//! token), and the controller as a child process stopped with the fleet.
//!
//! The control planes start in parallel; [`Fleet::start`] is synchronous (a control plane's
//! start runs a runtime of its own), so call it before entering the test's runtime.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ControlPlane;
use super::process::Process;
use crate::sync::{CRDS, crd, ensure_namespace, mcs_path, post};

/// One cluster of the fleet.
pub struct Cluster {
    /// Its kubeconfig context and member name.
    pub name: String,
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// A client trusting its CA and sending its admin token, with no overall timeout (watches).
    pub http: reqwest::Client,
    token: String,
    ca_file: PathBuf,
    /// Last: stopped after the controller.
    pub plane: ControlPlane,
}

impl Cluster {
    /// `tag` is the fleet's: a control plane's temp dir is named after it, and a dir of an
    /// earlier fleet of this process may still be being removed.
    fn start(tag: &str, name: &str) -> Cluster {
        let plane = ControlPlane::start(&format!("fleet-{tag}-{name}"));
        let config = std::fs::read_to_string(&plane.kubeconfig).unwrap();
        let token = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("token: "))
            .expect("the admin kubeconfig has a token")
            .to_string();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(plane.ca_pem.as_bytes()).unwrap())
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        Cluster {
            name: name.to_string(),
            url: plane.url.clone(),
            http,
            token,
            ca_file: plane.dir.join("ca.crt"),
            plane,
        }
    }
}

/// A hub and members, and the controller once spawned.
pub struct Fleet {
    /// The controller, stopped first.
    controller: Option<Process>,
    pub hub: Cluster,
    pub members: Vec<Cluster>,
    /// The kubeconfig and the controller's log.
    pub dir: PathBuf,
}

impl Fleet {
    /// Starts a hub and one control plane per name of `members` (in parallel), the MCS CRD
    /// in the hub (established), namespace `shop` everywhere.
    pub fn start(tag: &str, members: &[&str]) -> Fleet {
        let names: Vec<&str> = std::iter::once("hub")
            .chain(members.iter().copied())
            .collect();
        let mut clusters: Vec<Cluster> = std::thread::scope(|scope| {
            let started: Vec<_> = names
                .iter()
                .map(|name| scope.spawn(move || Cluster::start(tag, name)))
                .collect();
            started
                .into_iter()
                .map(|s| s.join().expect("a control plane starts"))
                .collect()
        });
        let hub = clusters.remove(0);
        let dir =
            std::env::temp_dir().join(format!("mcs-policy-fleet-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fleet = Fleet {
            controller: None,
            hub,
            members: clusters,
            dir,
        };
        super::block_on(fleet.prepare());
        fleet
    }

    async fn prepare(&self) {
        let hub = &self.hub;
        post(
            &hub.http,
            &hub.url,
            CRDS,
            &crd("networking.karmada.io_multiclusterservices.yaml"),
        )
        .await;
        for cluster in self.clusters() {
            ensure_namespace(&cluster.http, &cluster.url, "shop").await;
        }
        // Established: the resource is served.
        let started = Instant::now();
        while get_ok(&hub.http, &hub.url, &mcs_path("shop"))
            .await
            .is_none()
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the MultiClusterService CRD is not served after 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The hub, then the members.
    pub fn clusters(&self) -> impl Iterator<Item = &Cluster> {
        std::iter::once(&self.hub).chain(&self.members)
    }

    /// The member named `name`.
    pub fn member(&self, name: &str) -> &Cluster {
        self.members
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name}"))
    }

    /// Writes `kubeconfig.yaml` in the fleet's dir: a context per cluster, named after it.
    pub fn kubeconfig(&self) -> PathBuf {
        let mut clusters = String::new();
        let mut users = String::new();
        let mut contexts = String::new();
        for c in self.clusters() {
            let name = &c.name;
            clusters += &format!(
                "- name: {name}\n  cluster: {{server: \"{}\", certificate-authority: \"{}\"}}\n",
                c.url,
                c.ca_file.display()
            );
            users += &format!("- name: {name}\n  user: {{token: \"{}\"}}\n", c.token);
            contexts += &format!("- name: {name}\n  context: {{cluster: {name}, user: {name}}}\n");
        }
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n{clusters}users:\n{users}contexts:\n\
             {contexts}current-context: hub\n"
        );
        let path = self.dir.join("kubeconfig.yaml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Starts `binary sync --kubeconfig ... --hub hub` with `extra` flags and `RUST_LOG=log`,
    /// its output in [`Fleet::log_path`]; every other context is a member.
    pub fn spawn_sync(&mut self, binary: &Path, extra: &[&str], log: &str) {
        let kubeconfig = self.kubeconfig();
        let mut args = vec![
            "sync".to_string(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--hub".into(),
            "hub".into(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let env = [("RUST_LOG".to_string(), log.to_string())];
        let process = Process::start("mcs-policy", binary, &args, &env, &self.log_path());
        self.controller = Some(process);
    }

    /// Where the controller logs.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("controller.log")
    }

    /// The controller's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        drop(self.controller.take());
        if std::thread::panicking() {
            eprintln!("(kept {})", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `GET url+path` as JSON when it answers 2xx; `None` otherwise.
pub async fn get_ok(http: &reqwest::Client, url: &str, path: &str) -> Option<Value> {
    let resp = http.get(format!("{url}{path}")).send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.json().await.ok()
}
