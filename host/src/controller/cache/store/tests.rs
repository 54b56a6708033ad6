use std::time::Duration;

use serde_json::json;

use super::*;
use crate::controller::cache::kept::{self, KeptSlice, is_later};
use crate::controller::cache::overlay::Pending;

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
    assert_eq!(
        moved.left.as_deref(),
        Some("web"),
        "news to the group it left too"
    );
    let edited = store.applied(slice("web-2", "api", "u2", "14")).0;
    assert_eq!((edited.group.as_deref(), edited.left), (Some("api"), None));
    assert_eq!(names(&store.group("shop", "web")), ["web-1@10"]);
    assert_eq!(names(&store.group("shop", "api")), ["api-1@12", "web-2@14"]);
    let gone = store.removed(&slice("web-1", "web", "u1", "14"));
    assert_eq!(gone.group.as_deref(), Some("web"));
    assert!(!gone.own);
    assert!(store.group("shop", "web").is_empty());
    assert_eq!(store.len(), 2);
}

#[test]
fn an_own_write_is_read_until_its_watch_event_arrives_and_that_event_is_not_news() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    assert!(!writing.wrote(slice("m1-web-1", "web", "u1", "20")));
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
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(!writing.wrote(slice("m1-web-1", "web", "u1", "20")));
    let later = store.applied(slice("m1-web-1", "web", "u1", "21")).0;
    assert!(!later.own, "the write was settled at its answer");
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@21"]);
}

#[test]
fn a_change_by_someone_else_hidden_behind_an_own_write_in_flight_is_reported_at_its_answer() {
    let store = synced(Vec::new());
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(store.applied(slice("m1-web-1", "web", "u1", "21")).0.own);
    assert!(
        writing.wrote(slice("m1-web-1", "web", "u1", "20")),
        "the store holds a later version than the write: someone changed it after us"
    );
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@21"]);
}

#[test]
fn an_own_deletion_hides_the_object_until_the_watch_deletes_it_and_a_recreation_shows() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    assert!(!writing.deleted("web", Some("u1".into())));
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
    let Some(first) = store.failing() else {
        panic!("failing");
    };
    assert_eq!(store.group("shop", "web").len(), 2, "kept while broken");
    store.list_started();
    store.failed("connection refused again".into(), false);
    let Some(second) = store.failing() else {
        panic!("still failing");
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
    store.list_started();
    store.listed(slice("m1-web-1", "web", "u9", "32"));
    assert!(
        !store.list_done(),
        "a list of a synced store is not a return"
    );
    assert_eq!(store.health(), Health::Synced);
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
    assert!(store.list_done());
    assert_eq!(store.get("shop", "web").unwrap().uid(), Some("u1"));
    assert!(store.get("shop", "nope").is_none());
    assert_eq!(store.all().len(), 2);
}

#[test]
fn a_deletion_by_someone_else_during_an_own_apply_is_news_at_the_answer_and_not_laid_over() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    // The apply's own event, then someone deletes the copy, both before the apply's answer.
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(
        store.removed(&slice("m1-web-1", "web", "u1", "21")).own,
        "held back"
    );
    assert!(
        writing.wrote(slice("m1-web-1", "web", "u1", "20")),
        "someone deleted what we wrote: news"
    );
    assert!(store.group("shop", "web").is_empty(), "the cluster wins");
    assert_eq!(store.pending(), 0);
}

#[test]
fn a_deletion_seen_after_the_answer_is_news_and_drops_the_write_from_the_overlay() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    assert!(!writing.wrote(slice("m1-web-1", "web", "u1", "20")));
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@20"]);
    let gone = store.removed(&slice("m1-web-1", "web", "u1", "21"));
    assert!(!gone.own, "not ours: news");
    assert_eq!(gone.group.as_deref(), Some("web"));
    assert!(store.group("shop", "web").is_empty());
    assert_eq!(store.pending(), 0);
}

#[test]
fn only_the_event_of_the_answered_resource_version_is_own() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    // Someone's edit held back behind our apply: news at the answer.
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "15")).0.own);
    assert!(store.applied(slice("m1-web-1", "web", "u1", "20")).0.own);
    assert!(writing.wrote(slice("m1-web-1", "web", "u1", "20")));
    // A failed write: whatever arrived meanwhile was someone else's.
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.applied(slice("m1-web-1", "web", "u1", "22")).0.own);
    assert!(writing.abandoned());
    let writing = store.writing("shop", "m1-web-1");
    assert!(!writing.abandoned(), "nothing arrived: nothing to look at");
    assert!(
        !store.applied(slice("m1-web-1", "web", "u1", "23")).0.own,
        "no write in flight"
    );
}

#[test]
fn a_recreation_during_an_own_deletion_is_news_and_its_own_deleted_event_is_not() {
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.removed(&slice("m1-web-1", "web", "u1", "11")).own);
    assert!(
        !writing.deleted("web", Some("u1".into())),
        "our deletion only"
    );

    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let writing = store.writing("shop", "m1-web-1");
    assert!(store.removed(&slice("m1-web-1", "web", "u1", "11")).own);
    assert!(
        store.applied(slice("m1-web-1", "web", "u2", "12")).0.own,
        "held back"
    );
    assert!(
        writing.deleted("web", Some("u1".into())),
        "re-created by someone meanwhile: news"
    );
    assert_eq!(names(&store.group("shop", "web")), ["m1-web-1@12"]);
}

#[test]
fn a_write_guard_dropped_without_an_answer_ends_the_write_and_reports_what_it_held() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let store = synced(vec![slice("m1-web-1", "web", "u1", "10")]);
    let lost = Arc::new(AtomicUsize::new(0));
    let counter = lost.clone();
    let writing = store.writing("shop", "m1-web-1").or_else(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    assert!(store.removed(&slice("m1-web-1", "web", "u1", "11")).own);
    drop(writing); // an error path, a panic or a cancelled future
    assert_eq!(lost.load(Ordering::SeqCst), 1, "held events are news");
    assert!(store.read().overlay.in_flight.is_empty());
    assert!(!store.applied(slice("m1-web-1", "web", "u2", "12")).0.own);

    let counter = lost.clone();
    let writing = store.writing("shop", "m1-web-1").or_else(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    drop(writing);
    assert_eq!(
        lost.load(Ordering::SeqCst),
        1,
        "nothing held: nothing to report"
    );

    // A panic while the write is in flight.
    let panicking = store.clone();
    let result = std::panic::catch_unwind(move || {
        let _writing = panicking.writing("shop", "m1-web-1");
        panic!("in flight");
    });
    assert!(result.is_err());
    assert!(store.read().overlay.in_flight.is_empty());
    assert!(!store.applied(slice("m1-web-1", "web", "u2", "13")).0.own);
}

#[test]
fn a_list_that_never_started_is_refused_and_leaves_the_store_as_it_is() {
    let store = Store::new(service_of);
    assert!(!store.list_done(), "nothing was listed");
    assert_eq!(store.health(), Health::Listing, "not readable");

    let store = synced(vec![slice("web-1", "web", "u1", "10")]);
    store.failed("connection refused".into(), false);
    assert!(!store.list_done(), "the failure ended the list");
    assert!(store.failing().is_some());
    assert_eq!(store.len(), 1, "nothing pruned");

    store.list_started();
    store.listed(slice("web-1", "web", "u1", "10"));
    assert!(store.list_done());
    assert!(!store.list_done(), "one list ends once");
    assert_eq!(store.len(), 1);
}

#[test]
fn expired_own_writes_are_removed_from_the_overlay() {
    let store = synced(Vec::new());
    assert!(
        !store
            .writing("shop", "a")
            .wrote(slice("a", "web", "u1", "20"))
    );
    assert!(
        !store
            .writing("shop", "b")
            .wrote(slice("b", "api", "u2", "21"))
    );
    assert_eq!(store.pending(), 2);
    let long_ago = Instant::now()
        .checked_sub(PENDING_TTL + Duration::from_secs(1))
        .expect("a clock older than the TTL");
    {
        let mut inner = store.write();
        for names in inner.overlay.pending.values_mut() {
            for own in names.values_mut() {
                let (Pending::Written { at, .. } | Pending::Deleted { at, .. }) = own;
                *at = long_ago;
            }
        }
        inner.overlay.next_sweep = long_ago;
    }
    assert!(store.group("shop", "web").is_empty(), "expired: not read");
    assert!(
        !store
            .writing("shop", "c")
            .wrote(slice("c", "web", "u3", "22"))
    );
    assert_eq!(store.pending(), 1, "the expired writes are gone");
    assert_eq!(store.read().overlay.pending.len(), 1, "their groups too");
    // A watch event sweeps as well.
    store
        .write()
        .overlay
        .pending
        .values_mut()
        .for_each(|names| {
            names.values_mut().for_each(|own| {
                let (Pending::Written { at, .. } | Pending::Deleted { at, .. }) = own;
                *at = long_ago;
            })
        });
    store.write().overlay.next_sweep = long_ago;
    store.applied(slice("other", "api", "u4", "23"));
    assert_eq!(store.pending(), 0);
    assert!(store.read().overlay.pending.is_empty());
}

/// Patience of `grace`, settling after a second.
fn patience(grace: Duration) -> Patience {
    Patience {
        grace,
        settle: Duration::from_secs(1),
    }
}

#[test]
fn a_listed_store_stays_readable_while_its_watch_fails_within_the_grace() {
    let store = synced(vec![slice("web-1", "web", "u1", "10")]);
    store.set_patience(patience(Duration::from_secs(30)));
    store.failed("connection refused".into(), false);
    assert_eq!(store.health(), Health::Synced, "readable within the grace");
    let failure = store.failing().expect("failing");
    assert_eq!(failure.message, "connection refused");
    // A re-list (410) in progress: the old content stays readable until it ends.
    store.list_started();
    store.listed(slice("web-2", "web", "u2", "12"));
    assert_eq!(store.health(), Health::Synced);
    assert_eq!(names(&store.group("shop", "web")), ["web-1@10"]);
    assert!(
        store.list_done(),
        "a list after a failure: readers catch up"
    );
    assert_eq!(names(&store.group("shop", "web")), ["web-2@12"]);
    assert_eq!(store.failing(), None);
}

#[test]
fn past_the_grace_a_failing_store_is_broken_until_its_watch_resumes() {
    let store = synced(vec![slice("web-1", "web", "u1", "10")]);
    store.set_patience(patience(Duration::ZERO));
    store.failed("connection refused".into(), false);
    std::thread::sleep(Duration::from_millis(2));
    let Health::Broken(failure) = store.health() else {
        panic!("broken past the grace");
    };
    assert_eq!(failure.message, "connection refused");
    assert_eq!(store.len(), 1, "nothing dropped");
    assert!(store.resumed(), "it had been unreadable: readers catch up");
    assert_eq!(store.health(), Health::Synced);
    assert!(!store.resumed(), "resumed once");

    store.set_patience(patience(Duration::from_secs(30)));
    store.failed("connection refused".into(), false);
    assert!(
        !store.resumed(),
        "resumed within the grace: nobody saw it fail"
    );
    assert_eq!(store.health(), Health::Synced);
}

#[test]
fn a_store_that_never_listed_is_broken_at_once_and_only_a_list_makes_it_readable() {
    let store = Store::new(service_of);
    store.set_patience(patience(Duration::from_secs(30)));
    store.list_started();
    store.failed("connection refused".into(), false);
    assert!(
        matches!(store.health(), Health::Broken(_)),
        "nothing to show: no grace"
    );
    assert!(!store.resumed(), "only a list makes it readable");
    assert!(matches!(store.health(), Health::Broken(_)));

    // A listed store whose re-list is in progress is not resumed by the watch either.
    let store = synced(vec![slice("web-1", "web", "u1", "10")]);
    store.set_patience(patience(Duration::ZERO));
    store.failed("410 Gone".into(), false);
    store.list_started();
    assert!(!store.resumed());
    store.listed(slice("web-1", "web", "u1", "10"));
    assert!(store.list_done());
    assert_eq!(store.health(), Health::Synced);
}

#[test]
fn consecutive_failures_keep_the_first_failures_time() {
    let store = synced(vec![]);
    store.set_patience(patience(Duration::from_secs(30)));
    store.failed("a".into(), false);
    let first = store.failing().unwrap().since;
    std::thread::sleep(Duration::from_millis(2));
    store.failed("b".into(), false);
    let second = store.failing().unwrap();
    assert_eq!(second.since, first);
    assert_eq!(second.message, "b", "the latest error is shown");
    store.resumed();
    store.failed("c".into(), false);
    assert!(store.failing().unwrap().since > first, "a new outage");
}
