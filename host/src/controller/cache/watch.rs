//! The watch that fills one [`Store`]: kube-runtime's `watcher` (list, then watch from the
//! list's resourceVersion, paging, bookmarks, re-list after 410 Gone), each object reduced to
//! what the controller keeps of it before it is stored ([`super::kept`]), and every change
//! reported to a callback (the triggers).
//!
//! One rule is ours: **a watch that fails is listed again**, never resumed in silence. After an
//! error kube-runtime's watcher would resume from the last resourceVersion, and nothing tells
//! its user when the watch works again; a store must not be read while it may miss events, so
//! on the first error the store turns [`Health::Broken`](super::store::Health) and stays so
//! until a fresh list completes. The list is retried with a backoff (0.5 s doubling to 10 s),
//! reset by a completed list, or at once when the membership finds the cluster answering
//! again ([`Watch::wake`]). A watch the server ends cleanly (its timeout, or a dropped stream)
//! is resumed by the watcher as usual: no event is lost.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::store::{Cached, Store};
use crate::clusters::api_error::{Kind, chain, kind_of};

/// The first wait before listing again after a failure.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// The longest wait before listing again.
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// What a watch tells its owner.
#[derive(Debug)]
pub enum News<'a, K> {
    /// An object of a list (not a change: a list says how things are, not what happened).
    Listed { object: &'a K },
    /// An object changed (`deleted`: was deleted); `own` when it is the controller's own
    /// write (or held back until that write's answer), `group` the store group it concerns,
    /// `left` the group a relabelled object moved out of.
    Changed {
        object: &'a K,
        deleted: bool,
        group: Option<&'a str>,
        left: Option<&'a str>,
        own: bool,
    },
    /// A list completed; `returned` when the store was not readable before.
    Synced { returned: bool },
    /// The watch failed (the store is broken until the next list completes).
    Failed { message: &'a str, kind: Kind },
}

/// What one watch fills and whom it tells: the objects of kind `K` it watches are stored as
/// `C`, what the controller keeps of them.
pub struct Watch<K: Resource, C> {
    /// The cluster (for logs).
    pub cluster: String,
    /// The resource (for logs and messages), e.g. `endpointslices`.
    pub resource: &'static str,
    pub api: Api<K>,
    pub config: watcher::Config,
    pub store: Store<C>,
    /// What the controller keeps of an object ([`super::kept`]).
    pub keep: fn(K) -> C,
    /// Also given every event as watched (the kube-runtime store the Controller runs on).
    pub mirror: Option<Mirror<K>>,
    /// Ends the wait before listing again after a failure (the cluster answers again).
    pub wake: Arc<Notify>,
}

/// A second consumer of a watch's events.
pub type Mirror<K> = Box<dyn FnMut(&Event<K>) + Send>;

impl<K, C> Watch<K, C>
where
    K: Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + Sync + 'static,
    C: Cached,
{
    /// Runs for ever (abort the task to stop it), telling `news` what happens.
    pub async fn run(mut self, mut news: impl FnMut(News<'_, C>) + Send) {
        let mut backoff = BACKOFF_FIRST;
        loop {
            let mut events = watcher(self.api.clone(), self.config.clone()).boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        if self.apply(event, &mut news) {
                            backoff = BACKOFF_FIRST;
                        }
                    }
                    Err(err) => {
                        let (message, kind) = describe(&self.cluster, self.resource, &err);
                        let not_served = kind == Kind::NotFound;
                        if kind.is_credentials() {
                            tracing::warn!(cluster = %self.cluster, resource = self.resource,
                                error = %message, retry_in = ?backoff,
                                "member cluster refuses our credentials (docs/api-errors.md): fix its kubeconfig or secret, or its RBAC");
                        } else {
                            tracing::warn!(cluster = %self.cluster, resource = self.resource,
                                error = %message, retry_in = ?backoff,
                                "watch failed; the cluster's cache is not read until it is listed again");
                        }
                        news(News::Failed {
                            message: &message,
                            kind,
                        });
                        self.store.failed(message, not_served);
                        break;
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.wake.notified() => {}
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Applies one event to the store; whether it completed a list.
    fn apply(&mut self, event: Event<K>, news: &mut impl FnMut(News<'_, C>)) -> bool {
        if let Some(mirror) = self.mirror.as_mut() {
            mirror(&event);
        }
        match event {
            Event::Init => self.store.list_started(),
            Event::InitApply(object) => {
                let object = (self.keep)(object);
                news(News::Listed { object: &object });
                self.store.listed(object);
            }
            Event::InitDone => {
                let returned = self.store.list_done();
                if returned {
                    tracing::info!(cluster = %self.cluster, resource = self.resource,
                        objects = self.store.len(), "listed; the cluster's cache is readable");
                }
                news(News::Synced { returned });
                return true;
            }
            Event::Apply(object) => {
                let (applied, object) = self.store.applied((self.keep)(object));
                news(News::Changed {
                    object: &object,
                    deleted: false,
                    group: applied.group.as_deref(),
                    left: applied.left.as_deref(),
                    own: applied.own,
                });
            }
            Event::Delete(object) => {
                let object = (self.keep)(object);
                let applied = self.store.removed(&object);
                news(News::Changed {
                    object: &object,
                    deleted: true,
                    group: applied.group.as_deref(),
                    left: applied.left.as_deref(),
                    own: applied.own,
                });
            }
        }
        false
    }
}

/// A watch error as the conditions show it (the server's own words, with code and reason),
/// and its kind (404: the server does not serve the resource).
fn describe(cluster: &str, resource: &str, err: &watcher::Error) -> (String, Kind) {
    let (step, detail, kind) = match err {
        watcher::Error::InitialListFailed(e) => ("listing", chain(e), kind_of(e)),
        watcher::Error::WatchStartFailed(e) => ("watching", chain(e), kind_of(e)),
        watcher::Error::WatchFailed(e) => ("watching", chain(e), kind_of(e)),
        watcher::Error::WatchError(status) => {
            let api = kube::Error::Api(status.clone());
            ("watching", chain(&api), kind_of(&api))
        }
        other @ watcher::Error::NoResourceVersion => ("watching", chain(other), Kind::Other),
    };
    (
        format!("{step} {resource} in cluster {cluster}: {detail}"),
        kind,
    )
}
