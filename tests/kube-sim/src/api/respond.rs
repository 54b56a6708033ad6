//! Building JSON responses: single objects, lists, and deletion `Status` successes, with the
//! apiVersion of the version the request addressed.

use std::borrow::Cow;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::object;
use crate::registry::ResourceType;
use crate::stored::Stored;

/// `obj` as served at `rt`'s version (objects of multi-version CRDs are stored at any version;
/// `events.k8s.io` Events are stored as core Events).
pub fn present<'a>(rt: &ResourceType, obj: &'a Value) -> Cow<'a, Value> {
    if let Some(converted) = crate::kinds::present(rt, obj) {
        return Cow::Owned(converted);
    }
    let api_version = rt.api_version();
    if obj["apiVersion"] == api_version.as_str() {
        Cow::Borrowed(obj)
    } else {
        let mut copy = obj.clone();
        copy["apiVersion"] = json!(api_version);
        Cow::Owned(copy)
    }
}

/// A stored object in the form `rt` serves it (see [`present`]), its encodings reused when
/// that is the stored form.
pub fn presented<'a>(rt: &ResourceType, stored: &'a Stored) -> Cow<'a, Stored> {
    match crate::kinds::present(rt, &stored.value) {
        Some(converted) => Cow::Owned(Stored::new(converted)),
        None => Cow::Borrowed(stored),
    }
}

/// A JSON body with a status code.
pub fn json_response(code: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (code, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => {
            crate::status::ApiError::internal(format!("encoding response: {e}")).into_response()
        }
    }
}

pub fn object_response(code: StatusCode, rt: &ResourceType, obj: &Value) -> Response {
    json_response(code, &present(rt, obj))
}

/// The apiserver's answer to a path nothing serves (Go's `http.NotFound`).
pub fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
        .into_response()
}

/// A JSON body already encoded.
pub fn bytes_response(code: StatusCode, bytes: Vec<u8>) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// A `{Kind}List` of `items` with `metadata`, built from the stored encodings: items of
/// built-in kinds without `kind` and `apiVersion` (typed list items), those of custom
/// resources with them (unstructured list items).
pub fn list_response(rt: &ResourceType, items: &[Stored], metadata: &Value) -> Response {
    bytes_response(StatusCode::OK, list_body(rt, items, metadata))
}

fn list_body(rt: &ResourceType, items: &[Stored], metadata: &Value) -> Vec<u8> {
    let api_version = rt.api_version();
    let typed_items = rt.defined_by.is_none();
    let size = items.iter().map(|s| s.body.len() + 64).sum::<usize>();
    let mut body = Vec::with_capacity(size + 256);
    body.extend_from_slice(b"{\"kind\":");
    write_json(&rt.list_kind(), &mut body);
    body.extend_from_slice(b",\"apiVersion\":");
    write_json(&api_version, &mut body);
    body.extend_from_slice(b",\"metadata\":");
    write_json(metadata, &mut body);
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let item = presented(rt, item);
        if typed_items {
            body.extend_from_slice(item.item_json());
        } else {
            item.write_object_json(&rt.kind, &api_version, &mut body);
        }
    }
    body.extend_from_slice(b"]}");
    body
}

fn write_json(value: &impl Serialize, out: &mut Vec<u8>) {
    // Strings and `Value`s always encode.
    let _ = serde_json::to_writer(out, value);
}

/// The `Status` success the apiserver answers an immediate deletion with.
pub fn deleted_response(rt: &ResourceType, last: &Value) -> Response {
    let mut details = rt.group_resource().details(object::name(last));
    details["uid"] = json!(object::uid(last));
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
    json_response(StatusCode::OK, &status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    fn decoded(body: Vec<u8>) -> Value {
        serde_json::from_slice(&body).unwrap()
    }

    #[test]
    fn built_in_list_items_come_without_their_type() {
        let registry = Registry::with_types(builtin::builtin_types());
        let rt = registry
            .lookup("discovery.k8s.io", "v1", "endpointslices")
            .unwrap();
        let objects = [
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "a\"\u{e9}"}, "n": 1.5}),
            json!({"metadata": {"name": "c"}}),
        ];
        let stored: Vec<Stored> = objects.iter().map(|o| Stored::new(o.clone())).collect();
        let metadata = json!({"resourceVersion": "42"});
        let list = decoded(list_body(&rt, &stored, &metadata));
        assert_eq!(
            list,
            json!({"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1", "metadata": {"resourceVersion": "42"}, "items": [
                {"metadata": {"name": "a\"\u{e9}"}, "n": 1.5},
                {"metadata": {"name": "c"}},
            ]})
        );
        assert_eq!(decoded(list_body(&rt, &[], &metadata))["items"], json!([]));
    }

    #[test]
    fn custom_resource_list_items_keep_their_type_at_the_served_version() {
        let registry = Registry::with_types(builtin::builtin_types());
        let mut rt = (*registry.lookup("", "v1", "configmaps").unwrap()).clone();
        (rt.group, rt.version, rt.kind) = ("example.com".into(), "v2".into(), "Widget".into());
        rt.defined_by = Some("widgets.example.com".into());
        let stored = [Stored::new(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        )];
        let list = decoded(list_body(
            &rt,
            &stored,
            &json!({"resourceVersion": "1", "continue": ""}),
        ));
        assert_eq!(
            list["items"],
            json!([{"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}}])
        );
    }
}
