use serde_json::{Value, json};

use super::*;
use crate::filter::{
    self, DISPATCH_MANAGER, MANAGED_BY_LABEL, MC_SERVICE_NAME_LABEL, MC_SOURCE_CLUSTER_LABEL,
    PROVISION_CLUSTER_ANNOTATION, SERVICE_NAME_LABEL,
};
use crate::{EndpointPort, LoadBalancerIngress, MemberSlices, SliceBody, SliceCopy, SliceSummary};

/// The MultiClusterService `shop/web` as the hub holds it.
struct Mcs(Value);

fn mcs(types: &[&str]) -> Mcs {
    Mcs(json!({
        "apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "generation": 1},
        "spec": {"types": types},
    }))
}

impl Mcs {
    /// `spec.providerClusters` and `spec.consumerClusters` (empty: every member).
    fn sets(mut self, providers: &[&str], consumers: &[&str]) -> Self {
        let list =
            |names: &[&str]| -> Value { names.iter().map(|n| json!({ "name": n })).collect() };
        self.0["spec"]["providerClusters"] = list(providers);
        self.0["spec"]["consumerClusters"] = list(consumers);
        self
    }
    fn finalized(mut self) -> Self {
        self.0["metadata"]["finalizers"] = json!(["kubernetes", FINALIZER]);
        self
    }
    fn deleted(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!("2024-05-01T10:00:00Z");
        self
    }
    fn invalid(mut self) -> Self {
        self.0["spec"]["ports"] = json!([{ "port": 0 }]);
        self
    }
    fn ingress(mut self, ips: &[&str]) -> Self {
        let entries: Vec<Value> = ips.iter().map(|ip| json!({ "ip": ip })).collect();
        self.0["status"] = json!({ "loadBalancer": { "ingress": entries } });
        self
    }
}

fn template(type_: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"type": type_, "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
    })
    .to_string()
}

/// A member's Service as the sync controller created it, with what the member assigned.
fn member_service(type_: &str, ips: &[&str]) -> String {
    let mut service: Value = serde_json::from_str(&template(type_)).unwrap();
    service["metadata"]["labels"] = json!({ "networking.karmada.io/created-by": "mcs-policy" });
    service["spec"]["clusterIP"] = json!("10.96.0.10");
    let ingress: Vec<Value> = ips.iter().map(|ip| json!({ "ip": ip })).collect();
    service["status"] = json!({ "loadBalancer": { "ingress": ingress } });
    service.to_string()
}

/// A slice as the tests write it: its name and its body.
#[derive(Clone, Debug, PartialEq)]
struct Whole {
    name: String,
    body: Body,
}

/// A slice body with its maps and ports.
#[derive(Clone, Debug, PartialEq)]
struct Body {
    namespace: String,
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
    ports: Vec<EndpointPort>,
    content: String,
}

/// The bodies, maps and port lists of the slices of the members made so far in this test:
/// every pass of the test sends them all (`pass`).
#[derive(Default)]
struct Tables {
    bodies: Vec<SliceBody>,
    maps: Vec<Vec<(String, String)>>,
    ports: Vec<Vec<EndpointPort>>,
}

thread_local! {
    static TABLES: std::cell::RefCell<Tables> = std::cell::RefCell::new(Tables::default());
}

/// The index of `item` in `list`, added when new (or always, when `apart`).
fn intern<T: PartialEq>(list: &mut Vec<T>, item: T, apart: bool) -> u32 {
    match list.iter().position(|i| *i == item) {
        Some(i) if !apart => i as u32,
        _ => {
            list.push(item);
            list.len() as u32 - 1
        }
    }
}

/// The index of `body` among the pass's bodies, added when new (or always, when `apart`: then
/// as one more body of its own, equal to another).
fn body_index(body: Body, apart: bool) -> u32 {
    TABLES.with(|tables| {
        let tables = &mut *tables.borrow_mut();
        let body = SliceBody {
            namespace: body.namespace,
            labels: intern(&mut tables.maps, body.labels, false),
            annotations: intern(&mut tables.maps, body.annotations, false),
            ports: intern(&mut tables.ports, body.ports, false),
            content: body.content,
        };
        intern(&mut tables.bodies, body, apart)
    })
}

/// `slices` as a pass sends them.
fn member_slices(slices: Vec<Whole>, apart: bool) -> MemberSlices {
    let mut member = MemberSlices {
        names: String::new(),
        name_lengths: Vec::new(),
        bodies: Vec::new(),
    };
    for slice in slices {
        member.names.push_str(&slice.name);
        member.name_lengths.push(slice.name.len() as u32);
        member.bodies.push(body_index(slice.body, apart));
    }
    member
}

/// A ready member holding `slices` and the hub's Service as it must be.
fn ready(cluster: &str, slices: Vec<Whole>) -> MemberRead {
    holding(cluster, slices, false)
}

/// [`ready`], each slice with a body of its own even when another slice has the same.
fn ready_apart(cluster: &str, slices: Vec<Whole>) -> MemberRead {
    holding(cluster, slices, true)
}

fn holding(cluster: &str, slices: Vec<Whole>, apart: bool) -> MemberRead {
    let objects = MemberObjects {
        slices: Ok(member_slices(slices, apart)),
        service: Ok(Some(member_service("ClusterIP", &[]))),
    };
    let mut member = not_ready(cluster, 0);
    member.state = MemberState::Ready(objects);
    member
}

fn not_ready(cluster: &str, unreadable_ms: u64) -> MemberRead {
    MemberRead {
        cluster: cluster.into(),
        state: MemberState::NotReady(format!("cluster {cluster} is not ready")),
        unreadable_ms,
        last_ingress: None,
    }
}

fn objects(member: &mut MemberRead) -> &mut MemberObjects {
    match &mut member.state {
        MemberState::Ready(objects) => objects,
        MemberState::NotReady(_) => panic!("{} is not ready", member.cluster),
    }
}

/// `member` with `service` read as its Service.
fn serving(mut member: MemberRead, service: Result<Option<String>, ReadFailure>) -> MemberRead {
    objects(&mut member).service = service;
    member
}

/// A ready member whose EndpointSlices cannot be listed (`not_served`: answered 404).
fn unlisted(cluster: &str, not_served: bool) -> MemberRead {
    let mut member = ready(cluster, vec![]);
    let message = listing(cluster);
    objects(&mut member).slices = Err(ReadFailure {
        message,
        not_served,
    });
    member
}

fn listing(cluster: &str) -> String {
    format!("listing endpointslices of shop/web in cluster {cluster}: boom")
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The content (address type and endpoints) of every slice below: the component only compares
/// it, so any text stands for it.
const ENDPOINTS: &str = "IPv4 10.0.1.5 ready node-1 zone-a";

fn slice(name: &str, labels: &[(&str, &str)]) -> Whole {
    let port = EndpointPort {
        name: Some("http".into()),
        port: Some(8080),
        protocol: Some("TCP".into()),
        app_protocol: None,
    };
    Whole {
        name: name.into(),
        body: Body {
            namespace: "shop".into(),
            labels: pairs(labels),
            annotations: Vec::new(),
            ports: vec![port],
            content: ENDPOINTS.into(),
        },
    }
}

/// The labels of the copies of `web`'s slices.
const COPY_LABELS: [(&str, &str); 2] = [
    (MANAGED_BY_LABEL, DISPATCH_MANAGER),
    (SERVICE_NAME_LABEL, "web"),
];

/// A provider's own slice of the Service (its EndpointSlice controller's).
fn own(name: &str) -> Whole {
    slice(name, &[(SERVICE_NAME_LABEL, "web")])
}

/// The copy of `provider`'s slice `name` that `consumer` holds, as the component made it.
fn copy(provider: &str, consumer: &str, name: &str) -> Whole {
    let source = own(name);
    let mcs = McsRef {
        name: "web".into(),
        namespace: "shop".into(),
        ports: Vec::new(),
    };
    let summary = SliceSummary {
        name: source.name.clone(),
        namespace: source.body.namespace.clone(),
        labels: source.body.labels.clone(),
        port_names: source.body.ports.iter().map(|p| p.name.clone()).collect(),
    };
    let made = filter::copies(&mcs, None, provider, consumer, &[summary]);
    written_copy(&made[0], &source)
}

/// What a member holds once `copy` of `source` is written (as a host assembles it).
fn written_copy(copy: &SliceCopy, source: &Whole) -> Whole {
    Whole {
        name: copy.name.clone(),
        body: Body {
            namespace: source.body.namespace.clone(),
            labels: copy.labels.clone(),
            annotations: copy.annotations.clone(),
            ports: copy
                .ports
                .iter()
                .map(|&i| source.body.ports[i as usize].clone())
                .collect(),
            content: source.body.content.clone(),
        },
    }
}

fn pass(mcs: &Mcs, members: Vec<MemberRead>) -> PassRead {
    PassRead {
        mcs: mcs.0.to_string(),
        members,
        template: Ok(Some(template("ClusterIP"))),
        slice_bodies: TABLES.with(|t| t.borrow().bodies.clone()),
        slice_maps: TABLES.with(|t| t.borrow().maps.clone()),
        slice_ports: TABLES.with(|t| t.borrow().ports.clone()),
        unsynced: Vec::new(),
    }
}

fn within(timeout_ms: Option<u64>) -> SyncSettings {
    SyncSettings {
        stale_timeout_ms: timeout_ms,
    }
}

fn decided(mcs: &Mcs, members: Vec<MemberRead>) -> PassDecision {
    decide(&pass(mcs, members), &within(None)).unwrap()
}

/// The copies written, as `cluster/name`.
fn written(d: &PassDecision) -> Vec<String> {
    let name = |w: &SliceWrite| format!("{}/{}", w.cluster, w.copy.name);
    d.copies.iter().map(name).collect()
}

/// The slices deleted, as `cluster/name`.
fn deleted(d: &PassDecision) -> Vec<String> {
    let name = |o: &MemberObject| format!("{}/{}", o.cluster, o.name);
    d.deletions.iter().map(name).collect()
}

fn serviced(d: &PassDecision) -> Vec<&str> {
    d.services.iter().map(|s| s.cluster.as_str()).collect()
}

fn release() -> FinalizerChange {
    FinalizerChange::Release(FINALIZER.into())
}

#[test]
fn a_cross_cluster_mcs_without_our_finalizer_gets_it_added() {
    let members = || vec![ready("m1", vec![])];
    let d = decided(&mcs(&["CrossCluster"]), members());
    assert_eq!(d.finalizer, FinalizerChange::Add(FINALIZER.into()));
    assert!(d.plan.active && d.status.report && d.status.dispatches);
    let d = decided(&mcs(&["CrossCluster"]).finalized(), members());
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    let d = decided(&mcs(&["LoadBalancer"]), members());
    assert_eq!(d.finalizer, FinalizerChange::Keep);
}

#[test]
fn a_consumer_gets_copies_of_other_providers_slices_and_never_of_its_own() {
    let m = mcs(&["CrossCluster"])
        .finalized()
        .sets(&["m1", "m2"], &["m2", "m3"]);
    let m1 = ready("m1", vec![own("web-a")]);
    let members = vec![m1, ready("m2", vec![own("web-b")]), ready("m3", vec![])];
    let d = decided(&m, members);
    assert_eq!(written(&d), ["m2/m1-web-a", "m3/m1-web-a", "m3/m2-web-b"]);
    let sent = &d.copies[0];
    assert_eq!((sent.source_cluster.as_str(), sent.copy.source), ("m1", 0));
    assert_eq!(
        written_copy(&sent.copy, &own("web-a")),
        copy("m1", "m2", "web-a")
    );
    // Karmada's labels only: the upstream API's would put the copy in KEP-1645 DNS answers.
    assert_eq!(sent.copy.labels, pairs(&COPY_LABELS));
    for label in [MC_SERVICE_NAME_LABEL, MC_SOURCE_CLUSTER_LABEL] {
        assert!(sent.copy.labels.iter().all(|(k, _)| k != label), "{label}");
    }
    let annotations = [(PROVISION_CLUSTER_ANNOTATION, "m1")];
    assert_eq!(sent.copy.annotations, pairs(&annotations));
    assert_eq!(sent.copy.ports, [0]);
    let from_m2 = &d.copies[2];
    assert_eq!(
        (from_m2.source_cluster.as_str(), from_m2.copy.source),
        ("m2", 0)
    );
    assert!(d.deletions.is_empty() && d.status.dispatch_failures.is_empty());
}

#[test]
fn a_copy_already_held_identically_is_not_written_again() {
    let m = mcs(&["CrossCluster"]).finalized().sets(&["m1"], &[]);
    let mut held = copy("m1", "m2", "web-a");
    held.body.labels.reverse();
    let mut changed = copy("m1", "m2", "web-b");
    changed.body.content = "IPv4 10.0.9.9 ready node-1 zone-a".into();
    let m1 = ready("m1", vec![own("web-a"), own("web-b")]);
    let d = decided(
        &m,
        vec![m1.clone(), ready("m2", vec![held.clone(), changed])],
    );
    assert_eq!(written(&d), ["m2/m1-web-b"]);
    assert!(d.deletions.is_empty());
    // A slice of the same name in another namespace, read first, is not the copy (found by the
    // decide fuzz target: comparing only the first slice of that name wrote the copy for ever).
    let mut elsewhere = held.clone();
    elsewhere.body.namespace = "other".into();
    let d = decided(&m, vec![m1, ready("m2", vec![elsewhere, held])]);
    assert_eq!(written(&d), ["m2/m1-web-b"]);
}

#[test]
fn a_copy_names_its_source_by_its_index_among_all_the_providers_slices() {
    let m = mcs(&["CrossCluster"])
        .finalized()
        .sets(&["m1", "m2"], &["m2", "m3"]);
    // m1 lists a copy it holds and a user's slice of another Service before its own slice.
    let other = slice("api-a", &[(SERVICE_NAME_LABEL, "api")]);
    let m1 = vec![copy("m2", "m1", "web-b"), other, own("web-a")];
    let members = vec![
        ready("m1", m1.clone()),
        ready("m2", vec![own("web-b")]),
        ready("m3", vec![copy("m1", "m3", "web-a")]),
    ];
    let d = decided(&m, members);
    assert_eq!(written(&d), ["m2/m1-web-a", "m3/m2-web-b"]);
    let sent = &d.copies[0];
    assert_eq!((sent.source_cluster.as_str(), sent.copy.source), ("m1", 2));
    assert_eq!(written_copy(&sent.copy, &m1[2]), copy("m1", "m2", "web-a"));
}

#[test]
fn a_held_copy_that_differs_in_anything_it_carries_is_written_again() {
    let m = mcs(&["CrossCluster"]).finalized().sets(&["m1"], &["m2"]);
    let held = copy("m1", "m2", "web-a");
    let m1 = || ready("m1", vec![own("web-a")]);
    let writes = |held: Whole| written(&decided(&m, vec![m1(), ready("m2", vec![held])]));
    assert!(writes(held.clone()).is_empty());
    let mut other = held.clone();
    other.body.ports[0].port = Some(9090);
    assert_eq!(writes(other), ["m2/m1-web-a"]);
    let mut other = held.clone();
    other.body.ports.clear();
    assert_eq!(writes(other), ["m2/m1-web-a"]);
    let mut other = held.clone();
    other.body.annotations.push(("note".into(), "x".into()));
    assert_eq!(writes(other), ["m2/m1-web-a"]);
    let mut other = held.clone();
    other.body.labels.pop();
    assert_eq!(writes(other), ["m2/m1-web-a"]);
    let mut other = held;
    other.body.content.push(' ');
    assert_eq!(writes(other), ["m2/m1-web-a"]);
}

/// Each distinct body crosses once, and a copy found held with one body is held by every
/// member holding it with that body; a body of its own that is equal holds it as well, and one
/// that differs does not (whichever member is read first).
#[test]
fn copies_held_with_the_same_body_or_an_equal_one_are_held_and_others_are_not() {
    let m = mcs(&["CrossCluster"]).finalized().sets(&["m1"], &[]);
    let held = copy("m1", "m2", "web-a");
    let mut changed = held.clone();
    changed.body.content.push('!');
    let members = |first: Whole| {
        vec![
            ready("m1", vec![own("web-a")]),
            ready("m2", vec![first]),
            ready("m3", vec![held.clone()]),
            ready_apart("m4", vec![held.clone()]),
            ready("m5", vec![changed.clone()]),
            ready("m6", vec![]),
        ]
    };
    let d = decided(&m, members(held.clone()));
    assert_eq!(written(&d), ["m5/m1-web-a", "m6/m1-web-a"]);
    let d = decided(&m, members(changed.clone()));
    assert_eq!(written(&d), ["m2/m1-web-a", "m5/m1-web-a", "m6/m1-web-a"]);
    assert!(d.deletions.is_empty());
}

fn m1(p: &mut PassRead) -> &mut MemberSlices {
    objects(&mut p.members[0]).slices.as_mut().unwrap()
}

#[test]
fn member_slices_that_do_not_add_up_are_an_error() {
    let m = mcs(&["CrossCluster"]).finalized();
    let members = || {
        vec![
            ready("m1", vec![own("web-a"), own("é")]),
            ready("m2", vec![]),
        ]
    };
    let broken = |edit: &dyn Fn(&mut PassRead)| {
        let mut p = pass(&m, members());
        edit(&mut p);
        decide(&p, &within(None)).unwrap_err()
    };
    assert!(decide(&pass(&m, members()), &within(None)).is_ok());
    let why = "the slices of cluster m1 do not add up";
    assert_eq!(
        broken(&|p| p.slice_bodies.clear()),
        format!("{why}: slice web-a names body 0 of 0")
    );
    assert_eq!(
        broken(&|p| p.slice_maps.clear()),
        "slice body 0 does not add up: labels 0 of 0"
    );
    assert_eq!(
        broken(&|p| p.slice_bodies[0].annotations = 9),
        "slice body 0 does not add up: annotations 9 of 2"
    );
    assert_eq!(
        broken(&|p| p.slice_ports.clear()),
        "slice body 0 does not add up: ports 0 of 0"
    );
    assert_eq!(
        broken(&|p| m1(p).bodies.push(0)),
        format!("{why}: 2 names, 3 bodies")
    );
    assert_eq!(
        broken(&|p| m1(p).name_lengths[1] = 1),
        format!("{why}: no name of 1 bytes at byte 5 of 7")
    );
    assert_eq!(
        broken(&|p| m1(p).names.push('x')),
        format!("{why}: 1 bytes of names left over")
    );
    assert_eq!(
        broken(&|p| m1(p).name_lengths[0] = 99),
        format!("{why}: no name of 99 bytes at byte 0 of 7")
    );
}

#[test]
fn a_member_no_longer_a_consumer_loses_its_copies_but_never_a_users_slice() {
    let m = mcs(&["CrossCluster"]).finalized().sets(&["m1"], &["m2"]);
    let users = slice("web-local", &[(SERVICE_NAME_LABEL, "web")]);
    let unannotated = slice("web-manual", &COPY_LABELS);
    // m2 holds copies of a slice m1 no longer has, and of a provider that left P.
    let m2 = vec![
        copy("m1", "m2", "web-a"),
        copy("m1", "m2", "web-gone"),
        copy("m9", "m2", "web-z"),
        users.clone(),
    ];
    let m3 = vec![copy("m1", "m3", "web-a"), users, unannotated];
    let members = vec![
        ready("m1", vec![own("web-a")]),
        ready("m2", m2),
        ready("m3", m3),
    ];
    let d = decided(&m, members);
    assert_eq!(
        deleted(&d),
        ["m2/m1-web-gone", "m2/m9-web-z", "m3/m1-web-a"]
    );
    assert!(d.copies.is_empty());
}

#[test]
fn an_unreadable_provider_keeps_its_copies_until_the_stale_timeout() {
    let m = mcs(&["CrossCluster"])
        .finalized()
        .sets(&["m1", "m3"], &["m2"]);
    let consumer = || {
        ready(
            "m2",
            vec![copy("m1", "m2", "web-a"), copy("m3", "m2", "web-old")],
        )
    };
    let after = |unreadable_ms, timeout| {
        let m3 = ready("m3", vec![own("web-c")]);
        // m4 is no consumer: it keeps nothing, whoever could be read.
        let m4 = ready("m4", vec![copy("m1", "m4", "web-a")]);
        let members = vec![not_ready("m1", unreadable_ms), consumer(), m3, m4];
        decide(&pass(&m, members), &within(timeout)).unwrap()
    };
    let kept = after(60_000, Some(60_000));
    assert_eq!(deleted(&kept), ["m2/m3-web-old", "m4/m1-web-a"]);
    assert_eq!(written(&kept), ["m2/m3-web-c"]);
    assert_eq!(kept.status.dispatch_failures, ["cluster m1 is not ready"]);
    let past = after(60_001, Some(60_000));
    let gone = ["m2/m1-web-a", "m2/m3-web-old", "m4/m1-web-a"];
    assert_eq!(deleted(&past), gone);
    let for_ever = after(u64::MAX, None);
    assert_eq!(deleted(&for_ever), ["m2/m3-web-old", "m4/m1-web-a"]);
    // A provider whose list failed is unreadable too.
    let d = decided(
        &m,
        vec![unlisted("m1", false), consumer(), ready("m3", vec![])],
    );
    assert_eq!(deleted(&d), ["m2/m3-web-old"]);
    assert_eq!(d.status.dispatch_failures, [listing("m1")]);
    // A provider that is also a consumer is reported once.
    let both = mcs(&["CrossCluster"]).finalized();
    let d = decided(&both, vec![not_ready("m1", 0), ready("m2", vec![])]);
    assert_eq!(d.status.dispatch_failures, ["cluster m1 is not ready"]);
}

#[test]
fn a_deleted_mcs_with_our_finalizer_loses_every_copy_and_is_released() {
    let m1 = || ready("m1", vec![own("web-a"), copy("m2", "m1", "web-b")]);
    let m2 = ready("m2", vec![own("web-b"), copy("m1", "m2", "web-a")]);
    let m = mcs(&["CrossCluster"]).finalized().deleted();
    let d = decided(&m, vec![m1(), m2.clone()]);
    assert_eq!(deleted(&d), ["m1/m2-web-b", "m2/m1-web-a"]);
    assert_eq!(d.finalizer, release());
    assert!(d.copies.is_empty() && d.services.is_empty() && !d.status.report);
    // A ready member whose slices cannot be listed keeps the finalizer on.
    let d = decided(&m, vec![m1(), unlisted("m2", false)]);
    assert_eq!(deleted(&d), ["m1/m2-web-b"]);
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    assert_eq!(d.status.dispatch_failures, [listing("m2")]);
    // Without our finalizer there is nothing of ours to withdraw.
    let d = decided(&mcs(&["CrossCluster"]).deleted(), vec![m1(), m2]);
    assert!(d.deletions.is_empty());
    assert_eq!(d.finalizer, FinalizerChange::Keep);
}

#[test]
fn an_unready_member_is_neither_written_nor_reported_during_withdrawal() {
    let members = || {
        vec![
            ready("m1", vec![copy("m2", "m1", "web-b")]),
            not_ready("m2", 5),
        ]
    };
    let d = decided(&mcs(&["CrossCluster"]).finalized().deleted(), members());
    assert_eq!(deleted(&d), ["m1/m2-web-b"]);
    assert_eq!(d.finalizer, release());
    assert!(d.status.dispatch_failures.is_empty());
    // A LoadBalancer MCS still holding our finalizer is withdrawn the same way, and reports.
    let d = decided(&mcs(&["LoadBalancer"]).finalized(), members());
    assert_eq!(deleted(&d), ["m1/m2-web-b"]);
    assert_eq!(d.finalizer, release());
    assert!(d.status.report && d.status.dispatch_failures.is_empty());
}

#[test]
fn an_invalid_mcs_writes_nothing_and_reports_that_it_is_invalid() {
    let m = mcs(&["CrossCluster"]).finalized().invalid();
    let m1 = ready("m1", vec![own("web-a"), copy("m2", "m1", "web-b")]);
    let d = decided(
        &m,
        vec![serving(m1, Ok(None)), ready("m2", vec![own("web-b")])],
    );
    assert!(d.copies.is_empty() && d.deletions.is_empty() && d.services.is_empty());
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    assert!(d.status.report && !d.status.dispatches && d.ingress.is_none());
    let why = "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive";
    assert_eq!(d.status.invalid.as_deref(), Some(why));
}

#[test]
fn the_service_goes_to_ready_providers_and_consumers_once_each_in_name_order() {
    let members = || {
        let none = |cluster| serving(ready(cluster, vec![]), Ok(None));
        let mut members: Vec<MemberRead> = ["m1", "m2", "m3", "m5"].map(none).into();
        members.insert(3, not_ready("m4", 0));
        members
    };
    let m = mcs(&["CrossCluster"]).sets(&["m3", "m1"], &["m1", "m2", "m4"]);
    let d = decided(&m, members());
    assert_eq!(serviced(&d), ["m1", "m2", "m3"]);
    let created = |s: &ServiceWrite| matches!(s.action, ServiceAction::Create(_));
    assert!(d.services.iter().all(created));
    assert!(d.status.service_failures.is_empty());
    assert_eq!(d.status.dispatch_failures, ["cluster m4 is not ready"]);
    let lb = mcs(&["LoadBalancer"]).sets(&["m3", "m1", "m4"], &["m2"]);
    let d = decided(&lb, members());
    assert_eq!(serviced(&d), ["m1", "m3"]);
    assert!(d.status.service_failures.is_empty());
    // A member whose Service is already the template's gets nothing.
    let d = decided(&m, vec![ready("m1", vec![]), ready("m2", vec![])]);
    assert!(d.services.is_empty());
}

#[test]
fn a_service_read_failure_is_a_service_failure() {
    let m = mcs(&["CrossCluster"]).finalized();
    let why = "reading service shop/web in cluster m1: boom";
    let failure = ReadFailure {
        message: why.into(),
        not_served: false,
    };
    let m1 = serving(ready("m1", vec![]), Err(failure));
    let d = decided(&m, vec![m1, ready("m2", vec![])]);
    assert!(d.services.is_empty());
    assert_eq!(d.status.service_failures, [why]);
    assert!(!d.status.template_missing && d.status.dispatch_failures.is_empty());
    // The hub's: unreadable, or missing (not retried); the copies go on without its ports.
    let members = || vec![ready("m1", vec![own("web-a")]), ready("m2", vec![])];
    let mut unreadable = pass(&m, members());
    unreadable.template = Err("reading service shop/web from the hub: boom".into());
    let d = decide(&unreadable, &within(None)).unwrap();
    assert_eq!(
        d.status.service_failures,
        ["reading service shop/web from the hub: boom"]
    );
    assert!(!d.status.template_missing);
    assert_eq!(written(&d), ["m2/m1-web-a"]);
    let mut missing = pass(&m, members());
    missing.template = Ok(None);
    let d = decide(&missing, &within(None)).unwrap();
    assert_eq!(
        d.status.service_failures,
        ["service shop/web not found in the hub"]
    );
    assert!(d.status.template_missing && d.services.is_empty());
    assert_eq!(written(&d), ["m2/m1-web-a"]);
}

#[test]
fn a_list_answered_404_adds_an_api_incompatible_message_once() {
    let m = mcs(&["CrossCluster"])
        .finalized()
        .sets(&["m1", "m2"], &["m1", "m3"]);
    let m2 = ready("m2", vec![own("web-b")]);
    let d = decided(&m, vec![unlisted("m1", true), m2, unlisted("m3", true)]);
    let incompatible = [
        "Provider cluster m1 does not support EndpointSlice",
        "Consumer cluster m3 does not support EndpointSlice",
    ];
    assert_eq!(d.status.incompatible, incompatible);
    assert_eq!(d.status.dispatch_failures, [listing("m1"), listing("m3")]);
    assert!(d.copies.is_empty() && d.deletions.is_empty());
    // Another failure is no sign of that.
    let d = decided(&m, vec![unlisted("m1", false), ready("m2", vec![])]);
    assert!(d.status.incompatible.is_empty());
}

fn unsynced(cluster: &str, reason: &str) -> UnsyncedCluster {
    UnsyncedCluster {
        cluster: cluster.into(),
        reason: reason.into(),
    }
}

#[test]
fn a_listed_cluster_that_exists_but_is_not_synced_is_not_unknown() {
    let m = mcs(&["CrossCluster"])
        .finalized()
        .sets(&["m1", "m3", "ghost"], &["m2", "m3", "m4"]);
    let mut p = pass(
        &m,
        vec![ready("m1", vec![own("web-a")]), ready("m2", vec![])],
    );
    p.unsynced = vec![
        unsynced("m4", "its secret karmada-cluster/m4 does not exist"),
        unsynced("m3", "pull mode"),
        unsynced("m9", "pull mode"),
    ];
    let d = decide(&p, &within(None)).unwrap();
    // Each once, in listed order, providers first; only those the MCS lists.
    assert_eq!(
        d.status.unsynced,
        [
            unsynced("m3", "pull mode"),
            unsynced("m4", "its secret karmada-cluster/m4 does not exist"),
        ]
    );
    assert_eq!(d.status.unknown_providers, ["ghost"]);
    assert!(d.status.unknown_consumers.is_empty());
    assert_eq!(d.plan.unknown_providers, ["ghost"]);
    assert!(d.plan.unknown_consumers.is_empty());
    // The rest of the MCS's clusters are synced; nothing failed.
    assert_eq!(written(&d), ["m2/m1-web-a"]);
    assert!(d.status.dispatch_failures.is_empty() && d.status.service_failures.is_empty());
    // An MCS that lists none of them (an empty list: every member) has none.
    let every = mcs(&["CrossCluster"]).finalized();
    let mut p = pass(&every, vec![ready("m1", vec![]), ready("m2", vec![])]);
    p.unsynced = vec![unsynced("m3", "pull mode")];
    assert!(
        decide(&p, &within(None))
            .unwrap()
            .status
            .unsynced
            .is_empty()
    );
}

fn entries(ips: &[&str]) -> Vec<LoadBalancerIngress> {
    let entry = |ip: &&str| LoadBalancerIngress {
        ip: Some(ip.to_string()),
        hostname: None,
        ip_mode: None,
        ports: Vec::new(),
    };
    ips.iter().map(entry).collect()
}

#[test]
fn a_load_balancer_mcs_gathers_what_its_providers_report() {
    let members = || {
        let service = member_service("LoadBalancer", &["192.0.2.1"]);
        let m1 = serving(ready("m1", vec![]), Ok(Some(service)));
        let mut m2 = not_ready("m2", 30_000);
        m2.last_ingress = Some(entries(&["192.0.2.2"]));
        let mut m3 = not_ready("m3", 90_000);
        m3.last_ingress = Some(entries(&["192.0.2.3"]));
        vec![m1, m2, m3, not_ready("m4", 0)]
    };
    let lb = mcs(&["LoadBalancer"]).sets(&["m1", "m2", "m3", "m4"], &[]);
    let run = |mcs: &Mcs| {
        let mut read = pass(mcs, members());
        read.template = Ok(Some(template("LoadBalancer")));
        decide(&read, &within(Some(60_000))).unwrap()
    };
    let d = run(&lb);
    let remembered = d.remember_ingress.iter();
    let remembered: Vec<_> = remembered
        .map(|r| (r.cluster.as_str(), r.ingress[0].ip.as_deref()))
        .collect();
    assert_eq!(
        remembered,
        [
            ("m1", Some("192.0.2.1")),
            ("m2", Some("192.0.2.2")),
            ("m3", Some("192.0.2.3"))
        ]
    );
    // m2 is kept, m3 withdrawn; m4 (not read since the host started) keeps what no one reports.
    assert_eq!(d.ingress, Some(entries(&["192.0.2.1", "192.0.2.2"])));
    assert_eq!(d.status.load_balancer_failures.len(), 3);
    let report = d.status.load_balancer.as_ref().unwrap();
    assert!(!report.complete && report.changed);
    assert!(d.copies.is_empty() && d.status.dispatch_failures.is_empty() && !d.status.dispatches);
    // The status already holds them: nothing to write.
    let d = run(&lb.ingress(&["192.0.2.1", "192.0.2.2"]));
    assert_eq!(d.ingress, None);
    assert!(!d.status.load_balancer.unwrap().changed);
}

#[test]
fn a_json_text_that_is_not_an_mcs_is_an_error() {
    for text in [r#"{"apiVersion":"v1","kind":"Service"}"#, "not json", ""] {
        let mut read = pass(&mcs(&["CrossCluster"]), vec![ready("m1", vec![])]);
        read.mcs = text.into();
        assert!(decide(&read, &within(None)).is_err(), "{text}");
    }
}
