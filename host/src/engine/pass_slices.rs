//! The Kubernetes EndpointSlices one `decide` call read, kept next to what it was given of them:
//! each member's `member-slices`, and the bodies, maps and port lists of the pass, each
//! distinct one once. `decide` answers copies as instructions naming a member and an index
//! among its slices, and the host makes each copy from the slice named
//! ([`convert::copy_slice`]).

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::convert::{self, SliceFacts};
use super::types::{EndpointPort, MemberSlices, SliceBody, SliceCopy, SliceWrite};
use crate::fast_map::FastMap;

/// A slice as a host holds it for a pass: the Kubernetes object, or what a controller's cache
/// keeps of one. It has a name, and makes the copies `decide` asks of it.
pub trait SliceSource {
    /// `metadata.name`.
    fn slice_name(&self) -> &str;
    /// The object to apply for `copy`, a copy of this slice ([`convert::copy_slice`]).
    fn copy_of(&self, copy: &SliceCopy) -> Result<EndpointSlice, String>;
}

impl SliceSource for EndpointSlice {
    fn slice_name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn copy_of(&self, copy: &SliceCopy) -> Result<EndpointSlice, String> {
        convert::copy_slice(copy, self)
    }
}

impl<T: SliceSource + ?Sized> SliceSource for Arc<T> {
    fn slice_name(&self) -> &str {
        (**self).slice_name()
    }

    fn copy_of(&self, copy: &SliceCopy) -> Result<EndpointSlice, String> {
        (**self).copy_of(copy)
    }
}

/// The EndpointSlices of a pass, by member, in the order they went into `decide`, and the
/// pass's tables. `S` is how the host holds a slice (the object, or a shared reference to a
/// cached one).
#[derive(Clone, Debug, PartialEq)]
pub struct PassSlices<S = EndpointSlice> {
    members: Vec<(String, Vec<S>)>,
    bodies: Table<SliceBody>,
    maps: Table<Vec<(String, String)>>,
    ports: Table<Vec<EndpointPort>>,
    /// The body index of each slice's facts seen so far.
    known: FastMap<SliceFacts, u32>,
}

impl<S> Default for PassSlices<S> {
    fn default() -> Self {
        PassSlices {
            members: Vec::new(),
            bodies: Table::default(),
            maps: Table::default(),
            ports: Table::default(),
            known: FastMap::default(),
        }
    }
}

impl<S: SliceSource> PassSlices<S> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `slices`, read in `cluster`, each with its facts ([`convert::slice_facts`], which
    /// a controller makes once for every slice it caches), and returns them as the member's
    /// `member-objects.slices`, in the same order.
    pub fn add<'b>(
        &mut self,
        cluster: &str,
        slices: impl IntoIterator<Item = (S, &'b SliceFacts)>,
    ) -> MemberSlices {
        let mut kept = Vec::new();
        let mut member = MemberSlices {
            names: String::new(),
            name_lengths: Vec::new(),
            bodies: Vec::new(),
        };
        for (slice, facts) in slices {
            let name = slice.slice_name();
            member.names.push_str(name);
            member
                .name_lengths
                .push(u32::try_from(name.len()).expect("a name shorter than 4 GiB"));
            member.bodies.push(self.body(facts));
            kept.push(slice);
        }
        self.members.push((cluster.to_string(), kept));
        member
    }

    /// The pass's `slice-bodies`.
    pub fn bodies(&self) -> &[SliceBody] {
        &self.bodies.items
    }

    /// The pass's `slice-maps`.
    pub fn maps(&self) -> &[Vec<(String, String)>] {
        &self.maps.items
    }

    /// The pass's `slice-ports`.
    pub fn ports(&self) -> &[Vec<EndpointPort>] {
        &self.ports.items
    }

    /// The index of the body of a slice with `facts`, added when new.
    fn body(&mut self, facts: &SliceFacts) -> u32 {
        if let Some(&i) = self.known.get(facts) {
            return i;
        }
        let body = SliceBody {
            namespace: facts.namespace.clone(),
            labels: self.maps.index(&facts.labels),
            annotations: self.maps.index(&facts.annotations),
            ports: self.ports.index(&facts.ports),
            content: facts.content.clone(),
        };
        let i = self.bodies.index(&body);
        self.known.insert(facts.clone(), i);
        i
    }

    /// Every member's slices, in the order they were added.
    pub fn members(&self) -> impl Iterator<Item = (&str, &[S])> {
        self.members
            .iter()
            .map(|(name, slices)| (name.as_str(), slices.as_slice()))
    }

    /// The slices kept of the first member named `cluster` (the one `decide` reads).
    pub fn member(&self, cluster: &str) -> Option<&[S]> {
        self.members
            .iter()
            .find(|(name, _)| name == cluster)
            .map(|(_, slices)| slices.as_slice())
    }

    /// The slice `write` copies: the one at `copy.source` of the first member named
    /// `source-cluster` (the member `decide` read it from).
    pub fn source(&self, write: &SliceWrite) -> Result<&S, String> {
        let cluster = &write.source_cluster;
        let slices = self.member(cluster).ok_or_else(|| {
            format!("the component copied a slice of {cluster}, which it was not given")
        })?;
        let index = write.copy.source;
        slices.get(index as usize).ok_or_else(|| {
            format!(
                "the component copied slice {index} of the {} of {cluster}",
                slices.len()
            )
        })
    }

    /// The object to apply for `write`.
    pub fn copy(&self, write: &SliceWrite) -> Result<EndpointSlice, String> {
        self.source(write)?.copy_of(&write.copy)
    }
}

impl<S: SliceSource + Borrow<EndpointSlice>> PassSlices<S> {
    /// [`PassSlices::add`], the facts made here.
    pub fn read(&mut self, cluster: &str, slices: Vec<S>) -> MemberSlices {
        let facts: Vec<SliceFacts> = slices
            .iter()
            .map(|s| convert::slice_facts(s.borrow()))
            .collect();
        self.add(cluster, slices.into_iter().zip(&facts))
    }
}

/// Distinct items, each with its index.
#[derive(Clone, Debug, PartialEq)]
struct Table<T: Eq + Hash> {
    items: Vec<T>,
    index: FastMap<T, u32>,
}

impl<T: Eq + Hash> Default for Table<T> {
    fn default() -> Self {
        Table {
            items: Vec::new(),
            index: FastMap::default(),
        }
    }
}

impl<T: Clone + Eq + Hash> Table<T> {
    /// The index of `item`, added when new.
    fn index(&mut self, item: &T) -> u32 {
        if let Some(&i) = self.index.get(item) {
            return i;
        }
        let i = u32::try_from(self.items.len()).expect("fewer than 2^32 items");
        self.items.push(item.clone());
        self.index.insert(item.clone(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::SliceCopy;

    fn slice(name: &str, ports: &[&str]) -> EndpointSlice {
        let ports: Vec<_> = ports
            .iter()
            .map(|p| serde_json::json!({"name": p, "port": 80}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                         "labels": {"kubernetes.io/service-name": "web"},
                         "annotations": {"note": "x"}},
            "addressType": "IPv6",
            "endpoints": [{"addresses": ["fd00::1"], "conditions": {}}],
            "ports": ports
        }))
        .unwrap()
    }

    fn write(source_cluster: &str, source: u32, ports: Vec<u32>) -> SliceWrite {
        SliceWrite {
            cluster: "m3".into(),
            source_cluster: source_cluster.into(),
            copy: SliceCopy {
                source,
                name: "m2-web-b".into(),
                labels: vec![("l".into(), "v".into())],
                annotations: vec![("a".into(), "m2".into())],
                ports,
            },
        }
    }

    #[test]
    fn a_copy_is_made_from_the_slice_it_names_with_the_ports_it_keeps() {
        let mut slices = PassSlices::new();
        let member = slices.read("m1", vec![slice("web-a", &["http"])]);
        assert_eq!(
            (
                member.names.as_str(),
                &member.name_lengths[..],
                &member.bodies[..]
            ),
            ("web-a", &[5][..], &[0][..])
        );
        let facts = convert::slice_facts(&slice("web-a", &["http"]));
        assert_eq!(
            slices.bodies(),
            [SliceBody {
                namespace: "shop".into(),
                labels: 0,
                annotations: 1,
                ports: 0,
                content: facts.content.clone(),
            }]
        );
        assert_eq!(slices.maps(), [facts.labels, facts.annotations]);
        assert_eq!(slices.ports(), [facts.ports]);
        let member = slices.read(
            "m2",
            vec![
                slice("web-x", &[]),
                slice("web-b", &["http", "metrics"]),
                slice("web-c", &["http"]),
            ],
        );
        assert_eq!(member.names, "web-xweb-bweb-c");
        assert_eq!(member.name_lengths, [5, 5, 5]);
        // web-c's body is web-a's: it is sent once; so are the maps and port lists.
        assert_eq!(member.bodies, [1, 2, 0]);
        assert_eq!(slices.bodies().len(), 3);
        assert_eq!(slices.maps().len(), 2);
        let ports: Vec<usize> = slices.ports().iter().map(Vec::len).collect();
        assert_eq!(ports, [1, 0, 2]);
        // A second member of the same name is not the one `decide` read the source from.
        slices.read("m2", vec![]);
        let copy = slices.copy(&write("m2", 1, vec![1])).unwrap();
        let json = serde_json::to_value(&copy).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "m2-web-b", "namespace": "shop",
                             "labels": {"l": "v"}, "annotations": {"a": "m2"}},
                "addressType": "IPv6",
                "endpoints": [{"addresses": ["fd00::1"]}],
                "ports": [{"name": "metrics", "port": 80}]
            })
        );
        // Read back, the copy has its source's content.
        let source = slices.source(&write("m2", 1, vec![])).unwrap();
        assert_eq!(convert::content(&copy), convert::content(source));
        assert!(slices.copy(&write("m9", 0, vec![])).is_err());
        assert!(slices.copy(&write("m2", 3, vec![])).is_err());
        assert!(slices.copy(&write("m2", 1, vec![2])).is_err());
    }
}
