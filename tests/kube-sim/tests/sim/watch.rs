//! Watches: kube-rs watchers across drops and expiries, and the raw watch protocol (events,
//! 410 Expired, bookmarks, selectors, timeouts).

use std::collections::BTreeMap;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::time::timeout;

use crate::support::{PATIENCE, Sim};

fn config_map(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

/// The next watcher event, failing the test after `PATIENCE`.
async fn next_event<S>(events: &mut S) -> Event<ConfigMap>
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let next = timeout(PATIENCE, events.next())
        .await
        .expect("a watch event in time");
    next.expect("the watcher keeps going")
        .expect("no watcher error")
}

/// Waits for an event `wanted` accepts, skipping others; returns the events seen on the way.
async fn wait_for<S>(
    events: &mut S,
    what: &str,
    wanted: impl Fn(&Event<ConfigMap>) -> bool,
) -> Vec<Event<ConfigMap>>
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    loop {
        let event = timeout(PATIENCE, next_event(events))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
        if wanted(&event) {
            return seen;
        }
        seen.push(event);
    }
}

fn named(event: &Event<ConfigMap>) -> Option<(&'static str, String, Option<String>)> {
    let (kind, cm) = match event {
        Event::Apply(cm) => ("apply", cm),
        Event::Delete(cm) => ("delete", cm),
        Event::InitApply(cm) => ("init-apply", cm),
        Event::Init | Event::InitDone => return None,
    };
    let label = cm
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("v").cloned());
    Some((kind, cm.metadata.name.clone().unwrap_or_default(), label))
}

fn is(kind: &'static str, name: &str) -> impl Fn(&Event<ConfigMap>) -> bool {
    let name = name.to_owned();
    move |e| named(e).is_some_and(|(k, n, _)| k == kind && n == name)
}

#[tokio::test]
async fn watcher_sees_added_modified_and_deleted() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    maps.create(&PostParams::default(), &config_map("before", json!({})))
        .await
        .unwrap();
    let mut events = watcher::watcher(maps.clone(), watcher::Config::default()).boxed();
    assert!(matches!(next_event(&mut events).await, Event::Init));
    assert!(is("init-apply", "before")(&next_event(&mut events).await));
    assert!(matches!(next_event(&mut events).await, Event::InitDone));
    maps.create(&PostParams::default(), &config_map("web", json!({})))
        .await
        .unwrap();
    assert!(is("apply", "web")(&next_event(&mut events).await));
    let patch = json!({"metadata": {"labels": {"v": "2"}}});
    maps.patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        named(&next_event(&mut events).await),
        Some(("apply", "web".to_owned(), Some("2".to_owned())))
    );
    maps.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(is("delete", "web")(&next_event(&mut events).await));
}

#[tokio::test]
async fn watcher_keeps_delivering_after_watches_are_dropped() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mut events = watcher::watcher(maps.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    wait_for(&mut events, "the initial list", |e| {
        matches!(e, Event::InitDone)
    })
    .await;
    maps.create(&PostParams::default(), &config_map("one", json!({})))
        .await
        .unwrap();
    wait_for(&mut events, "one", is("apply", "one")).await;
    for round in 0..3 {
        let dropped = sim.admin("/_sim/drop-watches", json!({})).await;
        assert_eq!(
            dropped["dropped"], 1,
            "round {round}: the one open watch is dropped"
        );
        let name = format!("after-drop-{round}");
        maps.create(&PostParams::default(), &config_map(&name, json!({})))
            .await
            .unwrap();
        let skipped = wait_for(&mut events, &name, is("apply", &name)).await;
        assert!(
            skipped.iter().all(|e| !matches!(e, Event::Init)),
            "resumed from the last resourceVersion, no relist: {skipped:?}"
        );
    }
}

#[tokio::test]
async fn watch_from_a_forgotten_resource_version_gets_a_410_expired_event() {
    let sim = Sim::start_with(&["--watch-history", "3"]).await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let first = maps
        .create(&PostParams::default(), &config_map("c0", json!({})))
        .await
        .unwrap();
    for i in 1..6 {
        maps.create(
            &PostParams::default(),
            &config_map(&format!("c{i}"), json!({})),
        )
        .await
        .unwrap();
    }
    let old_rv = first.metadata.resource_version.unwrap();
    let reply = sim
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old_rv}"
        ))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    let events = reply.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["kind"], "Status");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    assert!(
        events[0]["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version")
    );
}

#[tokio::test]
async fn watch_from_a_remembered_resource_version_replays_later_changes() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let first = maps
        .create(&PostParams::default(), &config_map("a", json!({})))
        .await
        .unwrap();
    maps.create(&PostParams::default(), &config_map("b", json!({})))
        .await
        .unwrap();
    maps.delete("a", &DeleteParams::default()).await.unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let reply = sim
        .get(&format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1"
        ))
        .await;
    let seen: Vec<(String, String)> = reply
        .events()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["object"]["metadata"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("ADDED".to_owned(), "b".to_owned()),
            ("DELETED".to_owned(), "a".to_owned())
        ]
    );
}

#[tokio::test]
async fn watcher_relists_after_its_resource_version_expires() {
    let sim = Sim::start_with(&["--watch-history", "3"]).await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mut events = watcher::watcher(maps.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    wait_for(&mut events, "the initial list", |e| {
        matches!(e, Event::InitDone)
    })
    .await;
    sim.admin("/_sim/drop-watches", json!({})).await;
    // The watcher stream is not polled meanwhile, so it re-watches only after these writes
    // have pushed its resourceVersion out of the 3-event history.
    for i in 0..10 {
        maps.create(
            &PostParams::default(),
            &config_map(&format!("c{i}"), json!({})),
        )
        .await
        .unwrap();
    }
    let mut errors = Vec::new();
    loop {
        let next = timeout(PATIENCE, events.next())
            .await
            .expect("the watcher recovers in time")
            .expect("the watcher keeps going");
        match next {
            Ok(Event::Init) => break,
            Ok(other) => panic!("unexpected event before the relist: {other:?}"),
            Err(watcher::Error::WatchError(status)) => errors.push(status.code),
            Err(other) => panic!("unexpected watcher error: {other:?}"),
        }
    }
    assert_eq!(errors, vec![410], "the watcher saw 410 Expired");
    let mut relisted = BTreeMap::new();
    loop {
        match next_event(&mut events).await {
            Event::InitApply(cm) => relisted.insert(cm.metadata.name.unwrap(), ()),
            Event::InitDone => break,
            other => panic!("unexpected event during relist: {other:?}"),
        };
    }
    assert_eq!(relisted.len(), 10, "{relisted:?}");
}

#[tokio::test]
async fn watches_send_bookmarks_once_the_watch_cache_moved_on() {
    let sim = Sim::start_with(&["--bookmark-interval-seconds", "0.2"]).await;
    let client = sim.client().await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = maps
        .create(&PostParams::default(), &config_map("a", json!({})))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let watch_from = |rv: &str, bookmarks: bool| {
        format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks={bookmarks}&timeoutSeconds=3"
        )
    };
    // Nothing happened to config maps since: the watch cache is where the watch starts.
    let quiet = sim.get(&watch_from(&rv, true)).await.events();
    assert!(
        quiet.is_empty(),
        "no bookmark before the cache moves: {quiet:?}"
    );

    // A write elsewhere, then a consistent list: the cache catches up with the revision.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "default");
    let secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    maps.list(&kube::api::ListParams::default()).await.unwrap();
    let events = sim.get(&watch_from(&rv, true)).await.events();
    let bookmark = events
        .iter()
        .find(|e| e["type"] == "BOOKMARK")
        .expect("a bookmark within the timeout");
    assert_eq!(bookmark["object"]["kind"], "ConfigMap");
    assert_eq!(bookmark["object"]["apiVersion"], "v1");
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        json!(secret.metadata.resource_version.unwrap())
    );
    let plain = sim.get(&watch_from(&rv, false)).await;
    assert!(plain.events().is_empty(), "no bookmarks unless allowed");
}

#[tokio::test]
async fn watch_without_resource_version_starts_with_current_objects_and_honours_selectors() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    maps.create(
        &PostParams::default(),
        &config_map("picked", json!({"app": "web"})),
    )
    .await
    .unwrap();
    maps.create(
        &PostParams::default(),
        &config_map("other", json!({"app": "db"})),
    )
    .await
    .unwrap();
    let reply = sim.get("/api/v1/namespaces/default/configmaps?watch=true&labelSelector=app%3Dweb&timeoutSeconds=1").await;
    let events = reply.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (
            events[0]["type"].as_str(),
            events[0]["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("picked"))
    );
}

#[tokio::test]
async fn objects_leaving_a_label_selection_are_seen_as_deleted() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let config = watcher::Config::default().labels("app=web");
    let mut events = watcher::watcher(maps.clone(), config).boxed();
    wait_for(&mut events, "the initial list", |e| {
        matches!(e, Event::InitDone)
    })
    .await;
    maps.create(
        &PostParams::default(),
        &config_map("web", json!({"app": "web"})),
    )
    .await
    .unwrap();
    assert!(is("apply", "web")(&next_event(&mut events).await));
    let relabel = json!({"metadata": {"labels": {"app": "db"}}});
    maps.patch("web", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    assert!(is("delete", "web")(&next_event(&mut events).await));
    let back = json!({"metadata": {"labels": {"app": "web"}}});
    maps.patch("web", &PatchParams::default(), &Patch::Merge(&back))
        .await
        .unwrap();
    assert!(is("apply", "web")(&next_event(&mut events).await));
}

#[tokio::test]
async fn watch_timeout_seconds_ends_the_stream() {
    let sim = Sim::start().await;
    let started = tokio::time::Instant::now();
    let reply = sim
        .get("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1")
        .await;
    assert_eq!(reply.status, 200);
    assert!(started.elapsed() < PATIENCE);
}

#[tokio::test]
async fn streaming_list_watchers_get_initial_events_then_changes() {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    maps.create(&PostParams::default(), &config_map("before", json!({})))
        .await
        .unwrap();
    let mut events =
        watcher::watcher(maps.clone(), watcher::Config::default().streaming_lists()).boxed();
    assert!(matches!(next_event(&mut events).await, Event::Init));
    assert!(is("init-apply", "before")(&next_event(&mut events).await));
    assert!(
        matches!(next_event(&mut events).await, Event::InitDone),
        "the initial-events-end bookmark closes the list"
    );
    maps.create(&PostParams::default(), &config_map("after", json!({})))
        .await
        .unwrap();
    assert!(is("apply", "after")(&next_event(&mut events).await));
}

#[tokio::test]
async fn metadata_gets_and_metadata_watchers_work() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let labelled = config_map("a", json!({"app": "web"}));
    maps.create(&PostParams::default(), &labelled)
        .await
        .unwrap();
    let meta = maps.get_metadata("a").await.unwrap();
    assert_eq!(meta.metadata.labels.unwrap()["app"], "web");
    let metadata_only: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client, "default");
    let mut events = watcher::watcher(metadata_only, watcher::Config::default()).boxed();
    let mut next = async || {
        timeout(PATIENCE, events.next())
            .await
            .expect("in time")
            .expect("an event")
            .expect("no error")
    };
    assert!(matches!(next().await, Event::Init));
    let listed = next().await;
    let name = match &listed {
        Event::InitApply(m) => m.metadata.name.clone(),
        _ => None,
    };
    assert_eq!(name.as_deref(), Some("a"), "{listed:?}");
}
