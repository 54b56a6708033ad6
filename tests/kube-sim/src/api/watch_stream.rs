//! One open watch: newline-delimited JSON events over a chunked response, written by a task
//! of its own.
//!
//! Events are what the cacher's `cacheWatcher.convertToWatchEvent` makes of a change through
//! the watch's selectors: an object entering the selection is ADDED, one leaving it is
//! DELETED with its previous content at the change's resourceVersion. Objects carry `kind`
//! and `apiVersion` (copied from the stored encodings, not re-serialized).
//!
//! With `allowWatchBookmarks`, a BOOKMARK (the kind's empty object at the watch cache's
//! resourceVersion) comes about 2 s before the watch's deadline and every bookmark interval
//! (a minute in kube-apiserver; `--bookmark-interval-seconds`), but only when the cache's
//! resourceVersion is newer than where the watch started (`cacheWatcher.nextBookmarkTime`,
//! and `process`, which drops events not newer than the start).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::params::Params;
use super::respond;
use super::selection::Selection;
use super::table;
use super::target::Target;
use super::watch::Opening;
use crate::app::App;
use crate::empty;
use crate::history::{Change, EventType};
use crate::network::WatchEnd;
use crate::object;
use crate::stored::Stored;

/// Encoded events buffered per watch before the sender waits for the client.
pub const BUFFERED_EVENTS: usize = 256;

/// The pre-deadline bookmark comes this long before the watch's deadline.
const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

pub type Chunk = Result<Bytes, io::Error>;

/// Which events a watch sees and how they are encoded.
pub struct Filter {
    pub target: Target,
    pub selection: Selection,
    pub table: bool,
    pub params: Params,
}

impl Filter {
    fn matches(&self, obj: &Stored) -> bool {
        let namespace_ok = self
            .target
            .namespace
            .as_deref()
            .is_none_or(|ns| obj.key.namespace == ns);
        namespace_ok
            && self.selection.labels.matches(&obj.labels)
            && self.selection.fields.matches_stored(obj)
    }

    /// The event type a change shows as through this filter, or None when it is not seen.
    fn event_type(&self, change: &Change) -> Option<EventType> {
        let now = change.event_type != EventType::Deleted && self.matches(&change.object);
        let before = change.previous.as_ref().is_some_and(|p| self.matches(p));
        match (before, now) {
            (false, true) => Some(EventType::Added),
            (true, true) => Some(EventType::Modified),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        }
    }
}

/// One open watch.
pub struct WatchStream {
    app: Arc<App>,
    filter: Filter,
    receiver: broadcast::Receiver<Arc<Change>>,
    ends: broadcast::Receiver<WatchEnd>,
    sender: mpsc::Sender<Chunk>,
    deadline: Instant,
    /// The period of bookmarks, when the watch allows them.
    bookmark_interval: Option<Duration>,
    /// Where the watch started: events and bookmarks must be newer.
    start_rv: u64,
    /// The resourceVersion of the last change processed (sent or filtered out).
    last_rv: u64,
    /// Whether no event has been sent yet (Table watches send columns once).
    first: bool,
}

impl WatchStream {
    pub fn new(
        app: Arc<App>,
        filter: Filter,
        receiver: broadcast::Receiver<Arc<Change>>,
        sender: mpsc::Sender<Chunk>,
        deadline: Instant,
        bookmark_interval: Option<Duration>,
    ) -> Self {
        Self {
            ends: app.network.watch_ends(),
            app,
            filter,
            receiver,
            sender,
            deadline,
            bookmark_interval,
            start_rv: 0,
            last_rv: 0,
            first: true,
        }
    }

    pub async fn run(mut self, opening: Opening, bookmarks: bool) {
        if self.open(opening, bookmarks).await {
            self.follow().await;
        }
    }

    /// Sends the opening events; false when the watch is over.
    async fn open(&mut self, opening: Opening, bookmarks: bool) -> bool {
        match opening {
            Opening::Initial { objects, rv, start } => {
                self.last_rv = rv;
                self.start_rv = start;
                for obj in &objects {
                    if !self.send_object(EventType::Added, obj).await {
                        return false;
                    }
                }
                !bookmarks || self.send_bookmark(rv, true).await
            }
            Opening::Resume { since, changes } => {
                self.last_rv = since;
                for change in changes {
                    if !self.deliver(&change).await {
                        return false;
                    }
                }
                self.start_rv = self.last_rv;
                true
            }
            Opening::Failed(error) => {
                let line = json!({"type": "ERROR", "object": error.to_status()});
                let _ = self.send_line(&line).await;
                false
            }
        }
    }

    /// When the next bookmark is due: in an interval, or 2 s before the deadline if sooner;
    /// None once that time has passed.
    fn next_bookmark(&self, now: Instant) -> Option<Instant> {
        let interval = self.bookmark_interval?.max(Duration::from_millis(10));
        let before_deadline = self.deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE)?;
        let next = (now + interval).min(before_deadline);
        (next >= now).then_some(next)
    }

    /// Relays live changes until the watch times out, is ended, or the client goes away.
    async fn follow(&mut self) {
        let deadline = tokio::time::sleep_until(self.deadline);
        tokio::pin!(deadline);
        let mut bookmark_at = self.next_bookmark(Instant::now());
        loop {
            let bookmark_due = async {
                match bookmark_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let going = tokio::select! {
                received = self.receiver.recv() => match received {
                    Ok(change) => self.deliver(&change).await,
                    // Fell behind or the resource went away: end, and let the client re-watch.
                    Err(_) => false,
                },
                () = bookmark_due => {
                    bookmark_at = self.next_bookmark(Instant::now());
                    self.bookmark().await
                }
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
            Some(EventType::Deleted) if change.event_type == EventType::Modified => {
                let left = change
                    .previous
                    .as_ref()
                    .map(|p| at_version(p, change.resource_version));
                match left {
                    Some(left) => self.send_object(EventType::Deleted, &left).await,
                    None => true,
                }
            }
            Some(event_type) => self.send_object(event_type, &change.object).await,
            None => true,
        }
    }

    /// A BOOKMARK at the cache's resourceVersion, after every change already announced, when
    /// the cache has moved past where the watch started.
    async fn bookmark(&mut self) -> bool {
        let gr = self.filter.target.rt.group_resource();
        let cached = self.app.read().cache_resource_version(&gr);
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
        let rv = cached.max(self.last_rv);
        if rv <= self.start_rv {
            return true;
        }
        self.send_bookmark(rv, false).await
    }

    async fn send_bookmark(&mut self, rv: u64, initial_events_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = empty::object_with_metadata(&self.filter.target.rt, metadata);
        self.send_line(&json!({"type": "BOOKMARK", "object": object}))
            .await
    }

    async fn send_object(&mut self, event_type: EventType, obj: &Stored) -> bool {
        let mut line = Vec::with_capacity(obj.body.len() + 96);
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(event_type.as_str().as_bytes());
        line.extend_from_slice(b"\",\"object\":");
        if self.filter.table {
            let doc = table::table(
                std::slice::from_ref(&obj.value),
                None,
                self.first,
                &self.filter.params,
            );
            let _ = serde_json::to_writer(&mut line, &doc);
        } else {
            let rt = &self.filter.target.rt;
            let obj = respond::presented(rt, obj);
            obj.write_object_json(&rt.kind, &rt.api_version(), &mut line);
        }
        line.extend_from_slice(b"}\n");
        self.first = false;
        self.sender.send(Ok(Bytes::from(line))).await.is_ok()
    }

    async fn send_line(&mut self, event: &Value) -> bool {
        let Ok(mut line) = serde_json::to_vec(event) else {
            return false;
        };
        line.push(b'\n');
        self.sender.send(Ok(Bytes::from(line))).await.is_ok()
    }
}

/// `stored` with its resourceVersion set to `rv` (an object leaving a selection is sent as
/// DELETED with its previous content at the change's resourceVersion).
fn at_version(stored: &Stored, rv: u64) -> Stored {
    let mut value = (*stored.value).clone();
    object::metadata_mut(&mut value).insert("resourceVersion".into(), json!(rv.to_string()));
    Stored::new(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    fn filter(labels: &str) -> Filter {
        let registry = Registry::with_types(builtin::builtin_types());
        let rt = registry.lookup("", "v1", "configmaps").unwrap();
        Filter {
            target: Target {
                rt,
                namespace: Some("ns".into()),
                name: None,
                part: crate::lifecycle::Part::Main,
            },
            selection: Selection {
                labels: crate::selector::LabelSelector::parse(labels).unwrap(),
                fields: Default::default(),
            },
            table: false,
            params: Params::default(),
        }
    }

    fn stored(ns: &str, tier: &str) -> Stored {
        Stored::new(json!({"metadata": {"namespace": ns, "name": "x", "labels": {"tier": tier}}}))
    }

    fn change(event_type: EventType, object: Stored, previous: Option<Stored>) -> Change {
        Change {
            resource_version: 9,
            event_type,
            object,
            previous,
            recorded_at: std::time::Instant::now(),
        }
    }

    #[test]
    fn selector_transitions_become_added_and_deleted() {
        let front = filter("tier=front");
        let entering = change(
            EventType::Modified,
            stored("ns", "front"),
            Some(stored("ns", "back")),
        );
        assert_eq!(front.event_type(&entering), Some(EventType::Added));
        let leaving = change(
            EventType::Modified,
            stored("ns", "back"),
            Some(stored("ns", "front")),
        );
        assert_eq!(front.event_type(&leaving), Some(EventType::Deleted));
        let staying = change(
            EventType::Modified,
            stored("ns", "front"),
            Some(stored("ns", "front")),
        );
        assert_eq!(front.event_type(&staying), Some(EventType::Modified));
        let deleted = change(
            EventType::Deleted,
            stored("ns", "front"),
            Some(stored("ns", "front")),
        );
        assert_eq!(front.event_type(&deleted), Some(EventType::Deleted));
        let elsewhere = change(EventType::Added, stored("other", "front"), None);
        assert_eq!(front.event_type(&elsewhere), None);
    }

    #[test]
    fn leaving_objects_keep_their_content_at_the_new_version() {
        let left = at_version(&stored("ns", "front"), 12);
        assert_eq!(left.labels["tier"], "front");
        assert_eq!(left.resource_version(), 12);
    }
}
