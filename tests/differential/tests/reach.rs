//! The structured generator is only worth its coverage if its calls get past decoding: random
//! bytes must reach every kind of answer of every function, including each kind of field error.

use std::collections::BTreeMap;

use arbitrary::Unstructured;
use differential::{Answer, native, structure};
use mcs_policy::engine::types as h;

/// Deterministic pseudo-random bytes (xorshift64*), so the test never flakes.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn outcomes(answer: &Answer) -> Vec<String> {
    let mut out = Vec::new();
    match answer {
        Answer::Validate(Ok(w)) if w.is_empty() => out.push("validate allowed".into()),
        Answer::Validate(Ok(_)) => out.push("validate allowed with warnings".into()),
        Answer::Validate(Err(h::Denial::Malformed(_))) => out.push("validate malformed".into()),
        Answer::Validate(Err(h::Denial::Forbidden(r))) => {
            out.push("validate forbidden".into());
            for e in &r.errors {
                out.push(format!(
                    "field error {}",
                    format!("{:?}", e.error_type).trim_start_matches("ErrorType::")
                ));
            }
        }
        Answer::Mutate(Ok(ops)) if ops.is_empty() => out.push("mutate nothing".into()),
        Answer::Mutate(Ok(ops)) => out.push(format!(
            "mutate {} {}",
            format!("{:?}", ops[0].op).trim_start_matches("PatchOp::"),
            ops[0].path
        )),
        Answer::Mutate(Err(_)) => out.push("mutate malformed".into()),
        Answer::Filter(copies) if copies.is_empty() => out.push("filter nothing".into()),
        Answer::Filter(_) => out.push("filter copies".into()),
        Answer::Plan(Ok(p)) if p.active => out.push("plan active".into()),
        Answer::Plan(Ok(p)) if p.invalid.is_some() => out.push("plan invalid".into()),
        Answer::Plan(Ok(p)) if p.deleting => out.push("plan deleting".into()),
        Answer::Plan(Ok(_)) => out.push("plan inactive".into()),
        Answer::Plan(Err(_)) => out.push("plan malformed".into()),
        Answer::Prune(names) if names.is_empty() => out.push("prune nothing".into()),
        Answer::Prune(_) => out.push("prune stale".into()),
        Answer::Service(Ok(action)) => out.push(format!(
            "service {}",
            format!("{action:?}")
                .trim_start_matches("ServiceAction::")
                .split('(')
                .next()
                .unwrap_or_default()
        )),
        Answer::Service(Err(_)) => out.push("service error".into()),
        Answer::ClusterNameProblem(p) => out.push(format!("cluster name ok: {}", p.is_none())),
        Answer::LoadBalancerStatus(r) => {
            out.push(format!("load balancer complete: {}", r.complete));
            out.push(format!("load balancer changed: {}", r.changed));
            if !r.ingress.is_empty() {
                out.push("load balancer ingress".into());
            }
        }
        Answer::Decide(Err(_)) => out.push("decide malformed".into()),
        Answer::Decide(Ok(d)) => {
            let finalizer = format!("{:?}", d.finalizer);
            let finalizer = finalizer.trim_start_matches("FinalizerChange::");
            out.push(format!(
                "decide finalizer {}",
                finalizer.split('(').next().unwrap_or_default()
            ));
            for (what, any) in [
                ("copies", !d.copies.is_empty()),
                ("deletions", !d.deletions.is_empty()),
                ("services", !d.services.is_empty()),
                ("ingress", d.ingress.is_some()),
                ("invalid", d.status.invalid.is_some()),
                ("no report", !d.status.report),
                ("incompatible", !d.status.incompatible.is_empty()),
            ] {
                if any {
                    out.push(format!("decide {what}"));
                }
            }
        }
        Answer::ClustersetDerivedName(n) => {
            out.push(format!("derived name ok: {}", n.starts_with("derived-")))
        }
        Answer::ClustersetDecide(Err(_)) => out.push("clusterset malformed".into()),
        Answer::ClustersetDecide(Ok(d)) => {
            out.push(format!("clusterset conflict: {}", !d.conflicts.is_empty()));
            out.push(format!("clusterset exporters: {}", !d.exporters.is_empty()));
            for m in &d.members {
                let write = |w: &h::ObjectWrite| {
                    format!("{w:?}")
                        .trim_start_matches("ObjectWrite::")
                        .split('(')
                        .next()
                        .unwrap_or_default()
                        .to_string()
                };
                out.push(format!("clusterset import {}", write(&m.service_import)));
                out.push(format!("clusterset derived {}", write(&m.derived_service)));
                for (what, any) in [
                    ("conditions", m.export_conditions.is_some()),
                    ("slices applied", !m.apply_slices.is_empty()),
                    ("slices deleted", !m.delete_slices.is_empty()),
                    ("notes", !m.notes.is_empty()),
                    ("slice owner", m.slice_owner.is_some()),
                    (
                        "stale",
                        m.notes.iter().any(|n| n.contains("stale endpoint timeout")),
                    ),
                    ("import status", m.service_import_status.is_some()),
                ] {
                    if any {
                        out.push(format!("clusterset {what}"));
                    }
                }
            }
        }
        Answer::Conclude(u) => {
            out.push(format!("conclude conditions: {}", u.conditions.is_some()));
            out.push(format!("conclude retry: {}", u.retry));
            if !u.events.is_empty() {
                out.push("conclude events".into());
            }
        }
    }
    out
}

#[test]
fn random_structured_calls_reach_every_kind_of_answer() {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..3000 {
        let data = bytes(seed, 3000);
        let Ok(call) = structure::call(&mut Unstructured::new(&data)) else {
            continue;
        };
        for outcome in outcomes(&native(&call)) {
            *seen.entry(outcome).or_default() += 1;
        }
    }
    eprintln!("{seen:#?}");
    let expected = [
        "validate allowed",
        "validate allowed with warnings",
        "validate malformed",
        "validate forbidden",
        "field error Required",
        "field error Invalid",
        "field error Duplicate",
        "field error Unsupported",
        "field error Forbidden",
        "field error TooLong",
        "mutate nothing",
        "mutate Add /metadata",
        "mutate Add /metadata/labels",
        "mutate Add /metadata/labels/multiclusterservice.karmada.io~1permanent-id",
        "mutate Replace /metadata/labels/multiclusterservice.karmada.io~1permanent-id",
        "mutate malformed",
        "filter nothing",
        "filter copies",
        "plan active",
        "plan invalid",
        "plan deleting",
        "plan inactive",
        "plan malformed",
        "prune nothing",
        "prune stale",
        "service Unchanged",
        "service Create",
        "service Replace",
        "service Recreate",
        "service Conflict",
        "service error",
        "cluster name ok: true",
        "cluster name ok: false",
        "load balancer complete: true",
        "load balancer complete: false",
        "load balancer changed: true",
        "load balancer changed: false",
        "load balancer ingress",
        "decide malformed",
        "decide finalizer Keep",
        "decide finalizer Add",
        "decide finalizer Release",
        "decide copies",
        "decide deletions",
        "decide services",
        "decide ingress",
        "decide invalid",
        "decide no report",
        "decide incompatible",
        "conclude conditions: true",
        "conclude conditions: false",
        "conclude retry: true",
        "conclude retry: false",
        "conclude events",
    ];
    let missing: Vec<&str> = expected
        .into_iter()
        .filter(|o| !seen.contains_key(*o))
        .collect();
    assert!(missing.is_empty(), "never reached: {missing:?}");
}

#[test]
fn random_clusterset_calls_reach_every_kind_of_answer() {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..1500 {
        let data = bytes(seed, 3000);
        let Ok(call) = structure::clusterset(&mut Unstructured::new(&data)) else {
            continue;
        };
        for outcome in outcomes(&native(&call)) {
            *seen.entry(outcome).or_default() += 1;
        }
    }
    eprintln!("{seen:#?}");
    let expected = [
        "clusterset conflict: true",
        "clusterset conflict: false",
        "clusterset exporters: true",
        "clusterset exporters: false",
        "clusterset import Leave",
        "clusterset import Apply",
        "clusterset import Delete",
        "clusterset derived Leave",
        "clusterset derived Apply",
        "clusterset derived Delete",
        "clusterset conditions",
        "clusterset slices applied",
        "clusterset slices deleted",
        "clusterset slice owner",
        "clusterset stale",
        "clusterset import status",
    ];
    let missing: Vec<&str> = expected
        .into_iter()
        .filter(|o| !seen.contains_key(*o))
        .collect();
    assert!(missing.is_empty(), "never reached: {missing:?}");
}

#[test]
fn random_derived_name_calls_agree_and_always_name_a_derived_service() {
    for seed in 0..200 {
        let data = bytes(seed, 200);
        let Ok(call) = structure::derived_name(&mut Unstructured::new(&data)) else {
            continue;
        };
        let Answer::ClustersetDerivedName(name) = differential::agree(&call) else {
            unreachable!("a clusterset-derived-name call answers with a name")
        };
        assert!(
            name.starts_with("derived-") && name.len() == "derived-".len() + 10,
            "{name}"
        );
    }
}
