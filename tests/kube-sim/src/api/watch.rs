//! The watch verb: where a watch starts, as kube-apiserver 1.36's `cacher.Watch` decides it.
//!
//! - A streaming list (`sendInitialEvents=true`, which `SetListOptionsDefaults` also makes of a
//!   watch from "" or "0"): ADDED for every object the cache holds (after catching up with the
//!   current revision when no resourceVersion is given, or with the one given), then, with
//!   `allowWatchBookmarks`, a BOOKMARK annotated `k8s.io/initial-events-end`.
//! - `resourceVersion=R`: the window's events after R, or, when R is older than the window, one
//!   ERROR event with the 410 Expired Status (`too old resource version: R (OLDEST)`).
//! - `sendInitialEvents=false`: events after the current revision ("") or the cache's ("0").
//!
//! The stream itself (live events, selector transitions, bookmarks, ends) is
//! [`super::watch_stream`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::list_options::ListOptions;
use super::params::Params;
use super::selection::Selection;
use super::table;
use super::target::Target;
use super::watch_stream::{BUFFERED_EVENTS, Chunk, Filter, WatchStream};
use crate::app::App;
use crate::history::{Change, TooOld};
use crate::registry::GroupResource;
use crate::status::ApiError;
use crate::store::Store;
use crate::stored::Stored;

/// How long a watch without `timeoutSeconds` stays open.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Where a watch starts.
pub enum Opening {
    /// ADDED for each object (already selected), then (with bookmarks) the initial-events-end
    /// BOOKMARK at `rv`; `start` is where later events and bookmarks must be newer than.
    Initial {
        objects: Vec<Stored>,
        rv: u64,
        start: u64,
    },
    /// The replayed events after `since`, then live ones.
    Resume {
        since: u64,
        changes: Vec<Arc<Change>>,
    },
    /// One ERROR event, then the end.
    Failed(ApiError),
}

impl From<TooOld> for Opening {
    fn from(too_old: TooOld) -> Self {
        Self::Failed(ApiError::expired(too_old.message()))
    }
}

pub fn watch(
    app: &Arc<App>,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let selection = Selection::from_request(app, target, params)?;
    let options = ListOptions::from_params(params)?;
    let requested = options.parsed_resource_version()?;
    let timeout = options
        .timeout_seconds
        .filter(|s| *s > 0)
        .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.unsigned_abs()));
    let filter = Filter {
        target: target.clone(),
        selection,
        table: table::wanted(headers),
        params: params.clone(),
    };
    let gr = target.rt.group_resource();
    let (receiver, opening) = {
        let store = app.read();
        let receiver = store.subscribe(&gr).ok_or_else(ApiError::path_not_found)?;
        (receiver, opening(&store, &filter, &options, requested))
    };
    let bookmarks = options.allow_watch_bookmarks;
    let (sender, chunks) = mpsc::channel::<Chunk>(BUFFERED_EVENTS);
    let stream = WatchStream::new(
        app.clone(),
        filter,
        receiver,
        sender,
        Instant::now() + timeout,
        bookmarks.then_some(app.settings.bookmark_interval),
    );
    tokio::spawn(stream.run(opening, bookmarks));
    let body = Body::from_stream(futures::stream::unfold(chunks, |mut chunks| async move {
        chunks.recv().await.map(|c| (c, chunks))
    }));
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

fn opening(
    store: &Store,
    filter: &Filter,
    options: &ListOptions,
    requested: Option<u64>,
) -> Opening {
    let gr = filter.target.rt.group_resource();
    let from_now = options.resource_version.is_empty();
    match options.send_initial_events {
        Some(true) => {
            let required = match requested {
                Some(rv) => rv,
                None if from_now => store.resource_version(),
                None => 0,
            };
            let rv = match super::list::fresh_cache(store, &gr, required) {
                Ok(rv) => rv,
                Err(error) => return Opening::Failed(error),
            };
            let objects: Vec<Stored> = store
                .select(
                    &gr,
                    filter.target.namespace.as_deref(),
                    &filter.selection.labels,
                )
                .into_iter()
                .filter(|o| filter.selection.fields.matches_stored(o))
                .collect();
            let start = if objects.is_empty() { required } else { rv };
            Opening::Initial { objects, rv, start }
        }
        Some(false) => {
            let since = match requested {
                Some(rv) => rv,
                None if from_now => store.resource_version(),
                None => store.cache_resource_version(&gr),
            };
            resume(store, &gr, since)
        }
        None => resume(store, &gr, requested.unwrap_or_default()),
    }
}

fn resume(store: &Store, gr: &GroupResource, since: u64) -> Opening {
    match store.changes_since(gr, since) {
        Ok(changes) => Opening::Resume { since, changes },
        Err(too_old) => too_old.into(),
    }
}
