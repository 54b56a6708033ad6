//! The *read* step of a pass: everything one pass over one MultiClusterService reads, in the
//! shape the component's `decide` takes — the MCS, the hub's Service template, and in every
//! ready member its EndpointSlices of the Service and its Service — with what the controller
//! remembers of the MCS (how long each member has been unreadable, the providers' last load
//! balancer entries). Everything comes from the caches ([`crate::controller::cache`]): no request is made.
//! A member whose caches are not synced is handed to the component as a failed read, with the
//! message it reports; nothing here decides.

use crate::fast_map::FastMap;
use std::sync::Arc;
use std::time::Instant;

use kube::api::DynamicObject;

use crate::controller::Context;
use crate::controller::cache::{self, Cached, Health, KeptService, KeptSlice};
use crate::controller::pass::read::{ReadError, mcs_json};
use crate::engine::PassSlices;
use crate::engine::types::{MemberObjects, MemberRead, MemberState, PassRead, ReadFailure};

/// The objects a pass read, for carrying out its answer.
#[derive(Default)]
pub struct Snapshot {
    /// The hub's Service, when there is one (the Service step decides again from it after a
    /// 409).
    pub template: Option<Arc<KeptService>>,
    /// Each member's Service as read (a recreate deletes only that object: uid and
    /// resourceVersion preconditions).
    pub services: FastMap<String, Arc<KeptService>>,
    /// Each slice read, by member and name (a deletion carries its uid and resourceVersion;
    /// an apply that leaves the resourceVersion unchanged wrote nothing).
    pub slices: FastMap<(String, String), Arc<KeptSlice>>,
    /// The slices as they went into `decide`, which the copies it asks for are made from.
    pub pass: PassSlices<Arc<KeptSlice>>,
}

impl Snapshot {
    /// The slice `name` of `member` as read.
    pub fn slice(&self, member: &str, name: &str) -> Option<&Arc<KeptSlice>> {
        self.slices.get(&(member.to_string(), name.to_string()))
    }
}

/// Reads everything one pass over `mcs` needs from the caches: the component's input, and
/// what carrying out its answer needs. `uid` keys what the controller remembers of the MCS;
/// `ready` are the members ready now.
pub fn read(
    ctx: &Context,
    mcs: &DynamicObject,
    uid: &str,
    ready: &[String],
) -> Result<(PassRead, Snapshot), ReadError> {
    let json = mcs_json(mcs)?;
    let ns = mcs.metadata.namespace.as_deref().unwrap_or_default();
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let mut snapshot = Snapshot::default();
    let template = read_template(&ctx.caches.hub, ns, name, &ctx.registry.hub.name);
    let template = template.map(|t| {
        snapshot.template = t.clone();
        t.map(|t| t.json().to_string())
    });
    let members = &ctx.registry.members;
    let states: Vec<MemberState> = members
        .iter()
        .map(|m| {
            if !ready.contains(&m.name) {
                let err = ReadError::NotReady {
                    cluster: m.name.clone(),
                    why: ctx.not_ready,
                };
                return MemberState::NotReady(crate::clusters::api_error::chain(&err));
            }
            let objects = match ctx.caches.member(&m.name) {
                Some(cache) => snapshot.objects(&m.name, &cache, ns, name),
                None => unreadable(&m.name, &cache::Unreadable::Listing),
            };
            MemberState::Ready(objects)
        })
        .collect();
    let unreadable: Vec<&str> = members
        .iter()
        .zip(&states)
        .filter(|(_, state)| !readable(state))
        .map(|(m, _)| m.name.as_str())
        .collect();
    let mut memory = ctx
        .remembered
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let remembered = memory.entry(uid.to_string()).or_default();
    let last_ingress: Vec<_> = members
        .iter()
        .map(|m| remembered.ingress(&m.name))
        .collect();
    let now = Instant::now();
    remembered.mark_unreadable(&unreadable, now);
    let members = members
        .iter()
        .zip(states)
        .zip(last_ingress)
        .map(|((m, state), last_ingress)| MemberRead {
            cluster: m.name.clone(),
            state,
            unreadable_ms: u64::try_from(remembered.unreadable_for(&m.name, now).as_millis())
                .unwrap_or(u64::MAX),
            last_ingress,
        })
        .collect();
    let pass = PassRead {
        mcs: json,
        members,
        template,
        slice_bodies: snapshot.pass.bodies().to_vec(),
        slice_maps: snapshot.pass.maps().to_vec(),
        slice_ports: snapshot.pass.ports().to_vec(),
        unsynced: ctx.registry.unsynced.clone(),
    };
    Ok((pass, snapshot))
}

/// The hub's Service `ns/name` (`None`: the hub has none), or why the hub's Services cannot
/// be read now.
fn read_template(
    hub: &cache::Hub,
    ns: &str,
    name: &str,
    hub_name: &str,
) -> Result<Option<Arc<KeptService>>, String> {
    match hub.services.health() {
        Health::Synced => Ok(hub.services.get(ns, name)),
        Health::Listing => Err(format!(
            "reading service {ns}/{name} from the hub: the hub's services are not listed yet"
        )),
        Health::Broken(failure) => Err(format!(
            "reading service {ns}/{name} from the hub {hub_name}: {} (retrying)",
            failure.message
        )),
    }
}

/// Whether every read of a member succeeded.
fn readable(state: &MemberState) -> bool {
    matches!(state, MemberState::Ready(o) if o.slices.is_ok() && o.service.is_ok())
}

/// A ready member whose caches cannot be read, as the component takes it: both reads failed.
fn unreadable(cluster: &str, why: &cache::Unreadable) -> MemberObjects {
    let failure = || ReadFailure {
        message: why.message(cluster),
        not_served: why.not_served(),
    };
    MemberObjects {
        slices: Err(failure()),
        service: Err(ReadFailure {
            not_served: false,
            ..failure()
        }),
    }
}

impl Snapshot {
    /// A ready member's objects of the Service `ns/name`, from its caches.
    fn objects(
        &mut self,
        member: &str,
        cache: &cache::Member,
        ns: &str,
        name: &str,
    ) -> MemberObjects {
        if let Some(why) = cache.unreadable() {
            return unreadable(member, &why);
        }
        // Each store's group is checked and read at once: a group an MCS named since the
        // member listed is read only once its own list is merged (cache::scope).
        let (Some(slices), Some(service)) = (
            cache.slices.filled_group(ns, name),
            cache.services.filled_get(ns, name),
        ) else {
            return unreadable(member, &cache::Unreadable::filling(ns, name));
        };
        let wit = self
            .pass
            .add(member, slices.iter().map(|s| (s.clone(), s.facts())));
        for slice in slices {
            let key = (member.to_string(), slice.name().to_string());
            self.slices.insert(key, slice);
        }
        let json = service.as_ref().map(|s| s.json().to_string());
        if let Some(service) = service {
            self.services.insert(member.to_string(), service);
        }
        MemberObjects {
            slices: Ok(wit),
            service: Ok(json),
        }
    }
}
