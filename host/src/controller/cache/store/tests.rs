use serde_json::json;

use super::super::kept::{self, KeptSlice};
use super::*;

fn slice(name: &str, service: &str, uid: &str, rv: &str) -> KeptSlice {
    kept::slice(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "uid": uid, "resourceVersion": rv,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap(),
    )
}

fn service_of(s: &KeptSlice) -> Option<&str> {
    s.label("kubernetes.io/service-name")
}

fn names(objects: &[Arc<KeptSlice>]) -> Vec<String> {
    objects
        .iter()
        .map(|o| format!("{}@{}", o.name(), o.resource_version().unwrap_or_default()))
        .collect()
}

fn synced(objects: Vec<KeptSlice>) -> Store<KeptSlice> {
    let store = Store::new(service_of);
    store.list_started();
    for o in objects {
        store.listed(o);
    }
    assert!(store.list_done(), "the first list makes the store readable");
    store
}

#[test]
fn a_store_is_read_by_group_and_follows_relabelled_and_deleted_objects() {
    let store = synced(vec![
        slice("web-1", "web", "u1", "10"),
        slice("web-2", "web", "u2", "11"),
        slice("api-1", "api", "u3", "12"),
    ]);
    assert_eq!(names(&store.group("shop", "web")), ["web-1@10", "web-2@11"]);
    assert_eq!(store.group("other", "web").len(), 0);
    let moved = store.applied(slice("web-2", "api", "u2", "13")).0;
    assert_eq!(moved.group.as_deref(), Some("api"));
    assert_eq!(names(&store.group("shop", "web")), ["web-1@10"]);
    assert_eq!(names(&store.group("shop", "api")), ["api-1@12", "web-2@13"]);
    let gone = store.removed(&slice("web-1", "web", "u1", "14"));
    assert_eq!(gone.group.as_deref(), Some("web"));
    assert!(!gone.own);
    assert!(store.group("shop", "web").is_empty());
    assert_eq!(store.len(), 2);
}

#[test]
fn an_own_write_is_read_until_its_watch_event_arrives_and_that_event_is_not_news() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    store.writing("shop", "m1-web-1");
    assert!(!store.wrote(slice("m1-web-1", "web", "u1", "20")));
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@20"]);
    // An event older than the write (someone's change before it) does not settle it.
    let older = store.applied(slice("m1-web-1", "web", "u1", "15")).0;
    assert!(!older.own, "not our write: news");
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@20"]);
    let ours = store.applied(slice("m1-web-1", "web", "u1", "20")).0;
    assert!(ours.own);
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@20"]);
    // Settled: a later change by someone else is news and is read.
    let later = store.applied(slice("m1-web-1", "web", "u1", "21")).0;
    assert!(!later.own);
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@21"]);
}

#[test]
fn a_watch_event_that_arrives_before_the_writes_answer_is_own_and_leaves_nothing_laid_over() {
    let store = synced(Vec::new());
    store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(!store.wrote(slice("m1-web-1", "web", "u1", "20")));
    let later = store.applied(slice("m1-web-1", "web", "u1", "21")).0;
    assert!(!later.own, "the write was settled at its answer");
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@21"]);
}

#[test]
fn a_change_by_someone_else_hidden_behind_an_own_write_in_flight_is_reported_at_its_answer() {
    let store = synced(Vec::new());
    store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(store.applied(slice("m1-web-1", "web", "u1", "21")).0.own);
    assert!(
        store.wrote(slice("m1-web-1", "web", "u1", "20")),
        "the store holds a later version than the write: someone changed it after us"
    );
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@21"]);
}

#[test]
fn an_own_deletion_hides_the_object_until_the_watch_deletes_it_and_a_recreation_shows() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    store.writing("shop", "m1-web-1");
    store.deleted("shop", "m1-web-1", "web", Some("u1".into()));
    assert!(store.group("shop", "web").is_empty());
    assert!(store.removed(&slice("m1-web-1", "web", "u1", "11")).own);
    assert!(store.group("shop", "web").is_empty());
    let again = store.applied(slice("m1-web-1", "web", "u2", "12")).0;
    assert!(!again.own, "re-created by someone: news");
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@12"]);
}

#[test]
fn an_object_recreated_before_the_deletion_is_seen_is_not_hidden() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    store.deleted("shop", "m1-web-1", "web", Some("u1".into()));
    assert!(store.group("shop", "web").is_empty());
    // The watch delivers the re-created object (another uid) before or without the delete.
    assert!(!store.applied(slice("m1-web-1", "web", "u2", "12")).0.own);
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@12"]);
}

#[test]
fn a_failed_watch_keeps_the_objects_and_a_new_list_replaces_them_and_settles_own_writes() {
    let store = synced(vec![
        slice("web-1", "web", "u1", "10"),
        slice("m1-web-1", "web", "u9", "11"),
    ]);
    store.wrote(slice("m1-web-1", "web", "u9", "30"));
    store.failed("connection refused".into(), false);
    let Health::Broken(first) = store.health() else {
        panic!("broken");
    };
    assert_eq!(store.group("shop", "web").len(), 2, "kept while broken");
    store.list_started();
    store.failed("connection refused again".into(), false);
    let Health::Broken(second) = store.health() else {
        panic!("still broken");
    };
    assert_eq!(second.since, first.since, "broken since the first failure");
    store.list_started();
    store.listed(slice("web-2", "web", "u2", "31"));
    store.listed(slice("m1-web-1", "web", "u9", "30"));
    assert_eq!(
        store.group("shop", "web").len(),
        2,
        "old objects until the list ends"
    );
    assert!(store.list_done(), "readable again");
    assert_eq!(store.health(), Health::Synced);
    assert_eq!(
        names(&store.group("shop", "web")),
        ["m1-web-1@30", "web-2@31"]
    );
    // The list showed the write: a later change is news.
    assert!(!store.applied(slice("m1-web-1", "web", "u9", "32")).0.own);
    assert!(
        !store.list_done(),
        "a list of a synced store is not a return"
    );
}

#[test]
fn resource_versions_compare_as_integers_and_anything_else_counts_as_later() {
    assert!(is_later(Some("10"), Some("9")));
    assert!(!is_later(Some("9"), Some("10")));
    assert!(!is_later(Some("10"), Some("10")));
    assert!(is_later(Some("abc"), Some("10")));
    assert!(is_later(None, Some("10")));
}

#[test]
fn a_store_grouped_by_name_gets_one_object() {
    fn name_of(s: &KeptSlice) -> Option<&str> {
        Some(s.name())
    }
    let store = Store::new(name_of);
    store.list_started();
    store.listed(slice("web", "x", "u1", "1"));
    store.listed(slice("api", "x", "u2", "2"));
    store.list_done();
    assert_eq!(store.get("shop", "web").unwrap().uid(), Some("u1"));
    assert!(store.get("shop", "nope").is_none());
    assert_eq!(store.all().len(), 2);
}
