use serde_json::{Value, json};

use super::*;
use crate::filter::{
    self, DISPATCH_MANAGER, MANAGED_BY_LABEL, PROVISION_CLUSTER_ANNOTATION, SERVICE_NAME_LABEL,
};
use crate::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice, LoadBalancerIngress};

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

/// A ready member holding `slices` and the hub's Service as it must be.
fn ready(cluster: &str, slices: Vec<EndpointSlice>) -> MemberRead {
    let objects = MemberObjects {
        slices: Ok(slices),
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

fn slice(name: &str, labels: &[(&str, &str)]) -> EndpointSlice {
    let conditions = EndpointConditions {
        ready: Some(true),
        serving: Some(true),
        terminating: Some(false),
    };
    let endpoint = Endpoint {
        addresses: vec!["10.0.1.5".into()],
        conditions,
        hostname: None,
        node_name: Some("node-1".into()),
        zone: Some("zone-a".into()),
        target_ref: None,
        hints: None,
        deprecated_topology: Vec::new(),
    };
    let port = EndpointPort {
        name: Some("http".into()),
        port: Some(8080),
        protocol: Some("TCP".into()),
        app_protocol: None,
    };
    EndpointSlice {
        name: name.into(),
        namespace: "shop".into(),
        labels: pairs(labels),
        annotations: Vec::new(),
        address_type: "IPv4".into(),
        endpoints: vec![endpoint],
        ports: vec![port],
    }
}

/// The labels of the copies of `web`'s slices.
const COPY_LABELS: [(&str, &str); 2] = [
    (SERVICE_NAME_LABEL, "web"),
    (MANAGED_BY_LABEL, DISPATCH_MANAGER),
];

/// A provider's own slice of the Service (its EndpointSlice controller's).
fn own(name: &str) -> EndpointSlice {
    slice(name, &[(SERVICE_NAME_LABEL, "web")])
}

/// The copy of `provider`'s slice `name` that `consumer` holds, as the component made it.
fn copy(provider: &str, consumer: &str, name: &str) -> EndpointSlice {
    let source = own(name);
    let mcs = McsRef {
        name: "web".into(),
        namespace: "shop".into(),
        ports: Vec::new(),
    };
    let made = filter::copies(&mcs, None, provider, consumer, &[filter::summary(&source)]);
    filter::apply(made.into_iter().next().unwrap(), source)
}

fn pass(mcs: &Mcs, members: Vec<MemberRead>) -> PassRead {
    PassRead {
        mcs: mcs.0.to_string(),
        members,
        template: Ok(Some(template("ClusterIP"))),
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
    let name = |w: &SliceWrite| format!("{}/{}", w.cluster, w.slice.name);
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
    let sent = &d.copies[0].slice;
    assert_eq!(sent, &copy("m1", "m2", "web-a"));
    assert_eq!(sent.labels, pairs(&COPY_LABELS));
    let annotations = [(PROVISION_CLUSTER_ANNOTATION, "m1")];
    assert_eq!(sent.annotations, pairs(&annotations));
    assert_eq!(sent.endpoints, own("web-a").endpoints);
    assert!(d.deletions.is_empty() && d.status.dispatch_failures.is_empty());
}

#[test]
fn a_copy_already_held_identically_is_not_written_again() {
    let m = mcs(&["CrossCluster"]).finalized().sets(&["m1"], &[]);
    let mut held = copy("m1", "m2", "web-a");
    held.labels.reverse();
    let mut changed = copy("m1", "m2", "web-b");
    changed.endpoints[0].addresses = vec!["10.0.9.9".into()];
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
    elsewhere.namespace = "other".into();
    let d = decided(&m, vec![m1, ready("m2", vec![elsewhere, held])]);
    assert_eq!(written(&d), ["m2/m1-web-b"]);
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
