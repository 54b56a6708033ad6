//! The fuzz targets, one function each (fuzz/fuzz_targets/<name>.rs calls it): raw bytes to one
//! or more calls, each answered by the native guest and the component, compared, and checked
//! against [`crate::properties`]. Input that does not decode is skipped. Every target panics on
//! a crash, a divergence or a broken property, which is what the fuzzer reports.

use arbitrary::Unstructured;
use mcs_policy::engine::types as h;
use mcs_policy::webhook::review::{mutation_response, parse_review, validation_response};

use crate::{Answer, Call, check, inputs, structure};

/// A fuzz target: raw input in, a panic on failure.
pub type Target = fn(&[u8]);

/// Every target, by name (the names of fuzz/fuzz_targets/ and fuzz/corpus/).
pub const ALL: &[(&str, Target)] = &[
    ("review", review),
    ("validate", validate),
    ("mutate", mutate),
    ("filter", filter),
    ("service", service),
    ("plan", plan),
    ("prune", prune),
    ("decide", decide),
    ("structured", structured),
];

/// The host's AdmissionReview parser on any bytes; a review it accepts goes through `validate`
/// and `mutate` (karmada-compatible, nothing known) and the response builders, as the webhook
/// does.
pub fn review(data: &[u8]) {
    let Ok(review) = parse_review(data) else {
        return;
    };
    assert!(!review.request.uid.is_empty(), "a parsed review has a uid");
    let Answer::Validate(verdict) = check(&Call::Validate {
        request: review.request.clone(),
        settings: h::Settings::default(),
        context: h::Context::default(),
    }) else {
        unreachable!()
    };
    let out = validation_response(&review, verdict);
    assert_eq!(out.response.uid, review.request.uid);
    let Answer::Mutate(patch) = check(&Call::Mutate {
        request: review.request.clone(),
        settings: h::Settings::default(),
    }) else {
        unreachable!()
    };
    let out = mutation_response(&review, patch);
    assert_eq!(out.response.uid, review.request.uid);
}

/// `validate` on the [`inputs::admission`] format.
pub fn validate(data: &[u8]) {
    if let Some(a) = inputs::admission(data) {
        check(&Call::Validate {
            request: a.request,
            settings: a.settings,
            context: a.context,
        });
    }
}

/// `mutate` on the [`inputs::admission`] format.
pub fn mutate(data: &[u8]) {
    if let Some(a) = inputs::admission(data) {
        check(&Call::Mutate {
            request: a.request,
            settings: a.settings,
        });
    }
}

/// `filter` on JSON (the filter fixtures' `input`).
pub fn filter(data: &[u8]) {
    if let Some(f) = inputs::filter(data) {
        check(&Call::Filter {
            mcs: f.mcs,
            service_ports: f.service_ports,
            source_cluster: f.source_cluster,
            consumer_cluster: f.consumer_cluster,
            slices: f.slices,
        });
    }
}

/// `service` on `template NUL existing`.
pub fn service(data: &[u8]) {
    if let Some((template, existing)) = inputs::service(data) {
        check(&Call::Service { template, existing });
    }
}

/// `plan` on `mcs NUL registered-names`; also `cluster-name-problem` on the first name (one
/// more component call; the structured target calls it on any name).
pub fn plan(data: &[u8]) {
    if let Some((mcs, registered_clusters)) = inputs::plan(data) {
        if let Some(name) = registered_clusters.first() {
            check(&Call::ClusterNameProblem { name: name.clone() });
        }
        check(&Call::Plan {
            mcs,
            registered_clusters,
        });
    }
}

/// `prune` on JSON (`mcs`, `existing` slices, `desired`, `keptSources`).
pub fn prune(data: &[u8]) {
    if let Some(p) = inputs::prune(data) {
        check(&Call::Prune {
            mcs: p.mcs,
            existing: p.existing,
            desired: p.desired,
            kept_sources: p.kept_sources,
        });
    }
}

/// `decide` on JSON (the decide fixtures' `input`, read as `mcs-policy eval decide` reads it).
pub fn decide(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(args) = mcs_policy::eval::decide_input(text, "fuzz input") {
        check(&Call::Decide {
            pass: args.pass,
            settings: args.settings,
            slices: Box::new(args.slices),
        });
    }
}

/// One call built field by field from the bytes ([`structure::call`]).
pub fn structured(data: &[u8]) {
    if let Ok(call) = structure::call(&mut Unstructured::new(data)) {
        check(&call);
    }
}

/// One `clusterset-decide` call built from the bytes ([`structure::clusterset`]), and one
/// `clusterset-derived-name` call ([`structure::derived_name`]); not a fuzz target of its own
/// yet (tests/tests/differential.rs runs it).
pub fn clusterset(data: &[u8]) {
    if let Ok(call) = structure::clusterset(&mut Unstructured::new(data)) {
        check(&call);
    }
    if let Ok(call) = structure::derived_name(&mut Unstructured::new(data)) {
        check(&call);
    }
}
