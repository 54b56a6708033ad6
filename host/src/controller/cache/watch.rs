//! The watch that fills one [`Store`]: kube-runtime's `watcher` (list, then watch from the
//! list's resourceVersion, paging, bookmarks, re-list after 410 Gone), each object reduced to
//! what the controller keeps of it before it is stored ([`super::kept`]), and every change
//! reported to a callback (the triggers).
//!
//! **A failing watch resumes where it was.** One watcher stream lives as long as the watch:
//! after an error it is polled again, and its state machine watches again from the last
//! resourceVersion it delivered (or a bookmark's), so the server replays every change since,
//! in order. It lists again only when the server says that version is gone (410 Expired, e.g.
//! after an API server restart, whose new watch cache starts at the current revision), and
//! then the old content stays readable until the new list replaces it at once
//! ([`Store::list_done`]). A new watcher (a new list) is started only when the stream may have
//! skipped an event: a line that did not decode ([`needs_new_list`]), or a watch *request*
//! answered 410 (the watcher would retry that version for ever).
//!
//! Between retries the watch backs off: 0.5 s doubling to 10 s, each wait ±20 % at random so
//! the watches of many clusters do not retry in step; at once when the membership finds a
//! member that was not ready answering again ([`Watch::wake`]; within `--outage-grace` a
//! kubeconfig member stays ready, so the backoff alone paces the retries of a short outage);
//! back to 0.5 s once the watch works again. A 410 answer waits only the first step: the
//! server answers, and the list that follows is the remedy.
//!
//! A 404 to the list (the resource is not served) is not retried on the backoff: a watch given
//! the CRD of its resource ([`Watch::run_served_by`]: the upstream Multi-Cluster Services API's)
//! waits for that CRD on a watch of it by name and lists once it is established, at no
//! request at rest ([`super::crd`]); any other lists again a minute later.
//!
//! kube-runtime's `WatchStreamExt::backoff` is not used: it sleeps inside the stream, where
//! [`Watch::wake`] cannot cut the wait short, and it resets on any item, including the `Init`
//! the watcher yields *before* each list request, so a list that keeps failing would be
//! retried at the first step for ever.
//!
//! **When a watch is failing, and when it works again.** It is failing from its first error
//! (any: refused, timed out, 401/403, 5xx, 410) until one of these proves it works:
//! - a list completes: the store holds the cluster as it is now;
//! - it delivers an event: the stream is open from the store's version, and delivers what it
//!   missed first, in order;
//! - a retry of the watch itself (not of a list) has gone [`Patience::settle`] without an
//!   error. kube-runtime does not tell when its watch request succeeds, but every request of
//!   our clients is answered or fails within `--request-timeout` (the settle is longer), and a
//!   server that cannot resume from the version says so in the first line of its answer
//!   (410); so a retry quiet for that long has an open watch from the store's version, in a
//!   cluster where nothing changed since. Bookmarks would prove it too, but the watcher keeps
//!   them to itself, and the membership probe answering says only that the server answers.
//!
//! While failing, a store that has listed stays readable for `--outage-grace` (30 s by
//! default) from the first error ([`Store::health`]): an outage shorter than that, an API
//! server restart say, does not make the member unreadable, so the conditions do not turn
//! False and back. Past the grace the store is unreadable (the conditions say for how long it
//! has been failing) until it works again; it then triggers every MCS as a list does
//! ([`News::Synced`]). A store that has never listed has nothing to show and is unreadable at
//! its first error. Why reading a store that may miss events is safe: docs/architecture.md,
//! "Consistency of the caches". A watch the server ends cleanly (its timeout, a dropped
//! stream) is resumed by the watcher without an error: no event is lost.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::crd::{Crd, Served};
use super::health::Health;
use super::kept::Cached;
use super::retry::{
    Backoff, Failing, NOT_SERVED_RECHECK, Proof, describe, gone, jittered, needs_new_list,
    not_served,
};
use super::store::Store;
use crate::clusters::api_error::Kind;

#[cfg(doc)]
use super::health::Patience;

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
    /// A list completed, or a watch that was failing for longer than the grace works again;
    /// `returned` when readers may have missed changes (the store was not readable, or a list
    /// replaced its content): every MCS is reconciled.
    Synced { returned: bool },
    /// The watch failed (once per error; the store stays readable within the grace).
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
    /// Ends the wait before retrying after a failure (the cluster answers again).
    pub wake: Arc<Notify>,
}

/// A second consumer of a watch's events.
pub type Mirror<K> = Box<dyn FnMut(&Event<K>) + Send>;

/// The watcher configuration of every cache: lists are **consistent reads**
/// (`ListSemantic::MostRecent`: no `resourceVersion`, so the API server answers as of now, from
/// etcd or its consistent watch cache), never `resourceVersion=0`, which a server may answer
/// from a watch cache any age behind. A store's list is a snapshot of the cluster as it is, so
/// a re-list never takes it back in time.
pub fn config() -> watcher::Config {
    watcher::Config::default().list_semantic(watcher::ListSemantic::MostRecent)
}

impl<K, C> Watch<K, C>
where
    K: Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + Sync + 'static,
    C: Cached,
{
    /// Runs for ever (abort the task to stop it), telling `news` what happens. A resource the
    /// server does not serve is listed again every [`NOT_SERVED_RECHECK`].
    pub async fn run(self, news: impl FnMut(News<'_, C>) + Send) {
        self.run_with(None, news).await;
    }

    /// [`Watch::run`] for a custom resource served by `crd`: while the server does not serve
    /// it, the watch waits for the CRD ([`super::crd`]) rather than listing again every
    /// [`NOT_SERVED_RECHECK`].
    pub async fn run_served_by(self, crd: Crd, news: impl FnMut(News<'_, C>) + Send) {
        self.run_with(Some(crd), news).await;
    }

    async fn run_with(mut self, crd: Option<Crd>, mut news: impl FnMut(News<'_, C>) + Send) {
        let mut backoff = Backoff::default();
        let mut state = Failing::default();
        loop {
            let mut events = watcher(self.api.clone(), self.config.clone()).boxed();
            loop {
                let quiet_at = state.quiet_at(self.store.patience().settle);
                let next = tokio::select! {
                    next = events.next() => next,
                    () = sleep_until(quiet_at) => {
                        if state.quiet() {
                            self.works_again("its watch was resumed", &mut news);
                            backoff.reset();
                        }
                        continue;
                    }
                };
                let err = match next {
                    Some(Ok(event)) => {
                        let init = matches!(event, Event::Init);
                        let proof = match event {
                            Event::InitDone => Proof::Listed,
                            Event::Apply(_) | Event::Delete(_) => Proof::Event,
                            _ => Proof::Nothing,
                        };
                        let was_failing = state.failing;
                        if state.item(proof, init) {
                            backoff.reset();
                            // A list says so itself ([`News::Synced`] from `apply`).
                            if !matches!(event, Event::InitDone) {
                                self.works_again("its watch delivers again", &mut news);
                            } else if was_failing {
                                tracing::info!(cluster = %self.cluster, resource = self.resource,
                                    "listed again after a failure");
                            }
                        }
                        self.apply(event, &mut news);
                        continue;
                    }
                    Some(Err(err)) => err,
                    // The watcher's stream never ends; a new one if it does.
                    None => break,
                };
                // After a 410 the server answers: the list that follows is the remedy, after
                // the first step only (a list that fails goes on with the backoff).
                let for_crd = crd.as_ref().filter(|_| not_served(&err));
                let wait = if gone(&err) {
                    Backoff::default().next_wait()
                } else if not_served(&err) {
                    jittered(NOT_SERVED_RECHECK)
                } else {
                    backoff.next_wait()
                };
                self.failed(&err, &mut state, &mut news, wait, for_crd);
                let new_list = needs_new_list(&err);
                match for_crd {
                    Some(crd) => self.wait_for(crd, wait, &mut state, &mut backoff).await,
                    None => back_off(wait, &self.wake).await,
                }
                if new_list {
                    break;
                }
                state.retrying(Instant::now());
            }
            state.retrying(Instant::now());
        }
    }

    /// Waits for `crd` after a 404 to the list ([`super::crd`]): until it serves the resource,
    /// or, when it cannot be watched, `recheck` (the minute of a resource without a CRD).
    async fn wait_for(
        &mut self,
        crd: &Crd,
        recheck: Duration,
        state: &mut Failing,
        backoff: &mut Backoff,
    ) {
        let since = Instant::now();
        let (cluster, resource, name) = (&self.cluster, self.resource, crd.name());
        match crd.served(&self.wake).await {
            Served::Appeared => {
                tracing::info!(%cluster, resource, crd = name,
                    "its CustomResourceDefinition is established: listed now");
            }
            Served::Already => {
                let wait = backoff.next_wait();
                tracing::debug!(%cluster, resource, crd = name, ?wait,
                    "its CustomResourceDefinition is established, the list was not served yet");
                back_off(wait, &self.wake).await;
            }
            Served::Unwatchable(error) => {
                if !state.told_crd {
                    state.told_crd = true;
                    tracing::info!(%cluster, resource, crd = name, %error, ?recheck,
                        "cannot watch its CustomResourceDefinition (the member's RBAC may lack get, list, watch on it): listed again in about a minute");
                } else {
                    tracing::debug!(%cluster, resource, crd = name, %error,
                        "cannot watch its CustomResourceDefinition");
                }
                back_off(recheck.saturating_sub(since.elapsed()), &self.wake).await;
            }
            Served::Woken => {}
        }
    }

    /// Reports an error: news, the store, the log.
    fn failed(
        &self,
        err: &watcher::Error,
        state: &mut Failing,
        news: &mut impl FnMut(News<'_, C>),
        retry_in: Duration,
        crd: Option<&Crd>,
    ) {
        let (message, kind) = describe(&self.cluster, self.resource, err);
        let first = state.failed();
        news(News::Failed {
            message: &message,
            kind,
        });
        self.store.failed(message.clone(), kind == Kind::NotFound);
        let grace = self.store.patience().grace;
        let unreadable = matches!(self.store.health(), Health::Broken(_));
        let (cluster, resource) = (&self.cluster, self.resource);
        if not_served(err) {
            // A CRD not installed (or no EndpointSlices at all) is how the cluster is, not an
            // outage: said once, at info.
            if state.told_unreadable {
                tracing::debug!(%cluster, resource, ?retry_in, "still not served");
            } else if let Some(crd) = crd {
                tracing::info!(%cluster, resource, error = %message, crd = crd.name(),
                    "the cluster does not serve this resource: listed again once its CustomResourceDefinition is established");
            } else {
                tracing::info!(%cluster, resource, error = %message, ?retry_in,
                    "the cluster does not serve this resource: listed again in about a minute");
            }
        } else if kind.is_credentials() && first {
            tracing::warn!(%cluster, resource, error = %message, ?retry_in,
                "member cluster refuses our credentials (docs/api-errors.md): fix its kubeconfig or secret, or its RBAC");
        } else if unreadable && !state.told_unreadable {
            state.told_unreadable = true;
            let failing_for = self.store.failing().map(|f| f.since.elapsed());
            tracing::warn!(%cluster, resource, error = %message, ?retry_in, ?failing_for,
                "watch still failing: the cluster's cache is not read until it works again");
        } else if first {
            tracing::warn!(%cluster, resource, error = %message, ?retry_in, ?grace,
                "watch failed; retrying from its last resourceVersion (the cache stays readable for the grace)");
        } else {
            tracing::debug!(%cluster, resource, error = %message, ?retry_in, "watch retry failed");
        }
        if unreadable {
            state.told_unreadable = true;
        }
    }

    /// A failing watch works again without a list: the store is synced, and if it had been
    /// unreadable its readers catch up.
    fn works_again(&self, how: &str, news: &mut impl FnMut(News<'_, C>)) {
        let failed_for = self.store.failing().map(|f| f.since.elapsed());
        let returned = self.store.resumed();
        tracing::info!(cluster = %self.cluster, resource = self.resource, ?failed_for,
            "{how}; the cluster's cache is current again");
        if returned {
            news(News::Synced { returned });
        }
    }

    /// Applies one event to the store.
    fn apply(&mut self, event: Event<K>, news: &mut impl FnMut(News<'_, C>)) {
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
                        objects = self.store.len(), "listed; the cluster's cache is current");
                }
                news(News::Synced { returned });
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
    }
}

/// Waits `wait` before the next retry, or until `wake` says the cluster answers again.
async fn back_off(wait: Duration, wake: &Notify) {
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = wake.notified() => {}
    }
}

/// Sleeps until `at`, or for ever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
