//! The read verbs: get one object, list a collection (with label and field selectors).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::params::Params;
use super::respond;
use super::table;
use super::target::Target;
use crate::app::App;
use crate::status::ApiError;
use crate::store::Stored;

pub fn get(app: &App, target: &Target, headers: &HeaderMap) -> Result<Response, ApiError> {
    let name = target.name_or_empty();
    let found = app
        .read()
        .get(&target.rt.group_resource(), target.key_namespace(), name);
    let obj = found.ok_or_else(|| ApiError::not_found(&target.rt.group_resource(), name))?;
    if table::wanted(headers) {
        let doc = table::table(&[obj], None, true, &Params::default());
        return Ok(respond::json_response(StatusCode::OK, &doc));
    }
    Ok(respond::object_response(StatusCode::OK, &target.rt, &obj))
}

/// `limit` and `continue` are ignored: every matching object comes in one page.
pub fn list(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let (items, rv) = matching(app, target, params)?;
    if table::wanted(headers) {
        let objects: Vec<Arc<Value>> = items.into_iter().map(|s| s.value).collect();
        let doc = table::table(&objects, Some(rv), true, params);
        return Ok(respond::json_response(StatusCode::OK, &doc));
    }
    Ok(respond::stored_list_response(&target.rt, &items, rv))
}

/// The objects of the target collection the request's selectors match, and the current resourceVersion.
pub fn matching(
    app: &App,
    target: &Target,
    params: &Params,
) -> Result<(Vec<Stored>, u64), ApiError> {
    let labels = params.label_selector()?;
    let fields = params.field_selector()?;
    let (mut items, rv) = {
        let store = app.read();
        let gr = target.rt.group_resource();
        let selected = store.select(&gr, target.namespace.as_deref(), &labels);
        (selected, store.resource_version())
    };
    items.retain(|o| fields.matches_stored(o));
    Ok((items, rv))
}
