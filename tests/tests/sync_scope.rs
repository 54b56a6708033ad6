//! What a member's caches keep (host/src/controller/cache/scope.rs): whole, only the slices and
//! Services of the names the MultiClusterServices name, and our copies; a group an MCS names
//! later is listed on its own and read only once that list is merged with the watch.

use std::time::Duration;

use serde_json::{Value, json};
use tests::sync::*;

/// No resync during a test: whatever happens is the watches' and the fills' doing.
const NO_RESYNC: &str = "1h";

/// The controller's `mcs_policy_sync_cached_objects` of `resource`.
async fn cached(w: &World, listen: &str, resource: &str) -> Option<f64> {
    let url = format!("http://{listen}/metrics");
    let text = w.http.get(&url).send().await.ok()?.text().await.ok()?;
    let name = format!("mcs_policy_sync_cached_objects{{resource=\"{resource}\"}}");
    metric(&text, &name)
}

/// Waits until the controller caches `want` objects of `resource`.
async fn await_cached(w: &World, listen: &str, resource: &str, want: f64) {
    let started = std::time::Instant::now();
    loop {
        let now = cached(w, listen, resource).await;
        if now == Some(want) {
            return;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{resource} cached: {now:?}, not {want}; logs:\n{}",
            w.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `count` Services `unrelated-<i>` in `url`, each with a slice of its own.
async fn unrelated(w: &World, url: &str, count: usize) {
    let ports = json!([{"name": "http", "port": 80}]);
    for i in 0..count {
        let name = format!("unrelated-{i}");
        let at = ObjectRef::new("shop", &name);
        post(&w.http, url, SERVICES, &service_of(&at, ports.clone())).await;
        let slice = native_slice_of(&at, &format!("{name}-1"), "10.9.0.1");
        post(&w.http, url, SLICES, &slice).await;
    }
}

/// The names of `url`'s slices whose name starts with `prefix`.
async fn names_with(w: &World, url: &str, prefix: &str) -> Vec<String> {
    let names = w.slice_names(url).await;
    names
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

fn web_slice(name: &str) -> Value {
    native_slice(name, "10.1.0.7")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_caches_only_the_groups_mcss_name_and_the_copies() {
    let mut w = World::clusters("scope-unrelated", false).await;
    unrelated(&w, &w.member1, 40).await;
    unrelated(&w, &w.member2, 10).await;
    for name in ["web-a", "web-b"] {
        post(&w.http, &w.member1, SLICES, &web_slice(name)).await;
    }
    // A copy left behind in member2 by an MCS that is gone: kept, so the sweep removes it.
    let gone = ObjectRef::new("shop", "gone");
    let mut left = slice_of(&gone, "member1-gone-1", DISPATCH, "10.1.0.9");
    left["metadata"]["annotations"] = json!({PROVISION: "member1"});
    post(&w.http, &w.member2, SLICES, &left).await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports)).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let listen = free_addr();
    w.spawn_sync(NO_RESYNC, &["--metrics-listen", listen.as_str()]);
    // The copy left behind is swept.
    w.eventually("member2 to hold the copies of web only", || async {
        let copies = names_with(&w, &w.member2, "member1-").await;
        (copies == ["member1-web-a", "member1-web-b"]).then_some(())
    })
    .await;
    // member1's two slices of web and member2's two copies.
    await_cached(&w, &listen, "endpointslices", 4.0).await;
    // The hub's (web, and the API server's `kubernetes`: the hub's are all cached), and web
    // where the controller made it in the members.
    let mut services = 2.0;
    for url in [&w.member1, &w.member2] {
        if get(&w.http, url, &format!("{SERVICES}/web"))
            .await
            .is_some()
        {
            services += 1.0;
        }
    }
    await_cached(&w, &listen, "services", services).await;
    await_cached(&w, &listen, "multiclusterservices", 1.0).await;

    // A slice relabelled into web is read (and copied); out of it, dropped (and its copy
    // pruned).
    edit(
        &w.http,
        &w.member1,
        &format!("{SLICES}/unrelated-3-1"),
        |s| {
            s["metadata"]["labels"][SERVICE_NAME] = json!("web");
        },
    )
    .await;
    w.eventually("the relabelled slice to be copied", || async {
        let copies = names_with(&w, &w.member2, "member1-").await;
        (copies.len() == 3 && copies.contains(&"member1-unrelated-3-1".into())).then_some(())
    })
    .await;
    edit(&w.http, &w.member1, &format!("{SLICES}/web-b"), |s| {
        s["metadata"]["labels"][SERVICE_NAME] = json!("unrelated-0");
    })
    .await;
    w.eventually("the slice relabelled away to lose its copy", || async {
        let copies = names_with(&w, &w.member2, "member1-").await;
        (copies == ["member1-unrelated-3-1", "member1-web-a"]).then_some(())
    })
    .await;
    await_cached(&w, &listen, "endpointslices", 4.0).await;

    // The MCS deleted: its copies go as before, and its group leaves the caches.
    delete(&w.http, &w.hub, &format!("{MCS}/web")).await;
    w.await_mcs_gone().await;
    w.eventually("member2 to hold no copy", || async {
        names_with(&w, &w.member2, "member1-")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    await_cached(&w, &listen, "endpointslices", 0.0).await;
    await_cached(&w, &listen, "multiclusterservices", 0.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcs_created_later_is_read_only_once_its_group_is_listed() {
    let listen = free_addr();
    let flags = ["--metrics-listen", listen.as_str()];
    let w = World::start_full("scope-fill", NO_RESYNC, &flags, false).await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    let names: Vec<String> = (0..10).map(|i| format!("web-{i}")).collect();
    for name in &names {
        post(&w.http, &w.member1, SLICES, &web_slice(name)).await;
    }
    let stray = ObjectRef::new("shop", "stray");
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice_of(&stray, "x-1", "10.1.0.8"),
    )
    .await;
    // Another MCS, synced: the controller has listed everything.
    let other = ObjectRef::new("shop", "other");
    post(
        &w.http,
        &w.hub,
        &mcs_path("shop"),
        &mcs_of(&other, member1_to_member2()["spec"].clone()),
    )
    .await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice_of(&other, "other-1", "10.1.0.6"),
    )
    .await;
    w.await_slices(&w.member2, "member2", &["member1-other-1"])
        .await;
    await_cached(&w, &listen, "endpointslices", 2.0).await;

    // web's slices in member1 are listed when web is created; that list's answer is held
    // back 2 s, and meanwhile one of its slices is deleted and another relabelled into it.
    w.clear_requests(&w.member1).await;
    let slow =
        json!({"delayMs": 2000, "verbs": ["list"], "resource": "endpointslices", "count": 1});
    w.fault(&w.member1, slow).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.eventually("web's slices to be listed in member1", || async {
        let log = w.requests(&w.member1).await;
        log.contains(&"list endpointslices".to_string())
            .then_some(())
    })
    .await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-0")).await;
    edit(&w.http, &w.member1, &format!("{SLICES}/x-1"), |s| {
        s["metadata"]["labels"][SERVICE_NAME] = json!("web");
    })
    .await;

    // Until the list is merged member1 is not read for web: no copy is made of a part of
    // its slices, and the deleted one is never brought back.
    let mut want: Vec<String> = names[1..].iter().map(|n| format!("member1-{n}")).collect();
    want.push("member1-x-1".into());
    want.sort();
    let started = std::time::Instant::now();
    let mut seen_before_fill = Vec::new();
    loop {
        let copies: Vec<String> = names_with(&w, &w.member2, "member1-")
            .await
            .into_iter()
            .filter(|n| n != "member1-other-1")
            .collect();
        assert!(
            !copies.contains(&"member1-web-0".to_string()),
            "a slice deleted during the list is never copied: {copies:?}"
        );
        if started.elapsed() < Duration::from_millis(1500) {
            seen_before_fill.extend(copies.iter().cloned());
        }
        if copies == want {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "copies: {copies:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen_before_fill,
        Vec::<String>::new(),
        "no pass copied web's listed slices before their list was merged"
    );
    let log = w.requests(&w.member1).await;
    assert!(log.contains(&"list services".to_string()), "{log:?}");
    w.await_dispatched("True", "successfully").await;
    // member1's ten slices of web and its slice of other, member2's eleven copies.
    await_cached(&w, &listen, "endpointslices", 22.0).await;
}
