//! Watch streams: newline-delimited JSON events over a chunked response, starting from a
//! snapshot (ADDED for every current object) or from a resourceVersion (replayed from the
//! history, or a 410 Expired ERROR event when too old), with BOOKMARKs, timeouts, and ends
//! forced through the admin API.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::params::Params;
use super::respond;
use super::table;
use super::target::Target;
use crate::app::App;
use crate::network::WatchEnd;
use crate::object;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{Change, EventType, Stored, TooOld};

/// How long a watch without `timeoutSeconds` stays open.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// Encoded events buffered per watch before the sender waits for the client.
const BUFFERED_EVENTS: usize = 256;

type Chunk = Result<Bytes, io::Error>;

/// Which events a watch sees and how they are encoded.
struct Filter {
    target: Target,
    labels: LabelSelector,
    fields: FieldSelector,
    table: bool,
    params: Params,
}

impl Filter {
    fn matches(&self, obj: &Stored) -> bool {
        let namespace_ok = self
            .target
            .namespace
            .as_deref()
            .is_none_or(|ns| object::namespace(&obj.value) == ns);
        namespace_ok && self.labels.matches(&obj.labels) && self.fields.matches_stored(obj)
    }

    /// The event type a change shows as through this filter (objects leaving the selection are
    /// DELETED, objects entering it ADDED), or None when it is not seen.
    fn event_type(&self, change: &Change) -> Option<EventType> {
        let now = self.matches(&change.object);
        match change.event_type {
            EventType::Added | EventType::Deleted => now.then_some(change.event_type),
            EventType::Modified => {
                let before = change.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(EventType::Modified),
                    (false, true) => Some(EventType::Added),
                    (true, false) => Some(EventType::Deleted),
                    (false, false) => None,
                }
            }
        }
    }
}

/// Where a watch starts.
enum Opening {
    /// ADDED for each current object (already selected by namespace and labels), then changes
    /// after `rv`.
    Snapshot {
        objects: Vec<Stored>,
        rv: u64,
    },
    /// Changes after `rv` only.
    FromNow {
        rv: u64,
    },
    /// Replayed changes after the requested resourceVersion, then live ones.
    Resume {
        since: u64,
        changes: Vec<Arc<Change>>,
    },
    TooOld(TooOld),
}

struct Options {
    bookmarks: bool,
    bookmark_interval: Duration,
    timeout: Duration,
    /// sendInitialEvents=true: mark the end of the snapshot with a bookmark.
    initial_events_end: bool,
}

pub fn watch(
    app: &Arc<App>,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let filter = Filter {
        target: target.clone(),
        labels: params.label_selector()?,
        fields: params.field_selector()?,
        table: table::wanted(headers),
        params: params.clone(),
    };
    let send_initial = params.get("sendInitialEvents").map(|v| v == "true");
    let options = Options {
        bookmarks: params.flag("allowWatchBookmarks"),
        bookmark_interval: app.settings.bookmark_interval,
        timeout: params
            .timeout_seconds()?
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
        initial_events_end: send_initial == Some(true),
    };
    let since = start_version(params.get("resourceVersion"))?;
    let gr = target.rt.group_resource();
    let (receiver, opening) = {
        let store = app.read();
        let receiver = store.subscribe(&gr).ok_or_else(ApiError::path_not_found)?;
        let opening = match (send_initial, since) {
            (Some(true), _) | (None, None) => Opening::Snapshot {
                objects: store.select(&gr, filter.target.namespace.as_deref(), &filter.labels),
                rv: store.resource_version(),
            },
            (Some(false), None) => Opening::FromNow {
                rv: store.resource_version(),
            },
            (_, Some(since)) => match store.changes_since(&gr, since) {
                Ok(changes) => Opening::Resume { since, changes },
                Err(too_old) => Opening::TooOld(too_old),
            },
        };
        (receiver, opening)
    };
    let (sender, chunks) = mpsc::channel::<Chunk>(BUFFERED_EVENTS);
    let stream = WatchStream {
        app: app.clone(),
        filter,
        options,
        receiver,
        ends: app.network.watch_ends(),
        sender,
        last_rv: 0,
        first: true,
    };
    tokio::spawn(stream.run(opening));
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

/// The resourceVersion to resume after: None for "", "0" or absent (start from a snapshot).
fn start_version(rv: Option<&str>) -> Result<Option<u64>, ApiError> {
    match rv {
        None | Some("" | "0") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {text:?}"))),
    }
}

/// A watch event on the wire.
#[derive(Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: Cow<'a, Value>,
}

/// One open watch, run as its own task, writing encoded events into the response body.
struct WatchStream {
    app: Arc<App>,
    filter: Filter,
    options: Options,
    receiver: broadcast::Receiver<Arc<Change>>,
    ends: broadcast::Receiver<WatchEnd>,
    sender: mpsc::Sender<Chunk>,
    /// The resourceVersion of the last change processed (sent or filtered out).
    last_rv: u64,
    /// Whether no event has been sent yet (Table watches send columns once).
    first: bool,
}

impl WatchStream {
    async fn run(mut self, opening: Opening) {
        if self.open(opening).await {
            self.follow().await;
        }
    }

    /// Sends the opening events; false when the watch is over.
    async fn open(&mut self, opening: Opening) -> bool {
        match opening {
            Opening::Snapshot { objects, rv } => {
                self.last_rv = rv;
                let visible: Vec<Arc<Value>> = objects
                    .into_iter()
                    .filter(|o| self.filter.fields.matches_stored(o))
                    .map(|o| o.value)
                    .collect();
                for obj in &visible {
                    if !self.send_object(EventType::Added, obj).await {
                        return false;
                    }
                }
                !(self.options.initial_events_end && self.options.bookmarks)
                    || self.send_bookmark(rv, true).await
            }
            Opening::FromNow { rv } => {
                self.last_rv = rv;
                true
            }
            Opening::Resume { since, changes } => {
                self.last_rv = since;
                for change in changes {
                    if !self.deliver(&change).await {
                        return false;
                    }
                }
                true
            }
            Opening::TooOld(too_old) => {
                let message = format!(
                    "too old resource version: {} ({})",
                    too_old.requested, too_old.oldest
                );
                let line =
                    json!({"type": "ERROR", "object": ApiError::expired(message).to_status()});
                let _ = self.send_line(&line).await;
                false
            }
        }
    }

    /// Relays live changes until the watch times out, is ended, or the client goes away.
    async fn follow(&mut self) {
        let deadline = tokio::time::sleep(self.options.timeout);
        tokio::pin!(deadline);
        let interval = self
            .options
            .bookmark_interval
            .max(Duration::from_millis(10));
        let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
        loop {
            let going = tokio::select! {
                received = self.receiver.recv() => match received {
                    Ok(change) => self.deliver(&change).await,
                    // Fell behind or the resource went away: end, and let the client re-watch.
                    Err(_) => false,
                },
                _ = ticker.tick(), if self.options.bookmarks => self.bookmark().await,
                () = &mut deadline => false,
                end = self.ends.recv() => {
                    if matches!(end, Ok(WatchEnd::Abort)) {
                        let _ = self.sender.send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, "kube-sim is unreachable"))).await;
                    }
                    false
                }
                () = self.sender.closed() => false,
            };
            if !going {
                return;
            }
        }
    }

    /// Sends the event a change shows as, if any; false when the client is gone.
    async fn deliver(&mut self, change: &Change) -> bool {
        if change.resource_version <= self.last_rv {
            return true;
        }
        self.last_rv = change.resource_version;
        match self.filter.event_type(change) {
            Some(event_type) => self.send_object(event_type, &change.object.value).await,
            None => true,
        }
    }

    /// Delivers every change already broadcast, then a BOOKMARK at the current resourceVersion.
    async fn bookmark(&mut self) -> bool {
        let rv = self.app.read().resource_version();
        loop {
            match self.receiver.try_recv() {
                Ok(change) => {
                    if !self.deliver(&change).await {
                        return false;
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(_) => return false,
            }
        }
        self.last_rv = self.last_rv.max(rv);
        self.send_bookmark(self.last_rv, false).await
    }

    async fn send_bookmark(&mut self, rv: u64, initial_events_end: bool) -> bool {
        let rt = &self.filter.target.rt;
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata});
        self.send_line(&json!({"type": "BOOKMARK", "object": object}))
            .await
    }

    async fn send_object(&mut self, event_type: EventType, obj: &Arc<Value>) -> bool {
        let object = if self.filter.table {
            Cow::Owned(table::table(
                std::slice::from_ref(obj),
                None,
                self.first,
                &self.filter.params,
            ))
        } else {
            respond::present(&self.filter.target.rt, obj)
        };
        self.first = false;
        self.send_line(&Event {
            event_type: event_type.as_str(),
            object,
        })
        .await
    }

    async fn send_line(&mut self, event: &impl Serialize) -> bool {
        let Ok(mut line) = serde_json::to_vec(event) else {
            return false;
        };
        line.push(b'\n');
        self.sender.send(Ok(Bytes::from(line))).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_version_zero_or_empty_means_snapshot() {
        assert_eq!(start_version(None), Ok(None));
        assert_eq!(start_version(Some("0")), Ok(None));
        assert_eq!(start_version(Some("")), Ok(None));
        assert_eq!(start_version(Some("42")), Ok(Some(42)));
        assert_eq!(start_version(Some("abc")).unwrap_err().code, 400);
    }
}
