//! What the sync rules read of an EndpointSlice, in either shape one arrives in: whole
//! (`EndpointSlice`: WIT `prune`, and `filter` for native callers) or as `decide` reads it (a
//! name in a member's `MemberSlices` and a `SliceBody`, whose address type and endpoints are
//! one opaque text).

use crate::{EndpointPort, EndpointSlice, MemberSlices, MemberState, PassRead};

/// An EndpointSlice's metadata and ports.
pub trait SliceMeta {
    /// `metadata.name`.
    fn name(&self) -> &str;
    /// `metadata.namespace`.
    fn namespace(&self) -> &str;
    /// `metadata.labels`, as key/value pairs.
    fn labels(&self) -> &[(String, String)];
    /// `metadata.annotations`, as key/value pairs.
    fn annotations(&self) -> &[(String, String)];
    /// `ports`.
    fn ports(&self) -> &[EndpointPort];
}

impl SliceMeta for EndpointSlice {
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn labels(&self) -> &[(String, String)] {
        &self.labels
    }
    fn annotations(&self) -> &[(String, String)] {
        &self.annotations
    }
    fn ports(&self) -> &[EndpointPort] {
        &self.ports
    }
}

/// A slice body of a `decide` pass, its labels, annotations and ports looked up.
#[derive(Clone, Copy, Debug)]
pub struct Body<'a> {
    pub namespace: &'a str,
    pub labels: &'a [(String, String)],
    pub annotations: &'a [(String, String)],
    pub ports: &'a [EndpointPort],
    pub content: &'a str,
}

/// A slice of a `decide` pass: its name and its body, and the body's index in the pass.
#[derive(Clone, Copy, Debug)]
pub struct Slice<'a> {
    pub name: &'a str,
    pub body_index: u32,
    pub body: Body<'a>,
}

impl SliceMeta for Slice<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn namespace(&self) -> &str {
        self.body.namespace
    }
    fn labels(&self) -> &[(String, String)] {
        self.body.labels
    }
    fn annotations(&self) -> &[(String, String)] {
        self.body.annotations
    }
    fn ports(&self) -> &[EndpointPort] {
        self.body.ports
    }
}

/// The bodies of the pass with their maps and ports, or why one does not add up.
pub fn bodies(pass: &PassRead) -> Result<Vec<Body<'_>>, String> {
    pass.slice_bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let broken = |what: &str, index: u32, count: usize| {
                format!("slice body {i} does not add up: {what} {index} of {count}")
            };
            let map = |index: u32, what: &str| {
                pass.slice_maps
                    .get(index as usize)
                    .map(Vec::as_slice)
                    .ok_or_else(|| broken(what, index, pass.slice_maps.len()))
            };
            Ok(Body {
                namespace: &b.namespace,
                labels: map(b.labels, "labels")?,
                annotations: map(b.annotations, "annotations")?,
                ports: pass
                    .slice_ports
                    .get(b.ports as usize)
                    .map(Vec::as_slice)
                    .ok_or_else(|| broken("ports", b.ports, pass.slice_ports.len()))?,
                content: &b.content,
            })
        })
        .collect()
}

/// The slices of `member`, whose bodies are `bodies` ([`bodies`]), or why its `member-slices`
/// do not add up.
pub fn slices_of<'a>(
    bodies: &[Body<'a>],
    cluster: &str,
    member: &'a MemberSlices,
) -> Result<Vec<Slice<'a>>, String> {
    let broken = |why: String| format!("the slices of cluster {cluster} do not add up: {why}");
    if member.name_lengths.len() != member.bodies.len() {
        let (names, bodies) = (member.name_lengths.len(), member.bodies.len());
        return Err(broken(format!("{names} names, {bodies} bodies")));
    }
    let mut slices = Vec::with_capacity(member.bodies.len());
    let mut start = 0usize;
    for (&length, &body_index) in member.name_lengths.iter().zip(&member.bodies) {
        let end = start.saturating_add(length as usize);
        let name = member.names.get(start..end).ok_or_else(|| {
            broken(format!(
                "no name of {length} bytes at byte {start} of {}",
                member.names.len()
            ))
        })?;
        let body = *bodies.get(body_index as usize).ok_or_else(|| {
            let count = bodies.len();
            broken(format!("slice {name} names body {body_index} of {count}"))
        })?;
        slices.push(Slice {
            name,
            body_index,
            body,
        });
        start = end;
    }
    if start != member.names.len() {
        return Err(broken(format!(
            "{} bytes of names left over",
            member.names.len() - start
        )));
    }
    Ok(slices)
}

/// The slices of every ready member whose slices were read, by member (`None`: not ready, or
/// not read), or why some body or member's slices do not add up.
pub fn slices_by_member(pass: &PassRead) -> Result<Vec<Option<Vec<Slice<'_>>>>, String> {
    let bodies = bodies(pass)?;
    pass.members
        .iter()
        .map(|m| match &m.state {
            MemberState::Ready(objects) => match &objects.slices {
                Ok(member) => slices_of(&bodies, &m.cluster, member).map(Some),
                Err(_) => Ok(None),
            },
            MemberState::NotReady(_) => Ok(None),
        })
        .collect()
}
