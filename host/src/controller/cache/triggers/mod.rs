//! Triggers: what makes the kube-runtime [`Controller`](kube::runtime::Controller) reconcile a
//! MultiClusterService, so a change reaches the members without waiting for a resync.
//!
//! - an MCS in the hub → itself ([`watch_mcs`], the Controller's own stream), only when its
//!   spec or whether it is being deleted changed;
//! - a Service in the hub (the template), an EndpointSlice or a Service in a member → the MCS
//!   of the same namespace and name (a slice's Service name), when the hub has one and the
//!   change is not the controller's own write (the caches tell, [`crate::controller::cache`]).
//!
//! These are the *live* changes: a watch event heard after a store listed. What a list gives
//! (at start, or again after a failure) is how things are, not a change: it triggers nothing
//! here, and the passes it owes go through the backlog
//! ([`crate::controller::schedule::backlog`]). Every live change is recorded in [`Changes`]
//! before its trigger is sent: that is how the backlog knows one waits, and takes its MCS out
//! of the backlog when it waits there.
//!
//! The caches send references into the channel the Controller reads with `reconcile_on`: its
//! own `watches` cannot follow clusters that come and go, and every trigger here is timed from
//! the change that caused it, which the propagation histogram needs ([`Changes`]).
//!
//! - [`changes`]: the live changes waiting for their pass;
//! - [`mcs`]: the watch of the hub's MCSs, which feeds the Controller's own stream.

pub mod changes;
pub mod mcs;

use std::sync::Arc;
use std::time::Instant;

use futures::channel::mpsc;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::ObjectRef;

use super::watch::News;
use super::{Cached, Listener, Scope, Store};
use crate::controller::names::mcs_resource;
use crate::controller::probes::metrics::Metrics;

pub use changes::Changes;
pub use mcs::{Change, watch_mcs};

/// Where the watches send MCS references: the Controller's `reconcile_on` channel.
#[derive(Clone)]
pub struct Triggers {
    sender: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    /// When each MCS's oldest unreconciled change was seen.
    pub changes: Arc<Changes>,
    /// The groups the hub's MCSs name, which the members' caches keep
    /// ([`super::scope`]): fed by [`watch_mcs`].
    pub scope: Scope,
    resource: ApiResource,
}

impl Triggers {
    /// The sink, and the stream of references to hand to `Controller::reconcile_on`.
    pub fn new(
        changes: Arc<Changes>,
    ) -> (Triggers, mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>) {
        let (sender, receiver) = mpsc::unbounded();
        let triggers = Triggers {
            sender,
            changes,
            scope: Scope::default(),
            resource: mcs_resource(),
        };
        (triggers, receiver)
    }

    /// Asks for a pass of the MCS `key` (`namespace/name`) for a change seen at `at`.
    pub fn send(&self, key: &str, at: Instant) {
        let Some((namespace, name)) = key.split_once('/') else {
            return;
        };
        self.changes.seen(key, at);
        let reference = ObjectRef::new_with(name, self.resource.clone()).within(namespace);
        // Closed only when the Controller is gone, i.e. when syncing stops.
        self.sender.unbounded_send(reference).ok();
    }
}

/// What the caches do with the news of their watches: trigger passes, report lists.
#[derive(Clone)]
pub struct Reactions {
    /// Where passes are requested.
    pub triggers: Triggers,
    /// The hub's MCSs: a change triggers a pass only when an MCS of its name exists.
    pub mcs: Store<DynamicObject>,
    /// A cluster (by name) whose store listed again after being unreadable.
    pub relisted: mpsc::UnboundedSender<String>,
    /// Watch failures are counted per cluster.
    pub metrics: Arc<Metrics>,
}

impl Listener for Reactions {
    /// Reacts to one event of a store of `cluster` grouped by MCS name (slices by their
    /// Service, Services by name): a foreign change of a group that names an MCS triggers
    /// its pass.
    fn hear<K: Cached>(&self, cluster: &str, news: News<'_, K>) {
        match news {
            News::Failed { kind, .. } => self.metrics.cluster_error(cluster, kind),
            News::Changed { own: true, .. } | News::Listed { .. } => {}
            News::Changed {
                object,
                group: Some(group),
                left,
                own: false,
                ..
            } => {
                // A relabelled object is news to the group it left as well as to its new one.
                let namespace = object.namespace();
                for group in std::iter::once(group).chain(left) {
                    if self.mcs.get(namespace, group).is_some() {
                        let key = format!("{namespace}/{group}");
                        self.triggers.send(&key, Instant::now());
                    }
                }
            }
            News::Changed { group: None, .. } => {}
            News::Synced { returned } => {
                if returned {
                    self.relisted.unbounded_send(cluster.to_string()).ok();
                }
            }
        }
    }

    /// A group of a member listed since its MCS named it: the MCS's pass can read it.
    fn filled(&self, _cluster: &str, namespace: &str, name: &str) {
        if self.mcs.get(namespace, name).is_some() {
            self.triggers
                .send(&format!("{namespace}/{name}"), Instant::now());
        }
    }

    fn scope(&self) -> Option<Scope> {
        Some(self.triggers.scope.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_is_timed_from_the_first_sighting_of_its_change() {
        let changes = Arc::new(Changes::default());
        let (triggers, mut references) = Triggers::new(changes.clone());
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(5);
        triggers.send("shop/web", t1);
        triggers.send("shop/web", t0);
        triggers.send("no-namespace", t0);
        assert_eq!(changes.len(), 1, "only shop/web has a change waiting");
        assert_eq!(changes.fresh(), ["shop/web"], "told to the backlog once");
        assert_eq!(changes.take("shop/web"), Some(t0), "the earliest change");
        assert_eq!(changes.take("shop/web"), None, "taken by its pass");
        let mut sent = Vec::new();
        while let Ok(reference) = references.try_recv() {
            sent.push(format!(
                "{}/{}",
                reference.namespace.unwrap(),
                reference.name
            ));
        }
        assert_eq!(sent, ["shop/web", "shop/web"]);
    }
}
