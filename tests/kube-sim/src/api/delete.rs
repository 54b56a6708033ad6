//! DELETE of one object or a collection, as the generic registry's `Store.Delete` and
//! `Store.DeleteCollection` answer them.
//!
//! - `DeleteOptions.preconditions` (uid, resourceVersion) are checked first: a mismatch is a
//!   409 Conflict naming the *kind* (`Operation cannot be fulfilled on EndpointSlice.discovery.k8s.io
//!   "s1": the UID in the precondition (...) does not match the UID in record (...)`).
//! - An object without finalizers is removed. The answer is a `Status` Success whose
//!   `details.kind` is the resource (`finalizeDelete`), except for the kinds whose registry sets
//!   `ReturnDeletedObject` (Services and Namespaces here), which answer the object as last
//!   stored, at the deletion's resourceVersion.
//! - An object with finalizers is only marked (deletionTimestamp, deletionGracePeriodSeconds 0,
//!   generation + 1) and answered; deleting it again answers it unchanged.
//! - deletecollection lists the collection (a consistent read with the request's selectors),
//!   deletes each object so, and answers the list as it was read.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::body;
use super::list::{self, Refusal};
use super::list_options::{Cause, ListOptions, invalid};
use super::params::Params;
use super::respond;
use super::selection::Selection;
use super::target::Target;
use super::write;
use crate::app::App;
use crate::lifecycle;
use crate::object;
use crate::registry::{ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;
use crate::stored::Stored;
use crate::types;

/// What deleting an object did.
enum Deletion {
    /// Removed now; its last state (at the deletion's resourceVersion).
    Removed(Arc<Value>),
    /// Marked for deletion (or already marked), waiting for its finalizers.
    Pending(Arc<Value>),
}

pub fn delete(
    app: &App,
    target: &Target,
    params: &Params,
    body: &[u8],
) -> Result<Response, ApiError> {
    let options = delete_options(body, params)?;
    let gr = target.rt.group_resource();
    let name = target.name_or_empty();
    types::admit_delete(&target.rt, name)?;
    let mut store = app.write();
    let current = store
        .get(&gr, target.key_namespace(), name)
        .ok_or_else(|| ApiError::not_found(&gr, name))?;
    check_preconditions(&target.rt, &current, &options)?;
    let response = match delete_locked(&mut store, &target.rt, &current) {
        Deletion::Removed(last) if returns_deleted_object(&target.rt) => {
            respond::object_response(StatusCode::OK, &target.rt, &last)
        }
        Deletion::Removed(last) => respond::deleted_response(&target.rt, &last),
        Deletion::Pending(marked) => respond::object_response(StatusCode::OK, &target.rt, &marked),
    };
    Ok(response)
}

/// Whether the kind's registry answers a deletion with the object (`ReturnDeletedObject`).
fn returns_deleted_object(rt: &ResourceType) -> bool {
    rt.defined_by.is_none()
        && rt.group.is_empty()
        && matches!(rt.plural.as_str(), "services" | "namespaces")
}

/// Deletes every object the request's selectors match; answers with the list as read.
pub fn delete_collection(
    app: &App,
    target: &Target,
    params: &Params,
    body: &[u8],
) -> Result<Response, ApiError> {
    delete_options(body, params)?;
    let selection = Selection::from_request(app, target, params)?;
    let options = ListOptions::from_params(params)?;
    let listed = match list::read(app, target, &options, &selection) {
        Ok(listed) => listed,
        Err(refusal @ Refusal::Expired(_)) => return Ok(refusal.into_response()),
        Err(Refusal::Error(error)) => return Err(error),
    };
    {
        let mut store = app.write();
        for stored in &listed.page.items {
            delete_listed(&mut store, &target.rt, stored);
        }
    }
    let metadata = json!({"resourceVersion": listed.resource_version.to_string()});
    Ok(respond::list_response(
        &target.rt,
        &listed.page.items,
        &metadata,
    ))
}

/// Deletes the current version of a listed object, if it is still there.
fn delete_listed(store: &mut Store, rt: &ResourceType, listed: &Stored) {
    let gr = rt.group_resource();
    let current = store.get(&gr, &listed.key.namespace, &listed.key.name);
    if let Some(current) = current {
        delete_locked(store, rt, &current);
    }
}

fn delete_locked(store: &mut Store, rt: &ResourceType, current: &Arc<Value>) -> Deletion {
    if let Some(kept) = types::delete(rt, current, &object::now()) {
        let marked = write::commit(store, rt, current, kept);
        if rt.special == Special::CustomResourceDefinition {
            finish_crd_deletion(store, rt, &marked);
        }
        return Deletion::Pending(marked);
    }
    if !object::has_finalizers(current) {
        return Deletion::Removed(write::remove(store, rt, current));
    }
    if object::is_deleting(current) {
        return Deletion::Pending(current.clone());
    }
    let marked = lifecycle::mark_deleting(current, &object::now());
    Deletion::Pending(write::commit(store, rt, current, marked))
}

/// What apiextensions' finalizing controller does once a CRD is marked for deletion, at once:
/// its custom resources deleted (stopping to serve them drops them), then its cleanup
/// finalizer removed, which deletes the CRD unless other finalizers hold it.
fn finish_crd_deletion(store: &mut Store, rt: &ResourceType, marked: &Arc<Value>) {
    let mut finalized = (**marked).clone();
    let meta = object::metadata_mut(&mut finalized);
    if let Some(list) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
        list.retain(|f| f != crate::crd::CLEANUP_FINALIZER);
        if list.is_empty() {
            meta.remove("finalizers");
        }
    }
    write::commit(store, rt, marked, finalized);
}

/// The request's `DeleteOptions`: its body, or without one its query parameters; validated
/// as `ValidateDeleteOptions` does (422 `DeleteOptions.meta.k8s.io "" is invalid`).
fn delete_options(body: &[u8], params: &Params) -> Result<Value, ApiError> {
    let options = if body.iter().all(u8::is_ascii_whitespace) {
        let mut options = json!({});
        if let Some(policy) = params.get("propagationPolicy") {
            options["propagationPolicy"] = json!(policy);
        }
        if let Some(orphan) = params.get("orphanDependents") {
            options["orphanDependents"] = json!(super::list_options::go_bool(orphan));
        }
        options
    } else {
        body::decode_json(body)?
    };
    let policy = options["propagationPolicy"].as_str();
    let mut causes = Vec::new();
    if let Some(policy) = policy {
        if !options["orphanDependents"].is_null() {
            causes.push(Cause::invalid(
                "propagationPolicy",
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !matches!(policy, "Foreground" | "Background" | "Orphan") {
            let supported = ["Foreground", "Background", "Orphan", "nil"];
            causes.push(Cause::not_supported(
                "propagationPolicy",
                policy,
                &supported,
            ));
        }
    }
    if causes.is_empty() {
        Ok(options)
    } else {
        Err(invalid("DeleteOptions", &causes))
    }
}

/// `preconditions.uid` and `preconditions.resourceVersion`, when given, must be the object's
/// (`storage.Preconditions.Check`).
fn check_preconditions(
    rt: &ResourceType,
    current: &Value,
    options: &Value,
) -> Result<(), ApiError> {
    let preconditions = &options["preconditions"];
    let conflict = |why: String| precondition_failed(rt, object::name(current), &why);
    if let Some(uid) = preconditions["uid"].as_str()
        && uid != object::uid(current)
    {
        return Err(conflict(format!(
            "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
            object::uid(current)
        )));
    }
    if let Some(rv) = preconditions["resourceVersion"].as_str()
        && rv != object::resource_version(current)
    {
        return Err(conflict(format!(
            "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
            object::resource_version(current)
        )));
    }
    Ok(())
}

/// 409 Conflict on the object's kind (`Kind.group`), as precondition failures are worded.
fn precondition_failed(rt: &ResourceType, name: &str, why: &str) -> ApiError {
    let qualified = if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    let mut details = json!({"name": name, "kind": rt.kind});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    ApiError {
        code: 409,
        reason: "Conflict",
        message: format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        details: Some(details),
        retry_after_seconds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    fn slices() -> Arc<ResourceType> {
        Registry::with_types(builtin::builtin_types())
            .lookup("discovery.k8s.io", "v1", "endpointslices")
            .unwrap()
    }

    #[test]
    fn precondition_failures_name_the_kind() {
        let current = json!({"metadata": {"name": "s1", "uid": "u-1", "resourceVersion": "5"}});
        let uid = check_preconditions(
            &slices(),
            &current,
            &json!({"preconditions": {"uid": "u-2"}}),
        )
        .unwrap_err();
        assert_eq!(uid.code, 409);
        assert_eq!(
            uid.message,
            "Operation cannot be fulfilled on EndpointSlice.discovery.k8s.io \"s1\": the UID in the precondition (u-2) does not match the UID in record (u-1). The object might have been deleted and then recreated"
        );
        assert_eq!(
            uid.details.unwrap(),
            json!({"name": "s1", "group": "discovery.k8s.io", "kind": "EndpointSlice"})
        );
        let rv = check_preconditions(
            &slices(),
            &current,
            &json!({"preconditions": {"resourceVersion": "1"}}),
        )
        .unwrap_err();
        assert!(rv.message.ends_with("the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (5). The object might have been modified"));
        let matching = json!({"preconditions": {"uid": "u-1", "resourceVersion": "5"}});
        assert!(check_preconditions(&slices(), &current, &matching).is_ok());
        assert!(check_preconditions(&slices(), &current, &Value::Null).is_ok());
    }

    #[test]
    fn delete_options_come_from_the_body_or_the_query_and_are_validated() {
        let params = |q: &str| {
            let uri: axum::http::Uri = format!("/x?{q}").parse().unwrap();
            Params::from_uri(&uri).unwrap()
        };
        let none = params("");
        assert_eq!(delete_options(b"", &none).unwrap(), json!({}));
        assert_eq!(
            delete_options(b"{\"propagationPolicy\":\"Orphan\"}", &none).unwrap()["propagationPolicy"],
            "Orphan"
        );
        let bogus = delete_options(b"", &params("propagationPolicy=Bogus")).unwrap_err();
        assert_eq!(bogus.code, 422);
        assert_eq!(
            bogus.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let both = delete_options(
            b"{\"propagationPolicy\":\"Orphan\",\"orphanDependents\":true}",
            &none,
        )
        .unwrap_err();
        assert!(both.message.ends_with("propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"));
    }

    #[test]
    fn services_and_namespaces_answer_deletions_with_the_object() {
        let registry = Registry::with_types(builtin::builtin_types());
        let kinds = [
            ("", "services", true),
            ("", "namespaces", true),
            ("", "configmaps", false),
        ];
        for (group, plural, object) in kinds {
            let rt = registry.lookup(group, "v1", plural).unwrap();
            assert_eq!(returns_deleted_object(&rt), object, "{plural}");
        }
        assert!(!returns_deleted_object(&slices()));
    }
}
