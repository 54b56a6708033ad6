//! The *read* step of a clusterset pass: what `clusterset-decide` takes, from the caches only
//! (no request). A member is in the pass when it serves the Multi-Cluster Services API; it is
//! unreadable (the component keeps what it contributed and writes nothing there) when it is
//! not ready, when one of its stores is listing or broken, or when the exported name's groups
//! are not filled in its Service or EndpointSlice store yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kube::api::DynamicObject;

use super::cache::{Members, Stores};
use super::names::{MCS_SERVICE_NAME_LABEL, derived_name};
use crate::clusters::Membership;
use crate::controller::cache::{self, Cached, KeptService, KeptSlice, Unreadable};
use crate::engine::convert;
use crate::engine::types::{
    ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead, ImportedSlice,
};

/// What one pass read, beside the component's input: each member's objects as read, for the
/// writes' preconditions and the stores the writes go through.
pub struct Snapshot {
    /// The members in the pass, in the order of the read's members.
    pub members: Vec<Read>,
}

/// One member in a pass.
pub struct Read {
    pub cluster: String,
    pub stores: Stores,
    pub cache: Option<cache::Member>,
    /// Whether it was readable.
    pub readable: bool,
}

/// Since when each member has been unreadable without a break (not ready, no cache yet, or a
/// store of its broken), whatever the name: the clock `--stale-endpoint-timeout` runs on. A
/// name's groups still filling are no outage and leave it as it is.
#[derive(Debug, Default)]
pub struct Outages(Mutex<HashMap<String, Instant>>);

impl Outages {
    /// `cluster` is unreadable (`true`) or readable at `now`: for how long it has been
    /// unreadable (zero when it is readable or unreadable for the first time).
    pub fn mark(&self, cluster: &str, unreadable: bool, now: Instant) -> Duration {
        let mut since = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !unreadable {
            since.remove(cluster);
            return Duration::ZERO;
        }
        now.duration_since(*since.entry(cluster.to_string()).or_insert(now))
    }
}

/// How the pass found the members, beside what it read: `--stale-endpoint-timeout` and the
/// outage clock.
pub struct Staleness<'a> {
    pub outages: &'a Outages,
    pub timeout: Option<Duration>,
}

/// Reads the exported `namespace/name` in every member of `membership` that serves the API;
/// `not_ready` is what "not ready" means for the cluster source.
#[allow(clippy::too_many_arguments)]
pub fn read(
    caches: &cache::Caches,
    clusterset: &RwLock<HashMap<String, Stores>>,
    membership: &Membership,
    not_ready: &str,
    staleness: &Staleness<'_>,
    namespace: &str,
    name: &str,
    now: String,
) -> (ClustersetRead, Snapshot) {
    let at = Instant::now();
    let Membership { registry, ready } = membership;
    let mut members = Vec::new();
    let mut snapshot = Snapshot {
        members: Vec::new(),
    };
    let mut names: Vec<&str> = registry.members.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    for cluster in names {
        let Some(stores) = Members::stores(clusterset, cluster) else {
            continue;
        };
        if stores.not_served() {
            continue;
        }
        let cache = caches.member(cluster);
        let is_ready = ready.iter().any(|r| r == cluster);
        let broken = stores.unreadable().is_some()
            || cache.as_ref().is_none_or(|c| c.unreadable().is_some());
        let unreadable_for = staleness.outages.mark(cluster, !is_ready || broken, at);
        let state = if !is_ready {
            Err(format!("cluster {cluster} is not ready: {not_ready}"))
        } else {
            match &cache {
                None => Err(Unreadable::Listing.message(cluster)),
                Some(cache) => objects(cluster, &stores, cache, namespace, name),
            }
        };
        let readable = state.is_ok();
        members.push(ClustersetMember {
            cluster: cluster.to_string(),
            cluster_property: stores.cluster_property(),
            state: match state {
                Ok(objects) => ClustersetMemberState::Readable(objects),
                Err(why) => ClustersetMemberState::Unreadable(why),
            },
            unreadable_ms: u64::try_from(unreadable_for.as_millis()).unwrap_or(u64::MAX),
        });
        snapshot.members.push(Read {
            cluster: cluster.to_string(),
            stores,
            cache,
            readable,
        });
    }
    let read = ClustersetRead {
        namespace: namespace.to_string(),
        name: name.to_string(),
        now,
        members,
        stale_timeout_ms: staleness
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
    };
    (read, snapshot)
}

/// What a member holds for `namespace/name`, or why it cannot be read.
fn objects(
    cluster: &str,
    stores: &Stores,
    cache: &cache::Member,
    namespace: &str,
    name: &str,
) -> Result<ClustersetObjects, String> {
    if let Some(why) = stores.unreadable().or_else(|| cache.unreadable()) {
        return Err(why.message(cluster));
    }
    let derived = derived_name(namespace, name);
    let filling = |group: &str| Unreadable::filling(namespace, group).message(cluster);
    let service = cache
        .services
        .filled_get(namespace, name)
        .ok_or_else(|| filling(name))?;
    let derived_service = cache
        .services
        .filled_get(namespace, &derived)
        .ok_or_else(|| filling(&derived))?;
    let slices = cache
        .slices
        .filled_group(namespace, name)
        .ok_or_else(|| filling(name))?;
    let imported = cache
        .slices
        .filled_group(namespace, &derived)
        .ok_or_else(|| filling(&derived))?;
    let json = |object: Option<Arc<DynamicObject>>| -> Result<Option<String>, String> {
        object
            .map(|o| {
                serde_json::to_string(&*o)
                    .map_err(|e| format!("cluster {cluster}: {} does not encode: {e}", o.name()))
            })
            .transpose()
    };
    let service_json = |s: Option<Arc<KeptService>>| s.map(|s| s.json().to_string());
    let imported_slices = imported
        .iter()
        .filter(|s| s.label(MCS_SERVICE_NAME_LABEL) == Some(name))
        .map(|s| ImportedSlice {
            slice: wit_slice(s),
            uid: s.uid().unwrap_or_default().to_string(),
            resource_version: s.resource_version().unwrap_or_default().to_string(),
        })
        .collect();
    Ok(ClustersetObjects {
        service_export: json(stores.exports.get(namespace, name))?,
        service: service_json(service),
        slices: slices.iter().map(|s| wit_slice(s)).collect(),
        service_import: json(stores.imports.get(namespace, name))?,
        derived_service: service_json(derived_service),
        imported_slices,
    })
}

fn wit_slice(slice: &KeptSlice) -> crate::engine::types::EndpointSlice {
    convert::slice_to_wit(&slice.to_slice())
}
