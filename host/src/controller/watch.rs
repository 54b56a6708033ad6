//! Triggers: watches that turn changes into MultiClusterService keys on the [`Queue`], so a
//! change reaches the consumers without waiting for a resync.
//!
//! - an MCS in the hub → its key;
//! - a Service in the hub (the template) → the key of the MCS of the same name;
//! - an EndpointSlice in a member → the key of its `kubernetes.io/service-name`; our own
//!   copies count only when deleted (someone removed one by hand: put it back now), since
//!   every write of ours would otherwise trigger one more reconcile.
//!
//! Member watches follow the membership: [`Watches::follow`] starts those of new members,
//! stops those of members that left, and restarts those whose client was rebuilt (rotated
//! credentials: the old client may no longer be accepted).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DynamicObject;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use kube::{Api, Resource, ResourceExt};
use tokio::task::JoinHandle;

use super::queue::{Cause, Queue};
use super::read::{DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, mcs_resource};
use crate::clusters::{Cluster, Registry};

/// Which MCS an object's change concerns, if any.
type KeyOf<K> = fn(&K, Change) -> Option<String>;

/// What of an object a reconcile depends on, as a hash: an update that leaves it unchanged is
/// not news (e.g. the controller's own status and finalizer writes on an MCS).
type Relevant<K> = fn(&K) -> u64;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Applied,
    Deleted,
}

/// The running watches. Dropping it stops them.
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
    /// Starts the hub's watches (MultiClusterServices and Services).
    pub fn start(hub: &Cluster, queue: &Arc<Queue>) -> Watches {
        let mcs: Api<DynamicObject> = Api::all_with(hub.client.clone(), &mcs_resource());
        let services: Api<Service> = Api::all(hub.client.clone());
        Watches {
            hub: vec![
                spawn(
                    &hub.name,
                    mcs,
                    watcher::Config::default(),
                    (object_key, Some(mcs_relevant)),
                    queue,
                ),
                spawn(
                    &hub.name,
                    services,
                    watcher::Config::default(),
                    (object_key, None),
                    queue,
                ),
            ],
            members: HashMap::new(),
        }
    }

    /// Starts the slice watch of each member of `registry` not watched yet, or watched
    /// through another client than its current one; stops those of members no longer in it.
    pub fn follow(&mut self, registry: &Registry, queue: &Arc<Queue>) {
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
            let task = spawn(&member.name, slices, config, (slice_key, None), queue);
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
    key_of: (KeyOf<K>, Option<Relevant<K>>),
    queue: &Arc<Queue>,
) -> JoinHandle<()>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    tokio::spawn(forward(
        cluster.to_string(),
        api,
        config,
        key_of,
        queue.clone(),
    ))
}

/// Queues the key of every change one watch sees; errors back off and re-watch
/// (kube-runtime's watcher re-lists after a 410 Gone). Objects listed when a watch (re)starts
/// are queued as a resync: they are not news. With `relevant`, an update that leaves the
/// relevant part of an object as it was is dropped.
async fn forward<K>(
    cluster: String,
    api: Api<K>,
    config: watcher::Config,
    (key_of, relevant): (KeyOf<K>, Option<Relevant<K>>),
    queue: Arc<Queue>,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = watch_stream(api, config).default_backoff().boxed();
    let mut seen = Seen::default();
    while let Some(event) = events.next().await {
        let (object, change, cause) = match event {
            Ok(Event::Apply(o)) => (o, Change::Applied, Cause::Change(Instant::now())),
            Ok(Event::Delete(o)) => (o, Change::Deleted, Cause::Change(Instant::now())),
            Ok(Event::InitApply(o)) => (o, Change::Applied, Cause::Resync),
            Ok(Event::Init | Event::InitDone) => continue,
            Err(err) => {
                tracing::debug!(cluster = %cluster, error = %err, "watch failed; retrying");
                continue;
            }
        };
        let Some(key) = key_of(&object, change) else {
            continue;
        };
        if let Some(relevant) = relevant
            && !seen.is_news(&key, change, relevant(&object))
            && matches!(cause, Cause::Change(_))
        {
            continue;
        }
        queue.add(key, cause);
    }
}

/// The relevant hash last seen of each object of one watch.
#[derive(Default)]
struct Seen(HashMap<String, u64>);

impl Seen {
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
        let queue = Arc::new(Queue::default());
        let mut watches = Watches::default();
        let first = Cluster::new("member1".into(), client());
        watches.follow(&registry(vec![first.clone()]), &queue);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), first.client_id)]
        );
        watches.follow(&registry(vec![first.clone()]), &queue);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), first.client_id)]
        );

        let rotated = Cluster::new("member1".into(), client());
        assert_ne!(rotated.client_id, first.client_id);
        watches.follow(&registry(vec![rotated.clone()]), &queue);
        assert_eq!(
            watches.watched(),
            [("member1".to_string(), rotated.client_id)]
        );
        watches.follow(&registry(Vec::new()), &queue);
        assert!(watches.watched().is_empty());
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
        let mut seen = Seen::default();
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
    fn our_own_copies_count_only_when_deleted() {
        let copy = slice(DISPATCH_MANAGER);
        assert_eq!(slice_key(&copy, Change::Applied), None);
        assert_eq!(
            slice_key(&copy, Change::Deleted).as_deref(),
            Some("shop/web")
        );
    }
}
