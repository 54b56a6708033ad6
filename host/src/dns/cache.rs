//! The caches the answers come from: a kube-runtime watcher and reflector over the cluster's
//! ServiceImports (`multicluster.x-k8s.io/v1beta1`) and one over its EndpointSlices labelled
//! `multicluster.kubernetes.io/service-name` (the imported ones: a MultiClusterService's
//! copies carry only `kubernetes.io/service-name` and are never read). After both have listed
//! once, every change rebuilds the [`Index`] the queries read; until then there is none, and
//! the server answers SERVFAIL.
//!
//! A watch that fails after that (an API server outage, a Role that lost `watch`) leaves the
//! last index in place: answering from what was last known is what cluster DNS does (CoreDNS's
//! `kubernetes` plugin too), and a replica that turned unready would take every clusterset name
//! down with it. The failure is said instead: once per spell in the log (as an error naming
//! the missing permission for a 401/403), and for as long as it lasts in the gauge
//! `mcs_policy_dns_watch_failing{resource}`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use futures::{Stream, StreamExt};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::Notify;

use super::index::{Import, ImportSpec, Index, SERVICE_NAME_LABEL};
use crate::clusters::api_error::{Kind, chain, classify};

/// The two watches, by the resource they watch.
pub const WATCHED: [&str; 2] = ["serviceimports", "endpointslices"];

/// The index queries read, and its SOA serial.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub index: Index,
    pub serial: u32,
}

/// What the caches have: nothing before they synced, then the latest index.
#[derive(Debug, Default)]
pub struct Shared {
    snapshot: RwLock<Option<Arc<Snapshot>>>,
    serial: AtomicU32,
    /// Whether the watch of `WATCHED[i]` is failing (its last attempt was an error).
    failing: [AtomicBool; 2],
}

impl Shared {
    /// The latest index, or `None` before both caches have synced.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.snapshot
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Whether the caches have synced.
    pub fn ready(&self) -> bool {
        self.snapshot().is_some()
    }

    /// Whether the watch of `WATCHED[watch]` is failing now.
    pub fn failing(&self, watch: usize) -> bool {
        self.failing[watch].load(Ordering::Relaxed)
    }

    /// Records the outcome of the watch's last attempt; true when that changed its state.
    fn set_failing(&self, watch: usize, failing: bool) -> bool {
        self.failing[watch].swap(failing, Ordering::Relaxed) != failing
    }

    fn publish(&self, index: Index) {
        let serial = self.serial.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let snapshot = Arc::new(Snapshot { index, serial });
        *self
            .snapshot
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(snapshot);
    }
}

/// `multicluster.x-k8s.io/v1beta1` `ServiceImport`.
fn service_imports() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "multicluster.x-k8s.io",
        "v1beta1",
        "ServiceImport",
    ))
}

/// Runs the two watches and keeps `shared` up to date; returns only when a watch stream
/// ends (never, in practice: the watchers retry with backoff).
pub async fn run(client: Client, shared: Arc<Shared>) {
    let resource = service_imports();
    let import_writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let imports = import_writer.as_reader();
    let import_events = watcher(
        Api::<DynamicObject>::all_with(client.clone(), &resource),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(forget_managed_fields)
    .reflect(import_writer);

    let slice_writer = reflector::store::Writer::<EndpointSlice>::default();
    let slices = slice_writer.as_reader();
    let slice_events = watcher(
        Api::<EndpointSlice>::all(client),
        watcher::Config::default().labels(SERVICE_NAME_LABEL),
    )
    .default_backoff()
    .modify(forget_managed_fields)
    .reflect(slice_writer);

    let changed = Notify::new();
    let rebuild = async {
        let (a, b) = tokio::join!(imports.wait_until_ready(), slices.wait_until_ready());
        if a.is_err() || b.is_err() {
            return;
        }
        tracing::info!("ServiceImport and EndpointSlice caches synced: answering");
        loop {
            shared.publish(build(&imports, &slices));
            changed.notified().await;
        }
    };
    tokio::select! {
        () = drain(import_events, 0, &shared, &changed) => {}
        () = drain(slice_events, 1, &shared, &changed) => {}
        () = rebuild => {}
    }
}

/// Not kept: the largest part of an object, never read here.
fn forget_managed_fields<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Consumes a reflected watch stream of `WATCHED[watch]`, waking the rebuild after every
/// event and keeping the watch's failing state.
async fn drain<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    watch: usize,
    shared: &Shared,
    changed: &Notify,
) {
    let resource = WATCHED[watch];
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(_) => {
                if shared.set_failing(watch, false) {
                    tracing::info!(resource, "watch works again");
                }
                changed.notify_one();
            }
            Err(error) => {
                let first = shared.set_failing(watch, true);
                report(&error, resource, first);
            }
        }
    }
}

/// Logs a failed watch attempt: the first of a spell as a warning (an error, naming the
/// permission, when the credentials are refused), the retries at debug.
fn report(error: &watcher::Error, resource: &str, first: bool) {
    let error_text = chain(error);
    if !first {
        tracing::debug!(error = %error_text, resource, "watch failed again; retrying");
    } else if matches!(classify(error), Kind::Forbidden | Kind::Unauthorized) {
        tracing::error!(
            error = %error_text,
            resource,
            "watch refused: this ServiceAccount needs list and watch of {resource}; answering \
             from the last known content and retrying"
        );
    } else {
        tracing::warn!(
            error = %error_text,
            resource,
            "watch failed; answering from the last known content and retrying"
        );
    }
}

/// The index of the caches' content.
fn build(imports: &Store<DynamicObject>, slices: &Store<EndpointSlice>) -> Index {
    let imports = imports.state().into_iter().map(|object| {
        let spec = object
            .data
            .get("spec")
            .and_then(|spec| serde_json::from_value::<ImportSpec>(spec.clone()).ok())
            .unwrap_or_default();
        Import {
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
            spec,
        }
    });
    let slices = slices.state();
    Index::build(imports, slices.iter().map(AsRef::as_ref))
}
