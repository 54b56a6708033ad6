//! The upstream Multi-Cluster Services API (KEP-1645: `multicluster.x-k8s.io` ServiceExport and
//! ServiceImport, `about.k8s.io` ClusterProperty) served over the same members, member to
//! member, by the same process, component and leader election as the MultiClusterServices
//! (docs/clusterset.md). The component decides everything (`clusterset-decide`,
//! docs/clusterset-rules.md); this folder reads, asks and writes:
//!
//! - [`cache`]: per member, the ServiceExports, ServiceImports and ClusterProperties, each a
//!   watch into a store; the member's Services and EndpointSlices are the shared member caches,
//!   which keep the exported names ([`keys`]). A member that does not serve the API (404) takes
//!   no part, and is checked again by its watch's retries;
//! - [`keys`]: the exported names (`namespace/name`) that get passes, and which change concerns
//!   which name;
//! - [`read`] → the component ([`crate::controller::pass::decide::Decider::clusterset_decide`])
//!   → [`write`];
//! - [`controller`]: the Controller, its timers and one pass; [`triggers`]: what the watches'
//!   news asks for; [`resync`]: the keys kept at a resync, and a hub without the MCS CRD.
//!
//! **Scheduling.** kube-runtime's `Controller` runs the passes, as it runs the MCS passes: a
//! second `Controller::for_stream_with` over a reflector store holding one synthetic object per
//! key ([`keys`]). It gives what a pass needs: at most one pass per key at a time, triggers
//! arriving meanwhile merged into one more pass, at most `--workers` passes at once, requeues
//! after a failure. Live triggers — any change heard after a list of a ServiceExport, of our
//! ServiceImport, of the exported Service or its slices, of the derived Service or the
//! imported slices, but the controller's own writes ([`Store::writing`] guards) — go to it at
//! once through `reconcile_on`. Passes over every key — the start, a store that lists again, a
//! membership change, a ClusterProperty change, the resync — wait in the MCS side's backlog
//! ([`crate::controller::schedule::backlog`]), handed out a few at a time behind the live
//! changes; a key with a live change leaves the backlog at once.
//!
//! Nothing here touches the MultiClusterService side: it runs beside it, the hub's MCS CRD
//! may be missing (the MCS side then idles, and the members' caches start anyway), and a member
//! without the upstream CRDs only lacks its exports and imports.
//!
//! [`Store::writing`]: crate::controller::cache::Store::writing

pub mod cache;
pub mod controller;
pub mod gates;
pub mod keys;
pub mod names;
pub mod objects;
pub mod ours;
pub mod read;
pub mod resync;
pub mod triggers;
pub mod unreadable;
pub mod write;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::channel::mpsc;
use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::store::{Store as Reader, Writer};

use crate::clusters::Membership;
use crate::controller::Context;
use crate::controller::cache::triggers::Changes;
use crate::controller::cache::{Listener, Scope};
use crate::controller::schedule::backlog::Bulk;
use keys::Keys;
pub use triggers::{Heard, WithClusterset};

/// The clusterset side of `sync`: made before the member caches start (their news reaches it
/// through [`Clusterset::listener`]), then [`Clusterset::run`].
pub struct Clusterset {
    keys: Arc<Keys>,
    heard: Heard,
    store: Reader<DynamicObject>,
    /// Live triggers, handed to the Controller at once.
    requests: mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
    /// Passes over every key, behind the live ones.
    bulk: Arc<Bulk>,
    /// The live changes waiting for their pass.
    changes: Arc<Changes>,
    workers: u16,
}

impl Clusterset {
    /// No key yet; the member stores keep the keys' groups through `scope`; at most `workers`
    /// passes at once.
    pub fn new(
        scope: Scope,
        metrics: Arc<crate::controller::probes::metrics::Metrics>,
        workers: u16,
    ) -> Self {
        let writer = Writer::new(keys::key_resource());
        let store = writer.as_reader();
        let (sender, requests) = mpsc::unbounded();
        let keys = Arc::new(Keys::new(scope, writer, sender));
        let changes = Arc::new(Changes::default());
        let bulk = Arc::new(Bulk::new(
            usize::from(workers),
            changes.clone(),
            keys::key_resource(),
        ));
        let heard = Heard::new(keys.clone(), metrics, bulk.clone(), changes.clone());
        Clusterset {
            keys,
            heard,
            store,
            requests,
            bulk,
            changes,
            workers,
        }
    }

    /// `inner` (the MCS side's listener), also telling the clusterset what the member caches
    /// see.
    pub fn listener<L: Listener>(&self, inner: L) -> WithClusterset<L> {
        WithClusterset::new(inner, self.heard.clone())
    }

    /// Runs [`Clusterset::run`] as a task of its own, from now (before the MCS side's first
    /// lists, which may wait for it: a hub without the MCS CRD), until the handle is dropped.
    pub fn spawn(
        self,
        ctx: Context,
        membership: Arc<RwLock<Membership>>,
        resync: Duration,
    ) -> Running {
        // The component this controller runs names the derived Services, from the first key on.
        names::use_component(&ctx.decider.engine);
        Running(tokio::spawn(self.run(ctx, membership, resync)))
    }

    /// Syncs the exported names for ever: the clusterset caches follow `membership`, the
    /// Controller runs the passes, every key is passed over at every `resync`
    /// ([`controller::run`]).
    pub async fn run(self, ctx: Context, membership: Arc<RwLock<Membership>>, resync: Duration) {
        controller::run(self, ctx, membership, resync).await;
    }
}

/// The running clusterset side; dropping it stops it.
pub struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}
