//! The exported names the clusterset side passes over (*keys*, `namespace/name`), and what a
//! change of an object tells about them.
//!
//! A name is a key from the moment any member holds a ServiceExport of it, or anything of ours
//! for it (a ServiceImport, a derived Service, an imported EndpointSlice: the clusterset caches
//! watch all three, [`super::ours`]); it stays one while anything of ours for it
//! remains, so the pass after the last export's deletion deletes the imports, and so do the
//! passes at start over what outlived its exports while the controller was stopped. Keys with
//! nothing left are dropped at the resync ([`Keys::retain`]).
//!
//! Each key is one synthetic object in the reflector store kube-runtime's `Controller` runs on
//! (only its namespace and name), so the Controller gives the key at most one pass at a time and
//! merges the triggers that arrive meanwhile. The member stores keep the key's groups
//! (`namespace/name` and `namespace/derived-...`) through [`Scope::also_want`].

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use futures::channel::mpsc;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;

use super::gates::NamespaceGates;
use super::names::derived_name;
use crate::controller::cache::Scope;

/// The resource of the synthetic objects the Controller runs on (never sent to a server).
pub fn key_resource() -> ApiResource {
    super::names::export_resource()
}

/// The keys, the Controller's store of them, and where passes are requested.
pub struct Keys {
    inner: Mutex<Inner>,
    scope: Scope,
    sender: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    /// The members' missing namespaces, as this controller's writes found them.
    namespace_gates: NamespaceGates,
}

struct Inner {
    /// `(namespace, name)`.
    keys: HashSet<(String, String)>,
    /// `(namespace, derived name)` → name.
    derived: HashMap<(String, String), String>,
    writer: Writer<DynamicObject>,
}

impl Keys {
    /// No key yet; `writer` fills the Controller's store, `sender` is its `reconcile_on`.
    pub fn new(
        scope: Scope,
        mut writer: Writer<DynamicObject>,
        sender: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    ) -> Keys {
        // Empty and ready: keys come and go one by one.
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitDone);
        Keys {
            inner: Mutex::new(Inner {
                keys: HashSet::new(),
                derived: HashMap::new(),
                writer,
            }),
            scope,
            sender,
            namespace_gates: NamespaceGates::default(),
        }
    }

    /// The members' missing namespaces, as this controller's writes found them.
    pub fn namespace_gates(&self) -> &NamespaceGates {
        &self.namespace_gates
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `namespace/name` is a key (from now on, if it was not); answers whether it is new.
    pub fn add(&self, namespace: &str, name: &str) -> bool {
        let mut inner = self.inner();
        if !inner.keys.insert((namespace.to_string(), name.to_string())) {
            return false;
        }
        let derived = derived_name(namespace, name);
        inner
            .derived
            .insert((namespace.to_string(), derived.clone()), name.to_string());
        inner
            .writer
            .apply_watcher_event(&Event::Apply(synthetic(namespace, name)));
        drop(inner);
        self.scope.also_want(namespace, name, true);
        self.scope.also_want(namespace, &derived, true);
        true
    }

    /// Whether `namespace/name` is a key.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.inner()
            .keys
            .contains(&(namespace.to_string(), name.to_string()))
    }

    /// Keeps only the keys `keep` says to keep.
    pub fn retain(&self, keep: impl Fn(&str, &str) -> bool) {
        let mut inner = self.inner();
        let gone: Vec<(String, String)> = inner
            .keys
            .iter()
            .filter(|(ns, name)| !keep(ns, name))
            .cloned()
            .collect();
        for (namespace, name) in &gone {
            inner.keys.remove(&(namespace.clone(), name.clone()));
            let derived = derived_name(namespace, name);
            inner.derived.remove(&(namespace.clone(), derived.clone()));
            inner
                .writer
                .apply_watcher_event(&Event::Delete(synthetic(namespace, name)));
        }
        drop(inner);
        for (namespace, name) in gone {
            tracing::debug!(%namespace, %name, "nothing exported or imported of this name any more");
            self.scope.also_want(&namespace, &name, false);
            self.scope
                .also_want(&namespace, &derived_name(&namespace, &name), false);
        }
    }

    /// Every key.
    pub fn all(&self) -> Vec<(String, String)> {
        let mut all: Vec<_> = self.inner().keys.iter().cloned().collect();
        all.sort();
        all
    }

    /// The key a member store's group `namespace/group` belongs to (its exported name, or its
    /// derived Service's name), if any.
    pub fn of_group(&self, namespace: &str, group: &str) -> Option<String> {
        let inner = self.inner();
        let (ns, g) = (namespace.to_string(), group.to_string());
        if inner.keys.contains(&(ns.clone(), g.clone())) {
            return Some(g);
        }
        inner.derived.get(&(ns, g)).cloned()
    }

    /// Asks for a pass of `namespace/name` (a key).
    pub fn trigger(&self, namespace: &str, name: &str) {
        let reference = ObjectRef::new_with(name, key_resource()).within(namespace);
        // Closed only when the Controller is gone, i.e. when syncing stops.
        self.sender.unbounded_send(reference).ok();
    }

    /// Asks for a pass of every key.
    pub fn trigger_all(&self) {
        for (namespace, name) in self.all() {
            self.trigger(&namespace, &name);
        }
    }
}

/// The Controller's object for the key `namespace/name`.
fn synthetic(namespace: &str, name: &str) -> DynamicObject {
    DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        data: serde_json::Value::Null,
    }
}
