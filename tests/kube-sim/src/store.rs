//! The object store: every object by resource, namespace and name, the global resourceVersion
//! counter, and per-resource watch event history and broadcast channels.
//!
//! Each object's labels are extracted, and the object serialized, once per write and kept
//! beside it, with a per-resource index from label key and value to the objects carrying them:
//! selecting a list is a few map lookups rather than a walk of every object's JSON, and
//! answering it copies bytes rather than serializing every object again.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::object::{self, Labels};
use crate::registry::{GroupResource, Registry};
use crate::selector::{self, LabelSelector};

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

/// A stored object with its labels and its JSON encoding (both made when it was written).
#[derive(Debug, Clone)]
pub struct Stored {
    pub value: Arc<Value>,
    pub labels: Arc<Labels>,
    /// `serde_json::to_vec(&value)`.
    pub json: Arc<[u8]>,
    /// `metadata.name` and `metadata.namespace` as field selectors see them.
    pub name: Arc<str>,
    pub namespace: Arc<str>,
}

impl Stored {
    pub fn new(value: Value) -> Self {
        // Encoding a `Value` cannot fail (its map keys are strings).
        let json = serde_json::to_vec(&value).unwrap_or_default();
        Self {
            name: selector::field_text(&value, "metadata.name").into(),
            namespace: selector::field_text(&value, "metadata.namespace").into(),
            labels: Arc::new(object::labels(&value)),
            value: Arc::new(value),
            json: json.into(),
        }
    }
}

/// One change to one object, as watches see it.
#[derive(Debug)]
pub struct Change {
    pub resource_version: u64,
    pub event_type: EventType,
    pub object: Stored,
    /// The object before a modification (for selector transitions).
    pub previous: Option<Stored>,
}

/// `(namespace, name)`; the namespace is "" for cluster-scoped objects.
pub type ObjectKey = (String, String);

/// Label key → label value → the objects carrying that label.
type LabelIndex = HashMap<String, HashMap<String, BTreeSet<ObjectKey>>>;

/// Objects and recent changes of one resource.
#[derive(Debug)]
struct ResourceStore {
    objects: BTreeMap<ObjectKey, Stored>,
    /// Every label of every object in `objects`.
    label_index: LabelIndex,
    history: VecDeque<Arc<Change>>,
    /// Changes up to this resourceVersion may be missing from `history`.
    floor: u64,
    sender: broadcast::Sender<Arc<Change>>,
}

impl ResourceStore {
    fn new(floor: u64) -> Self {
        Self {
            objects: BTreeMap::new(),
            label_index: LabelIndex::new(),
            history: VecDeque::new(),
            floor,
            sender: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }

    /// Stores `stored` under `key`; returns what it replaced. Keeps the label index in step.
    fn insert(&mut self, key: ObjectKey, stored: Stored) -> Option<Stored> {
        let previous = self.objects.insert(key.clone(), stored.clone());
        match &previous {
            Some(p) if p.labels == stored.labels => {}
            Some(p) => {
                self.unindex(&key, &p.labels);
                self.index(&key, &stored.labels);
            }
            None => self.index(&key, &stored.labels),
        }
        previous
    }

    /// Forgets the object under `key`; returns it.
    fn take(&mut self, key: &ObjectKey) -> Option<Stored> {
        let removed = self.objects.remove(key)?;
        self.unindex(key, &removed.labels);
        Some(removed)
    }

    fn index(&mut self, key: &ObjectKey, labels: &Labels) {
        for (k, v) in labels {
            let values = self.label_index.entry(k.clone()).or_default();
            values.entry(v.clone()).or_default().insert(key.clone());
        }
    }

    fn unindex(&mut self, key: &ObjectKey, labels: &Labels) {
        for (k, v) in labels {
            let Some(values) = self.label_index.get_mut(k) else {
                continue;
            };
            if let Some(keys) = values.get_mut(v) {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(v);
                }
            }
            if values.is_empty() {
                self.label_index.remove(k);
            }
        }
    }

    /// The keys of the objects labelled `key=value` (in every namespace).
    fn labelled(&self, key: &str, value: &str) -> Option<&BTreeSet<ObjectKey>> {
        self.label_index.get(key)?.get(value)
    }

    /// The objects in `namespace` (None: all) whose labels `selector` matches, ordered by
    /// namespace and name.
    fn select(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Stored> {
        let matching = |stored: &Stored| selector.matches(&stored.labels);
        let Some(candidates) = self.candidates(namespace, selector) else {
            let scanned: Box<dyn Iterator<Item = &Stored>> = match namespace {
                None => Box::new(self.objects.values()),
                Some(ns) => Box::new(
                    self.objects
                        .range(namespace_start(ns)..)
                        .take_while(move |((n, _), _)| n == ns)
                        .map(|(_, stored)| stored),
                ),
            };
            return scanned.filter(|s| matching(s)).cloned().collect();
        };
        candidates
            .into_iter()
            .filter_map(|key| self.objects.get(key))
            .filter(|s| matching(s))
            .cloned()
            .collect()
    }

    /// With a `key=value` or `key in (...)` requirement: the keys of the objects in `namespace`
    /// that can meet the tightest one, sorted (None: the selector has no such requirement).
    fn candidates(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Option<Vec<&ObjectKey>> {
        let sets = |(key, values): (&str, &[String])| -> Vec<&BTreeSet<ObjectKey>> {
            values
                .iter()
                .filter_map(|v| self.labelled(key, v))
                .collect()
        };
        let total = |sets: &Vec<&BTreeSet<ObjectKey>>| sets.iter().map(|s| s.len()).sum::<usize>();
        let tightest = selector.equality_terms().map(sets).min_by_key(total)?;
        let mut keys: Vec<&ObjectKey> = Vec::new();
        for set in &tightest {
            match namespace {
                None => keys.extend(set.iter()),
                Some(ns) => keys.extend(
                    set.range(namespace_start(ns)..)
                        .take_while(|(n, _)| n == ns),
                ),
            }
        }
        // Sets of different values of one key are disjoint; merged, they need sorting.
        if tightest.len() > 1 {
            keys.sort_unstable();
        }
        Some(keys)
    }
}

/// The first key of `namespace` in key order.
fn namespace_start(namespace: &str) -> ObjectKey {
    (namespace.to_owned(), String::new())
}

/// The resource whose storage holds the objects of `resource` (both Event APIs share one).
fn stored_as(resource: &GroupResource) -> GroupResource {
    crate::kinds::storage_resource(resource)
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
            .entry(stored_as(resource))
            .or_insert_with(|| ResourceStore::new(floor));
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
        for (namespace, name) in &keys {
            self.remove(resource, namespace, name);
        }
        self.resources.remove(&stored_as(resource));
    }

    pub fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let key = (namespace.to_owned(), name.to_owned());
        let stored = self
            .resources
            .get(&stored_as(resource))?
            .objects
            .get(&key)?;
        Some(stored.value.clone())
    }

    /// Objects of `resource` whose labels `selector` matches, in one namespace or (None) all,
    /// ordered by namespace and name.
    pub fn select(
        &self,
        resource: &GroupResource,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Stored> {
        self.resources
            .get(&stored_as(resource))
            .map_or_else(Vec::new, |store| store.select(namespace, selector))
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
        let Some(store) = self.resources.get_mut(&stored_as(resource)) else {
            return Arc::new(obj);
        };
        let stored = Stored::new(obj);
        let obj = stored.value.clone();
        let previous = store.insert(key, stored.clone());
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
        let removed = self.resources.get_mut(&stored_as(resource))?.take(&key)?;
        self.resource_version += 1;
        let rv = self.resource_version;
        let mut last = Arc::unwrap_or_clone(removed.value);
        object::metadata_mut(&mut last).insert("resourceVersion".into(), json!(rv.to_string()));
        let change = Change {
            resource_version: rv,
            event_type: EventType::Deleted,
            object: Stored::new(last),
            previous: None,
        };
        let last = change.object.value.clone();
        self.record(resource, change);
        Some(last)
    }

    fn record(&mut self, resource: &GroupResource, change: Change) {
        let limit = self.history_limit;
        let Some(store) = self.resources.get_mut(&stored_as(resource)) else {
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
        self.resources
            .get(&stored_as(resource))
            .map(|r| r.sender.subscribe())
    }

    /// Changes of `resource` after resourceVersion `since`, or TooOld if some were forgotten.
    pub fn changes_since(
        &self,
        resource: &GroupResource,
        since: u64,
    ) -> Result<Vec<Arc<Change>>, TooOld> {
        let Some(store) = self.resources.get(&stored_as(resource)) else {
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
            .map(|(resource, s)| {
                let objects = s.objects.values().map(|o| o.value.clone()).collect();
                (resource.to_string(), objects)
            })
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

    fn labelled(ns: &str, name: &str, labels: Value) -> Value {
        json!({"metadata": {"namespace": ns, "name": name, "labels": labels}})
    }

    fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// `namespace/name` of the objects `selector` selects.
    fn selected(store: &Store, namespace: Option<&str>, selector: &str) -> Vec<String> {
        let selector = LabelSelector::parse(selector).unwrap();
        let objects = store.select(&services(), namespace, &selector);
        let named = objects.iter().map(|o| &o.value);
        named
            .map(|o| format!("{}/{}", object::namespace(o), object::name(o)))
            .collect()
    }

    /// The label index of services, as `key=value: [namespace/name, ...]`, sorted.
    fn index_of(store: &Store) -> Vec<String> {
        let index = &store.resources[&services()].label_index;
        let mut entries: Vec<String> = index
            .iter()
            .flat_map(|(k, values)| {
                values.iter().map(move |(v, keys)| {
                    let keys: Vec<String> = keys.iter().map(|(n, m)| format!("{n}/{m}")).collect();
                    format!("{k}={v}: {}", keys.join(" "))
                })
            })
            .collect();
        entries.sort();
        entries
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
            .select(&services(), Some("a"), &everything())
            .iter()
            .map(|o| object::name(&o.value).to_owned())
            .collect();
        assert_eq!(names, vec!["w", "x"]);
        assert_eq!(store.select(&services(), None, &everything()).len(), 4);
    }

    #[test]
    fn selecting_by_labels_keeps_namespace_and_name_order() {
        let mut store = store(10);
        let objects = [
            ("b", "y", json!({"app": "web", "tier": "front"})),
            ("a", "x", json!({"app": "web", "tier": "back"})),
            ("ab", "z", json!({"app": "web"})),
            ("a", "w", json!({"app": "db", "tier": "back"})),
            ("a", "v", json!({"app": "web", "n": 3})),
            ("", "c", json!({"app": "web"})),
        ];
        for (ns, name, labels) in objects {
            store.put(&services(), labelled(ns, name, labels));
        }
        let all_web = vec!["/c", "a/v", "a/x", "ab/z", "b/y"];
        assert_eq!(selected(&store, None, "app=web"), all_web);
        assert_eq!(selected(&store, None, "app in (web)"), all_web);
        assert_eq!(selected(&store, Some("a"), "app=web"), vec!["a/v", "a/x"]);
        assert_eq!(selected(&store, Some(""), "app=web"), vec!["/c"]);
        assert_eq!(
            selected(&store, None, "app in (db, web),tier=back"),
            vec!["a/w", "a/x"]
        );
        assert_eq!(
            selected(&store, Some("a"), "app in (web,db)"),
            vec!["a/v", "a/w", "a/x"]
        );
        assert_eq!(selected(&store, None, "tier,app!=db"), vec!["a/x", "b/y"]);
        assert_eq!(
            selected(&store, None, "app=web,!tier"),
            vec!["/c", "a/v", "ab/z"]
        );
        // Non-string label values count as absent, in the index as in the selector.
        assert!(selected(&store, None, "n=3").is_empty());
        assert_eq!(selected(&store, None, "!n").len(), 6);
        assert!(selected(&store, None, "app=api").is_empty());
        assert!(selected(&store, None, "nope in (a,b)").is_empty());
        assert!(selected(&store, Some("c"), "app=web").is_empty());
    }

    #[test]
    fn the_label_index_follows_label_changes_and_removals() {
        let mut store = store(10);
        store.put(
            &services(),
            labelled("a", "x", json!({"app": "web", "tier": "front"})),
        );
        store.put(&services(), labelled("a", "y", json!({"app": "web"})));
        assert_eq!(
            index_of(&store),
            vec!["app=web: a/x a/y", "tier=front: a/x"]
        );

        // A label change leaves no trace of the old value.
        store.put(
            &services(),
            labelled("a", "x", json!({"app": "db", "tier": "front"})),
        );
        assert_eq!(
            index_of(&store),
            vec!["app=db: a/x", "app=web: a/y", "tier=front: a/x"]
        );
        assert_eq!(selected(&store, None, "app=web"), vec!["a/y"]);
        assert_eq!(selected(&store, None, "app=db"), vec!["a/x"]);

        // Dropping every label (or making it non-string) unindexes the object.
        store.put(&services(), labelled("a", "x", json!({"tier": 1})));
        assert_eq!(index_of(&store), vec!["app=web: a/y"]);
        assert!(selected(&store, None, "tier=front").is_empty());

        store.remove(&services(), "a", "y");
        assert!(index_of(&store).is_empty());
        assert!(selected(&store, None, "app=web").is_empty());
        assert_eq!(selected(&store, None, ""), vec!["a/x"]);

        store.put(&services(), labelled("a", "y", json!({"app": "web"})));
        assert_eq!(selected(&store, None, "app=web"), vec!["a/y"]);
    }

    #[test]
    fn changes_carry_the_labels_before_and_after() {
        let mut store = store(10);
        store.put(&services(), labelled("a", "x", json!({"app": "web"})));
        store.put(&services(), labelled("a", "x", json!({"app": "db"})));
        store.remove(&services(), "a", "x");
        let changes = store.changes_since(&services(), 0).unwrap();
        let app = |s: &Stored| s.labels.get("app").cloned();
        assert_eq!(app(&changes[1].object).as_deref(), Some("db"));
        assert_eq!(
            changes[1].previous.as_ref().and_then(app).as_deref(),
            Some("web")
        );
        assert_eq!(changes[2].event_type, EventType::Deleted);
        assert_eq!(app(&changes[2].object).as_deref(), Some("db"));
    }

    #[test]
    fn dropping_a_resource_forgets_its_index() {
        let mut store = store(10);
        store.put(&services(), labelled("a", "x", json!({"app": "web"})));
        store.drop_resource(&services());
        store.ensure_resource(&services());
        assert!(index_of(&store).is_empty());
        assert!(selected(&store, None, "app=web").is_empty());
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
