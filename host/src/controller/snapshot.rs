//! The *read* step of a pass: everything one pass over one MultiClusterService reads, at once,
//! in the shape the component's `decide` takes — the MCS, the hub's Service template, and in
//! every ready member its EndpointSlices of the Service and its Service; with what the
//! controller remembers of the MCS (how long each member has been unreadable, the providers'
//! last load balancer entries). A failed read is a fact handed to the component, which decides
//! what it means; nothing here decides.

use std::collections::HashMap;
use std::time::Instant;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DynamicObject;

use super::Context;
use super::read::{ReadError, list_slice_objects, mcs_json};
use super::report::Failure;
use super::service::{read_member, read_template};
use crate::clusters::Cluster;
use crate::clusters::api_error::Kind;
use crate::engine::types::{MemberObjects, MemberRead, MemberState, PassRead, ReadFailure};
use crate::engine::{PassSlices, convert};

/// What a pass read beyond the component's input, for carrying out its answer.
pub struct Snapshot {
    /// The hub's Service, when it was read (the Service step decides again from it after a
    /// 409).
    pub template: Option<Service>,
    /// The uid of each member's Service (a recreate deletes only the object that was read).
    pub service_uids: HashMap<String, Option<String>>,
    /// The resourceVersion of each slice read, by member and name (an apply that leaves it
    /// unchanged wrote nothing).
    pub versions: HashMap<(String, String), Option<String>>,
    /// The slices read, which the copies `decide` asks for are made from.
    pub slices: PassSlices,
    /// What could not be read (for metrics; the messages are in `pass`).
    pub failures: Vec<Failure>,
}

/// One ready member's reads.
struct Read {
    slices: Result<Vec<EndpointSlice>, ReadError>,
    service: Result<Option<Service>, super::service::ServiceError>,
}

/// Reads everything one pass over `mcs` needs: the component's input, and what carrying out its
/// answer needs. `uid` keys what the controller remembers of the MCS.
pub async fn read(
    ctx: &Context,
    mcs: &DynamicObject,
    uid: &str,
    ready: &[String],
) -> Result<(PassRead, Snapshot), ReadError> {
    let json = mcs_json(mcs)?;
    let ns = mcs.metadata.namespace.as_deref().unwrap_or_default();
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let members = &ctx.registry.members;
    let hub = &ctx.registry.hub;
    let (template, reads) = futures::join!(
        read_template(&hub.client, ns, name),
        join_all(members.iter().map(|m| async move {
            if !ready.contains(&m.name) {
                return None;
            }
            // One after the other: at once, every pass would hold two connections per member
            // open, and a connection (buffers, TLS state) outweighs the wait.
            let slices = list_slice_objects(&m.client, &m.name, ns, name).await;
            let service = read_member(&m.client, &m.name, ns, name).await;
            Some(Read { slices, service })
        }))
    );
    let object = format!("{ns}/{name}");
    let mut snapshot = Snapshot {
        template: None,
        service_uids: HashMap::new(),
        versions: HashMap::new(),
        slices: PassSlices::new(),
        failures: Vec::new(),
    };
    let template = match template {
        Ok(Some(template)) => {
            let json = convert::service_to_json(&template).map_err(|e| e.to_string());
            snapshot.template = Some(template);
            json.map(Some)
        }
        Ok(None) => Ok(None),
        Err(err) => Err(snapshot.fail(&object, &hub.name, &err).message),
    };
    let states: Vec<MemberState> = members
        .iter()
        .zip(reads)
        .map(|(m, read)| match read {
            None => {
                let err = ReadError::NotReady {
                    cluster: m.name.clone(),
                    why: ctx.not_ready,
                };
                MemberState::NotReady(crate::clusters::api_error::chain(&err))
            }
            Some(read) => MemberState::Ready(snapshot.objects(&object, m, read)),
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
        slice_bodies: snapshot.slices.bodies().to_vec(),
        slice_maps: snapshot.slices.maps().to_vec(),
        slice_ports: snapshot.slices.ports().to_vec(),
    };
    Ok((pass, snapshot))
}

/// Whether every read of a member succeeded.
fn readable(state: &MemberState) -> bool {
    matches!(state, MemberState::Ready(o) if o.slices.is_ok() && o.service.is_ok())
}

impl Snapshot {
    /// A ready member's reads as the component takes them.
    fn objects(&mut self, object: &str, member: &Cluster, read: Read) -> MemberObjects {
        let slices = match read.slices {
            Ok(slices) => {
                for s in &slices {
                    let name = s.metadata.name.clone().unwrap_or_default();
                    let version = s.metadata.resource_version.clone();
                    self.versions.insert((member.name.clone(), name), version);
                }
                Ok(self.slices.read(&member.name, slices))
            }
            Err(err) => {
                let failure = self.fail(object, &member.name, &err);
                Err(ReadFailure {
                    not_served: failure.kind == Kind::NotFound,
                    message: failure.message,
                })
            }
        };
        let service = match read.service {
            Ok(service) => {
                let uid = service.as_ref().and_then(|s| s.metadata.uid.clone());
                self.service_uids.insert(member.name.clone(), uid);
                service
                    .as_ref()
                    .map(convert::service_to_json)
                    .transpose()
                    .map_err(|e| ReadFailure {
                        message: format!("service in cluster {} does not encode: {e}", member.name),
                        not_served: false,
                    })
            }
            Err(err) => {
                let failure = self.fail(object, &member.name, &err);
                Err(ReadFailure {
                    message: failure.message,
                    not_served: false,
                })
            }
        };
        MemberObjects { slices, service }
    }

    /// Records a read failure in `cluster`.
    fn fail(
        &mut self,
        object: &str,
        cluster: &str,
        err: &(dyn std::error::Error + 'static),
    ) -> Failure {
        let failure = Failure::logged(object, cluster, err);
        self.failures.push(failure.clone());
        failure
    }
}
