//! One MultiClusterService, one pass, as four steps: *read* everything ([`snapshot`], the
//! caches) → *decide* ([`Decider::decide`], the component, no client) → *apply* what it answered
//! (the finalizer, [`writes`], clients) → *status*: the component concludes from what failed
//! ([`Decider::conclude`]), and the conditions, load balancer status and Events are written
//! (clients). Every rule is the component's; a failing member cluster is reported and
//! skipped, never fatal.
//!
//! [`snapshot`]: crate::controller::pass::read::snapshot
//! [`writes`]: crate::controller::pass::write
//! [`Decider::decide`]: crate::controller::pass::decide::Decider::decide
//! [`Decider::conclude`]: crate::controller::pass::decide::Decider::conclude

pub mod conflict;
pub mod decide;
pub mod read;
pub mod report;
pub mod write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::controller::Context;
use crate::controller::names::object_name;
use crate::controller::pass::decide::memory::Remembered;
use crate::controller::pass::decide::quiet::{self, Fingerprint};
use crate::controller::pass::decide::{DecideError, stale_timeout_ms};
use crate::controller::pass::read::ReadError;
use crate::controller::pass::read::snapshot;
use crate::controller::pass::report::events::emit;
use crate::controller::pass::report::status::{StatusError, set_status};
pub use crate::controller::pass::report::{Report, chain};
use crate::controller::pass::write::apply::{ApplyError, set_finalizer};
use crate::controller::pass::write::{Written, write_all};
use crate::engine::convert;
use crate::engine::types::{FinalizerChange, PassDecision, Reported, StatusNow, StatusUpdate};

/// A failure that stops the pass for this MCS (the hub side: read, decide, finalizer, status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Decide(#[from] DecideError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Status(#[from] StatusError),
}

/// Reconciles one MCS against the members that are `ready` now.
pub async fn reconcile(
    ctx: &Context,
    mcs: &DynamicObject,
    ready: &[String],
) -> Result<Report, ReconcileError> {
    let object = object_name(mcs);
    let uid = mcs.metadata.uid.clone().unwrap_or_else(|| object.clone());
    let (pass, snapshot) = snapshot::read(ctx, mcs, &uid, ready)?;
    let reported = remembered(ctx, &uid, |r| r.reported.clone()).flatten();
    let input = Fingerprint::of(
        &pass,
        reported.as_ref(),
        stale_timeout_ms(ctx.stale_timeout),
    );
    let repeated = |r: &mut Remembered| {
        let same = r.quiet == Some(input);
        if !same {
            r.quiet = None;
        }
        same
    };
    if remembered(ctx, &uid, repeated) == Some(true) {
        ctx.metrics.skipped_quiet();
        return Ok(Report::default());
    }
    let may_be_quiet = quiet::all_readable(&pass);
    let decision = ctx.decider.decide(&object, pass, ctx.stale_timeout).await?;
    log_unknown(&object, &decision);
    remember_ingress(ctx, &uid, &decision);
    let hub = &ctx.registry.hub.client;
    // Before any copy exists, so that a deletion always finds the finalizer.
    let mut current = None;
    if let FinalizerChange::Add(finalizer) = &decision.finalizer {
        current = set_finalizer(hub, mcs, finalizer, true).await?;
        remember_write(ctx, current.as_ref());
    }
    let written = write_all(ctx, &object, &decision, &snapshot).await;
    if let FinalizerChange::Release(finalizer) = &decision.finalizer
        && written.slices.is_empty()
    {
        let released = set_finalizer(hub, mcs, finalizer, false).await?;
        remember_write(ctx, released.as_ref());
    }
    let mcs = current.as_ref().unwrap_or(mcs);
    let read = &mcs.data["status"]["conditions"];
    let update = conclude(ctx, mcs, read, reported.clone(), &decision, &written).await?;
    let nothing_to_write = may_be_quiet
        && nothing_decided(&decision)
        && written.services.is_empty()
        && written.slices.is_empty()
        && update.events.is_empty()
        && !update.retry
        && reported.as_ref() == Some(&update.reported);
    let ingress = decision.ingress.as_ref().map(|entries| {
        let entries = entries.iter().cloned();
        entries.map(convert::ingress_from_wit).collect()
    });
    // After a conflict, the same conclusion on the conditions the hub holds then.
    let (decided, done) = (&decision, &written);
    let again = |now: Value| {
        let reported = reported.clone();
        async move {
            let update = conclude(ctx, mcs, &now, reported, decided, done).await?;
            Ok(update.conditions)
        }
    };
    let status = set_status(hub, mcs, update.conditions.clone(), ingress, again).await?;
    remember_write(ctx, status.as_ref());
    let quiet = (nothing_to_write && status.is_none()).then_some(input);
    remembered(ctx, &uid, |r| r.quiet = quiet);
    report_events(ctx, mcs, &uid, update.events, update.reported).await;
    Ok(report(written, update.retry))
}

/// Runs `f` on what the controller remembers of the MCS `uid` (`None`: nothing yet).
fn remembered<T>(ctx: &Context, uid: &str, f: impl FnOnce(&mut Remembered) -> T) -> Option<T> {
    let mut memory = ctx.remembered.lock().ok()?;
    memory.get_mut(uid).map(f)
}

/// Whether the component asked for no write at all: no finalizer change, copy, deletion or
/// Service.
fn nothing_decided(decision: &PassDecision) -> bool {
    matches!(decision.finalizer, FinalizerChange::Keep)
        && decision.copies.is_empty()
        && decision.deletions.is_empty()
        && decision.services.is_empty()
}

/// Records the MCS as a write of the pass left it, so the next pass reads it even before
/// the hub's watch delivers it (its conditions are compared with what `conclude` decides).
fn remember_write(ctx: &Context, written: Option<&DynamicObject>) {
    if let Some(written) = written {
        let written = crate::controller::cache::kept::mcs(written.clone());
        ctx.caches.hub.mcs.wrote(written);
    }
}

/// Asks the component how the pass ends, given what its writes did, the MCS's `conditions` (as
/// the pass read them, or as the hub holds them after a conflict; the generation is always the
/// pass's) and what the Events reported last (`reported`, as the pass read it: also part of its
/// fingerprint).
async fn conclude(
    ctx: &Context,
    mcs: &DynamicObject,
    conditions: &Value,
    reported: Option<Reported>,
    decision: &PassDecision,
    written: &Written,
) -> Result<StatusUpdate, DecideError> {
    let now = serde_json::to_value(Time(Timestamp::now()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let current = StatusNow {
        conditions: if conditions.is_array() {
            conditions.to_string()
        } else {
            "[]".to_string()
        },
        generation: mcs.metadata.generation,
        now,
    };
    ctx.decider
        .conclude(
            &object_name(mcs),
            decision.status.clone(),
            written.failures(),
            current,
            reported,
        )
        .await
}

fn log_unknown(object: &str, decision: &PassDecision) {
    for name in &decision.plan.unknown_providers {
        tracing::warn!(mcs = object, "Provider cluster {name} is not found");
    }
    for name in &decision.plan.unknown_consumers {
        tracing::warn!(mcs = object, "Consumer cluster {name} is not found");
    }
}

/// Remembers the load balancer entries the component said to keep for the next pass.
fn remember_ingress(ctx: &Context, uid: &str, decision: &PassDecision) {
    remembered(ctx, uid, |r| {
        r.remember_ingress(decision.remember_ingress.clone());
    });
}

/// Emits the Events the component says are due; remembers what they report only when every
/// one was written, so a failed one is emitted again by the next pass.
async fn report_events(
    ctx: &Context,
    mcs: &DynamicObject,
    uid: &str,
    events: Vec<crate::engine::types::EventNote>,
    reported: Reported,
) {
    let mut written = true;
    for note in &events {
        if let Err(err) = emit(&ctx.registry.hub.client, mcs, note).await {
            tracing::warn!(mcs = %object_name(mcs), error = %chain(&err), "event not written");
            written = false;
        }
    }
    if written {
        remembered(ctx, uid, |r| r.reported = Some(reported));
    }
}

/// What the pass did.
fn report(written: Written, retry: bool) -> Report {
    let mut failures = written.services;
    failures.extend(written.slices);
    Report {
        applied: written.applied,
        deleted: written.deleted,
        failures,
        retry,
    }
}
