//! The watch of the hub's MultiClusterServices: the kube-runtime Controller's own stream, and
//! what of an MCS is news to it (its spec and whether it is being deleted, heard after a list).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::channel::mpsc;
use kube::Resource;
use kube::api::DynamicObject;
use kube::runtime::reflector;
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;

use super::{Changes, Reactions};
use crate::clusters::Cluster;
use crate::controller::cache::Store;
use crate::controller::cache::watch::{self, News, Watch};

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Applied,
    Deleted,
}

/// Starts the watch of the hub's MultiClusterServices: it fills `store` (what passes read),
/// mirrors every event, metadata only, into `writer` (the store the Controller runs on), and
/// sends into the returned stream every MCS whose spec or deletion changed
/// ([`mcs_relevant`]); the controller's own status and finalizer writes are not news. A list
/// after a failure is reported to `reactions` like any store's.
pub fn watch_mcs(
    hub: &Cluster,
    store: Store<DynamicObject>,
    mut writer: reflector::store::Writer<DynamicObject>,
    reactions: Reactions,
) -> (
    JoinHandle<()>,
    mpsc::UnboundedReceiver<Result<DynamicObject, watcher::Error>>,
) {
    let (sender, stream) = mpsc::unbounded();
    // A list starts with `Init`, which only the mirror sees; the news of the list follow.
    let list_started = Arc::new(AtomicBool::new(false));
    let started = list_started.clone();
    let mirror = move |event: &Event<DynamicObject>| {
        if matches!(event, Event::Init) {
            started.store(true, Ordering::Relaxed);
        }
        writer.apply_watcher_event(&event.clone().modify(keep_metadata_only));
    };
    let scope = reactions.triggers.scope.hearing(store.clone());
    let watch = Watch {
        cluster: hub.name.clone(),
        resource: "multiclusterservices",
        api: crate::controller::cache::mcs_api(hub),
        config: watch::config(),
        store,
        keep: crate::controller::cache::kept::mcs,
        mirror: Some(Box::new(mirror)),
        wake: Arc::default(),
    };
    let changes = reactions.triggers.changes.clone();
    let cluster = hub.name.clone();
    let mut seen = RelevantHashes::default();
    // The members' caches keep the groups the MCSs name: the scope hears every news first.
    let task = tokio::spawn(watch.run(move |news| {
        if list_started.swap(false, Ordering::Relaxed) {
            seen.list_started();
        }
        watched_mcs(
            scope.heard(news),
            &mut seen,
            &changes,
            &sender,
            &reactions,
            &cluster,
        );
    }));
    (task, stream)
}

/// What the watch of the hub's MCSs does with one piece of news (see [`watch_mcs`]).
fn watched_mcs(
    news: News<'_, DynamicObject>,
    seen: &mut RelevantHashes,
    changes: &Changes,
    sender: &mpsc::UnboundedSender<Result<DynamicObject, watcher::Error>>,
    reactions: &Reactions,
    cluster: &str,
) {
    match news {
        News::Listed { object } => seen.listed(object),
        News::Changed {
            object, deleted, ..
        } => {
            if let Some(mcs) = seen.mcs_to_reconcile(object, deleted, changes) {
                let mut mcs = mcs;
                keep_metadata_only(&mut mcs);
                // Closed only when the Controller is gone, i.e. when syncing stops.
                sender.unbounded_send(Ok(mcs)).ok();
            }
        }
        News::Synced { returned } => {
            seen.list_done();
            if returned {
                reactions.relisted.unbounded_send(cluster.to_string()).ok();
            }
        }
        News::Failed { kind, .. } => {
            seen.list_failed();
            reactions.metrics.cluster_error(cluster, kind);
        }
    }
}

/// What the Controller's store keeps of an MCS: its metadata (name, uid, generation, deletion,
/// which is all a trigger and the resync need; passes read the whole MCS from the cache), not
/// its spec, status or managedFields.
fn keep_metadata_only(mcs: &mut DynamicObject) {
    mcs.data = serde_json::Value::Null;
    mcs.metadata.managed_fields = None;
}

/// The relevant hash last seen of each object of one watch. A completed list replaces them
/// all: an MCS deleted while the watch was broken (no event said so) is forgotten.
#[derive(Default)]
struct RelevantHashes {
    /// What the watch has seen.
    seen: HashMap<String, u64>,
    /// The list under way, if one is: what it has given so far.
    listing: Option<HashMap<String, u64>>,
}

impl RelevantHashes {
    /// A list starts.
    fn list_started(&mut self) {
        self.listing = Some(HashMap::new());
    }

    /// Records an MCS of a list: how it is, not news.
    fn listed(&mut self, mcs: &DynamicObject) {
        if let Some(key) = object_key(mcs) {
            let listing = self.listing.get_or_insert_with(HashMap::new);
            listing.insert(key, mcs_relevant(mcs));
        }
    }

    /// The watch is synced: after a list, what it gave is all there is; after a watch that
    /// resumed without one, what was seen stands.
    fn list_done(&mut self) {
        if let Some(listing) = self.listing.take() {
            self.seen = listing;
        }
    }

    /// The watch failed (maybe during a list): the next list starts afresh.
    fn list_failed(&mut self) {
        self.listing = None;
    }

    /// The MCS a watched change asks to reconcile: one whose relevant part changed (its
    /// change is timed in `changes`). A deleted MCS is gone from the hub (the finalizer, if it
    /// had ours, was removed by its last pass): nothing to reconcile.
    fn mcs_to_reconcile(
        &mut self,
        mcs: &DynamicObject,
        deleted: bool,
        changes: &Changes,
    ) -> Option<DynamicObject> {
        let key = object_key(mcs)?;
        if deleted {
            self.is_news(&key, Change::Deleted, 0);
            return None;
        }
        if !self.is_news(&key, Change::Applied, mcs_relevant(mcs)) {
            return None;
        }
        changes.seen(&key, Instant::now());
        Some(mcs.clone())
    }

    /// Records `change` of `key` with relevant hash `now`; whether it changed anything relevant
    /// (a deletion always does).
    fn is_news(&mut self, key: &str, change: Change, now: u64) -> bool {
        match change {
            Change::Deleted => {
                self.seen.remove(key);
                true
            }
            Change::Applied => self.seen.insert(key.to_string(), now) != Some(now),
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
fn object_key<K: Resource>(object: &K) -> Option<String> {
    let meta = object.meta();
    Some(format!(
        "{}/{}",
        meta.namespace.as_deref()?,
        meta.name.as_deref()?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::names::mcs_resource;
    use serde_json::json;

    fn mcs(generation: i64) -> DynamicObject {
        let mut o = DynamicObject::new("web", &mcs_resource()).within("shop");
        o.metadata.generation = Some(generation);
        o
    }

    #[test]
    fn listed_mcss_are_not_news_and_watched_ones_are_when_their_spec_changed() {
        let changes = Changes::default();
        let mut seen = RelevantHashes::default();
        seen.listed(&mcs(1));
        seen.list_done();
        assert!(seen.mcs_to_reconcile(&mcs(1), false, &changes).is_none());
        assert!(changes.is_empty(), "a listing is not a change");
        assert!(seen.mcs_to_reconcile(&mcs(2), false, &changes).is_some());
        assert!(
            changes.take("shop/web").is_some(),
            "a watched change is timed"
        );
        assert!(seen.mcs_to_reconcile(&mcs(2), true, &changes).is_none());
        assert!(
            seen.mcs_to_reconcile(&mcs(2), false, &changes).is_some(),
            "re-created"
        );
    }

    #[test]
    fn only_spec_and_deletion_changes_of_an_mcs_are_news() {
        let mcs = |generation: i64, finalizers: &[&str], status: &str| {
            let mut o = mcs(generation);
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
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert!(seen.is_news("shop/web", Change::Applied, mcs_relevant(&deleting)));
        assert!(seen.is_news("shop/web", Change::Deleted, mcs_relevant(&deleting)));
        assert!(
            seen.is_news("shop/web", Change::Applied, mcs_relevant(&first)),
            "re-created"
        );
    }

    fn named(name: &str, generation: i64) -> DynamicObject {
        let mut o = mcs(generation);
        o.metadata.name = Some(name.to_string());
        o
    }

    #[test]
    fn a_completed_list_replaces_what_the_watch_had_seen() {
        let changes = Changes::default();
        let mut seen = RelevantHashes::default();
        seen.list_started();
        seen.listed(&named("a", 1));
        seen.listed(&named("b", 1));
        seen.list_done();
        assert_eq!(seen.seen.len(), 2);
        // A watch that failed and resumed without a list keeps what it had seen.
        seen.list_failed();
        seen.list_done();
        assert_eq!(seen.seen.len(), 2);
        // The watch breaks; b is deleted meanwhile (no event), c created. A list that fails
        // half-way leaves nothing behind; the next one replaces everything.
        seen.list_started();
        seen.listed(&named("a", 1));
        seen.list_failed();
        seen.list_started();
        seen.listed(&named("a", 2));
        seen.listed(&named("c", 1));
        seen.list_done();
        let mut keys: Vec<_> = seen.seen.keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["shop/a", "shop/c"],
            "b, deleted unseen, is forgotten"
        );
        assert!(
            seen.mcs_to_reconcile(&named("a", 2), false, &changes)
                .is_none(),
            "as listed: not news"
        );
        assert!(changes.is_empty());
        // An empty list leaves nothing.
        seen.list_started();
        seen.list_done();
        assert!(seen.seen.is_empty());
    }

    #[test]
    fn the_controllers_store_keeps_an_mcs_metadata_only() {
        let mut o = mcs(3);
        o.data = json!({"spec": {"types": ["CrossCluster"]}});
        o.metadata.managed_fields = Some(Vec::new());
        keep_metadata_only(&mut o);
        assert_eq!(o.data, serde_json::Value::Null);
        assert_eq!(o.metadata.managed_fields, None);
        assert_eq!(o.metadata.generation, Some(3));
    }
}
