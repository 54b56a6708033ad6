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

/// `obj` as served at `rt`'s version (objects of multi-version CRDs are stored at any version).
pub fn present<'a>(rt: &ResourceType, obj: &'a Value) -> Cow<'a, Value> {
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

/// The `Status` success the apiserver answers an immediate deletion with.
pub fn deleted_response(rt: &ResourceType, last: &Value) -> Response {
    let mut details = rt.group_resource().details(object::name(last));
    details["uid"] = json!(object::uid(last));
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
    json_response(StatusCode::OK, &status)
}
