//! The object store: every object by resource, namespace and name, the global resourceVersion
//! counter, and per-resource watch event history and broadcast channels.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::object;
use crate::registry::{GroupResource, Registry};

/// Capacity of each resource's broadcast channel; a watch that falls further behind is ended
/// and resumes from the history.
const BROADCAST_CAPACITY: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to one object, as watches see it.
#[derive(Debug)]
pub struct Change {
    pub resource_version: u64,
    pub event_type: EventType,
    pub object: Arc<Value>,
    /// The object before a modification (for selector transitions).
    pub previous: Option<Arc<Value>>,
}

/// `(namespace, name)`; the namespace is "" for cluster-scoped objects.
pub type ObjectKey = (String, String);

/// Objects and recent changes of one resource.
#[derive(Debug)]
struct ResourceStore {
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    history: VecDeque<Arc<Change>>,
    /// Changes up to this resourceVersion may be missing from `history`.
    floor: u64,
    sender: broadcast::Sender<Arc<Change>>,
}

impl ResourceStore {
    fn new(floor: u64) -> Self {
        Self {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            floor,
            sender: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }
}

/// Why a watch cannot resume from a resourceVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest: u64,
}

/// All state behind the API: served types and stored objects.
#[derive(Debug)]
pub struct Store {
    pub registry: Registry,
    resource_version: u64,
    history_limit: usize,
    resources: HashMap<GroupResource, ResourceStore>,
}

impl Store {
    pub fn new(registry: Registry, history_limit: usize) -> Self {
        let mut store = Self {
            registry,
            resource_version: 0,
            history_limit: history_limit.max(1),
            resources: HashMap::new(),
        };
        let served: Vec<GroupResource> = store.registry.all().map(|t| t.group_resource()).collect();
        for resource in served {
            store.ensure_resource(&resource);
        }
        store
    }

    /// The latest resourceVersion written.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// Starts storing `resource` if it is not stored yet.
    pub fn ensure_resource(&mut self, resource: &GroupResource) {
        let floor = self.resource_version;
        self.resources
            .entry(resource.clone())
            .or_insert_with(|| ResourceStore::new(floor));
    }

    /// Stops storing `resource`, announcing every object it held as DELETED and ending its watches.
    pub fn drop_resource(&mut self, resource: &GroupResource) {
        let Some(objects) = self.resources.get(resource).map(|r| r.objects.clone()) else {
            return;
        };
        for (namespace, name) in objects.keys() {
            self.remove(resource, namespace, name);
        }
        self.resources.remove(resource);
    }

    pub fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let key = (namespace.to_owned(), name.to_owned());
        self.resources.get(resource)?.objects.get(&key).cloned()
    }

    /// Objects of `resource`, in one namespace or (None) all, ordered by namespace and name.
    pub fn list(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(store) = self.resources.get(resource) else {
            return Vec::new();
        };
        match namespace {
            None => store.objects.values().cloned().collect(),
            Some(ns) => {
                let start = (ns.to_owned(), String::new());
                store
                    .objects
                    .range(start..)
                    .take_while(|((n, _), _)| n == ns)
                    .map(|(_, o)| o.clone())
                    .collect()
            }
        }
    }

    /// Stores `obj` (creating or replacing it) under a new resourceVersion and announces it.
    pub fn put(&mut self, resource: &GroupResource, mut obj: Value) -> Arc<Value> {
        self.resource_version += 1;
        let rv = self.resource_version;
        object::metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let key = (
            object::namespace(&obj).to_owned(),
            object::name(&obj).to_owned(),
        );
        let obj = Arc::new(obj);
        let Some(store) = self.resources.get_mut(resource) else {
            return obj;
        };
        let previous = store.objects.insert(key, obj.clone());
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        let change = Change {
            resource_version: rv,
            event_type,
            object: obj.clone(),
            previous,
        };
        self.record(resource, change);
        obj
    }

    /// Removes an object under a new resourceVersion and announces it; returns its last state.
    pub fn remove(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let key = (namespace.to_owned(), name.to_owned());
        let removed = self.resources.get_mut(resource)?.objects.remove(&key)?;
        self.resource_version += 1;
        let rv = self.resource_version;
        let mut last = Arc::unwrap_or_clone(removed);
        object::metadata_mut(&mut last).insert("resourceVersion".into(), json!(rv.to_string()));
        let last = Arc::new(last);
        let change = Change {
            resource_version: rv,
            event_type: EventType::Deleted,
            object: last.clone(),
            previous: None,
        };
        self.record(resource, change);
        Some(last)
    }

    fn record(&mut self, resource: &GroupResource, change: Change) {
        let limit = self.history_limit;
        let Some(store) = self.resources.get_mut(resource) else {
            return;
        };
        let change = Arc::new(change);
        store.history.push_back(change.clone());
        while store.history.len() > limit {
            if let Some(evicted) = store.history.pop_front() {
                store.floor = evicted.resource_version;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = store.sender.send(change);
    }

    /// A receiver of every future change of `resource`.
    pub fn subscribe(&self, resource: &GroupResource) -> Option<broadcast::Receiver<Arc<Change>>> {
        self.resources.get(resource).map(|r| r.sender.subscribe())
    }

    /// Changes of `resource` after resourceVersion `since`, or TooOld if some were forgotten.
    pub fn changes_since(
        &self,
        resource: &GroupResource,
        since: u64,
    ) -> Result<Vec<Arc<Change>>, TooOld> {
        let Some(store) = self.resources.get(resource) else {
            return Ok(Vec::new());
        };
        if since < store.floor {
            return Err(TooOld {
                requested: since,
                oldest: store.floor,
            });
        }
        Ok(store
            .history
            .iter()
            .filter(|c| c.resource_version > since)
            .cloned()
            .collect())
    }

    /// Every stored object, by resource (`plural` or `plural.group`).
    pub fn dump(&self) -> BTreeMap<String, Vec<Arc<Value>>> {
        let dumped = self.resources.iter().filter(|(_, s)| !s.objects.is_empty());
        dumped
            .map(|(resource, s)| (resource.to_string(), s.objects.values().cloned().collect()))
            .collect()
    }

    /// Forgets every object and every resource not in `registry`, which replaces the current one.
    /// Open watches end, since their channels close.
    pub fn reset(&mut self, registry: Registry) {
        self.registry = registry;
        self.resources.clear();
        let served: Vec<GroupResource> = self.registry.all().map(|t| t.group_resource()).collect();
        for resource in served {
            self.ensure_resource(&resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    fn store(history: usize) -> Store {
        Store::new(Registry::with_types(builtin::builtin_types()), history)
    }

    fn services() -> GroupResource {
        GroupResource::new("", "services")
    }

    fn service(ns: &str, name: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name}})
    }

    #[test]
    fn every_write_bumps_the_global_resource_version() {
        let mut store = store(10);
        let a = store.put(&services(), service("a", "web"));
        let b = store.put(&GroupResource::new("", "configmaps"), service("a", "cfg"));
        assert_eq!(object::resource_version(&a), "1");
        assert_eq!(object::resource_version(&b), "2");
        let gone = store.remove(&services(), "a", "web").unwrap();
        assert_eq!(object::resource_version(&gone), "3");
        assert_eq!(store.resource_version(), 3);
    }

    #[test]
    fn listing_a_namespace_returns_only_its_objects() {
        let mut store = store(10);
        for (ns, name) in [("a", "x"), ("b", "y"), ("ab", "z"), ("a", "w")] {
            store.put(&services(), service(ns, name));
        }
        let names: Vec<String> = store
            .list(&services(), Some("a"))
            .iter()
            .map(|o| object::name(o).to_owned())
            .collect();
        assert_eq!(names, vec!["w", "x"]);
        assert_eq!(store.list(&services(), None).len(), 4);
    }

    #[test]
    fn changes_older_than_the_history_are_too_old() {
        let mut store = store(2);
        for name in ["a", "b", "c", "d"] {
            store.put(&services(), service("ns", name));
        }
        assert_eq!(
            store.changes_since(&services(), 1).unwrap_err(),
            TooOld {
                requested: 1,
                oldest: 2
            }
        );
        let since_two: Vec<u64> = store
            .changes_since(&services(), 2)
            .unwrap()
            .iter()
            .map(|c| c.resource_version)
            .collect();
        assert_eq!(since_two, vec![3, 4]);
    }
}
