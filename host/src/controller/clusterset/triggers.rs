//! What the clusterset side hears of the watches and what it asks for: a live change (heard
//! after a list, not the controller's own write) passes over its key at once; whatever may
//! concern every key (a store that lists, a ClusterProperty change, a membership change, the
//! resync) queues every key in the backlog, behind the live changes; a member turning
//! unreadable queues its own names ([`super::unreadable`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::api::DynamicObject;

use super::cache::{Hears, Resource, Stores};
use super::keys::Keys;
use super::names::{CLUSTER_PROPERTY, CREATED_BY, CREATED_BY_LABEL};
use super::unreadable;
use crate::clusters::api_error::Kind;
use crate::controller::cache::triggers::Changes;
use crate::controller::cache::watch::News;
use crate::controller::cache::{Cached, Listener, Scope};
use crate::controller::schedule::backlog::Bulk;

/// What the clusterset hears of the watches: its own stores' news, and (through
/// [`WithClusterset`]) the member Services' and EndpointSlices'.
#[derive(Clone)]
pub struct Heard {
    keys: Arc<Keys>,
    metrics: Arc<crate::controller::probes::metrics::Metrics>,
    /// Members whose lack of the API was logged.
    told: Arc<Mutex<HashSet<String>>>,
    /// Passes over every key wait here.
    bulk: Arc<Bulk>,
    /// Live changes are recorded here before their trigger goes: the backlog holds behind
    /// them, and lets go of their keys.
    changes: Arc<Changes>,
    /// The members' failing spells.
    spells: unreadable::Spells,
    /// `cluster/crd` of the CRDs established without the version used (reported once).
    unserved: Arc<Mutex<HashSet<String>>>,
}

impl Heard {
    pub(super) fn new(
        keys: Arc<Keys>,
        metrics: Arc<crate::controller::probes::metrics::Metrics>,
        bulk: Arc<Bulk>,
        changes: Arc<Changes>,
    ) -> Heard {
        Heard {
            keys,
            metrics,
            told: Arc::default(),
            bulk,
            changes,
            spells: unreadable::Spells::default(),
            unserved: Arc::default(),
        }
    }

    /// A live change of the key `namespace/name`: its pass, at once.
    fn live(&self, namespace: &str, name: &str) {
        self.changes
            .seen(&format!("{namespace}/{name}"), Instant::now());
        self.keys.trigger(namespace, name);
    }

    /// A pass of every key, through the backlog.
    pub(super) fn everything(&self) {
        let all = self.keys.all();
        self.bulk.queue_all(
            all.into_iter()
                .map(|(namespace, name)| format!("{namespace}/{name}"))
                .collect(),
        );
    }

    /// A watch of `cluster` failed: its names get a pass if it fails past the grace.
    fn failed(&self, cluster: &str) {
        let bulk = self.bulk.clone();
        self.spells
            .failed(cluster, move |names| bulk.queue_all(names));
    }

    /// A member Service or EndpointSlice changed: the key of its group, if any, gets a pass.
    fn member_news<K: Cached>(&self, cluster: &str, news: &News<'_, K>) {
        match news {
            News::Synced { .. } => {
                // A member store listed (or works again): what it shows may be new to every key.
                self.spells.works(cluster);
                self.everything();
                return;
            }
            News::Failed { .. } => self.failed(cluster),
            _ => {}
        }
        if let News::Changed {
            object,
            group: Some(group),
            left,
            own: false,
            ..
        } = news
        {
            let namespace = object.namespace();
            for group in std::iter::once(*group).chain(*left) {
                if let Some(name) = self.keys.of_group(namespace, group) {
                    self.live(namespace, &name);
                }
            }
        }
    }

    /// A member's group was filled (listed since it became wanted): its key can be read.
    fn filled(&self, namespace: &str, group: &str) {
        if let Some(name) = self.keys.of_group(namespace, group) {
            self.live(namespace, &name);
        }
    }
}

impl Hears for Heard {
    fn started(&self, cluster: &str, stores: &Stores) {
        self.spells.started(cluster, stores);
    }

    fn stopped(&self, cluster: &str) {
        self.spells.stopped(cluster);
    }

    fn unserved(&self, cluster: &str, crd: &str, served: Option<Vec<String>>) {
        let key = format!("{cluster}/{crd}");
        let changed = {
            let mut unserved = self.unserved.lock().unwrap_or_else(|p| p.into_inner());
            if served.is_some() {
                unserved.insert(key)
            } else {
                unserved.remove(&key)
            }
        };
        if !changed {
            return;
        }
        self.metrics
            .clusterset_unserved(cluster, crd, served.is_some());
        match served {
            Some(versions) => tracing::warn!(%cluster, %crd, served = ?versions,
                wanted = "v1beta1",
                "the member's CRD does not serve the version the controller uses: its objects are not read (without v1beta1 ServiceExports and ServiceImports the member takes no part in the clusterset) until it does; the CRDs of policies/crds serve v1alpha1 and v1beta1"),
            None => {
                tracing::info!(%cluster, %crd, "the member's CRD serves the version the controller uses again, or is gone")
            }
        }
    }

    fn heard(&self, cluster: &str, resource: Resource, news: News<'_, DynamicObject>) {
        match news {
            News::Listed { object } => {
                if resource == Resource::Exports || (resource == Resource::Imports && ours(object))
                {
                    self.keys.add(object.namespace(), object.name());
                }
                if let Resource::Ours(which) = resource
                    && let Some(exported) = which.name_of(object)
                {
                    // Listed at start: the pass over every key after the list covers it.
                    self.keys.add(object.namespace(), exported);
                }
                if let Ok(mut told) = self.told.lock() {
                    told.remove(cluster);
                }
            }
            News::Changed {
                object,
                deleted,
                own,
                ..
            } => {
                let (namespace, name) = (object.namespace(), object.name());
                match resource {
                    Resource::Exports | Resource::Imports => {
                        if !deleted && (resource == Resource::Exports || ours(object)) {
                            self.keys.add(namespace, name);
                        }
                        if !own && self.keys.of_group(namespace, name).as_deref() == Some(name) {
                            self.live(namespace, name);
                        }
                    }
                    Resource::Properties => {
                        // The clusterset's identity concerns every key: the backlog's order.
                        if !own && name == CLUSTER_PROPERTY {
                            self.everything();
                        }
                    }
                    Resource::Ours(which) => {
                        // A name nothing else names (its exports and import went while the
                        // controller was stopped, or by hand): a key, and its pass decides.
                        if let Some(exported) = which.name_of(object)
                            && !deleted
                            && self.keys.add(namespace, exported)
                            && !own
                        {
                            self.live(namespace, exported);
                        }
                    }
                }
            }
            News::Synced { .. } => {
                self.spells.works(cluster);
                self.everything();
            }
            News::Failed { kind, .. } => {
                if kind == Kind::NotFound {
                    let first = self
                        .told
                        .lock()
                        .map(|mut told| told.insert(cluster.to_string()))
                        .unwrap_or(false);
                    if first && resource != Resource::Properties {
                        tracing::info!(%cluster,
                            "the member does not serve the Multi-Cluster Services API (multicluster.x-k8s.io): it has no exports or imports; checked again periodically");
                    }
                } else {
                    self.metrics.cluster_error(cluster, kind);
                    self.failed(cluster);
                }
            }
        }
    }
}

/// The MCS side's listener (`inner`) that also tells the clusterset what the member caches
/// see.
#[derive(Clone)]
pub struct WithClusterset<L> {
    inner: L,
    clusterset: Heard,
}

impl<L> WithClusterset<L> {
    pub(super) fn new(inner: L, clusterset: Heard) -> Self {
        WithClusterset { inner, clusterset }
    }
}

impl<L: Listener> Listener for WithClusterset<L> {
    fn hear<K: Cached>(&self, cluster: &str, news: News<'_, K>) {
        self.clusterset.member_news(cluster, &news);
        self.inner.hear(cluster, news);
    }

    fn filled(&self, cluster: &str, namespace: &str, name: &str) {
        self.clusterset.filled(namespace, name);
        self.inner.filled(cluster, namespace, name);
    }

    fn scope(&self) -> Option<Scope> {
        self.inner.scope()
    }
}

/// Whether `object` carries our marker label.
pub(super) fn ours(object: &DynamicObject) -> bool {
    object
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CREATED_BY_LABEL))
        .is_some_and(|v| v == CREATED_BY)
}
