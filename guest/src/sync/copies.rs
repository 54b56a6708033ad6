//! The copies step of a pass (docs/sync.md#dispatch-and-prune): which copies each ready member
//! must hold, which of them it does not hold yet, and which of its copies are stale.

use std::cell::Cell;
use std::collections::BTreeMap;

use super::{Decision, Failures, member, ready};
use crate::filter;
use crate::plan::{copied_from, is_stale};
use crate::slices::Slice;
use crate::{
    McsRef, MemberRead, MemberState, PassRead, ServicePort, SliceCopy, SliceWrite, SyncPlan,
    SyncSettings,
};

/// Which unreadable providers keep their copies (and their load balancer entries): all of
/// them without a stale timeout; with one, those unreadable for no longer than it.
pub fn kept(unreadable: &[&MemberRead], settings: &SyncSettings) -> Vec<String> {
    unreadable
        .iter()
        .filter(|m| {
            settings
                .stale_timeout_ms
                .is_none_or(|timeout| m.unreadable_ms <= timeout)
        })
        .map(|m| m.cluster.clone())
        .collect()
}

/// One readable provider's slices, and the copies every other member must hold of them (a copy
/// is the same whichever member holds it), made once for every consumer.
struct Provided<'a> {
    cluster: &'a str,
    slices: Vec<Slice<'a>>,
    /// The copies, `source` naming the slice in `slices`.
    copies: Vec<SliceCopy>,
    /// The hash of each copy's name ([`Held`]).
    hashes: Vec<u64>,
    /// For each copy, a body a member was found to hold it with, as it must be: a member
    /// holding a copy with that very body (each distinct body crosses the boundary once) holds
    /// it as it must without comparing again.
    held_as: Vec<Cell<Option<u32>>>,
}

impl<'a> Provided<'a> {
    fn new(
        cluster: &'a str,
        slices: Vec<Slice<'a>>,
        bodies: &mut Bodies<'a>,
        ports: Option<&[ServicePort]>,
    ) -> Self {
        let mcs = bodies.mcs;
        // Only the sources are summarised; their copies then name them by their index here.
        let mut sources = Vec::new();
        let mut summaries = Vec::new();
        for (i, s) in slices.iter().enumerate() {
            if bodies.is_source(s) {
                sources.push(i as u32);
                summaries.push(filter::summary(s));
            }
        }
        let mut copies = filter::copies_from(mcs, ports, cluster, &summaries);
        for copy in &mut copies {
            copy.source = sources[copy.source as usize];
        }
        Provided {
            cluster,
            slices,
            held_as: vec![Cell::new(None); copies.len()],
            hashes: copies.iter().map(|c| name_hash(&c.name)).collect(),
            copies,
        }
    }

    /// Whether a member holding `held` holds copy `k` as it must; marks the slices of its name
    /// in `desired`.
    fn held_by(&self, k: usize, held: &Held<'_>, desired: &mut [bool]) -> bool {
        let copy = &self.copies[k];
        let source = &self.slices[copy.source as usize];
        let known = self.held_as[k].get();
        let mut found = false;
        for i in held.named(&copy.name, self.hashes[k]) {
            desired[i] = true;
            let h = &held.slices[i];
            if !found && (Some(h.body_index) == known || holds_copy(h, copy, source)) {
                self.held_as[k].set(Some(h.body_index));
                found = true;
            }
        }
        found
    }
}

/// The slices a member holds, looked up by name. Names are found by their hash first: the
/// names of one MCS's slices and copies share long prefixes, which sorting and searching by
/// name would compare again and again.
struct Held<'a> {
    slices: Vec<Slice<'a>>,
    /// The hash of each slice's name and its index in `slices`, sorted.
    by_hash: Vec<(u64, usize)>,
}

impl<'a> Held<'a> {
    fn new(slices: Vec<Slice<'a>>) -> Self {
        let mut by_hash: Vec<(u64, usize)> = slices
            .iter()
            .enumerate()
            .map(|(i, s)| (name_hash(s.name), i))
            .collect();
        by_hash.sort_unstable();
        Held { slices, by_hash }
    }

    /// The indices of the slices named `name`, whose [`name_hash`] is `hash`.
    fn named<'b>(&'b self, name: &'b str, hash: u64) -> impl Iterator<Item = usize> + 'b {
        let first = self.by_hash.partition_point(|&(h, _)| h < hash);
        self.by_hash[first..]
            .iter()
            .take_while(move |&&(h, _)| h == hash)
            .map(|&(_, i)| i)
            .filter(move |&i| self.slices[i].name == name)
    }
}

fn name_hash(name: &str) -> u64 {
    filter::fnv1a64(name.as_bytes())
}

/// What the rules say of each distinct body of the pass, found once for all the slices that
/// have it: whether a slice with it is a source ([`filter::is_source_slice`]), and whether it
/// is one of our copies and from which provider ([`copied_from`]).
struct Bodies<'a> {
    mcs: &'a McsRef,
    source: Vec<Option<bool>>,
    ours: Vec<Option<Option<&'a str>>>,
}

impl<'a> Bodies<'a> {
    fn new(mcs: &'a McsRef, pass: &PassRead) -> Self {
        let count = pass.slice_bodies.len();
        Bodies {
            mcs,
            source: vec![None; count],
            ours: vec![None; count],
        }
    }

    /// Whether `slice` is one the filter copies.
    fn is_source(&mut self, slice: &Slice<'a>) -> bool {
        let (mcs, body) = (self.mcs, slice.body);
        *self.source[slice.body_index as usize]
            .get_or_insert_with(|| filter::is_source_slice(body.namespace, body.labels, mcs))
    }

    /// The provider `slice` was copied from, when it is one of our copies.
    fn copied_from(&mut self, slice: &Slice<'a>) -> Option<&'a str> {
        let (mcs, body) = (self.mcs, slice.body);
        *self.ours[slice.body_index as usize]
            .get_or_insert_with(|| copied_from(mcs, body.namespace, body.labels, body.annotations))
    }
}

/// The copies step: collect the providers' slices, then in every ready member write the
/// copies it must hold and not yet holds (when it is a consumer), and delete the stale ones.
pub(super) fn copies<'a>(
    plan: &SyncPlan,
    pass: &'a PassRead,
    read: &[Option<Vec<Slice<'a>>>],
    ports: Option<&[ServicePort]>,
    settings: &SyncSettings,
    decision: &mut Decision,
) {
    let providers: Vec<usize> = plan
        .providers
        .iter()
        .filter_map(|p| pass.members.iter().position(|m| m.cluster == *p))
        .collect();
    let mut unreadable = Vec::new();
    for &i in &providers {
        let m = &pass.members[i];
        if let MemberState::NotReady(why) = &m.state {
            Failures::Dispatch.push(decision, why.clone());
            unreadable.push(m);
        }
    }
    let mut bodies = Bodies::new(&plan.mcs, pass);
    let mut provided = Vec::new();
    for &i in &providers {
        let m = &pass.members[i];
        match ready(m).map(|o| &o.slices) {
            Some(Ok(_)) => {
                let slices = read[i].clone().unwrap_or_default();
                provided.push(Provided::new(&m.cluster, slices, &mut bodies, ports));
            }
            Some(Err(failure)) => {
                Failures::list(decision, "Provider", &m.cluster, failure);
                unreadable.push(m);
            }
            None => {}
        }
    }
    let kept = kept(&unreadable, settings);
    for consumer in &plan.consumers {
        // Skipped this pass; caught up when it is ready again.
        if let Some(MemberState::NotReady(why)) = member(pass, consumer).map(|m| &m.state)
            && !plan.providers.contains(consumer)
        {
            Failures::Dispatch.push(decision, why.clone());
        }
    }
    for (m, slices) in pass.members.iter().zip(read) {
        let Some(objects) = ready(m) else { continue };
        let is_consumer = plan.consumers.contains(&m.cluster);
        let held = match &objects.slices {
            Ok(_) => slices.clone().unwrap_or_default(),
            // A provider's failed list is reported once, above.
            Err(_) if plan.providers.contains(&m.cluster) => continue,
            Err(failure) => {
                let role = if is_consumer { "Consumer" } else { "Provider" };
                Failures::list(decision, role, &m.cluster, failure);
                continue;
            }
        };
        let held = Held::new(held);
        // Which held slices have the name of a copy the member must hold.
        let mut desired = vec![false; held.slices.len()];
        // A member that is no longer a consumer keeps nothing, whoever could be read; a
        // consumer keeps the copies of the providers that could not be read.
        let sources: &[String] = if is_consumer { &kept } else { &[] };
        if is_consumer {
            for p in provided.iter().filter(|p| p.cluster != m.cluster) {
                for k in 0..p.copies.len() {
                    // A copy already held as it must be is not written again (a resync then
                    // writes nothing).
                    if !p.held_by(k, &held, &mut desired) {
                        decision.copies.push(SliceWrite {
                            cluster: m.cluster.clone(),
                            source_cluster: p.cluster.to_string(),
                            copy: p.copies[k].clone(),
                        });
                    }
                }
            }
        }
        let stale = held
            .slices
            .iter()
            .zip(desired)
            .filter(|(s, desired)| {
                bodies
                    .copied_from(s)
                    .is_some_and(|source| is_stale(source, *desired, sources))
            })
            .map(|(s, _)| s.name.to_string())
            .collect();
        decision.delete(&m.cluster, stale);
    }
}

/// Whether `held`, as read from a cluster, is the copy `copy` describes of `source` as it reads
/// back once written: the same name, namespace, labels, annotations, kept ports and content
/// (address type and endpoints, compared as the host's text). Labels and annotations compare
/// as maps, in any order. The name and namespace are compared first, so a scan of what a
/// member holds costs little.
pub fn holds_copy(held: &Slice<'_>, copy: &SliceCopy, source: &Slice<'_>) -> bool {
    if held.name != copy.name || held.body.namespace != source.body.namespace {
        return false;
    }
    let ports = copy
        .ports
        .iter()
        .filter_map(|&i| source.body.ports.get(i as usize));
    held.body.content == source.body.content
        && held.body.ports.iter().eq(ports)
        && same_map(held.body.labels, &copy.labels)
        && same_map(held.body.annotations, &copy.annotations)
}

/// Whether two maps given as key/value pairs are the same map (the last value of a key wins,
/// as in the object a cluster stores).
fn same_map(a: &[(String, String)], b: &[(String, String)]) -> bool {
    a == b || as_map(a) == as_map(b)
}

fn as_map(pairs: &[(String, String)]) -> BTreeMap<&str, &str> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
