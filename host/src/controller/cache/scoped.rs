//! A scoped store's side of the scope ([`super::scope`] has the rules): which groups it
//! wants, their fills' answers merged with what the watch gave meanwhile, and reads of a
//! group only once it is filled.

use std::sync::Arc;

use tokio::sync::Notify;

use super::groups::{Fill, Group, Groups, not_older};
use super::health::Health;
use super::kept::{Cached, Key, key, key_of};
use super::store::{GroupOf, Store};

impl<K: Cached> Store<K> {
    /// An empty store that keeps whole only the wanted groups (none yet) and the objects
    /// `always` keeps.
    pub fn scoped(group_of: GroupOf<K>, always: fn(&K) -> bool) -> Self {
        let store = Store::new(group_of);
        store.write().scope = Some(Groups::new(always));
        store
    }

    /// Group `namespace/group` is wanted: from now on its objects are kept, and it is filled
    /// (an unscoped store keeps everything already).
    pub fn want(&self, namespace: &str, group: &str) {
        let mut inner = self.write();
        let Some(scope) = inner.scope.as_mut() else {
            return;
        };
        let group_key = key(namespace, group);
        if scope.wanted.contains_key(&group_key) {
            return;
        }
        let since = scope.tick();
        let token = scope.tick();
        scope.wanted.insert(
            group_key,
            Group {
                since,
                filling: Some(token),
            },
        );
        *scope.filling.entry(namespace.into()).or_default() += 1;
        scope.wake.notify_one();
    }

    /// Group `namespace/group` is no longer wanted: its objects are dropped, but those kept
    /// whatever their group.
    pub fn unwant(&self, namespace: &str, group: &str) {
        let mut inner = self.write();
        let Some(scope) = inner.scope.as_mut() else {
            return;
        };
        let group_key = key(namespace, group);
        let Some(was) = scope.wanted.remove(&group_key) else {
            return;
        };
        if was.filling.is_some() {
            scope.fill_ended(namespace);
        }
        let always = scope.always;
        let dropped: Vec<Key> = inner
            .groups
            .get(&group_key)
            .map(|objects| {
                objects
                    .iter()
                    .filter(|o| !always(o))
                    .map(|o| key_of(&**o))
                    .collect()
            })
            .unwrap_or_default();
        for object in dropped {
            inner.remove(self.group_of, &object);
        }
    }

    /// The groups owed a fill, with the token their fill carries: none unless the store is
    /// synced (a list in progress fills them, or decides again when it ends).
    pub fn unfilled(&self) -> Vec<(String, String, u64)> {
        let inner = self.read();
        if inner.health != Health::Synced || inner.listing.is_some() {
            return Vec::new();
        }
        let Some(scope) = inner.scope.as_ref() else {
            return Vec::new();
        };
        scope
            .wanted
            .iter()
            .filter_map(|((ns, g), group)| Some((ns.to_string(), g.to_string(), group.filling?)))
            .collect()
    }

    /// The answer of the fill of `namespace/group` started with `token`: `listed`, the
    /// group's objects. Merged with what the watch gave meanwhile (the module's rules), and
    /// the group is readable ([`Fill::Merged`]); not when the group was unwanted, wanted
    /// again or listed again since ([`Fill::Stale`]: a fill of another token is owed, or
    /// none), nor while the store's watch is failing or listing ([`Fill::Later`]).
    pub fn fill_done(&self, namespace: &str, group: &str, token: u64, listed: Vec<K>) -> Fill {
        let mut inner = self.write();
        let group_key = key(namespace, group);
        let Some(scope) = inner.scope.as_ref() else {
            return Fill::Stale;
        };
        if scope.wanted.get(&group_key).and_then(|g| g.filling) != Some(token) {
            return Fill::Stale;
        }
        if inner.health != Health::Synced || inner.listing.is_some() {
            return Fill::Later;
        }
        if let Some(wanted) = inner
            .scope
            .as_mut()
            .and_then(|s| s.wanted.get_mut(&group_key))
        {
            wanted.filling = None;
        }
        for object in listed {
            if object.namespace() != namespace || (self.group_of)(&object) != Some(group) {
                continue;
            }
            let object_key = key_of(&object);
            let version = object.resource_version();
            let scope = inner.scope.as_ref().expect("scoped above");
            if let Some(event) = scope.seen.get(&object_key)
                && not_older(event.as_deref(), version)
            {
                continue;
            }
            if let Some(stored) = inner.objects.get(&object_key)
                && not_older(stored.resource_version(), version)
            {
                continue;
            }
            inner.remove(self.group_of, &object_key);
            let object = Arc::new(object);
            inner.insert(self.group_of, object.clone());
            inner
                .overlay
                .settle(&group_key, object.name(), Some(&*object));
        }
        if let Some(scope) = inner.scope.as_mut() {
            scope.fill_ended(namespace);
        }
        Fill::Merged
    }

    /// Whether the group `namespace/group` can be read: always in an unscoped store; in a
    /// scoped one, once it is wanted and filled.
    pub fn filled(&self, namespace: &str, group: &str) -> bool {
        let inner = self.read();
        match inner.scope.as_ref() {
            None => true,
            Some(scope) => scope
                .wanted
                .get(&key(namespace, group))
                .is_some_and(|g| g.filling.is_none()),
        }
    }

    /// [`Store::group`], if the group is [`Store::filled`] (read under one lock: the group
    /// cannot be dropped or filled again between the check and the read).
    pub fn filled_group(&self, namespace: &str, group: &str) -> Option<Vec<Arc<K>>> {
        let inner = self.read();
        if let Some(scope) = inner.scope.as_ref() {
            let filled = scope
                .wanted
                .get(&key(namespace, group))
                .is_some_and(|g| g.filling.is_none());
            if !filled {
                return None;
            }
        }
        Some(inner.group(namespace, group))
    }

    /// [`Store::get`] of a store grouped by name, if its group is [`Store::filled`]:
    /// `None` when not filled, `Some(None)` when filled and absent.
    pub fn filled_get(&self, namespace: &str, name: &str) -> Option<Option<Arc<K>>> {
        self.filled_group(namespace, name)
            .map(|objects| objects.into_iter().find(|o| o.name() == name))
    }

    /// What wakes this store's filler (a scoped store only).
    pub(super) fn fill_wake(&self) -> Option<Arc<Notify>> {
        self.read().scope.as_ref().map(|s| s.wake.clone())
    }
}
