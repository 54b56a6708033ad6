//! The Kubernetes API: authorization, discovery and OpenAPI documents, and dispatch of resource
//! requests to the verb handlers.

mod body;
mod delete;
mod list;
mod list_options;
mod paging;
mod params;
mod patch;
mod path;
mod read;
mod request_info;
mod respond;
mod selection;
mod table;
mod target;
mod watch;
mod watch_stream;
mod write;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::discovery;
use crate::openapi;
use crate::status::ApiError;
use crate::warning;
use params::Params;
use path::Route;
use target::{Target, Verb};

pub use request_info::Attributes;

/// Serves one Kubernetes API request.
pub async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let response = serve(&app, &method, &uri, &headers, body)
        .await
        .unwrap_or_else(IntoResponse::into_response);
    tracing::debug!(%method, %uri, status = response.status().as_u16(), "request");
    response
}

async fn serve(
    app: &Arc<App>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(app, headers)?;
    record_authorization(app, method, uri);
    let params = Params::from_uri(uri)?;
    let route = path::parse(uri.path());
    if let Route::Resource(resource_path) = route {
        let built_in_group = is_built_in_group(app, &resource_path.group);
        let resolved = Target::resolve(&app.read().registry, resource_path);
        return match resolved {
            Ok(target) => {
                let delay = target
                    .verb(method, &params)
                    .ok()
                    .and_then(|verb| app.faults.delay(&target.request_info(verb)));
                let response = warning::collect(|| {
                    serve_resource(app, method, target, &params, headers, body)
                        .unwrap_or_else(IntoResponse::into_response)
                });
                if let Some(delay) = delay {
                    tracing::info!(?delay, "injected delay: the answer is held back");
                    tokio::time::sleep(delay).await;
                }
                Ok(response)
            }
            Err(error) if built_in_group => Err(error),
            Err(_) => Ok(respond::page_not_found()),
        };
    }
    if method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    let group = match &route {
        Route::Group(group) | Route::ResourceList { group, .. } => Some(group.clone()),
        _ => None,
    };
    match document(app, route) {
        Ok(doc) => Ok(respond::json_response(StatusCode::OK, &doc)),
        Err(error) if group.is_some_and(|g| is_built_in_group(app, &g)) => Err(error),
        Err(_) => Ok(respond::page_not_found()),
    }
}

/// Whether `group` is one of the apiserver's own groups, whose handler answers unknown
/// resources and versions with a 404 `Status`. Requests nothing serves in other groups
/// (unknown ones, and those of CustomResourceDefinitions, whose handler delegates what it does
/// not serve) get the plain-text `404 page not found`.
fn is_built_in_group(app: &App, group: &str) -> bool {
    let store = app.read();
    let mut types = store.registry.all();
    types.any(|t| t.group == group && t.defined_by.is_none())
}

/// Records what the authorizer of a real server would be asked about an authenticated request
/// (before anything else looks at it: a request later refused, or for nothing served, was
/// authorized all the same).
fn record_authorization(app: &App, method: &Method, uri: &Uri) {
    // A query the handlers refuse still names a verb (`watch`) and maybe a name.
    let params = Params::from_uri(uri).unwrap_or_default();
    if let Some(attributes) = Attributes::of_request(method, uri.path(), &params) {
        app.requests.record(attributes);
    }
}

/// With `--token`, requests must carry `Authorization: Bearer TOKEN`.
fn authorize(app: &App, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &app.settings.token else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let bearer = given.and_then(|v| v.strip_prefix("Bearer "));
    if bearer == Some(token.as_str()) {
        Ok(())
    } else {
        Err(ApiError::unauthorized())
    }
}

/// The discovery, OpenAPI or health document a non-resource route addresses.
fn document(app: &App, route: Route) -> Result<serde_json::Value, ApiError> {
    let store = app.read();
    let registry = &store.registry;
    let found = match route {
        Route::Version => Some(discovery::version()),
        Route::Health => Some(serde_json::json!("ok")),
        Route::CoreVersions => Some(discovery::core_versions(&app.settings.server_address)),
        Route::GroupList => Some(discovery::group_list(registry)),
        Route::Group(group) => discovery::group(registry, &group),
        Route::ResourceList { group, version } => {
            discovery::resource_list(registry, &group, &version)
        }
        Route::OpenApiIndex => Some(openapi::index(registry)),
        Route::OpenApiDocument { group, version } => openapi::document(registry, &group, &version),
        Route::Resource(_) | Route::NotFound => None,
    };
    found.ok_or_else(ApiError::path_not_found)
}

/// Runs a resource request, unless an injected fault answers it first.
fn serve_resource(
    app: &Arc<App>,
    method: &Method,
    target: Target,
    params: &Params,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let verb = target.verb(method, params)?;
    if let Some(error) = app
        .faults
        .injected_error(&target.request_info(verb), target.name_or_empty())
    {
        tracing::info!(verb = verb.as_str(), resource = %target.rt.group_resource(), code = error.code, "injected fault");
        return Err(error);
    }
    if verb.writes() && params.get("dryRun").is_some_and(|d| !d.is_empty()) {
        return Err(ApiError::bad_request("dryRun is not supported by kube-sim"));
    }
    match verb {
        Verb::Get => read::get(app, &target, params, headers),
        Verb::List => list::list(app, &target, params, headers),
        Verb::Watch => watch::watch(app, &target, params, headers),
        Verb::Create => write::create(app, &target, params, headers, &body),
        Verb::Update => write::update(app, &target, params, headers, &body),
        Verb::Patch => patch::patch(app, &target, params, headers, &body),
        Verb::Delete => delete::delete(app, &target, params, &body),
        Verb::DeleteCollection => delete::delete_collection(app, &target, params, &body),
    }
}
