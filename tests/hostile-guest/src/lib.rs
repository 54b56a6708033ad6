//! A policy component that misbehaves on demand, to prove the host survives it. It exports the
//! real `policy` world; what it does depends on the admission request's `uid`:
//! `loop` spins forever, `oom` allocates until memory runs out, `trap` panics (a trap), and
//! anything else is allowed with no patch.

wit_bindgen::generate!({
    world: "mcs-policy",
    path: "../../wit",
});

use exports::karmada::mcs_policy::policy::{
    AdmissionRequest, ClustersetDecision, ClustersetRead, Context, Denial, EndpointSlice, Guest,
    LoadBalancerIngress, LoadBalancerReport, McsRef, PassDecision, PassRead, PatchOperation,
    ProviderLoadBalancer, Reported, ServiceAction, ServicePort, Settings, SliceCopy, SliceSummary,
    StatusBasis, StatusNow, StatusUpdate, SyncPlan, SyncSettings, WriteFailures,
};

/// The exported component.
pub struct Hostile;

fn misbehave(uid: &str) {
    match uid {
        "loop" => loop {
            std::hint::spin_loop();
        },
        "oom" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "trap" => panic!("hostile component asked to trap"),
        _ => {}
    }
}

impl Guest for Hostile {
    fn validate(
        request: AdmissionRequest,
        _settings: Settings,
        _context: Context,
    ) -> Result<Vec<String>, Denial> {
        misbehave(&request.uid);
        Ok(Vec::new())
    }

    fn mutate(
        request: AdmissionRequest,
        _settings: Settings,
    ) -> Result<Vec<PatchOperation>, String> {
        misbehave(&request.uid);
        Ok(Vec::new())
    }

    fn filter(
        _mcs: McsRef,
        _service_ports: Option<Vec<ServicePort>>,
        source_cluster: String,
        _consumer_cluster: String,
        _slices: Vec<SliceSummary>,
    ) -> Vec<SliceCopy> {
        misbehave(&source_cluster);
        Vec::new()
    }

    fn plan(mcs: String, _registered_clusters: Vec<String>) -> Result<SyncPlan, String> {
        misbehave(&mcs);
        Err("the hostile component plans nothing".to_string())
    }

    fn prune(
        mcs: McsRef,
        _existing: Vec<EndpointSlice>,
        _desired: Vec<String>,
        _kept_sources: Vec<String>,
    ) -> Vec<String> {
        misbehave(&mcs.name);
        Vec::new()
    }

    fn service(template: String, _existing: Option<String>) -> Result<ServiceAction, String> {
        misbehave(&template);
        Ok(ServiceAction::Unchanged)
    }

    fn load_balancer_status(
        providers: Vec<ProviderLoadBalancer>,
        _current: Vec<LoadBalancerIngress>,
    ) -> LoadBalancerReport {
        misbehave(providers.first().map_or("", |p| p.cluster.as_str()));
        LoadBalancerReport {
            ingress: Vec::new(),
            changed: false,
            complete: false,
            reason: String::new(),
            message: String::new(),
        }
    }

    fn decide(pass: PassRead, _settings: SyncSettings) -> Result<PassDecision, String> {
        misbehave(&pass.mcs);
        Err("the hostile component decides nothing".to_string())
    }

    fn conclude(
        basis: StatusBasis,
        _failures: WriteFailures,
        current: StatusNow,
        reported: Option<Reported>,
    ) -> StatusUpdate {
        misbehave(basis.invalid.as_deref().unwrap_or(""));
        StatusUpdate {
            conditions: Some(current.conditions),
            events: Vec::new(),
            reported: reported.unwrap_or(Reported {
                unknown: Vec::new(),
                incompatible: Vec::new(),
                unsynced: Vec::new(),
                service_applied: None,
                dispatched: None,
                load_balancer: None,
            }),
            retry: true,
        }
    }

    fn clusterset_decide(read: ClustersetRead) -> Result<ClustersetDecision, String> {
        misbehave(&read.name);
        Err("the hostile component decides nothing".to_string())
    }

    fn clusterset_derived_name(namespace: String, name: String) -> String {
        misbehave(&name);
        format!("derived-{namespace}")
    }

    fn cluster_name_problem(name: String) -> Option<String> {
        misbehave(&name);
        None
    }
}

#[cfg(target_arch = "wasm32")]
export!(Hostile);
