//! Building JSON responses: single objects, lists, and deletion `Status` successes, with the
//! apiVersion of the version the request addressed.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::object;
use crate::registry::ResourceType;
use crate::store::Stored;

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

#[derive(Serialize)]
struct List<'a> {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: Value,
    items: Vec<Cow<'a, Value>>,
}

/// A `{Kind}List` of `items` at resourceVersion `rv`.
pub fn list_response(rt: &ResourceType, items: &[Arc<Value>], rv: u64) -> Response {
    let list = List {
        kind: rt.list_kind(),
        api_version: rt.api_version(),
        metadata: json!({"resourceVersion": rv.to_string()}),
        items: items.iter().map(|o| present(rt, o)).collect(),
    };
    json_response(StatusCode::OK, &list)
}

/// The same `{Kind}List` as [`list_response`], built from the stored objects' JSON encodings
/// (re-encoded only when the request addresses another version than the stored one).
pub fn stored_list_response(rt: &ResourceType, items: &[Stored], rv: u64) -> Response {
    match stored_list_body(rt, items, rv) {
        Ok(bytes) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response(),
        Err(e) => {
            crate::status::ApiError::internal(format!("encoding response: {e}")).into_response()
        }
    }
}

fn stored_list_body(rt: &ResourceType, items: &[Stored], rv: u64) -> serde_json::Result<Vec<u8>> {
    let api_version = rt.api_version();
    let size = items.iter().map(|s| s.json.len() + 1).sum::<usize>();
    let mut body = Vec::with_capacity(size + 256);
    // The field order of `List`.
    body.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut body, &rt.list_kind())?;
    body.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut body, &api_version)?;
    body.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut body, &json!({"resourceVersion": rv.to_string()}))?;
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        if item.value["apiVersion"] == api_version.as_str() {
            body.extend_from_slice(&item.json);
        } else {
            serde_json::to_writer(&mut body, &present(rt, &item.value))?;
        }
    }
    body.extend_from_slice(b"]}");
    Ok(body)
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

    #[test]
    fn stored_lists_encode_like_lists_of_values() {
        let registry = Registry::with_types(builtin::builtin_types());
        let rt = registry
            .lookup("discovery.k8s.io", "v1", "endpointslices")
            .unwrap();
        let objects = [
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "a\"\u{e9}", "labels": {"x": "y"}}, "endpoints": [{"addresses": ["10.0.0.1"]}], "n": 1.5}),
            json!({"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice", "metadata": {"name": "b"}}),
            json!({"metadata": {"name": "c"}}),
        ];
        for count in 0..=objects.len() {
            let stored: Vec<Stored> = objects[..count]
                .iter()
                .map(|o| Stored::new(o.clone()))
                .collect();
            let values: Vec<Arc<Value>> = stored.iter().map(|s| s.value.clone()).collect();
            let expected = serde_json::to_vec(&List {
                kind: rt.list_kind(),
                api_version: rt.api_version(),
                metadata: json!({"resourceVersion": "42"}),
                items: values.iter().map(|o| present(&rt, o)).collect(),
            })
            .unwrap();
            let body = stored_list_body(&rt, &stored, 42).unwrap();
            assert_eq!(
                String::from_utf8(body).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
