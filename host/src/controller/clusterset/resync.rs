//! What the clusterset side does at a resync besides passing over every key (the keys kept, the
//! memory of dropped ones forgotten), and when the hub serves no MultiClusterServices.

use std::collections::HashSet;

use futures::FutureExt;

use super::controller::Shared;
use super::triggers::ours;
use super::{cache, names};
use crate::controller::Context;
use crate::controller::cache::{Cached, Health};

/// When the hub does not serve MultiClusterServices (404: no CRD), the MCS side idles: the
/// member caches must not wait for the hub's MCSs to list (they never will), so the scope is
/// told there are none. Returns whether it was told (logged once).
pub(super) fn idle_without_mcs(ctx: &Context, told: bool) -> bool {
    let hub_has_no_mcs = ctx.caches.hub.mcs.failing().is_some_and(|f| f.not_served);
    if !hub_has_no_mcs {
        return false;
    }
    let scope = &ctx.triggers.scope;
    if scope.ready().now_or_never().is_none() {
        scope.reset(HashSet::new());
    }
    if !told {
        tracing::info!(hub = %ctx.registry.hub.name,
            "the hub serves no multiclusterservices (no CRD): MultiClusterService sync idles; exported services still sync");
    }
    true
}

/// At a resync: drops the keys nothing is left of in any member (no ServiceExport, no
/// ServiceImport, derived Service or imported slice of ours), and adds every name exported,
/// imported or held by an object of ours (keys a missed event would have added).
pub(super) fn retain_keys(shared: &Shared) {
    let stores: Vec<cache::Stores> = {
        let stores = shared.stores.read().unwrap_or_else(|p| p.into_inner());
        stores.values().cloned().collect()
    };
    for member in &stores {
        for export in member.exports.all() {
            shared.keys.add(export.namespace(), export.name());
        }
        for import in member.imports.all() {
            if ours(&import) {
                shared.keys.add(import.namespace(), import.name());
            }
        }
        for key in member.groups_of_ours() {
            if let Some((namespace, name)) = key.split_once('/') {
                shared.keys.add(namespace, name);
            }
        }
    }
    let caches = shared.ctx.caches.members();
    shared.keys.retain(|namespace, name| {
        let derived = names::derived_name(namespace, name);
        stores.iter().any(|m| {
            m.exports.get(namespace, name).is_some()
                || m.imports.get(namespace, name).is_some_and(|i| ours(&i))
                || !m.derived.group(namespace, name).is_empty()
                || !m.imported.group(namespace, name).is_empty()
                // A member that cannot be read may still hold some: keep the key.
                || (!m.not_served() && m.unreadable().is_some())
                || m.derived.health() != Health::Synced
                || m.imported.health() != Health::Synced
        }) || caches.iter().any(|c| {
            c.services.get(namespace, &derived).is_some()
                || c.slices
                    .group(namespace, &derived)
                    .iter()
                    .any(|s| s.label(names::MCS_SERVICE_NAME_LABEL) == Some(name))
        })
    });
    let kept = |key: &str| {
        key.split_once('/')
            .is_some_and(|(namespace, name)| shared.keys.contains(namespace, name))
    };
    shared.retries.retain(kept);
    shared.changes.retain(kept);
    shared.bulk.retain(kept);
}
