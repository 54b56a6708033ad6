//! The get verb. Without `resourceVersion` the object is read from storage (etcd); with one it
//! comes from the watch cache once that is at least that fresh (`CacheDelegator.Get`), which
//! for a revision not written yet is a 504 `Too large resource version`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::list;
use super::list_options::parse_resource_version;
use super::params::Params;
use super::respond;
use super::table;
use super::target::Target;
use crate::app::App;
use crate::status::ApiError;

pub fn get(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let name = target.name_or_empty();
    let gr = target.rt.group_resource();
    let requested = parse_resource_version(params.get("resourceVersion").unwrap_or_default())?;
    let found = {
        let store = app.read();
        if let Some(at_least) = requested {
            list::fresh_cache(&store, &gr, at_least)?;
        }
        store.get(&gr, target.key_namespace(), name)
    };
    let obj = found.ok_or_else(|| ApiError::not_found(&gr, name))?;
    if table::wanted(headers) {
        let doc = table::table(&[obj], None, true, &Params::default());
        return Ok(respond::json_response(StatusCode::OK, &doc));
    }
    Ok(respond::object_response(StatusCode::OK, &target.rt, &obj))
}
