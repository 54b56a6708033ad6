//! The clusterset rules, one test per rule (docs/clusterset-rules.md).

use serde_json::{Value, json};

use super::*;
use crate::{
    AdmissionRequest, ClustersetMember, ClustersetMemberState, ClustersetObjects, Denial, Endpoint,
    EndpointConditions, EndpointPort, ImportedSlice, Operation,
};

const NS: &str = "shop";
const NAME: &str = "web";
const NOW: &str = "2026-11-29T10:00:00Z";

fn service(ports: &[(&str, i64, &str)], headless: bool) -> Value {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(n, p, proto)| json!({"name": n, "port": p, "protocol": proto, "targetPort": p}))
        .collect();
    let mut spec = json!({
        "type": "ClusterIP", "ports": ports, "selector": {"app": "web"},
        "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
        "clusterIP": if headless { "None" } else { "10.96.0.10" },
    });
    if headless {
        spec["clusterIPs"] = json!(["None"]);
    }
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": NAME, "namespace": NS}, "spec": spec})
}

fn export(created: &str) -> Value {
    json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
           "metadata": {"name": NAME, "namespace": NS, "creationTimestamp": created, "generation": 1}})
}

fn slice(name: &str, ip: &str) -> EndpointSlice {
    EndpointSlice {
        name: name.into(),
        namespace: NS.into(),
        labels: vec![
            (
                "endpointslice.kubernetes.io/managed-by".into(),
                "endpointslice-controller.k8s.io".into(),
            ),
            ("kubernetes.io/service-name".into(), NAME.into()),
        ],
        annotations: vec![],
        address_type: "IPv4".into(),
        endpoints: vec![Endpoint {
            addresses: vec![ip.into()],
            conditions: EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            },
            hostname: None,
            node_name: None,
            zone: None,
            target_ref: None,
            hints: None,
            deprecated_topology: vec![],
        }],
        ports: vec![EndpointPort {
            name: Some("http".into()),
            port: Some(8080),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }],
    }
}

#[derive(Clone, Default)]
struct Held {
    export: Option<Value>,
    service: Option<Value>,
    slices: Vec<EndpointSlice>,
    import: Option<Value>,
    derived: Option<Value>,
    imported: Vec<ImportedSlice>,
}

fn exporter(created: &str, svc: Value, slices: Vec<EndpointSlice>) -> Held {
    Held {
        export: Some(export(created)),
        service: Some(svc),
        slices,
        ..Held::default()
    }
}

fn member(cluster: &str, held: Held) -> ClustersetMember {
    ClustersetMember {
        cluster: cluster.into(),
        cluster_property: None,
        state: ClustersetMemberState::Readable(ClustersetObjects {
            service_export: held.export.map(|v| v.to_string()),
            service: held.service.map(|v| v.to_string()),
            slices: held.slices,
            service_import: held.import.map(|v| v.to_string()),
            derived_service: held.derived.map(|v| v.to_string()),
            imported_slices: held.imported,
        }),
        unreadable_ms: 0,
    }
}

fn unreadable(cluster: &str) -> ClustersetMember {
    ClustersetMember {
        cluster: cluster.into(),
        cluster_property: None,
        state: ClustersetMemberState::Unreadable("connection refused".into()),
        unreadable_ms: 0,
    }
}

fn pass(members: Vec<ClustersetMember>) -> ClustersetDecision {
    decide(&ClustersetRead {
        namespace: NS.into(),
        name: NAME.into(),
        now: NOW.into(),
        members,
        stale_timeout_ms: None,
    })
    .expect("decides")
}

fn pass_with_timeout(
    members: Vec<ClustersetMember>,
    timeout_ms: Option<u64>,
) -> ClustersetDecision {
    decide(&ClustersetRead {
        namespace: NS.into(),
        name: NAME.into(),
        now: NOW.into(),
        members,
        stale_timeout_ms: timeout_ms,
    })
    .expect("decides")
}

fn applied(w: &ObjectWrite) -> Value {
    match w {
        ObjectWrite::Apply(body) => serde_json::from_str(body).unwrap(),
        other => panic!("expected an apply, got {other:?}"),
    }
}

fn conditions(d: &ClustersetMemberDecision) -> Vec<Value> {
    serde_json::from_str(d.export_conditions.as_deref().expect("conditions")).unwrap()
}

fn condition<'a>(conds: &'a [Value], type_: &str) -> &'a Value {
    conds
        .iter()
        .find(|c| c["type"] == type_)
        .unwrap_or_else(|| panic!("no {type_} in {conds:?}"))
}

/// What a member holds after the host carried out `d`: the applied objects, with the uid,
/// resourceVersion and assigned IPs an API server gives them.
fn after(mut held: Held, d: &ClustersetMemberDecision, ip: &str) -> Held {
    if let Some(c) = &d.export_conditions {
        let e = held.export.as_mut().unwrap();
        e["status"] = json!({"conditions": serde_json::from_str::<Value>(c).unwrap()});
    }
    match &d.service_import {
        ObjectWrite::Apply(b) => {
            let mut v: Value = serde_json::from_str(b).unwrap();
            v["metadata"]["uid"] = json!("uid-import");
            v["metadata"]["resourceVersion"] = json!("7");
            if let Some(old) = &held.import {
                v["status"] = old["status"].clone();
            }
            held.import = Some(v);
        }
        ObjectWrite::Delete(_) => held.import = None,
        ObjectWrite::Leave => {}
    }
    if let Some(s) = &d.service_import_status {
        let s: Value = serde_json::from_str(s).unwrap();
        held.import.as_mut().unwrap()["status"] = s["status"].clone();
    }
    match &d.derived_service {
        ObjectWrite::Apply(b) => {
            let mut v: Value = serde_json::from_str(b).unwrap();
            v["metadata"]["uid"] = json!("uid-derived");
            v["metadata"]["resourceVersion"] = json!("8");
            v["spec"]["clusterIP"] = json!(ip);
            v["spec"]["clusterIPs"] = json!([ip]);
            v["spec"]["ipFamilies"] = json!(["IPv4"]);
            v["spec"]["ports"][0]["targetPort"] = v["spec"]["ports"][0]["port"].clone();
            held.derived = Some(v);
        }
        ObjectWrite::Delete(_) => held.derived = None,
        ObjectWrite::Leave => {}
    }
    let deleted: Vec<&str> = d.delete_slices.iter().map(|p| p.name.as_str()).collect();
    held.imported
        .retain(|s| !deleted.contains(&s.slice.name.as_str()));
    for s in &d.apply_slices {
        held.imported.retain(|h| h.slice.name != s.name);
        held.imported.push(ImportedSlice {
            slice: s.clone(),
            uid: format!("uid-{}", s.name),
            resource_version: "9".into(),
        });
    }
    held
}

fn label<'a>(s: &'a EndpointSlice, key: &str) -> Option<&'a str> {
    s.labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn one_clusterset_ip_export_gives_every_member_the_import_the_derived_service_and_the_slices() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    assert_eq!(d.exporters, ["a"]);
    assert_eq!(d.winner.as_deref(), Some("a"));
    assert!(d.conflicts.is_empty());
    let derived = digest::derived_name(NS, NAME);
    for m in &d.members {
        let import = applied(&m.service_import);
        assert_eq!(import["apiVersion"], "multicluster.x-k8s.io/v1beta1");
        assert_eq!(import["spec"]["type"], "ClusterSetIP");
        assert_eq!(
            import["spec"]["ports"],
            json!([{"name": "http", "protocol": "TCP", "port": 80}])
        );
        assert_eq!(import["spec"]["sessionAffinity"], "None");
        assert_eq!(import["spec"]["internalTrafficPolicy"], "Cluster");
        assert!(
            import["spec"].get("ips").is_none(),
            "no IP before allocation"
        );
        assert_eq!(
            import["metadata"]["annotations"][DERIVED_SERVICE_ANNOTATION],
            derived
        );
        assert_eq!(import["metadata"]["labels"][CREATED_BY_LABEL], CREATED_BY);
        let status: Value =
            serde_json::from_str(m.service_import_status.as_deref().unwrap()).unwrap();
        assert_eq!(status["status"]["clusters"], json!([{"cluster": "a"}]));
        let svc = applied(&m.derived_service);
        assert_eq!(svc["metadata"]["name"], derived);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert!(svc["spec"].get("selector").is_none());
        assert_eq!(svc["spec"]["ports"], import["spec"]["ports"]);
        assert_eq!(m.apply_slices.len(), 1, "exporters hold the import too");
        let s = &m.apply_slices[0];
        assert_eq!(
            label(s, "multicluster.kubernetes.io/service-name"),
            Some(NAME)
        );
        assert_eq!(
            label(s, "multicluster.kubernetes.io/source-cluster"),
            Some("a")
        );
        assert_eq!(
            label(s, "kubernetes.io/service-name"),
            Some(derived.as_str())
        );
        assert_eq!(
            label(s, "endpointslice.kubernetes.io/managed-by"),
            Some(crate::filter::CLUSTERSET_MANAGER)
        );
        assert!(s.name.len() <= 63);
        assert_eq!(s.endpoints[0].addresses, ["10.0.0.1"]);
    }
    let conds = conditions(&d.members[0]);
    assert_eq!(condition(&conds, "Valid")["status"], "True");
    assert_eq!(condition(&conds, "Ready")["reason"], "Exported");
    assert_eq!(condition(&conds, "Conflict")["status"], "False");
    assert_eq!(condition(&conds, "Conflict")["reason"], "NoConflicts");
    assert_eq!(condition(&conds, "Valid")["lastTransitionTime"], NOW);
    assert_eq!(condition(&conds, "Valid")["observedGeneration"], 1);
    assert!(
        d.members[1].export_conditions.is_none(),
        "b exports nothing"
    );
}

#[test]
fn the_import_lists_the_derived_services_ips_as_read_and_a_third_pass_writes_nothing() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let b = Held::default();
    let first = pass(vec![member("a", a.clone()), member("b", b.clone())]);
    let a = after(a, &first.members[0], "10.100.0.1");
    let b = after(b, &first.members[1], "10.200.0.1");
    let second = pass(vec![member("a", a.clone()), member("b", b.clone())]);
    for (m, ip) in second.members.iter().zip(["10.100.0.1", "10.200.0.1"]) {
        let import = applied(&m.service_import);
        assert_eq!(import["spec"]["ips"], json!([ip]));
        assert_eq!(import["spec"]["ipFamilies"], json!(["IPv4"]));
        // The import has a uid now: the derived Service and the slices name it as owner.
        let derived = applied(&m.derived_service);
        assert_eq!(
            derived["metadata"]["ownerReferences"][0]["uid"],
            "uid-import"
        );
        assert!(!m.apply_slices.is_empty() && m.delete_slices.is_empty());
        assert_eq!(import_ready(m), "True Ready");
    }
    assert!(second.members[0].export_conditions.is_none(), "unchanged");
    let a = after(a, &second.members[0], "10.100.0.1");
    let b = after(b, &second.members[1], "10.200.0.1");
    let third = pass(vec![member("a", a), member("b", b)]);
    for m in &third.members {
        assert_eq!(m.service_import, ObjectWrite::Leave);
        assert_eq!(m.derived_service, ObjectWrite::Leave);
        assert!(m.service_import_status.is_none() && m.export_conditions.is_none());
        assert!(m.apply_slices.is_empty() && m.delete_slices.is_empty());
    }
}

#[test]
fn a_headless_export_gives_a_headless_import_without_ips_or_derived_service() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], true),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    for m in &d.members {
        let import = applied(&m.service_import);
        assert_eq!(import["spec"]["type"], "Headless");
        assert!(import["spec"].get("ips").is_none());
        assert!(import["metadata"].get("annotations").is_none());
        assert_eq!(m.derived_service, ObjectWrite::Leave);
        assert_eq!(m.apply_slices.len(), 1);
    }
}

#[test]
fn an_external_name_service_makes_the_export_invalid_and_exports_nothing() {
    let mut svc = service(&[("http", 80, "TCP")], false);
    svc["spec"] = json!({"type": "ExternalName", "externalName": "example.com"});
    let a = exporter("2026-11-01T00:00:00Z", svc, vec![]);
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    assert!(d.exporters.is_empty() && d.winner.is_none());
    for m in &d.members {
        assert_eq!(m.service_import, ObjectWrite::Leave);
        assert_eq!(m.derived_service, ObjectWrite::Leave);
        assert!(m.apply_slices.is_empty());
    }
    let conds = conditions(&d.members[0]);
    assert_eq!(condition(&conds, "Valid")["status"], "False");
    assert_eq!(condition(&conds, "Valid")["reason"], "InvalidServiceType");
    assert_eq!(condition(&conds, "Ready")["status"], "False");
    assert!(conds.iter().all(|c| c["type"] != "Conflict"));
}

#[test]
fn an_export_without_its_service_is_invalid() {
    let a = Held {
        export: Some(export("2026-11-01T00:00:00Z")),
        ..Held::default()
    };
    let d = pass(vec![member("a", a)]);
    let conds = conditions(&d.members[0]);
    assert_eq!(condition(&conds, "Valid")["reason"], "NoService");
    assert_eq!(d.members[0].service_import, ObjectWrite::Leave);
}

#[test]
fn a_port_one_export_adds_is_in_the_union_and_every_export_reports_the_conflict() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP"), ("stcp", 142, "SCTP")], false),
        vec![slice("web-b", "10.1.0.1")],
    );
    let d = pass(vec![
        member("a", a),
        member("b", b),
        member("c", Held::default()),
    ]);
    assert_eq!(d.conflicts, ["PortConflict"]);
    assert_eq!(d.winner.as_deref(), Some("a"));
    for m in &d.members {
        let import = applied(&m.service_import);
        assert_eq!(
            import["spec"]["ports"],
            json!([{"name": "http", "protocol": "TCP", "port": 80},
                   {"name": "stcp", "protocol": "SCTP", "port": 142}])
        );
        assert_eq!(m.apply_slices.len(), 2, "every exporter's slices");
    }
    for m in &d.members[..2] {
        let conds = conditions(m);
        assert_eq!(condition(&conds, "Conflict")["status"], "True");
        assert_eq!(condition(&conds, "Conflict")["reason"], "PortConflict");
    }
}

#[test]
fn a_port_of_the_same_name_with_another_number_keeps_the_oldest_exports() {
    let a = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 81, "TCP")], false),
        vec![],
    );
    let b = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.winner.as_deref(), Some("b"), "b is older");
    let import = applied(&d.members[0].service_import);
    assert_eq!(
        import["spec"]["ports"],
        json!([{"name": "http", "protocol": "TCP", "port": 80}])
    );
    for m in &d.members {
        assert_eq!(
            condition(&conditions(m), "Conflict")["reason"],
            "PortConflict"
        );
    }
}

#[test]
fn differing_headlessness_is_a_type_conflict_and_the_oldest_decides_the_type() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP")], true),
        vec![],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.conflicts, ["TypeConflict"]);
    for m in &d.members {
        assert_eq!(applied(&m.service_import)["spec"]["type"], "ClusterSetIP");
        assert_eq!(
            condition(&conditions(m), "Conflict")["reason"],
            "TypeConflict"
        );
    }
}

#[test]
fn equal_creation_times_are_ordered_by_cluster_id_and_the_winner_gives_affinity_and_labels() {
    let mut sa = service(&[("http", 80, "TCP")], false);
    sa["spec"]["sessionAffinity"] = json!("ClientIP");
    sa["spec"]["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 30}});
    sa["spec"]["internalTrafficPolicy"] = json!("Local");
    sa["spec"]["trafficDistribution"] = json!("PreferClose");
    let mut a = exporter("2026-11-01T00:00:00Z", sa, vec![]);
    a.export.as_mut().unwrap()["spec"] =
        json!({"exportedLabels": {"team": "a"}, "exportedAnnotations": {"note": "a"}});
    let mut b = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    b.export.as_mut().unwrap()["spec"] = json!({"exportedLabels": {"team": "b"}});
    // Member z has cluster id "a-id" < "b-id".
    let mut za = member("z", a);
    za.cluster_property = Some("a-id".into());
    let mut yb = member("y", b);
    yb.cluster_property = Some("b-id".into());
    let d = pass(vec![yb, za]);
    assert_eq!(d.winner.as_deref(), Some("a-id"));
    assert_eq!(
        d.conflicts,
        [
            "SessionAffinityConflict",
            "InternalTrafficPolicyConflict",
            "TrafficDistributionConflict",
            "LabelsConflict",
            "AnnotationsConflict"
        ]
    );
    let import = applied(&d.members[0].service_import);
    assert_eq!(import["spec"]["sessionAffinity"], "ClientIP");
    assert_eq!(
        import["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 30}})
    );
    assert_eq!(import["spec"]["internalTrafficPolicy"], "Local");
    assert_eq!(import["spec"]["trafficDistribution"], "PreferClose");
    assert_eq!(import["metadata"]["labels"]["team"], "a");
    assert_eq!(import["metadata"]["annotations"]["note"], "a");
    let svc = applied(&d.members[0].derived_service);
    assert_eq!(svc["spec"]["sessionAffinity"], "ClientIP");
    assert_eq!(d.members[1].cluster_id, "a-id");
}

#[test]
fn when_the_last_export_goes_the_import_derived_service_and_slices_go_with_preconditions() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let b = Held::default();
    let first = pass(vec![member("a", a.clone()), member("b", b.clone())]);
    let mut a = after(a, &first.members[0], "10.100.0.1");
    let b = after(b, &first.members[1], "10.200.0.1");
    a.export = None;
    let d = pass(vec![member("a", a), member("b", b)]);
    assert!(d.exporters.is_empty());
    for m in &d.members {
        let ObjectWrite::Delete(p) = &m.service_import else {
            panic!("import not deleted: {:?}", m.service_import)
        };
        assert_eq!(
            (p.name.as_str(), p.uid.as_str(), p.resource_version.as_str()),
            (NAME, "uid-import", "7")
        );
        let ObjectWrite::Delete(p) = &m.derived_service else {
            panic!("derived Service not deleted")
        };
        assert_eq!(p.name, digest::derived_name(NS, NAME));
        assert_eq!(m.delete_slices.len(), 1);
        assert_eq!(m.delete_slices[0].resource_version, "9");
        assert!(m.apply_slices.is_empty());
    }
}

#[test]
fn an_unreadable_exporter_keeps_its_slices_and_its_place_in_the_import() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-b", "10.1.0.1")],
    );
    let c = Held::default();
    let first = pass(vec![
        member("a", a.clone()),
        member("b", b.clone()),
        member("c", c.clone()),
    ]);
    let a = after(a, &first.members[0], "10.100.0.1");
    let c = after(c, &first.members[2], "10.200.0.1");
    assert_eq!(c.imported.len(), 2);

    // b cannot be read: its slices stay everywhere, and the import still lists it.
    let d = pass(vec![
        member("a", a.clone()),
        unreadable("b"),
        member("c", c.clone()),
    ]);
    assert_eq!(d.exporters, ["a"]);
    let b_decision = &d.members[1];
    assert_eq!(b_decision.service_import, ObjectWrite::Leave);
    assert!(b_decision.apply_slices.is_empty() && !b_decision.notes.is_empty());
    for m in [&d.members[0], &d.members[2]] {
        assert!(
            m.delete_slices.is_empty(),
            "b's slices stay: {:?}",
            m.delete_slices
        );
        if let Some(status) = &m.service_import_status {
            let status: Value = serde_json::from_str(status).unwrap();
            assert_eq!(
                status["status"]["clusters"],
                json!([{"cluster": "a"}, {"cluster": "b"}]),
                "the import still lists a and b"
            );
        }
    }

    // Now a's export goes too, b still unreadable: nothing is withdrawn, b's slices stay,
    // a's go.
    let mut a2 = a;
    a2.export = None;
    let d = pass(vec![member("a", a2), unreadable("b"), member("c", c)]);
    let c_decision = &d.members[2];
    assert_eq!(c_decision.service_import, ObjectWrite::Leave);
    assert_eq!(c_decision.derived_service, ObjectWrite::Leave);
    assert_eq!(c_decision.delete_slices.len(), 1);
    assert!(c_decision.delete_slices[0].name.contains("-a-"));
}

#[test]
fn objects_without_our_markers_are_never_changed_or_deleted() {
    let foreign_import = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
        "metadata": {"name": NAME, "namespace": NS, "uid": "u1", "resourceVersion": "1"},
        "spec": {"type": "ClusterSetIP", "ports": []}});
    let foreign_derived = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": digest::derived_name(NS, NAME), "namespace": NS, "uid": "u2", "resourceVersion": "1"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.9.9.9"}});
    let mut foreign_slice = slice("web-other", "10.5.0.1");
    foreign_slice.labels.push((
        "multicluster.kubernetes.io/service-name".into(),
        NAME.into(),
    ));
    let b = Held {
        import: Some(foreign_import.clone()),
        derived: Some(foreign_derived.clone()),
        imported: vec![ImportedSlice {
            slice: foreign_slice,
            uid: "u3".into(),
            resource_version: "1".into(),
        }],
        ..Held::default()
    };
    // With nothing exported, and with an export: the foreign objects are left both times.
    let d = pass(vec![member("b", b.clone())]);
    assert_eq!(d.members[0].service_import, ObjectWrite::Leave);
    assert_eq!(d.members[0].derived_service, ObjectWrite::Leave);
    assert!(d.members[0].delete_slices.is_empty());
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    let m = &d.members[1];
    assert_eq!(m.service_import, ObjectWrite::Leave);
    assert!(m.service_import_status.is_none());
    assert_eq!(m.derived_service, ObjectWrite::Leave);
    assert!(m.delete_slices.is_empty());
    assert_eq!(m.notes.len(), 2);
}

#[test]
fn last_transition_time_moves_only_when_the_status_does() {
    let mut a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    a.export.as_mut().unwrap()["status"] = json!({"conditions": [
        {"type": "Valid", "status": "True", "reason": "Valid", "message": "old words",
         "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1},
        {"type": "Ready", "status": "False", "reason": "Pending", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Other", "status": "True", "reason": "X", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let d = pass(vec![member("a", a)]);
    let conds = conditions(&d.members[0]);
    assert_eq!(
        condition(&conds, "Valid")["lastTransitionTime"],
        "2026-01-01T00:00:00Z"
    );
    assert_ne!(condition(&conds, "Valid")["message"], "old words");
    assert_eq!(condition(&conds, "Ready")["lastTransitionTime"], NOW);
    assert_eq!(
        condition(&conds, "Other")["reason"],
        "X",
        "other types kept"
    );
}

#[test]
fn the_cluster_id_is_a_valid_cluster_property_else_the_member_name() {
    assert_eq!(members::cluster_id("m1", Some("east-1")), "east-1");
    assert_eq!(members::cluster_id("m1", Some("Not_Valid")), "m1");
    assert_eq!(members::cluster_id("m1", None), "m1");
    // KEP-2149: a DNS-1123 subdomain of at most 128 characters.
    assert_eq!(
        members::cluster_id("m1", Some("east-1.prod.example.com")),
        "east-1.prod.example.com"
    );
    let long = format!("{}.example.com", "a".repeat(116));
    assert_eq!(long.len(), 128);
    assert_eq!(members::cluster_id("m1", Some(&long)), long);
    assert_eq!(members::cluster_id("m1", Some(&format!("a{long}"))), "m1");
}

#[test]
fn an_id_too_long_for_a_label_labels_slices_by_a_short_form_that_leads_back_to_it() {
    let long = format!("{}example.com", "east.".repeat(20));
    assert!(long.len() > 63 && long.len() <= 128);
    let short = slices::source_label(&long);
    assert!(short.len() <= 63, "{short}");
    assert!(crate::names::label_value(&short).is_empty(), "{short}");
    assert_eq!(
        slices::source_label("east-1.example.com"),
        "east-1.example.com"
    );

    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let mut ma = member("a", a.clone());
    ma.cluster_property = Some(long.clone());
    let first = pass(vec![ma, member("c", Held::default())]);
    assert_eq!(first.exporters, std::slice::from_ref(&long));
    let s = &first.members[1].apply_slices[0];
    assert_eq!(
        label(s, "multicluster.kubernetes.io/source-cluster"),
        Some(short.as_str())
    );
    let c = after(Held::default(), &first.members[1], "10.200.0.1");
    assert_eq!(
        import::status_clusters(c.import.as_ref().unwrap()),
        std::slice::from_ref(&long)
    );

    // a cannot be read: c's slice from it stays and the import still lists the whole id.
    let mut gone = unreadable("a");
    gone.cluster_property = Some(long);
    let d = pass(vec![gone, member("c", c)]);
    let c_decision = &d.members[1];
    assert!(
        c_decision.delete_slices.is_empty(),
        "{:?}",
        c_decision.delete_slices
    );
    assert_eq!(c_decision.service_import, ObjectWrite::Leave);
    assert!(c_decision.service_import_status.is_none());
}

#[test]
fn members_sharing_an_id_have_invalid_exports_and_the_rest_of_the_clusterset_is_served() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-b", "10.1.0.1")],
    );
    let c = Held::default();
    let first = pass(vec![
        member("a", a.clone()),
        member("b", b.clone()),
        member("c", c.clone()),
    ]);
    let a = after(a, &first.members[0], "10.100.0.1");
    let b = after(b, &first.members[1], "10.150.0.1");
    let c = after(c, &first.members[2], "10.200.0.1");
    assert_eq!(c.imported.len(), 2);

    // b's ClusterProperty now says "a", the id of member a: neither a's nor b's export counts,
    // but nothing they exported goes, and c is still served by a third exporter.
    let x = exporter(
        "2026-11-03T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-x", "10.3.0.1")],
    );
    let mut mb = member("b", b);
    mb.cluster_property = Some("a".into());
    let d = pass(vec![member("a", a), mb, member("c", c), member("x", x)]);
    assert_eq!(d.exporters, ["x"]);
    for m in &d.members[..2] {
        let conds = conditions(m);
        let valid = condition(&conds, "Valid");
        assert_eq!(valid["status"], "False", "{}", m.cluster);
        assert_eq!(valid["reason"], "DuplicateClusterID");
        assert!(
            valid["message"].as_str().unwrap().contains("a, b"),
            "{valid}"
        );
        assert_eq!(condition(&conds, "Ready")["status"], "False");
    }
    let c_decision = &d.members[2];
    let deleted: Vec<&str> = c_decision
        .delete_slices
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        deleted,
        [slices::name(NAME, "b", "web-b")],
        "a's slices stay; b's under its former id go, as with any change of id"
    );
    assert_eq!(c_decision.apply_slices.len(), 1, "x's slice arrives");
    let status: Value =
        serde_json::from_str(c_decision.service_import_status.as_deref().unwrap()).unwrap();
    assert_eq!(
        status["status"]["clusters"],
        json!([{"cluster": "a"}, {"cluster": "x"}]),
        "a stays listed; b and a are one id"
    );
    for m in &d.members {
        assert!(
            !matches!(m.service_import, ObjectWrite::Delete(_)),
            "{}: nothing is withdrawn",
            m.cluster
        );
    }
}

#[test]
fn when_only_members_sharing_an_id_export_nothing_is_withdrawn() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let c = Held::default();
    let first = pass(vec![member("a", a.clone()), member("c", c.clone())]);
    let a = after(a, &first.members[0], "10.100.0.1");
    let c = after(c, &first.members[1], "10.200.0.1");
    let mut mc = member("c", c);
    mc.cluster_property = Some("a".into());
    let d = pass(vec![member("a", a), mc]);
    for m in &d.members {
        assert_eq!(m.service_import, ObjectWrite::Leave, "{}", m.cluster);
        assert_eq!(m.derived_service, ObjectWrite::Leave, "{}", m.cluster);
        assert!(m.delete_slices.is_empty(), "{}", m.cluster);
    }
}

#[test]
fn malformed_objects_are_errors_naming_the_member() {
    let mut a = member("a", Held::default());
    if let ClustersetMemberState::Readable(o) = &mut a.state {
        o.service_import = Some("{".into());
    }
    let err = decide(&ClustersetRead {
        namespace: NS.into(),
        name: NAME.into(),
        now: NOW.into(),
        members: vec![a],
        stale_timeout_ms: None,
    })
    .unwrap_err();
    assert!(
        err.starts_with("cluster a: the ServiceImport is not JSON"),
        "{err}"
    );
}

#[test]
fn imported_slice_names_are_deterministic_short_and_distinct() {
    let long = "x".repeat(63);
    let n1 = slices::name(&long, "cluster-with-a-long-id", "web-abc");
    let n2 = slices::name(&long, "cluster-with-a-long-id", "web-abd");
    assert!(n1.len() <= 63 && n2.len() <= 63);
    assert_ne!(n1, n2);
    assert_eq!(n1, slices::name(&long, "cluster-with-a-long-id", "web-abc"));
    assert!(crate::names::dns1123_subdomain(&n1).is_empty());
    assert!(slices::name("web", "a", "s").starts_with("web-a-"));
}

#[test]
fn copies_and_imports_are_not_source_slices() {
    let own = slice("web-a", "10.0.0.1");
    assert!(slices::is_source(&own, NS, NAME));
    for managed in [
        crate::filter::DISPATCH_MANAGER,
        crate::filter::IMPORT_MANAGER,
        crate::filter::CLUSTERSET_MANAGER,
    ] {
        let mut copy = own.clone();
        copy.labels[0].1 = managed.into();
        assert!(!slices::is_source(&copy, NS, NAME), "{managed}");
    }
    let mut other = own.clone();
    other.labels.push((
        "multicluster.kubernetes.io/source-cluster".into(),
        "x".into(),
    ));
    assert!(!slices::is_source(&other, NS, NAME));
}

fn request(object: Value, operation: Operation) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u".into(),
        operation,
        object: object.to_string(),
        old_object: None,
    }
}

#[test]
fn a_service_export_must_be_named_as_a_service() {
    use crate::validate::{KARMADA_COMPATIBLE, NOTHING_KNOWN, validate_request};
    for version in ["v1alpha1", "v1beta1"] {
        let mut ok = export("2026-11-01T00:00:00Z");
        ok["apiVersion"] = json!(format!("multicluster.x-k8s.io/{version}"));
        for op in [Operation::Create, Operation::Update] {
            assert_eq!(
                validate_request(
                    &request(ok.clone(), op),
                    &KARMADA_COMPATIBLE,
                    &NOTHING_KNOWN
                ),
                Ok(vec![])
            );
        }
        let mut bad = ok.clone();
        bad["metadata"]["name"] = json!("1web");
        let Err(Denial::Forbidden(r)) = validate_request(
            &request(bad, Operation::Create),
            &KARMADA_COMPATIBLE,
            &NOTHING_KNOWN,
        ) else {
            panic!("1web admitted")
        };
        assert_eq!(
            r.message,
            "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        );
    }
    let mut other = export("2026-11-01T00:00:00Z");
    other["apiVersion"] = json!("multicluster.x-k8s.io/v2");
    assert_eq!(
        validate_request(
            &request(other, Operation::Create),
            &KARMADA_COMPATIBLE,
            &NOTHING_KNOWN
        ),
        Err(Denial::Malformed(
            "no kind \"ServiceExport\" is registered for version \"multicluster.x-k8s.io/v2\""
                .into()
        ))
    );
}

#[test]
fn a_slice_of_ours_read_without_a_uid_is_not_deleted() {
    let mut held = slice("web-member1-0000000000000000", "10.0.0.1");
    held.labels = vec![
        (
            "endpointslice.kubernetes.io/managed-by".into(),
            crate::filter::CLUSTERSET_MANAGER.into(),
        ),
        (
            "multicluster.kubernetes.io/service-name".into(),
            NAME.into(),
        ),
        (
            "multicluster.kubernetes.io/source-cluster".into(),
            "gone".into(),
        ),
    ];
    let mut with_uid = held.clone();
    with_uid.name = "web-gone-1".into();
    let b = Held {
        imported: vec![
            ImportedSlice {
                slice: held,
                uid: String::new(),
                resource_version: "1".into(),
            },
            ImportedSlice {
                slice: with_uid,
                uid: "u".into(),
                resource_version: "2".into(),
            },
        ],
        ..Held::default()
    };
    let d = pass(vec![member("b", b)]);
    let names: Vec<&str> = d.members[0]
        .delete_slices
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["web-gone-1"]);
    assert_eq!(d.members[0].notes.len(), 1);
}

/// `slice` with these ports (name, port).
fn slice_with_ports(name: &str, ip: &str, ports: &[(Option<&str>, i32)]) -> EndpointSlice {
    let mut s = slice(name, ip);
    s.ports = ports
        .iter()
        .map(|(n, p)| EndpointPort {
            name: n.map(str::to_string),
            port: Some(*p),
            protocol: Some("TCP".into()),
            app_protocol: None,
        })
        .collect();
    s
}

fn slice_ports(s: &EndpointSlice) -> Vec<(Option<String>, Option<i32>)> {
    s.ports.iter().map(|p| (p.name.clone(), p.port)).collect()
}

#[test]
fn a_port_of_the_same_number_and_protocol_under_another_name_is_the_same_port() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("", 80, "TCP")], false),
        vec![slice_with_ports("web-a", "10.0.0.1", &[(None, 8080)])],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice_with_ports(
            "web-b",
            "10.1.0.1",
            &[(Some("http"), 8080)],
        )],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.winner.as_deref(), Some("a"));
    assert_eq!(d.conflicts, ["PortConflict"], "the names differ");
    for m in &d.members {
        let one = json!([{"protocol": "TCP", "port": 80}]);
        assert_eq!(applied(&m.service_import)["spec"]["ports"], one);
        assert_eq!(applied(&m.derived_service)["spec"]["ports"], one);
        assert_eq!(m.apply_slices.len(), 2, "both exporters serve port 80");
        for s in &m.apply_slices {
            assert_eq!(
                slice_ports(s),
                [(None, Some(8080))],
                "named as the import's port"
            );
        }
    }
}

#[test]
fn an_unnamed_port_is_never_added_to_a_union_of_several() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("", 81, "TCP")], false),
        vec![],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    let import = applied(&d.members[0].service_import);
    assert_eq!(
        import["spec"]["ports"],
        json!([{"name": "http", "protocol": "TCP", "port": 80}])
    );
}

#[test]
fn an_imported_slice_carries_only_the_ports_its_export_contributes() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice_with_ports(
            "web-a",
            "10.0.0.1",
            &[(Some("http"), 8080)],
        )],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "UDP"), ("metrics", 9090, "TCP")], false),
        vec![slice_with_ports(
            "web-b",
            "10.1.0.1",
            &[(Some("http"), 8081), (Some("metrics"), 9090)],
        )],
    );
    let d = pass(vec![
        member("a", a),
        member("b", b),
        member("c", Held::default()),
    ]);
    assert_eq!(d.conflicts, ["PortConflict"]);
    for m in &d.members {
        assert_eq!(
            applied(&m.service_import)["spec"]["ports"],
            json!([{"name": "http", "protocol": "TCP", "port": 80},
                   {"name": "metrics", "protocol": "TCP", "port": 9090}])
        );
        let from = |id: &str| {
            m.apply_slices
                .iter()
                .find(|s| label(s, "multicluster.kubernetes.io/source-cluster") == Some(id))
                .unwrap_or_else(|| panic!("a slice from {id}"))
        };
        assert_eq!(slice_ports(from("a")), [(Some("http".into()), Some(8080))]);
        assert_eq!(
            slice_ports(from("b")),
            [(Some("metrics".into()), Some(9090))],
            "b's http is UDP, the import's TCP: no traffic for it goes to b"
        );
    }
}

#[test]
fn a_port_of_the_same_name_and_protocol_on_another_number_is_still_served() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice_with_ports(
            "web-a",
            "10.0.0.1",
            &[(Some("http"), 8080)],
        )],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 81, "TCP")], false),
        vec![slice_with_ports(
            "web-b",
            "10.1.0.1",
            &[(Some("http"), 8081)],
        )],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.conflicts, ["PortConflict"]);
    for m in &d.members {
        assert_eq!(m.apply_slices.len(), 2, "b's backends serve http on 8081");
        assert_eq!(
            condition(&conditions(m), "Ready")["status"],
            "True",
            "{}",
            m.cluster
        );
    }
}

#[test]
fn an_export_none_of_whose_ports_is_imported_has_no_slices_imported() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice_with_ports(
            "web-a",
            "10.0.0.1",
            &[(Some("http"), 8080)],
        )],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "UDP")], false),
        vec![slice_with_ports(
            "web-b",
            "10.1.0.1",
            &[(Some("http"), 8080)],
        )],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    for m in &d.members {
        let sources: Vec<_> = m
            .apply_slices
            .iter()
            .map(|s| label(s, "multicluster.kubernetes.io/source-cluster"))
            .collect();
        assert_eq!(sources, [Some("a")]);
    }
}

#[test]
fn under_a_conflict_an_export_is_ready_only_while_its_endpoints_are_imported() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP"), ("extra", 81, "TCP")], false),
        vec![],
    );
    let c = exporter(
        "2026-11-03T00:00:00Z",
        service(&[("http", 80, "UDP")], false),
        vec![],
    );
    let d = pass(vec![member("a", a), member("b", b), member("c", c)]);
    assert_eq!(d.conflicts, ["PortConflict"]);
    for m in &d.members[..2] {
        let ready = condition(&conditions(m), "Ready").clone();
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("True"), Some("Exported")),
            "{}: imported despite the conflict",
            m.cluster
        );
    }
    let ready = condition(&conditions(&d.members[2]), "Ready").clone();
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("Failed")),
        "c's only port is UDP: nothing of it is imported"
    );
}

#[test]
fn the_conflict_message_names_every_reason() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    let mut b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP"), ("extra", 81, "TCP")], true),
        vec![],
    );
    b.export.as_mut().unwrap()["spec"] = json!({"exportedLabels": {"team": "b"}});
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(
        d.conflicts,
        ["PortConflict", "TypeConflict", "LabelsConflict"]
    );
    for m in &d.members {
        let conflict = condition(&conditions(m), "Conflict").clone();
        assert_eq!(
            conflict["reason"], "PortConflict",
            "the first is the reason"
        );
        let message = conflict["message"].as_str().unwrap();
        for reason in &d.conflicts {
            assert!(message.contains(reason.as_str()), "{reason} in {message}");
        }
        assert!(message.contains("from cluster a"), "{message}");
    }
}

#[test]
fn invalid_exported_labels_and_annotations_are_left_out_and_reported_on_the_export() {
    let mut a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![],
    );
    a.export.as_mut().unwrap()["spec"] = json!({
        "exportedLabels": {"team": "a", "bad key!": "v", "tier": "not a value!"},
        "exportedAnnotations": {"Note": "any text at all", "no//way": "x"},
    });
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    for m in &d.members {
        let import = applied(&m.service_import);
        let labels = import["metadata"]["labels"].as_object().unwrap();
        assert_eq!(labels.get("team"), Some(&json!("a")));
        assert!(!labels.contains_key("bad key!") && !labels.contains_key("tier"));
        assert_eq!(import["metadata"]["annotations"]["Note"], "any text at all");
        assert!(import["metadata"]["annotations"].get("no//way").is_none());
    }
    let conds = conditions(&d.members[0]);
    let valid = condition(&conds, "Valid");
    assert_eq!(valid["status"], "True", "still exported");
    assert_eq!(valid["reason"], "InvalidExportedMetadata");
    let message = valid["message"].as_str().unwrap();
    for bad in ["bad key!", "not a value!", "no//way"] {
        assert!(message.contains(bad), "{bad} in {message}");
    }
    assert!(
        message.contains("spec.exportedLabels: Invalid value"),
        "{message}"
    );
    assert_eq!(condition(&conds, "Ready")["status"], "True");
}

#[test]
fn only_slices_of_kubernetes_controller_or_opted_in_are_sources() {
    let own = slice("web-a", "10.0.0.1");
    assert!(slices::is_source(&own, NS, NAME));
    let mut other = own.clone();
    other.labels[0].1 = "someone-elses-controller".into();
    assert!(!slices::is_source(&other, NS, NAME));
    let mut unmanaged = own.clone();
    unmanaged.labels.remove(0);
    assert!(!slices::is_source(&unmanaged, NS, NAME));
    let mut opted_in = unmanaged.clone();
    opted_in.labels.push((
        "multicluster.karmada.io/clusterset-source".into(),
        "true".into(),
    ));
    assert!(slices::is_source(&opted_in, NS, NAME));

    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![own, other, unmanaged, opted_in.clone()],
    );
    let d = pass(vec![member("a", a)]);
    assert_eq!(
        d.members[0].apply_slices.len(),
        2,
        "the controller's and the opted-in"
    );
}

#[test]
fn no_imported_slice_is_written_where_the_derived_service_is_not_ours() {
    let foreign_derived = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": digest::derived_name(NS, NAME), "namespace": NS, "uid": "u2", "resourceVersion": "1"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.9.9.9"}});
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = Held {
        derived: Some(foreign_derived),
        ..Held::default()
    };
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.members[0].apply_slices.len(), 1);
    let m = &d.members[1];
    assert!(m.apply_slices.is_empty(), "{:?}", m.apply_slices);
    assert_eq!(m.derived_service, ObjectWrite::Leave);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("not ours and they would serve it"))
    );
}

#[test]
fn an_mcs_copy_never_carries_the_upstream_service_name_an_imported_slice_always_does() {
    // The same Service `shop/web` with the same slice, served by both APIs: a
    // MultiClusterService `shop/web` copies it, a ServiceExport `shop/web` imports it. KEP-1645
    // DNS lists the slices labelled multicluster.kubernetes.io/service-name: only the imported
    // one may be among them.
    let mcs = crate::McsRef {
        name: NAME.into(),
        namespace: NS.into(),
        ports: vec![],
    };
    let source = slice("web-abc", "10.0.0.1");
    let copies = crate::filter::filter(&mcs, None, "a", "b", vec![source.clone()]);
    assert_eq!(copies.len(), 1);
    for copy in &copies {
        assert_eq!(label(copy, "multicluster.kubernetes.io/service-name"), None);
        assert_eq!(
            label(copy, "multicluster.kubernetes.io/source-cluster"),
            None
        );
        assert_eq!(label(copy, "kubernetes.io/service-name"), Some(NAME));
        assert_eq!(
            label(copy, "endpointslice.kubernetes.io/managed-by"),
            Some(crate::filter::DISPATCH_MANAGER)
        );
    }
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![source],
    );
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    let imported: Vec<&EndpointSlice> = d.members.iter().flat_map(|m| &m.apply_slices).collect();
    assert_eq!(imported.len(), 2, "one imported slice in each member");
    for s in imported {
        assert_eq!(
            label(s, "multicluster.kubernetes.io/service-name"),
            Some(NAME)
        );
        assert_eq!(
            label(s, "multicluster.kubernetes.io/source-cluster"),
            Some("a")
        );
    }
}

/// A ClusterIP Service `web` (port http 80) whose `spec.ipFamilies` are `families`.
fn service_of(families: &[&str]) -> Value {
    let mut svc = service(&[("http", 80, "TCP")], false);
    svc["spec"]["ipFamilies"] = json!(families);
    svc
}

fn v6_slice(name: &str, ip: &str) -> EndpointSlice {
    EndpointSlice {
        address_type: "IPv6".into(),
        ..slice(name, ip)
    }
}

#[test]
fn the_derived_service_prefers_dual_stack_and_lets_the_member_choose_its_families() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service_of(&["IPv6"]),
        vec![v6_slice("web-abc", "fd00::1")],
    );
    let d = pass(vec![member("a", a), member("b", Held::default())]);
    for m in &d.members {
        let svc = applied(&m.derived_service);
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "PreferDualStack");
        // Listing a family the member does not serve would make its API server refuse it.
        assert!(svc["spec"].get("ipFamilies").is_none(), "{svc}");
    }
    // A derived Service of ours still single-stack (an earlier version's) is applied again.
    let mut held = after(Held::default(), &d.members[1], "10.96.0.20");
    held.derived.as_mut().unwrap()["spec"]["ipFamilyPolicy"] = json!("SingleStack");
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service_of(&["IPv6"]),
        vec![v6_slice("web-abc", "fd00::1")],
    );
    let again = pass(vec![member("a", a), member("b", held)]);
    assert_eq!(
        applied(&again.members[1].derived_service)["spec"]["ipFamilyPolicy"],
        "PreferDualStack"
    );
}

#[test]
fn exports_of_disjoint_ip_families_are_an_ip_family_conflict_on_every_export() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service_of(&["IPv4"]),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service_of(&["IPv6"]),
        vec![v6_slice("web-def", "fd00::1")],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.conflicts, ["IPFamilyConflict"]);
    for m in &d.members {
        let conds = conditions(m);
        let conflict = condition(&conds, "Conflict");
        assert_eq!(conflict["status"], "True", "{conflict}");
        assert_eq!(conflict["reason"], "IPFamilyConflict", "{conflict}");
        assert!(
            conflict["message"]
                .as_str()
                .unwrap()
                .contains("IP families"),
            "{conflict}"
        );
    }
    // Both exports are still imported: a dual-stack member reaches both.
    assert_eq!(d.members[0].apply_slices.len(), 2);
}

#[test]
fn exports_sharing_a_family_do_not_conflict_and_unknown_families_take_no_part() {
    let dual = exporter(
        "2026-11-01T00:00:00Z",
        service_of(&["IPv6", "IPv4"]),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let v4 = exporter(
        "2026-11-02T00:00:00Z",
        service_of(&["IPv4"]),
        vec![slice("web-def", "10.0.0.2")],
    );
    let d = pass(vec![member("a", dual), member("b", v4)]);
    assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
    // A Service without ipFamilies whose only slices are FQDN ones: unknown, no conflict.
    let fqdn = EndpointSlice {
        address_type: "FQDN".into(),
        ..slice("web-ghi", "web.example.com")
    };
    let unknown = exporter(
        "2026-11-03T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![fqdn],
    );
    let v6 = exporter(
        "2026-11-01T00:00:00Z",
        service_of(&["IPv6"]),
        vec![v6_slice("web-abc", "fd00::1")],
    );
    let d = pass(vec![member("a", v6), member("c", unknown)]);
    assert!(d.conflicts.is_empty(), "{:?}", d.conflicts);
}

#[test]
fn without_ip_families_on_the_service_the_source_slices_address_types_are_its_families() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-abc", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![v6_slice("web-def", "fd00::1")],
    );
    let d = pass(vec![member("a", a), member("b", b)]);
    assert_eq!(d.conflicts, ["IPFamilyConflict"]);
}

#[test]
fn a_member_whose_clusterset_ip_is_of_no_exported_family_is_told_so() {
    let v6 = || {
        exporter(
            "2026-11-01T00:00:00Z",
            service_of(&["IPv6"]),
            vec![v6_slice("web-abc", "fd00::1")],
        )
    };
    let first = pass(vec![member("a", v6()), member("b", Held::default())]);
    // `after` gives b's derived Service an IPv4 address only: an IPv4-only member.
    let held = after(Held::default(), &first.members[1], "10.96.0.20");
    let d = pass(vec![member("a", v6()), member("b", held)]);
    let notes = d.members[1].notes.join("\n");
    assert!(
        notes.contains("IPv4 only") && notes.contains("IPv6") && notes.contains("reaches none"),
        "{notes}"
    );
    assert!(d.members[0].notes.is_empty(), "{:?}", d.members[0].notes);
}

fn unreadable_for(cluster: &str, ms: u64) -> ClustersetMember {
    ClustersetMember {
        unreadable_ms: ms,
        ..unreadable(cluster)
    }
}

fn annotation<'a>(s: &'a EndpointSlice, key: &str) -> Option<&'a str> {
    s.annotations
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_derived_service_and_the_slices_are_owned_by_the_members_import_from_the_pass_after_its_creation()
 {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = Held::default();
    // The first pass creates the imports: their uids are not known yet.
    let first = pass(vec![member("a", a.clone()), member("b", b.clone())]);
    let m = &first.members[1];
    assert!(matches!(m.service_import, ObjectWrite::Apply(_)));
    assert_eq!(
        applied(&m.derived_service)["metadata"].get("ownerReferences"),
        None
    );
    assert_eq!(m.slice_owner, None);
    assert_eq!(
        annotation(&m.apply_slices[0], owner::IMPORT_UID_ANNOTATION),
        None
    );
    // The next pass reads each import's uid: the derived Service and the slices name it.
    let (a, b) = (
        after(a, &first.members[0], "10.100.0.1"),
        after(b, &first.members[1], "10.200.0.1"),
    );
    let second = pass(vec![member("a", a.clone()), member("b", b.clone())]);
    let m = &second.members[1];
    let want = json!([{"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
        "name": NAME, "uid": "uid-import", "blockOwnerDeletion": false}]);
    assert_eq!(
        applied(&m.derived_service)["metadata"]["ownerReferences"],
        want
    );
    let owner: Value = serde_json::from_str(m.slice_owner.as_deref().unwrap()).unwrap();
    assert_eq!(owner, want[0]);
    assert_eq!(m.apply_slices.len(), 1, "applied again with its owner");
    assert_eq!(
        annotation(&m.apply_slices[0], owner::IMPORT_UID_ANNOTATION),
        Some("uid-import")
    );
    // Then nothing is written: both are owned.
    let (a, b) = (
        after(a, &second.members[0], "10.100.0.1"),
        after(b, &second.members[1], "10.200.0.1"),
    );
    let third = pass(vec![member("a", a), member("b", b)]);
    for m in &third.members {
        assert_eq!(m.derived_service, ObjectWrite::Leave, "{m:?}");
        assert!(m.apply_slices.is_empty(), "{m:?}");
    }
}

fn import_ready(d: &ClustersetMemberDecision) -> String {
    let s: Value =
        serde_json::from_str(d.service_import_status.as_deref().expect("status")).unwrap();
    let c = condition(s["status"]["conditions"].as_array().unwrap(), "Ready");
    format!(
        "{} {}",
        c["status"].as_str().unwrap(),
        c["reason"].as_str().unwrap()
    )
}

#[test]
fn an_import_is_ready_once_its_cluster_set_ip_reaches_the_exported_endpoints() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let first = pass(vec![member("a", a.clone())]);
    assert_eq!(import_ready(&first.members[0]), "False Pending");
    let a = after(a, &first.members[0], "10.100.0.1");
    let second = pass(vec![member("a", a.clone())]);
    assert_eq!(import_ready(&second.members[0]), "True Ready");
    let a = after(a, &second.members[0], "10.100.0.1");
    assert_eq!(
        pass(vec![member("a", a.clone())]).members[0].service_import_status,
        None
    );

    // A ClusterSetIP of no family of the exported endpoints.
    let mut v6 = a;
    let derived = v6.derived.as_mut().unwrap();
    derived["spec"]["clusterIPs"] = json!(["fd00::1"]);
    derived["spec"]["clusterIP"] = json!("fd00::1");
    derived["spec"]["ipFamilies"] = json!(["IPv6"]);
    let d = pass(vec![member("a", v6)]);
    assert_eq!(import_ready(&d.members[0]), "False IPFamilyNotSupported");

    // A headless import is ready at once.
    let h = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], true),
        vec![slice("web-a", "10.0.0.1")],
    );
    assert_eq!(
        import_ready(&pass(vec![member("a", h)]).members[0]),
        "True Ready"
    );
}

#[test]
fn an_exporter_unreadable_past_the_stale_timeout_is_withdrawn_and_kept_before_or_without_one() {
    let a = exporter(
        "2026-11-01T00:00:00Z",
        service(&[("http", 80, "TCP")], false),
        vec![slice("web-a", "10.0.0.1")],
    );
    let b = exporter(
        "2026-11-02T00:00:00Z",
        service(&[("http", 80, "TCP"), ("metrics", 9090, "TCP")], false),
        vec![slice("web-b", "10.1.0.1")],
    );
    let c = Held::default();
    let first = pass(vec![
        member("a", a.clone()),
        member("b", b.clone()),
        member("c", c.clone()),
    ]);
    let a = after(a, &first.members[0], "10.100.0.1");
    let c = after(c, &first.members[2], "10.200.0.1");
    let second = pass(vec![
        member("a", a.clone()),
        member("b", b),
        member("c", c.clone()),
    ]);
    let a = after(a, &second.members[0], "10.100.0.1");
    let c = after(c, &second.members[2], "10.200.0.1");
    assert_eq!(c.imported.len(), 2);

    let with = |ms: u64, timeout: Option<u64>| {
        pass_with_timeout(
            vec![
                member("a", a.clone()),
                unreadable_for("b", ms),
                member("c", c.clone()),
            ],
            timeout,
        )
    };
    // Without a timeout, or within it: b's slices stay, the import lists b.
    for d in [with(3_600_000, None), with(5_000, Some(5_000))] {
        assert!(d.members[2].delete_slices.is_empty(), "{d:?}");
        assert_eq!(d.members[2].service_import_status, None, "{d:?}");
    }
    // Past it: b's slices go in every readable member, the import lists a only, and its
    // port (metrics, which only b exported) leaves the union.
    let d = with(5_001, Some(5_000));
    assert!(d.members[1].notes[0].contains("stale endpoint timeout"));
    for m in [&d.members[0], &d.members[2]] {
        assert_eq!(m.delete_slices.len(), 1, "{m:?}");
        assert!(m.delete_slices[0].name.contains("-b-"));
        let s: Value = serde_json::from_str(m.service_import_status.as_deref().unwrap()).unwrap();
        assert_eq!(s["status"]["clusters"], json!([{"cluster": "a"}]));
        let ports = &applied(&m.service_import)["spec"]["ports"];
        assert_eq!(ports.as_array().unwrap().len(), 1, "{ports}");
    }

    // b the only exporter, past the timeout: the imports are withdrawn.
    let mut a_gone = a.clone();
    a_gone.export = None;
    let d = pass_with_timeout(
        vec![
            member("a", a_gone.clone()),
            unreadable_for("b", 5_001),
            member("c", c.clone()),
        ],
        Some(5_000),
    );
    assert!(matches!(
        d.members[2].service_import,
        ObjectWrite::Delete(_)
    ));
    let kept = pass_with_timeout(
        vec![
            member("a", a_gone),
            unreadable_for("b", 5_000),
            member("c", c),
        ],
        Some(5_000),
    );
    assert_eq!(kept.members[2].service_import, ObjectWrite::Leave);
}
