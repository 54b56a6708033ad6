use std::sync::Arc;

use serde_json::json;

use super::super::kept::{self, KeptSlice};
use super::*;
use crate::controller::cache::groups::Fill;

const COPY: &str = "endpointslice-dispatch-controller.karmada.io";

fn slice(name: &str, service: &str, rv: &str) -> KeptSlice {
    labelled(name, service, rv, None)
}

fn copy(name: &str, service: &str, rv: &str) -> KeptSlice {
    labelled(name, service, rv, Some(COPY))
}

fn labelled(name: &str, service: &str, rv: &str, managed_by: Option<&str>) -> KeptSlice {
    let mut labels = json!({"kubernetes.io/service-name": service});
    if let Some(by) = managed_by {
        labels["endpointslice.kubernetes.io/managed-by"] = json!(by);
    }
    kept::slice(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("u-{name}"),
                         "resourceVersion": rv, "labels": labels},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap(),
    )
}

fn service_of(s: &KeptSlice) -> Option<&str> {
    s.label("kubernetes.io/service-name")
}

fn is_copy(s: &KeptSlice) -> bool {
    s.label("endpointslice.kubernetes.io/managed-by") == Some(COPY)
}

fn names(objects: Option<Vec<Arc<KeptSlice>>>) -> Option<Vec<String>> {
    objects.map(|objects| {
        objects
            .iter()
            .map(|o| format!("{}@{}", o.name(), o.resource_version().unwrap_or_default()))
            .collect()
    })
}

/// A scoped store wanting `wanted` before it lists `objects`.
fn listed(wanted: &[&str], objects: Vec<KeptSlice>) -> Store<KeptSlice> {
    let store = Store::scoped(service_of, is_copy);
    for group in wanted {
        store.want("shop", group);
    }
    store.list_started();
    for o in objects {
        store.listed(o);
    }
    assert!(store.list_done());
    store
}

/// The token of the fill owed to `shop/group`.
fn owed(store: &Store<KeptSlice>, group: &str) -> u64 {
    let owed = store.unfilled();
    let found = owed.iter().find(|(ns, g, _)| ns == "shop" && g == group);
    found
        .unwrap_or_else(|| panic!("no fill owed to {group}: {owed:?}"))
        .2
}

#[test]
fn a_store_keeps_the_wanted_groups_and_the_copies_and_drops_the_rest() {
    let store = listed(
        &["web"],
        vec![
            slice("web-1", "web", "10"),
            slice("other-1", "other", "11"),
            copy("m1-gone-1", "gone", "12"),
        ],
    );
    assert_eq!(store.len(), 2, "other-1 is not kept");
    assert!(
        store.unfilled().is_empty(),
        "wanted before the list: filled by it"
    );
    assert_eq!(
        names(store.filled_group("shop", "web")).unwrap(),
        ["web-1@10"]
    );
    assert!(
        store.filled_group("shop", "gone").is_none(),
        "copies of a group no MCS names are kept for the sweep, not read by passes"
    );
    assert_eq!(store.all().len(), 2);
    // Events: an unrelated object is dropped, a copy kept whatever its group.
    let (applied, _) = store.applied(slice("other-2", "other", "13"));
    assert_eq!(applied.group.as_deref(), Some("other"), "still told");
    store.applied(copy("m1-else-1", "else", "14"));
    assert_eq!(store.len(), 3);
}

#[test]
fn a_group_wanted_later_is_read_only_once_its_fill_is_merged() {
    let store = listed(
        &[],
        vec![slice("web-1", "web", "10"), slice("web-2", "web", "11")],
    );
    assert_eq!(store.len(), 0);
    store.want("shop", "web");
    assert!(
        store.filled_group("shop", "web").is_none(),
        "not filled yet"
    );
    let token = owed(&store, "web");
    // Meanwhile: web-2 changed, web-3 created (both newer than what the fill will say).
    store.applied(slice("web-2", "web", "20"));
    store.applied(slice("web-3", "web", "21"));
    assert!(store.filled_group("shop", "web").is_none());
    let answer = vec![slice("web-1", "web", "10"), slice("web-2", "web", "11")];
    assert_eq!(store.fill_done("shop", "web", token, answer), Fill::Merged);
    assert_eq!(
        names(store.filled_group("shop", "web")).unwrap(),
        ["web-1@10", "web-2@20", "web-3@21"],
        "a listed object older than an event is ignored; what the fill missed stays"
    );
    assert!(store.unfilled().is_empty());
    assert_eq!(
        store.fill_done("shop", "web", token, Vec::new()),
        Fill::Stale,
        "a fill is merged once"
    );
}

#[test]
fn a_deletion_seen_during_a_fill_is_not_undone_by_its_answer() {
    let store = listed(&[], vec![slice("web-1", "web", "10")]);
    store.want("shop", "web");
    let token = owed(&store, "web");
    store.removed(&slice("web-1", "web", "15"));
    // Relabelled out of the group during the fill (the store never held it).
    store.applied(slice("web-2", "other", "16"));
    let answer = vec![slice("web-1", "web", "10"), slice("web-2", "web", "12")];
    assert_eq!(store.fill_done("shop", "web", token, answer), Fill::Merged);
    assert_eq!(
        names(store.filled_group("shop", "web")).unwrap(),
        Vec::<String>::new()
    );
    // A deletion after the answer is applied as usual.
    store.want("shop", "api");
    let token = owed(&store, "api");
    assert_eq!(
        store.fill_done("shop", "api", token, vec![slice("api-1", "api", "30")]),
        Fill::Merged
    );
    store.removed(&slice("api-1", "api", "31"));
    assert_eq!(
        names(store.filled_group("shop", "api")).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn a_group_with_no_objects_is_filled_empty() {
    let store = listed(&[], Vec::new());
    store.want("shop", "web");
    let token = owed(&store, "web");
    assert_eq!(
        store.fill_done("shop", "web", token, Vec::new()),
        Fill::Merged
    );
    assert_eq!(store.filled_group("shop", "web").unwrap().len(), 0);
    assert!(store.filled("shop", "web"));
}

#[test]
fn an_mcs_removed_then_added_again_drops_its_group_and_fills_it_anew() {
    let store = listed(
        &["web"],
        vec![slice("web-1", "web", "10"), copy("m1-web-1", "web", "11")],
    );
    store.unwant("shop", "web");
    assert!(store.filled_group("shop", "web").is_none());
    assert_eq!(store.len(), 1, "the copy stays: the sweep reads it");
    store.want("shop", "web");
    let first = owed(&store, "web");
    store.unwant("shop", "web");
    store.want("shop", "web");
    let second = owed(&store, "web");
    assert_ne!(first, second);
    assert_eq!(
        store.fill_done("shop", "web", first, vec![slice("web-1", "web", "10")]),
        Fill::Stale,
        "a fill started before the group was dropped is thrown away"
    );
    assert!(store.filled_group("shop", "web").is_none());
    assert_eq!(
        store.fill_done("shop", "web", second, vec![slice("web-1", "web", "10")]),
        Fill::Merged
    );
    assert_eq!(
        names(store.filled_group("shop", "web")).unwrap(),
        ["m1-web-1@11", "web-1@10"]
    );
}

#[test]
fn a_list_again_fills_the_groups_wanted_before_it_started_and_no_others() {
    let store = listed(&["web"], vec![slice("web-1", "web", "10")]);
    store.want("shop", "api");
    let stale = owed(&store, "api");
    store.failed("watch failed".into(), false);
    assert!(
        store.unfilled().is_empty(),
        "no fill while the store is broken"
    );
    assert_ne!(
        store.fill_done("shop", "api", stale, vec![slice("api-1", "api", "9")]),
        Fill::Merged
    );
    store.list_started();
    store.listed(slice("web-1", "web", "10"));
    // Wanted while the list runs: what the list gave before may have been dropped.
    store.want("shop", "late");
    store.listed(slice("api-1", "api", "12"));
    store.listed(slice("late-2", "late", "13"));
    // Dropped while the list runs: what the list gave of it is not kept.
    store.want("shop", "brief");
    store.listed(slice("brief-1", "brief", "14"));
    store.unwant("shop", "brief");
    store.list_done();
    assert!(store.all().iter().all(|s| s.name() != "brief-1"));
    assert_eq!(
        names(store.filled_group("shop", "api")).unwrap(),
        ["api-1@12"]
    );
    assert!(store.filled_group("shop", "late").is_none());
    let token = owed(&store, "late");
    assert_eq!(store.unfilled().len(), 1);
    let answer = vec![slice("late-1", "late", "11"), slice("late-2", "late", "13")];
    assert_eq!(store.fill_done("shop", "late", token, answer), Fill::Merged);
    assert_eq!(
        names(store.filled_group("shop", "late")).unwrap(),
        ["late-1@11", "late-2@13"]
    );
}

#[test]
fn a_slice_relabelled_into_a_wanted_group_is_kept_and_out_of_it_dropped() {
    let store = listed(&["web"], vec![slice("x-1", "other", "10")]);
    assert_eq!(store.len(), 0);
    let (applied, _) = store.applied(slice("x-1", "web", "11"));
    assert_eq!(applied.group.as_deref(), Some("web"));
    assert_eq!(
        names(store.filled_group("shop", "web")).unwrap(),
        ["x-1@11"]
    );
    let (applied, _) = store.applied(slice("x-1", "other", "12"));
    assert_eq!(
        applied.left.as_deref(),
        Some("web"),
        "news to the group it left"
    );
    assert_eq!(store.len(), 0);
}

#[test]
fn an_unscoped_store_keeps_everything_and_every_group_is_filled() {
    let store = Store::new(service_of);
    store.list_started();
    store.listed(slice("x-1", "other", "10"));
    store.list_done();
    assert_eq!(
        names(store.filled_group("shop", "other")).unwrap(),
        ["x-1@10"]
    );
    store.want("shop", "web");
    assert!(store.unfilled().is_empty());
}

#[test]
fn the_scope_tells_its_stores_which_groups_the_mcss_name() {
    let scope = Scope::default();
    let early = Store::scoped(service_of, is_copy);
    let following = scope.follow(&early);
    scope.set("shop", "ignored", true);
    assert!(
        !scope.wants("shop", "ignored"),
        "nothing is known before the first list"
    );
    let mut listed = HashSet::new();
    listed.insert(key("shop", "web"));
    scope.reset(listed);
    assert!(scope.wants("shop", "web"));
    let late = Store::scoped(service_of, is_copy);
    let _late = scope.follow(&late);
    for store in [&early, &late] {
        store.list_started();
        store.listed(slice("web-1", "web", "1"));
        store.listed(slice("api-1", "api", "2"));
        store.list_done();
        assert_eq!(
            names(store.filled_group("shop", "web")).unwrap(),
            ["web-1@1"]
        );
    }
    scope.set("shop", "api", true);
    assert!(early.filled_group("shop", "api").is_none());
    assert_eq!(owed(&late, "api"), owed(&late, "api"));
    scope.set("shop", "web", false);
    assert!(late.filled_group("shop", "web").is_none());
    assert_eq!(late.len(), 0);
    // A list of the hub replaces the wanted groups.
    let mut listed = HashSet::new();
    listed.insert(key("shop", "web"));
    scope.reset(listed);
    assert!(!scope.wants("shop", "api"));
    assert!(late.unfilled().iter().all(|(_, g, _)| g == "web"));
    drop(following);
    scope.set("shop", "new", true);
    assert!(
        early.unfilled().iter().all(|(_, g, _)| g != "new"),
        "a store that stopped following hears nothing"
    );
}
