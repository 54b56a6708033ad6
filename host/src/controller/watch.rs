//! Triggers: watches that turn changes into MultiClusterService keys on the [`Queue`], so a
//! change reaches the consumers without waiting for a resync.
//!
//! - an MCS in the hub → its key;
//! - a Service in the hub (the template) → the key of the MCS of the same name;
//! - an EndpointSlice in a member → the key of its `kubernetes.io/service-name`; our own
//!   copies count only when deleted (someone removed one by hand: put it back now), since
//!   every write of ours would otherwise trigger one more reconcile.
//!
//! Member watches follow the membership: [`Watches::follow`] starts those of new members and
//! stops those of members that left.

use std::collections::HashMap;
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
use super::read::{SERVICE_NAME_LABEL, mcs_resource};
use crate::clusters::{Cluster, Registry};

/// `endpointslice.kubernetes.io/managed-by`.
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The managed-by value of the copies we make (SPEC §4.5).
const DISPATCH_MANAGER: &str = "endpointslice-dispatch-controller.karmada.io";

/// Which MCS an object's change concerns, if any.
type KeyOf<K> = fn(&K, Change) -> Option<String>;

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
    members: HashMap<String, JoinHandle<()>>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in self.hub.drain(..) {
            task.abort();
        }
        for (_, task) in self.members.drain() {
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
                    object_key,
                    queue,
                ),
                spawn(
                    &hub.name,
                    services,
                    watcher::Config::default(),
                    object_key,
                    queue,
                ),
            ],
            members: HashMap::new(),
        }
    }

    /// Starts the slice watch of each member of `registry` not watched yet; stops those of
    /// members no longer in it.
    pub fn follow(&mut self, registry: &Registry, queue: &Arc<Queue>) {
        self.members.retain(|name, task| {
            let keep = registry.member(name).is_some();
            if !keep {
                tracing::info!(cluster = %name, "member left: its watch stops");
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
            let task = spawn(&member.name, slices, config, slice_key, queue);
            self.members.insert(member.name.clone(), task);
        }
    }
}

fn spawn<K>(
    cluster: &str,
    api: Api<K>,
    config: watcher::Config,
    key_of: KeyOf<K>,
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
/// are queued as a resync: they are not news.
async fn forward<K>(
    cluster: String,
    api: Api<K>,
    config: watcher::Config,
    key_of: KeyOf<K>,
    queue: Arc<Queue>,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = watch_stream(api, config).default_backoff().boxed();
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
        if let Some(key) = key_of(&object, change) {
            queue.add(key, cause);
        }
    }
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
