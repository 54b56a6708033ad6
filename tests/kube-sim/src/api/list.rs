//! The list verb, with the resourceVersion semantics of kube-apiserver 1.36's watch cache
//! (`cacher.GetList` behind `delegator.ShouldDelegateList`, with `ConsistentListFromCache` and
//! `ListFromCacheSnapshot` on):
//!
//! - no resourceVersion: a consistent read, at the current revision (the cache first catches
//!   up with it, as after a progress notification); `limit`/`continue` page through it;
//! - `resourceVersion=0`: whatever the cache holds, at the cache's resourceVersion, in one page
//!   (`limit` is ignored);
//! - `resourceVersion=R` (`NotOlderThan`, or no match without limit): the cache's state once
//!   it is at least R;
//! - `resourceVersionMatch=Exact` (or R with a limit, the legacy exact match) and continue
//!   tokens: the state at exactly that revision, until a compaction removes it (410).
//!
//! Items of built-in kinds come without `kind` and `apiVersion`, those of custom resources
//! with them (unstructured lists), as the apiserver serializes them.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::list_options::{ListOptions, Match};
use super::paging;
use super::params::Params;
use super::respond;
use super::selection::Selection;
use super::table;
use super::target::Target;
use crate::app::App;
use crate::listing::{Page, Query};
use crate::registry::GroupResource;
use crate::status::ApiError;
use crate::store::{SnapshotError, Store};
use crate::stored::ObjectKey;

/// A listed page with the resourceVersion of the state it was read from.
#[derive(Debug)]
pub struct Listed {
    pub page: Page,
    pub resource_version: u64,
}

/// Where a list reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The current state at the current revision.
    Consistent,
    /// The cache's current state, once it is at least this revision.
    Cache { at_least: u64 },
    /// The state at exactly this revision.
    Exact(u64),
}

pub fn list(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let selection = Selection::from_request(app, target, params)?;
    let options = ListOptions::from_params(params)?;
    let listed = match read(app, target, &options, &selection) {
        Ok(listed) => listed,
        Err(refusal) => return Ok(refusal.into_response()),
    };
    let metadata = list_metadata(target, &listed);
    if table::wanted(headers) {
        let objects: Vec<_> = listed.page.items.iter().map(|s| s.value.clone()).collect();
        let mut doc = table::table(&objects, Some(listed.resource_version), true, params);
        doc["metadata"] = metadata;
        return Ok(respond::json_response(StatusCode::OK, &doc));
    }
    Ok(respond::list_response(
        &target.rt,
        &listed.page.items,
        &metadata,
    ))
}

/// Why a list is refused: an error, or the 410 Status of an expired continue token.
#[derive(Debug)]
pub enum Refusal {
    Error(ApiError),
    Expired(Value),
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Self::Error(error)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Self::Error(error) => error.into_response(),
            Self::Expired(status) => respond::json_response(StatusCode::GONE, &status),
        }
    }
}

/// Reads the page a list request asks for.
pub fn read(
    app: &App,
    target: &Target,
    options: &ListOptions,
    selection: &Selection,
) -> Result<Listed, Refusal> {
    let namespace = target.namespace.as_deref();
    let mut query = Query {
        namespace,
        labels: &selection.labels,
        fields: &selection.fields,
        start: None,
        limit: (options.limit > 0).then_some(options.limit as usize),
    };
    let store = app.read();
    let gr = target.rt.group_resource();
    if !options.continue_token.is_empty() {
        let token = paging::decode(&options.continue_token, namespace)?;
        if !matches!(options.resource_version.as_str(), "" | "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            )
            .into());
        }
        query.start = Some(&token.start);
        let source = match u64::try_from(token.resource_version) {
            Ok(rv) => Source::Exact(rv),
            Err(_) => Source::Consistent,
        };
        return read_from(&store, &gr, &query, source).map_err(|error| match error {
            SnapshotError::Compacted => {
                Refusal::Expired(paging::expired_continue(&token.start, namespace))
            }
            other => snapshot_refusal(other),
        });
    }
    let requested = options.parsed_resource_version()?;
    let source = match (options.resource_version_match, requested) {
        (Some(Match::Exact), Some(rv)) => Source::Exact(rv),
        (None, Some(rv)) if options.limit > 0 => Source::Exact(rv),
        (_, Some(rv)) => Source::Cache { at_least: rv },
        (_, None) if options.resource_version.is_empty() => Source::Consistent,
        (_, None) => {
            query.limit = None;
            Source::Cache { at_least: 0 }
        }
    };
    read_from(&store, &gr, &query, source).map_err(snapshot_refusal)
}

fn snapshot_refusal(error: SnapshotError) -> Refusal {
    Refusal::Error(snapshot_error(error))
}

/// The answer to a state that cannot be read: 410 when compacted, 504 when not written yet.
fn snapshot_error(error: SnapshotError) -> ApiError {
    match error {
        SnapshotError::Compacted => {
            ApiError::expired("The resourceVersion for the provided list is too old.")
        }
        SnapshotError::TooLarge { requested, current } => too_large(requested, current),
    }
}

/// [`wait_for_cache`] for reads that answer its failure directly.
pub fn fresh_cache(store: &Store, gr: &GroupResource, at_least: u64) -> Result<u64, ApiError> {
    wait_for_cache(store, gr, at_least).map_err(snapshot_error)
}

fn read_from(
    store: &Store,
    gr: &GroupResource,
    query: &Query<'_>,
    source: Source,
) -> Result<Listed, SnapshotError> {
    let (resource_version, at) = match source {
        Source::Consistent => (store.sync_cache(gr), None),
        Source::Cache { at_least } => (wait_for_cache(store, gr, at_least)?, None),
        Source::Exact(rv) => (rv, Some(rv)),
    };
    let page = store.page(gr, query, at)?;
    Ok(Listed {
        page,
        resource_version,
    })
}

/// The cache's resourceVersion once it is at least `at_least` (a newer revision than the
/// cache's makes it ask etcd for progress); a revision not written yet is too large.
fn wait_for_cache(store: &Store, gr: &GroupResource, at_least: u64) -> Result<u64, SnapshotError> {
    let cached = store.cache_resource_version(gr);
    if at_least <= cached {
        return Ok(cached);
    }
    if at_least > store.resource_version() {
        return Err(SnapshotError::TooLarge {
            requested: at_least,
            current: cached,
        });
    }
    Ok(store.sync_cache(gr))
}

/// 504 `Too large resource version` (`storage.NewTooLargeResourceVersionError`).
fn too_large(requested: u64, current: u64) -> ApiError {
    ApiError {
        code: 504,
        reason: "Timeout",
        message: format!("Timeout: Too large resource version: {requested}, current: {current}"),
        details: Some(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        })),
        retry_after_seconds: Some(1),
    }
}

/// The list's `metadata`: resourceVersion, and the continue token and remaining count of a
/// partial page (custom resource lists always carry `continue`, as unstructured lists do).
fn list_metadata(target: &Target, listed: &Listed) -> Value {
    let mut metadata = json!({"resourceVersion": listed.resource_version.to_string()});
    let token = listed.page.more_after.as_ref().map(|last: &ObjectKey| {
        paging::encode(
            last,
            target.namespace.as_deref(),
            listed.resource_version as i64,
        )
    });
    match token {
        Some(token) => metadata["continue"] = json!(token),
        None if target.rt.defined_by.is_some() => metadata["continue"] = json!(""),
        None => {}
    }
    if let Some(remaining) = listed.page.remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    metadata
}
