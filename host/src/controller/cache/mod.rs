//! The controller's caches: one watch per resource and cluster fills a [`Store`], and a pass
//! reads only stores — no API request is made to read anything a pass decides on.
//!
//! | cluster | resource | group a pass reads |
//! | --- | --- | --- |
//! | hub | MultiClusterServices | by name |
//! | hub | Services (the templates) | by name |
//! | each member | EndpointSlices labelled `kubernetes.io/service-name` | by that label |
//! | each member | Services | by name |
//!
//! Every change a watch delivers, other than the controller's own writes, triggers the pass of
//! the MultiClusterService it concerns (if the hub has one of that namespace and name): a
//! provider's slice, a copy edited or deleted by hand, a member's Service edited by hand or
//! given a load balancer, a hub Service, an MCS's spec or deletion. A store that lists again
//! after a failure triggers every MCS, since it may have missed changes
//! ([`triggers::Reactions`]).
//!
//! **What a pass may assume** (docs/architecture.md, "Consistency of the caches"):
//! - a store it reads is [`Health::Synced`]: it has listed, and applied every event since, so
//!   it shows the cluster as it was a moment ago, never a state the cluster was not in. A
//!   member with a store that is listing or broken is *unreadable* for the pass, which the
//!   component handles as a failed read (keep the provider's copies, prune nothing from it,
//!   retry);
//! - the controller's own writes are seen at once ([`store`]'s read-your-writes);
//! - anything else may lag, and a change it has not seen yet arrives as an event that
//!   triggers another pass.
//!
//! **Why no user object is lost.** The component deletes only slices carrying all of the
//! copy markers, and a member's Service only when it carries the created-by label, and only
//! to create it again. Every delete carries a uid and resourceVersion precondition taken from
//! the store, so an object that was re-created or changed since the store saw it is not
//! deleted (409; the pass is retried once the store has caught up). Applies and replaces of
//! our own objects are idempotent: made from a stale store they write what a fresh one would,
//! or fail on the resourceVersion (409) and are re-read.
//!
//! **The files**, each one idea, import one way (docs/architecture.md, the controller's
//! folders): what is kept of an object ([`kept`], [`watched`], [`interner`]), a store's health
//! and a watch's retries ([`health`], [`retry`]), a store's groups and own writes ([`groups`],
//! [`overlay`]), the store ([`store`]) and its writes' and scoped sides ([`writes`], [`scoped`]),
//! waiting for a CRD ([`crd`]), the watch ([`watch`]), the scope ([`scope`]), who hears the
//! watches ([`listener`]), the filler ([`fill`]), the caches ([`caches`], [`members`]). This file
//! only declares and re-exports them; none of them imports it.

pub mod caches;
pub mod crd;
pub mod fill;
pub mod groups;
pub mod health;
pub mod interner;
pub mod kept;
pub mod listener;
pub mod members;
pub mod overlay;
pub mod retry;
pub mod scope;
pub mod scoped;
pub mod store;
pub mod triggers;
pub mod watch;
pub mod watched;
pub mod writes;

pub use caches::{Caches, Hub, Member, Unreadable, mcs_api};
pub use health::{Failure, Health, Patience};
pub use kept::{Cached, KeptService, KeptSlice};
pub use listener::Listener;
pub use members::Members;
pub use scope::Scope;
pub use store::Store;
pub use watch::News;
pub use writes::Writing;
