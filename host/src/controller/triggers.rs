//! Triggers: what makes the kube-runtime [`Controller`](kube::runtime::Controller) reconcile a
//! MultiClusterService, so a change reaches the consumers without waiting for a resync.
//!
//! - an MCS in the hub → itself ([`mcs_changes`], the Controller's own stream), only when its
//!   spec or whether it is being deleted changed;
//! - a Service in the hub (the template) → the MCS of the same name;
//! - an EndpointSlice in a member → the MCS of its `kubernetes.io/service-name`; our own copies
//!   count only when deleted (someone removed one by hand: put it back now), since every write
//!   of ours would otherwise trigger one more reconcile.
//!
//! The Service and member watches send references into the channel the Controller reads with
//! `reconcile_on`: its own `watches` cannot follow clusters that come and go, and kube-runtime's
//! `predicate_filter` cannot tell a listed object (a resync) from a watched change, which the
//! propagation histogram needs ([`Changes`]). Member watches follow the membership:
//! [`Watches::follow`] starts those of new members, stops those of members that left, and
//! restarts those whose client was rebuilt (rotated credentials: the old client may no longer
//! be accepted).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::channel::mpsc;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use kube::{Api, Resource, ResourceExt};
use tokio::task::JoinHandle;

use super::metrics::Metrics;
use super::read::{DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, mcs_resource};
use crate::clusters::api_error::classify;
use crate::clusters::{Cluster, Registry};

/// Which MCS (`namespace/name`) an object's change concerns, if any.
type KeyOf<K> = fn(&K, Change) -> Option<String>;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Applied,
    Deleted,
}

/// Why a watch asks for a reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// A watched change, seen at this instant (propagation latency is measured from here).
    Change(Instant),
    /// An object listed when a watch (re)started: not news, like a resync.
    Listed,
}

/// When each MCS's oldest watched change not yet reconciled was seen: the start of the
/// propagation latency, taken by the pass that carries the change. Its size is the
/// `queue_depth` gauge (kube-runtime does not expose its scheduler's).
#[derive(Debug, Default)]
pub struct Changes(Mutex<HashMap<String, Instant>>);

impl Changes {
    /// A change of `key` seen at `at` (the earliest unreconciled change wins).
    fn seen(&self, key: &str, at: Instant) {
        if let Ok(mut changes) = self.0.lock() {
            changes
                .entry(key.to_string())
                .and_modify(|first| *first = (*first).min(at))
                .or_insert(at);
        }
    }

    /// The instant of `key`'s oldest unreconciled change, which its pass now carries.
    pub fn take(&self, key: &str) -> Option<Instant> {
        self.0.lock().ok()?.remove(key)
    }

    /// MCSs with a change waiting for its pass.
    pub fn len(&self) -> usize {
        self.0.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Whether no change waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the watches send MCS references: the Controller's `reconcile_on` channel.
#[derive(Clone)]
pub struct Triggers {
    sender: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    changes: Arc<Changes>,
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
            resource: mcs_resource(),
        };
        (triggers, receiver)
    }

    fn send(&self, key: &str, cause: Cause) {
        let Some((namespace, name)) = key.split_once('/') else {
            return;
        };
        if let Cause::Change(at) = cause {
            self.changes.seen(key, at);
        }
        let reference = ObjectRef::new_with(name, self.resource.clone()).within(namespace);
        // Closed only when the Controller is gone, i.e. when syncing stops.
        self.sender.unbounded_send(reference).ok();
    }
}

/// The hub's MultiClusterServices, kept in `writer` (the Controller's store, metadata only:
/// [`keep_metadata_only`]), as the stream of
/// MCSs to reconcile: every listed one, and a watched one when its spec or its deletion changed
/// ([`mcs_relevant`]); the controller's own status and finalizer writes are not news. A watch
/// failure is logged and counted against the hub, and the watch backs off and lists again.
pub fn mcs_changes(
    hub: &Cluster,
    writer: reflector::store::Writer<DynamicObject>,
    changes: Arc<Changes>,
    metrics: Arc<Metrics>,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
    let api: Api<DynamicObject> = Api::all_with(hub.client.clone(), &mcs_resource());
    let hub_name = hub.name.clone();
    let mut seen = RelevantHashes::default();
    watch_stream(api, watcher::Config::default())
        .default_backoff()
        .modify(keep_metadata_only)
        .reflect(writer)
        .filter_map(move |event| {
            let mcs = match event {
                Ok(event) => seen.mcs_to_reconcile(event, &changes),
                Err(err) if expired(&err) => {
                    tracing::debug!(cluster = %hub_name, error = %err, "watch expired; listing again");
                    None
                }
                Err(err) => {
                    metrics.cluster_error(&hub_name, classify(&err));
                    tracing::warn!(cluster = %hub_name, error = %err, "watch of the multiclusterservices failed; retrying");
                    None
                }
            };
            future::ready(mcs.map(Ok))
        })
}

/// A watch whose resourceVersion the server no longer has (410 Gone, after etcd compaction):
/// routine, the watcher lists again; not a failure of the hub.
fn expired(err: &watcher::Error) -> bool {
    matches!(err, watcher::Error::WatchError(status) if status.code == 410)
}

/// What the Controller's store keeps of an MCS: its metadata (name, uid, generation, deletion,
/// which is all a trigger and the resync need; each pass reads the whole MCS afresh), not its
/// spec, status or managedFields.
fn keep_metadata_only(mcs: &mut DynamicObject) {
    mcs.data = serde_json::Value::Null;
    mcs.metadata.managed_fields = None;
}

/// The running Service and EndpointSlice watches. Dropping it stops them.
#[derive(Default)]
pub struct Watches {
    hub: Vec<JoinHandle<()>>,
    /// Per member: the [`Cluster::client_id`] the watch uses, and the watch.
    members: HashMap<String, (u64, JoinHandle<()>)>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in self.hub.drain(..) {
            task.abort();
        }
        for (_, (_, task)) in self.members.drain() {
            task.abort();
        }
    }
}

impl Watches {
    /// Starts the hub's Service watch.
    pub fn start(hub: &Cluster, triggers: &Triggers) -> Watches {
        let services: Api<Service> = Api::all(hub.client.clone());
        Watches {
            hub: vec![spawn(
                &hub.name,
                services,
                watcher::Config::default(),
                object_key,
                triggers,
            )],
            members: HashMap::new(),
        }
    }

    /// Starts the slice watch of each member of `registry` not watched yet, or watched
    /// through another client than its current one; stops those of members no longer in it.
    pub fn follow(&mut self, registry: &Registry, triggers: &Triggers) {
        self.members.retain(|name, (client_id, task)| {
            let keep = match registry.member(name) {
                None => {
                    tracing::info!(cluster = %name, "member left: its watch stops");
                    false
                }
                Some(member) if member.client_id != *client_id => {
                    tracing::info!(cluster = %name, "member has a new client: its watch restarts");
                    false
                }
                Some(_) => true,
            };
            if !keep {
                task.abort();
            }
            keep
        });
        for member in &registry.members {
            if self.members.contains_key(&member.name) {
                continue;
            }
            let slices: Api<EndpointSlice> = Api::all(member.client.clone());
            let config = watcher::Config::default().labels(SERVICE_NAME_LABEL);
            let task = spawn(&member.name, slices, config, slice_key, triggers);
            self.members
                .insert(member.name.clone(), (member.client_id, task));
        }
    }

    /// The members watched now, with the client id each watch uses.
    pub fn watched(&self) -> Vec<(String, u64)> {
        let mut out: Vec<_> = self
            .members
            .iter()
            .map(|(name, (id, _))| (name.clone(), *id))
            .collect();
        out.sort();
        out
    }
}

fn spawn<K>(
    cluster: &str,
    api: Api<K>,
    config: watcher::Config,
    key_of: KeyOf<K>,
    triggers: &Triggers,
) -> JoinHandle<()>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    tokio::spawn(forward(
        cluster.to_string(),
        api,
        config,
        key_of,
        triggers.clone(),
    ))
}

/// Triggers the MCS of every change one watch sees; errors back off and re-watch
/// (kube-runtime's watcher re-lists after a 410 Gone). Objects listed when a watch (re)starts
/// trigger like a resync: they are not news.
async fn forward<K>(
    cluster: String,
    api: Api<K>,
    config: watcher::Config,
    key_of: KeyOf<K>,
    triggers: Triggers,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = watch_stream(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let (object, change, cause) = match event {
            Ok(Event::Apply(o)) => (o, Change::Applied, Cause::Change(Instant::now())),
            Ok(Event::Delete(o)) => (o, Change::Deleted, Cause::Change(Instant::now())),
            Ok(Event::InitApply(o)) => (o, Change::Applied, Cause::Listed),
            Ok(Event::Init | Event::InitDone) => continue,
            Err(err) => {
                tracing::debug!(cluster = %cluster, error = %err, "watch failed; retrying");
                continue;
            }
        };
        if let Some(key) = key_of(&object, change) {
            triggers.send(&key, cause);
        }
    }
}

/// The relevant hash last seen of each object of one watch.
#[derive(Default)]
struct RelevantHashes(HashMap<String, u64>);

impl RelevantHashes {
    /// The MCS an event of the hub's MCS watch asks to reconcile: every listed one, and a
    /// watched one whose relevant part changed (its change is timed in `changes`). A deleted
    /// MCS is gone from the hub (the finalizer, if it had ours, was removed by its last pass):
    /// nothing to reconcile.
    fn mcs_to_reconcile(
        &mut self,
        event: Event<DynamicObject>,
        changes: &Changes,
    ) -> Option<DynamicObject> {
        match event {
            Event::Apply(mcs) => {
                let key = object_key(&mcs, Change::Applied)?;
                if !self.is_news(&key, Change::Applied, mcs_relevant(&mcs)) {
                    return None;
                }
                changes.seen(&key, Instant::now());
                Some(mcs)
            }
            Event::InitApply(mcs) => {
                if let Some(key) = object_key(&mcs, Change::Applied) {
                    self.is_news(&key, Change::Applied, mcs_relevant(&mcs));
                }
                Some(mcs)
            }
            Event::Delete(mcs) => {
                let key = object_key(&mcs, Change::Deleted)?;
                self.is_news(&key, Change::Deleted, 0);
                None
            }
            Event::Init | Event::InitDone => None,
        }
    }

    /// Records `change` of `key` with relevant hash `now`; whether it changed anything relevant
    /// (a deletion always does).
    fn is_news(&mut self, key: &str, change: Change, now: u64) -> bool {
        match change {
            Change::Deleted => {
                self.0.remove(key);
                true
            }
            Change::Applied => self.0.insert(key.to_string(), now) != Some(now),
        }
    }
}

/// What of an MCS a reconcile depends on: its spec (`metadata.generation`) and whether it is
/// being deleted. Status, finalizer and label writes do not count.
fn mcs_relevant(mcs: &DynamicObject) -> u64 {
    let meta = &mcs.metadata;
    let mut hasher = std::hash::DefaultHasher::new();
    (meta.generation, meta.deletion_timestamp.is_some()).hash(&mut hasher);
    hasher.finish()
}

/// `namespace/name` of a namespaced object.
fn object_key<K: Resource>(object: &K, _: Change) -> Option<String> {
    let meta = object.meta();
    Some(format!(
        "{}/{}",
        meta.namespace.as_deref()?,
        meta.name.as_deref()?
    ))
}

/// The MCS of a slice's Service; `None` for changes of our own copies other than deletion.
pub fn slice_key(slice: &EndpointSlice, change: Change) -> Option<String> {
    let labels = slice.labels();
    let ours = labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(DISPATCH_MANAGER);
    if ours && change == Change::Applied {
        return None;
    }
    let service = labels.get(SERVICE_NAME_LABEL)?;
    Some(format!("{}/{service}", slice.namespace()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(managed_by: &str) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "shop", "labels": {
                SERVICE_NAME_LABEL: "web", MANAGED_BY_LABEL: managed_by}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap()
    }

    #[test]
    fn a_slice_change_queues_its_services_mcs() {
        let native = slice("endpointslice-controller.k8s.io");
        assert_eq!(
            slice_key(&native, Change::Applied).as_deref(),
            Some("shop/web")
        );
        assert_eq!(
            slice_key(&native, Change::Deleted).as_deref(),
            Some("shop/web")
        );
    }

    #[tokio::test]
    async fn a_member_is_watched_again_when_its_client_is_rebuilt() {
        let client = || {
            let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
            kube::Client::try_from(config).unwrap()
        };
        let hub = Cluster::new("hub".into(), client());
        let registry = |members: Vec<Cluster>| Registry {
            hub: hub.clone(),
            members,
        };
        let (triggers, _references) = Triggers::new(Arc::default());
        let mut watches = Watches::default();
        let first = Cluster::new("member1".into(), client());
        watches.follow(&registry(vec![first.clone()]), &triggers);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), first.client_id)]
        );
        watches.follow(&registry(vec![first.clone()]), &triggers);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), first.client_id)]
        );

        let rotated = Cluster::new("member1".into(), client());
        assert_ne!(rotated.client_id, first.client_id);
        watches.follow(&registry(vec![rotated.clone()]), &triggers);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), rotated.client_id)]
        );
        watches.follow(&registry(Vec::new()), &triggers);
        assert!(watches.watched().is_empty());
    }

    #[test]
    fn listed_mcss_are_reconciled_untimed_and_watched_ones_only_when_news() {
        let mcs = |generation: i64| {
            let mut o = DynamicObject::new("web", &mcs_resource()).within("shop");
            o.metadata.generation = Some(generation);
            o
        };
        let changes = Changes::default();
        let mut seen = RelevantHashes::default();
        assert!(
            seen.mcs_to_reconcile(Event::InitApply(mcs(1)), &changes)
                .is_some()
        );
        assert!(changes.is_empty(), "a listing is not a change");
        assert!(
            seen.mcs_to_reconcile(Event::Apply(mcs(1)), &changes)
                .is_none()
        );
        assert!(
            seen.mcs_to_reconcile(Event::Apply(mcs(2)), &changes)
                .is_some()
        );
        assert!(
            changes.take("shop/web").is_some(),
            "a watched change is timed"
        );
        assert!(
            seen.mcs_to_reconcile(Event::Delete(mcs(2)), &changes)
                .is_none()
        );
        assert!(
            seen.mcs_to_reconcile(Event::Apply(mcs(2)), &changes)
                .is_some(),
            "re-created"
        );
    }

    #[test]
    fn only_spec_and_deletion_changes_of_an_mcs_are_news() {
        let mcs = |generation: i64, finalizers: &[&str], status: &str| {
            let mut o =
                DynamicObject::new("web", &super::super::read::mcs_resource()).within("shop");
            o.metadata.generation = Some(generation);
            o.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
            o.data = json!({"status": {"conditions": [{"type": status}]}});
            o
        };
        let mut seen = RelevantHashes::default();
        let first = mcs(1, &[], "A");
        assert!(seen.is_news("shop/web", Change::Applied, mcs_relevant(&first)));
        let ours = mcs(1, &["networking.karmada.io/mcs-policy-sync"], "B");
        assert!(!seen.is_news("shop/web", Change::Applied, mcs_relevant(&ours)));
        let edited = mcs(2, &["networking.karmada.io/mcs-policy-sync"], "B");
        assert!(seen.is_news("shop/web", Change::Applied, mcs_relevant(&edited)));
        let mut deleting = edited.clone();
        deleting.metadata.deletion_timestamp = edited.metadata.creation_timestamp.clone().or(Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        ));
        assert!(seen.is_news("shop/web", Change::Applied, mcs_relevant(&deleting)));
        assert!(seen.is_news("shop/web", Change::Deleted, mcs_relevant(&deleting)));
        assert!(
            seen.is_news("shop/web", Change::Applied, mcs_relevant(&first)),
            "re-created"
        );
    }

    #[test]
    fn a_watched_change_is_timed_from_its_first_sighting_and_a_listing_is_not_timed() {
        let changes = Arc::new(Changes::default());
        let (triggers, mut references) = Triggers::new(changes.clone());
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(5);
        triggers.send("shop/web", Cause::Change(t1));
        triggers.send("shop/web", Cause::Change(t0));
        triggers.send("shop/api", Cause::Listed);
        triggers.send("no-namespace", Cause::Listed);
        assert_eq!(changes.len(), 1, "only shop/web has a change waiting");
        assert_eq!(changes.take("shop/web"), Some(t0), "the earliest change");
        assert_eq!(changes.take("shop/web"), None, "taken by its pass");
        assert_eq!(changes.take("shop/api"), None);
        let mut sent = Vec::new();
        while let Ok(reference) = references.try_recv() {
            sent.push(format!(
                "{}/{}",
                reference.namespace.unwrap(),
                reference.name
            ));
        }
        assert_eq!(sent, ["shop/web", "shop/web", "shop/api"]);
    }

    #[test]
    fn an_expired_watch_is_routine_and_other_watch_errors_are_not() {
        let status = |code: u16| {
            let mut status = kube::core::Status::failure("gone", "Expired");
            status.code = code;
            Box::new(status)
        };
        assert!(expired(&watcher::Error::WatchError(status(410))));
        assert!(!expired(&watcher::Error::WatchError(status(500))));
        assert!(!expired(&watcher::Error::NoResourceVersion));
    }

    #[test]
    fn our_own_copies_count_only_when_deleted() {
        let copy = slice(DISPATCH_MANAGER);
        assert_eq!(slice_key(&copy, Change::Applied), None);
        assert_eq!(
            slice_key(&copy, Change::Deleted).as_deref(),
            Some("shop/web")
        );
    }
}
