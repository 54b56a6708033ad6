//! The object store: every object by resource and key, the global resourceVersion counter
//! (etcd's revision), and per resource its label index, its remembered changes
//! ([`History`]), the resourceVersion its watch cache has reached, and a broadcast channel for
//! watches.
//!
//! Each object's labels, key and encoding are made once per write ([`Stored`]), with a
//! per-resource index from label key and value to the objects carrying them: selecting a list
//! is a few map lookups rather than a walk of every object's JSON, and answering it copies
//! bytes rather than serializing every object again. Resources whose objects hold values that
//! must stay unique (Services' cluster IPs and node ports) also keep a [`ValueIndex`] of them.
//!
//! The watch cache's resourceVersion ([`Store::cache_resource_version`]) is the newest
//! revision the resource's cache knows of: it follows the resource's own writes, and jumps to
//! the current revision when a consistent read makes the cache ask etcd for progress
//! ([`Store::sync_cache`]). Lists served from the cache answer it, and bookmarks carry it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::field_selector::FieldSelector;
use crate::history::{Change, EventType, History, TooOld};
use crate::label_index::LabelIndex;
use crate::listing::{self, Page, Query};
use crate::object;
use crate::registry::{GroupResource, Registry};
use crate::selector::LabelSelector;
use crate::stored::{ObjectKey, Stored};
use crate::types::service::ServiceCidr;
use crate::value_index::ValueIndex;
use crate::watch_window::WindowPolicy;

/// Capacity of each resource's broadcast channel; a watch that falls further behind is ended
/// and resumes from the history.
const BROADCAST_CAPACITY: usize = 4096;

/// Why the state at a revision cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotError {
    /// Compacted away (or from before the resource was served).
    Compacted,
    /// Newer than the newest revision.
    TooLarge { requested: u64, current: u64 },
}

/// Objects and recent changes of one resource.
#[derive(Debug)]
struct ResourceStore {
    objects: BTreeMap<ObjectKey, Stored>,
    /// Every label of every object in `objects`.
    labels: LabelIndex,
    /// The values the resource's objects must not share, for resources that have such values.
    values: Option<ValueIndex>,
    history: History,
    /// The newest revision the resource's watch cache knows of (atomic: progress
    /// notifications move it under the read lock).
    cache_rv: AtomicU64,
    sender: broadcast::Sender<Arc<Change>>,
}

impl ResourceStore {
    fn new(start: u64, window: WindowPolicy, values: Option<ValueIndex>) -> Self {
        Self {
            objects: BTreeMap::new(),
            labels: LabelIndex::default(),
            values,
            history: History::new(start, window),
            cache_rv: AtomicU64::new(start),
            sender: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }

    /// Stores `stored`; returns what it replaced. Keeps the label index in step.
    fn insert(&mut self, stored: Stored) -> Option<Stored> {
        let key = (*stored.key).clone();
        let previous = self.objects.insert(key.clone(), stored.clone());
        match &previous {
            Some(p) if p.labels == stored.labels => {}
            Some(p) => {
                self.labels.remove(&key, &p.labels);
                self.labels.add(&key, &stored.labels);
            }
            None => self.labels.add(&key, &stored.labels),
        }
        if let Some(values) = &mut self.values {
            if let Some(p) = &previous {
                values.remove(&key, &p.value);
            }
            values.add(&key, &stored.value);
        }
        previous
    }

    /// Forgets the object under `key`; returns it.
    fn take(&mut self, key: &ObjectKey) -> Option<Stored> {
        let removed = self.objects.remove(key)?;
        self.labels.remove(key, &removed.labels);
        if let Some(values) = &mut self.values {
            values.remove(key, &removed.value);
        }
        Some(removed)
    }
}

/// All state behind the API: served types and stored objects.
#[derive(Debug)]
pub struct Store {
    pub registry: Registry,
    resource_version: u64,
    /// The revision of the last compaction: older states cannot be read.
    compacted: u64,
    window: WindowPolicy,
    resources: HashMap<GroupResource, ResourceStore>,
    /// The network Services get their cluster IPs from (`--service-cluster-ip-range`).
    pub service_cidr: ServiceCidr,
}

/// The resource whose storage holds the objects of `resource` (both Event APIs share one).
fn stored_as(resource: &GroupResource) -> GroupResource {
    crate::kinds::storage_resource(resource)
}

impl Store {
    /// A store whose watch windows hold `history_limit` events (0: sized like the apiserver's).
    pub fn new(registry: Registry, history_limit: usize) -> Self {
        let mut store = Self {
            registry,
            resource_version: 0,
            compacted: 0,
            window: WindowPolicy::from_events(history_limit),
            resources: HashMap::new(),
            service_cidr: ServiceCidr::default(),
        };
        store.serve_registry();
        store
    }

    fn serve_registry(&mut self) {
        let served: Vec<GroupResource> = self.registry.all().map(|t| t.group_resource()).collect();
        for resource in served {
            self.ensure_resource(&resource);
        }
    }

    /// The latest resourceVersion written.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The revision of the last compaction.
    pub fn compacted_revision(&self) -> u64 {
        self.compacted
    }

    /// Starts storing `resource` if it is not stored yet.
    pub fn ensure_resource(&mut self, resource: &GroupResource) {
        let (start, window) = (self.resource_version, self.window);
        let values = crate::types::unique_values(resource).map(ValueIndex::new);
        self.resources
            .entry(stored_as(resource))
            .or_insert_with(|| ResourceStore::new(start, window, values));
    }

    /// Stops storing `resource`, announcing every object it held as DELETED and ending its watches.
    pub fn drop_resource(&mut self, resource: &GroupResource) {
        let Some(keys) = self
            .resources
            .get(&stored_as(resource))
            .map(|r| r.objects.keys().cloned().collect::<Vec<_>>())
        else {
            return;
        };
        for key in &keys {
            self.remove(resource, &key.namespace, &key.name);
        }
        self.resources.remove(&stored_as(resource));
    }

    pub fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let stored = self.get_stored(resource, namespace, name)?;
        Some(stored.value.clone())
    }

    pub fn get_stored(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<&Stored> {
        let key = ObjectKey::new(namespace, name);
        self.resources.get(&stored_as(resource))?.objects.get(&key)
    }

    /// Whether an object of `resource` other than the one under `except` holds `value`, one of
    /// the values `types::unique_values` says its objects must not share (false for resources
    /// without such values).
    pub fn value_held(&self, resource: &GroupResource, value: &str, except: &ObjectKey) -> bool {
        let store = self.resources.get(&stored_as(resource));
        let values = store.and_then(|s| s.values.as_ref());
        values.is_some_and(|v| v.held_by_other(value, except))
    }

    /// Objects of `resource` whose labels `selector` matches, in one namespace or (None) all,
    /// in key order.
    pub fn select(
        &self,
        resource: &GroupResource,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Stored> {
        let fields = FieldSelector::default();
        let query = Query {
            namespace,
            labels: selector,
            fields: &fields,
            start: None,
            limit: None,
        };
        self.page(resource, &query, None)
            .map(|p| p.items)
            .unwrap_or_default()
    }

    /// The page of `resource` the query selects, from the current state or (`at`) from the
    /// state at that revision.
    pub fn page(
        &self,
        resource: &GroupResource,
        query: &Query<'_>,
        at: Option<u64>,
    ) -> Result<Page, SnapshotError> {
        let Some(store) = self.resources.get(&stored_as(resource)) else {
            return Ok(Page::default());
        };
        let Some(rv) = at.filter(|rv| *rv != self.resource_version) else {
            return Ok(listing::page(&store.objects, Some(&store.labels), query));
        };
        if rv > self.resource_version {
            return Err(SnapshotError::TooLarge {
                requested: rv,
                current: self.resource_version,
            });
        }
        if rv < self.compacted || rv < store.history.start() {
            return Err(SnapshotError::Compacted);
        }
        if store.history.latest().is_none_or(|latest| latest <= rv) {
            // Nothing changed since: the current state is the state at `rv`.
            return Ok(listing::page(&store.objects, Some(&store.labels), query));
        }
        let state = store.history.state_at(&store.objects, rv);
        Ok(listing::page(&state, None, query))
    }

    /// Stores `obj` (creating or replacing it) under a new resourceVersion and announces it.
    pub fn put(&mut self, resource: &GroupResource, mut obj: Value) -> Arc<Value> {
        let Some(store) = self.resources.get_mut(&stored_as(resource)) else {
            return Arc::new(obj);
        };
        self.resource_version += 1;
        let rv = self.resource_version;
        object::metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let stored = Stored::new(obj);
        let obj = stored.value.clone();
        let previous = store.insert(stored.clone());
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        let change = Change {
            resource_version: rv,
            event_type,
            object: stored,
            previous,
            recorded_at: std::time::Instant::now(),
        };
        self.record(resource, change);
        obj
    }

    /// Removes an object under a new resourceVersion and announces it; returns its last state
    /// (at the new resourceVersion, as DELETED events carry it).
    pub fn remove(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let key = ObjectKey::new(namespace, name);
        let removed = self.resources.get_mut(&stored_as(resource))?.take(&key)?;
        self.resource_version += 1;
        let rv = self.resource_version;
        let mut last = (*removed.value).clone();
        object::metadata_mut(&mut last).insert("resourceVersion".into(), json!(rv.to_string()));
        let change = Change {
            resource_version: rv,
            event_type: EventType::Deleted,
            object: Stored::new(last),
            previous: Some(removed),
            recorded_at: std::time::Instant::now(),
        };
        let last = change.object.value.clone();
        self.record(resource, change);
        Some(last)
    }

    fn record(&mut self, resource: &GroupResource, change: Change) {
        let compacted = self.compacted;
        let Some(store) = self.resources.get_mut(&stored_as(resource)) else {
            return;
        };
        store
            .cache_rv
            .fetch_max(change.resource_version, Ordering::Relaxed);
        let change = Arc::new(change);
        store.history.record(change.clone(), compacted);
        // No receivers is fine: nobody is watching.
        let _ = store.sender.send(change);
    }

    /// A receiver of every future change of `resource`.
    pub fn subscribe(&self, resource: &GroupResource) -> Option<broadcast::Receiver<Arc<Change>>> {
        self.resources
            .get(&stored_as(resource))
            .map(|r| r.sender.subscribe())
    }

    /// The watch window's changes of `resource` after resourceVersion `since`, or TooOld if
    /// some were dropped from it.
    pub fn changes_since(
        &self,
        resource: &GroupResource,
        since: u64,
    ) -> Result<Vec<Arc<Change>>, TooOld> {
        match self.resources.get(&stored_as(resource)) {
            Some(store) => store.history.events_since(since),
            None => Ok(Vec::new()),
        }
    }

    /// The newest revision the watch cache of `resource` knows of.
    pub fn cache_resource_version(&self, resource: &GroupResource) -> u64 {
        self.resources
            .get(&stored_as(resource))
            .map_or(self.resource_version, |r| {
                r.cache_rv.load(Ordering::Relaxed)
            })
    }

    /// A progress notification: the watch cache of `resource` learns the current revision (what
    /// a consistent read, or one waiting for a newer revision, makes the cacher request).
    pub fn sync_cache(&self, resource: &GroupResource) -> u64 {
        let current = self.resource_version;
        if let Some(store) = self.resources.get(&stored_as(resource)) {
            store.cache_rv.fetch_max(current, Ordering::Relaxed);
        }
        current
    }

    /// Compacts at `revision` (at most the current one): states before it can no longer be
    /// read, and the changes only they needed are forgotten. Returns the compacted revision.
    pub fn compact(&mut self, revision: u64) -> u64 {
        self.compacted = self.compacted.max(revision.min(self.resource_version));
        for store in self.resources.values_mut() {
            store.history.compact(self.compacted);
        }
        self.compacted
    }

    /// The API server restarted: every resource's watch cache starts again, empty, at the
    /// current revision, so a watch from an older resourceVersion gets 410 Expired (`too old
    /// resource version: R (CURRENT)`), as kube-apiserver answers after a restart. Objects and
    /// the states at older revisions (etcd's) are kept.
    pub fn restart_watch_caches(&mut self) {
        let current = self.resource_version;
        for store in self.resources.values_mut() {
            store.history.restart(current);
            store.cache_rv.store(current, Ordering::Relaxed);
        }
    }

    /// Every stored object, by resource (`plural` or `plural.group`).
    pub fn dump(&self) -> BTreeMap<String, Vec<Arc<Value>>> {
        let dumped = self.resources.iter().filter(|(_, s)| !s.objects.is_empty());
        dumped
            .map(|(resource, s)| {
                let objects = s.objects.values().map(|o| o.value.clone()).collect();
                (resource.to_string(), objects)
            })
            .collect()
    }

    /// Forgets every object and every resource not in `registry`, which replaces the current one.
    /// Open watches end, since their channels close; older states can no longer be read.
    pub fn reset(&mut self, registry: Registry) {
        self.registry = registry;
        self.resources.clear();
        self.compacted = self.resource_version;
        self.serve_registry();
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
