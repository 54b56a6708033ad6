//! Unit tests of the store (a separate file to keep `store.rs` readable).

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
    store.resources[&services()].labels.entries()
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
    // Keys sort as etcd's do (`namespace/name`): the cluster-scoped "c" after "b/y".
    let all_web = vec!["a/v", "a/x", "ab/z", "b/y", "/c"];
    assert_eq!(selected(&store, None, "app=web"), all_web);
    assert_eq!(selected(&store, None, "app in (web)"), all_web);
    assert_eq!(selected(&store, Some("a"), "app=web"), vec!["a/v", "a/x"]);
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
        vec!["a/v", "ab/z", "/c"]
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

#[test]
fn states_at_earlier_revisions_are_read_until_compacted() {
    let mut store = store(1);
    store.put(&services(), labelled("a", "x", json!({"v": "1"})));
    store.put(&services(), labelled("a", "y", json!({"v": "1"})));
    store.put(&services(), labelled("a", "x", json!({"v": "2"})));
    store.remove(&services(), "a", "y");
    let (labels, fields) = (
        everything(),
        crate::field_selector::FieldSelector::default(),
    );
    let query = Query {
        namespace: Some("a"),
        labels: &labels,
        fields: &fields,
        start: None,
        limit: None,
    };
    let at = |store: &Store, rv| -> Result<Vec<String>, SnapshotError> {
        let page = store.page(&services(), &query, Some(rv))?;
        Ok(page
            .items
            .iter()
            .map(|s| format!("{}:{}", s.key.name, s.labels["v"]))
            .collect())
    };
    assert_eq!(at(&store, 2).unwrap(), vec!["x:1", "y:1"]);
    assert_eq!(at(&store, 3).unwrap(), vec!["x:2", "y:1"]);
    assert_eq!(at(&store, 4).unwrap(), vec!["x:2"]);
    assert_eq!(
        at(&store, 5).unwrap_err(),
        SnapshotError::TooLarge {
            requested: 5,
            current: 4
        }
    );
    assert_eq!(store.compact(3), 3);
    assert_eq!(at(&store, 2).unwrap_err(), SnapshotError::Compacted);
    assert_eq!(at(&store, 3).unwrap(), vec!["x:2", "y:1"]);
}

#[test]
fn the_watch_cache_follows_its_resource_and_progress_notifications() {
    let mut store = store(10);
    let config_maps = GroupResource::new("", "configmaps");
    store.put(&services(), service("a", "x"));
    store.put(&config_maps, service("a", "c"));
    assert_eq!(store.cache_resource_version(&services()), 1);
    assert_eq!(store.cache_resource_version(&config_maps), 2);
    assert_eq!(store.sync_cache(&services()), 2);
    assert_eq!(store.cache_resource_version(&services()), 2);
}
