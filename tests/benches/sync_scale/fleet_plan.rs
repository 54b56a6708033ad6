//! Phase `fleet`'s workload: MultiClusterServices with a few providers and a few consumers
//! each, spread over every member, and the upstream API's ServiceExports beside them.

use super::*;

/// Every `NO_CRDS_EVERY`th member (the 5th, the 10th, ...) serves no upstream CRDs.
pub(crate) const NO_CRDS_EVERY: usize = 5;

/// One MultiClusterService: its providers (one native slice `<name>-a` each) and consumers,
/// member indices, disjoint.
pub(crate) struct SpreadMcs {
    pub(crate) name: String,
    pub(crate) providers: Vec<usize>,
    pub(crate) consumers: Vec<usize>,
}

/// One ServiceExport: its Service, with one native slice `<name>-a` of one address, in
/// `exporter`.
pub(crate) struct Export {
    pub(crate) name: String,
    pub(crate) exporter: usize,
    pub(crate) address: String,
}

/// What a fleet run holds.
pub(crate) struct Plan {
    pub(crate) mcs: Vec<SpreadMcs>,
    pub(crate) exports: Vec<Export>,
    /// Per member: whether it serves the upstream API's CRDs.
    pub(crate) crds: Vec<bool>,
}

impl Plan {
    /// `mcs` MCSs over `members` members (at least 2), MCS `i` with 2 + i mod 2 providers and
    /// 3 + i mod 3 consumers (fewer in a fleet too small for them), consecutive members from
    /// member `3i mod members`; `exports` exports spread evenly over the members that serve the
    /// CRDs.
    pub(crate) fn new(members: usize, mcs: usize, exports: usize) -> Plan {
        assert!(members >= 2, "phase fleet needs at least 2 members");
        let crds: Vec<bool> = (0..members).map(|m| (m + 1) % NO_CRDS_EVERY != 0).collect();
        let mcs = (0..mcs)
            .map(|i| {
                let providers = (2 + i % 2).min(members / 2);
                let consumers = (3 + i % 3).min(members - providers);
                let start = i * 3 % members;
                let at = |k: usize| (start + k) % members;
                SpreadMcs {
                    name: format!("fl-{i:04}"),
                    providers: (0..providers).map(at).collect(),
                    consumers: (providers..providers + consumers).map(at).collect(),
                }
            })
            .collect();
        let serving: Vec<usize> = (0..members).filter(|m| crds[*m]).collect();
        let exports = (0..exports)
            .map(|j| Export {
                name: format!("exp-{j:02}"),
                exporter: serving[j * serving.len() / exports.max(1) % serving.len()],
                address: address(3_000_000 + j),
            })
            .collect();
        Plan { mcs, exports, crds }
    }

    /// The address of provider `k`'s slice of MCS `i`.
    pub(crate) fn provider_address(i: usize, k: usize) -> String {
        address(i * 8 + k)
    }

    /// Members that serve the CRDs.
    pub(crate) fn serving(&self) -> usize {
        self.crds.iter().filter(|c| **c).count()
    }

    /// Per member, the copies it must hold: one per provider of each MCS it consumes.
    pub(crate) fn expected_copies(&self, fleet: &Fleet) -> Vec<HashSet<String>> {
        let mut missing = vec![HashSet::new(); fleet.members.len()];
        for m in &self.mcs {
            for &p in &m.providers {
                let copy = copy_name(fleet, p, &format!("{}-a", m.name));
                for &c in &m.consumers {
                    missing[c].insert(copy.clone());
                }
            }
        }
        missing
    }

    /// `(member, address)` of every imported slice: every export in every member serving the
    /// CRDs, the exporters too.
    pub(crate) fn expected_imports(&self) -> HashSet<(usize, String)> {
        let serving = (0..self.crds.len()).filter(|m| self.crds[*m]);
        serving
            .flat_map(|m| self.exports.iter().map(move |e| (m, e.address.clone())))
            .collect()
    }

    /// `(URL, collection path, body)` of everything to preload: per MCS its hub Service, the
    /// MCS and each provider's native slice; per export its Service, native slice and
    /// ServiceExport in the exporter.
    pub(crate) fn requests(&self, fleet: &Fleet, ns: &str) -> Vec<(String, String, Value)> {
        let ports = json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
        let names = |members: &[usize]| -> Vec<Value> {
            let name = |m: &usize| json!({"name": fleet.members[*m].0});
            members.iter().map(name).collect()
        };
        let mut requests = Vec::new();
        for (i, m) in self.mcs.iter().enumerate() {
            let at = ObjectRef::new(ns, &m.name);
            let spec = json!({"providerClusters": names(&m.providers),
                "consumerClusters": names(&m.consumers)});
            let hub = fleet.hub.clone();
            requests.push((
                hub.clone(),
                services_path(ns),
                service_of(&at, ports.clone()),
            ));
            requests.push((hub, mcs_path(ns), mcs_of(&at, spec)));
            for (k, &p) in m.providers.iter().enumerate() {
                let slice =
                    native_slice_of(&at, &format!("{}-a", m.name), &Plan::provider_address(i, k));
                requests.push((fleet.member_url(p).to_string(), slices_path(ns), slice));
            }
        }
        let exports = format!("/apis/multicluster.x-k8s.io/v1beta1/namespaces/{ns}/serviceexports");
        for e in &self.exports {
            let at = ObjectRef::new(ns, &e.name);
            let url = fleet.member_url(e.exporter).to_string();
            let slice = native_slice_of(&at, &format!("{}-a", e.name), &e.address);
            let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1",
                "kind": "ServiceExport", "metadata": {"name": e.name, "namespace": ns}});
            requests.push((
                url.clone(),
                services_path(ns),
                service_of(&at, ports.clone()),
            ));
            requests.push((url.clone(), slices_path(ns), slice));
            requests.push((url, exports.clone(), export));
        }
        requests
    }
}
