//! The policy engine: where the host hands a decision to the component (docs/architecture.md#shape).
//! `PolicyEngine` is the facade; no wasmtime type appears in its signatures. It is cheap to
//! clone and safe to share between threads; every call runs in a fresh, bounded instance.
//!
//! ```
//! use std::time::Duration;
//! use mcs_policy::engine::{EngineOptions, PolicyEngine, types};
//!
//! let engine = PolicyEngine::embedded(EngineOptions::default())?;
//! let request = types::AdmissionRequest {
//!     uid: "6f1c2b7e-0d4f-4a5e-9c1b-2a3d4e5f6a7b".into(),
//!     operation: types::Operation::Create,
//!     object: r#"{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService",
//!                 "metadata":{"name":"web","namespace":"shop"},"spec":{"types":["CrossCluster"]}}"#.into(),
//!     old_object: None,
//! };
//! let verdict = engine.validate(&request, &types::Settings::default(), &types::Context::default(),
//!                               Duration::from_secs(1))?;
//! assert_eq!(verdict, Ok(vec![]));
//! # Ok::<(), mcs_policy::engine::EngineError>(())
//! ```

mod args;
mod cache;
pub mod convert;
mod epoch;
mod error;
mod exports;
mod pass_slices;
mod runtime;
mod sync;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use args::EngineArgs;
pub use error::EngineError;
use exports::{Function, sig};
pub use pass_slices::{PassSlices, SliceSource};
use runtime::{Loaded, Runtime};

/// The budget of a component call run on an async worker (the webhook's small reviews, the
/// sync controller's calls); past it, the call starts over on a blocking thread with the rest
/// of its budget, which is safe because the component is pure and every call gets a fresh
/// instance. The epoch deadline rounds it up to whole ticks (5 ms each), plus the tick in
/// progress and any the ticker owes (`engine/epoch.rs`), so a worker is held 5-10 ms at most
/// unless the machine is so busy that the ticker itself runs late.
pub const INLINE_SLICE: std::time::Duration = std::time::Duration::from_millis(5);

/// The component built from `guest/` and embedded at build time.
pub const EMBEDDED_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/mcs_policy.wasm"));

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        world: "mcs-policy",
        path: "../wit",
        additional_derives: [PartialEq, Eq, Hash],
    });
}

/// The WIT records, as plain Rust structs (see `wit/policy.wit` for what each field means).
pub mod types {
    pub use super::bindings::exports::karmada::mcs_policy::policy::{
        AdmissionRequest, Context, Denial, Endpoint, EndpointConditions, EndpointHints,
        EndpointPort, EndpointSlice, ErrorType, ExposurePort, FieldError, LoadBalancerIngress,
        LoadBalancerReport, McsRef, ObjectReference, Operation, PatchOp, PatchOperation,
        PortStatus, ProviderIngress, ProviderLoadBalancer, Rejection, ServiceAction, ServicePort,
        Settings, SliceBody, SliceCopy, SliceSummary, SyncPlan,
    };
    pub use super::bindings::exports::karmada::mcs_policy::policy::{
        ClustersetDecision, ClustersetMember, ClustersetMemberDecision, ClustersetMemberState,
        ClustersetObjects, ClustersetRead, DeletePrecondition, ImportedSlice, ObjectWrite,
    };
    pub use super::bindings::exports::karmada::mcs_policy::policy::{
        EventNote, FinalizerChange, MemberObject, MemberObjects, MemberRead, MemberSlices,
        MemberState, PassDecision, PassRead, ReadFailure, RememberedIngress, Reported,
        ServiceWrite, SliceWrite, StatusBasis, StatusNow, StatusUpdate, SyncSettings,
        UnsyncedCluster, WriteFailures,
    };
}

use types::{
    AdmissionRequest, Context, Denial, EndpointSlice, McsRef, PatchOperation, ServicePort,
    Settings, SliceSummary,
};

/// All switches off: the `karmada-compatible` policy.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            reject_empty_types: false,
            reject_repeated_types: false,
            reject_duplicate_cluster_names: false,
            reject_unknown_port_names: false,
            warn_unregistered_clusters: false,
        }
    }
}

/// Nothing known about the environment.
impl Default for Context {
    fn default() -> Self {
        Context {
            registered_clusters: None,
            service_ports: None,
        }
    }
}

/// How the engine bounds each call.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Maximum linear memory of one instance. A call that needs more fails with
    /// `EngineError::MemoryLimit`.
    pub memory_limit_bytes: usize,
    /// How many instances may be live at once (sizes the pooling allocator).
    pub max_concurrency: u32,
    /// Granularity of time budgets: the epoch advances once per tick.
    pub epoch_tick: Duration,
    /// Where compiled components are cached; `None` compiles at every start.
    pub cache_dir: Option<PathBuf>,
    /// Bytes of each instance's linear memory kept mapped (and zeroed with memset) between
    /// instances instead of being returned to the kernel: trades a memset for page faults and
    /// `madvise` calls. The default covers the component's whole initial memory (1 MiB, see
    /// `.cargo/config.toml`); only pages a call actually wrote are reset or stay resident.
    pub keep_resident_bytes: usize,
    /// Compile the component on several threads. Faster to load (~0.2 s against ~0.4 s on two
    /// cores), but every compiling thread leaves its own heap behind: the commands (`serve`,
    /// `sync`, `eval`) compile on one thread, which keeps the server's peak RSS ~9 MiB lower
    /// (BENCHMARKS.md).
    pub parallel_compilation: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            memory_limit_bytes: 128 << 20,
            max_concurrency: 64,
            epoch_tick: Duration::from_millis(5),
            cache_dir: None,
            keep_resident_bytes: 1 << 20,
            parallel_compilation: true,
        }
    }
}

/// Runs the policy component. Clone it freely: clones share the compiled component.
#[derive(Clone)]
pub struct PolicyEngine {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: Runtime,
    loaded: RwLock<Arc<Loaded>>,
}

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine")
            .field("component", &self.digest())
            .finish()
    }
}

impl PolicyEngine {
    /// The engine with the component embedded in this binary.
    pub fn embedded(options: EngineOptions) -> Result<Self, EngineError> {
        Self::from_bytes(EMBEDDED_COMPONENT, "the embedded component", options)
    }

    /// The engine with the component in `path`.
    pub fn from_file(path: &Path, options: EngineOptions) -> Result<Self, EngineError> {
        let bytes = read(path)?;
        Self::from_bytes(&bytes, &path.display().to_string(), options)
    }

    /// The engine with a component given as bytes; `origin` names it in errors.
    pub fn from_bytes(
        bytes: &[u8],
        origin: &str,
        options: EngineOptions,
    ) -> Result<Self, EngineError> {
        let runtime = Runtime::new(options)?;
        let loaded = runtime.load(bytes, origin)?;
        Ok(PolicyEngine {
            inner: Arc::new(Inner {
                runtime,
                loaded: RwLock::new(Arc::new(loaded)),
            }),
        })
    }

    /// Replaces the component with the one in `path`. On error the current one stays in use.
    /// Calls already running finish on the component they started with.
    pub fn reload_from_file(&self, path: &Path) -> Result<String, EngineError> {
        let bytes = read(path)?;
        let loaded = self
            .inner
            .runtime
            .load(&bytes, &path.display().to_string())?;
        let digest = loaded.digest.clone();
        *self.inner.loaded.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(loaded);
        Ok(digest)
    }

    /// SHA-256 of the component in use.
    pub fn digest(&self) -> String {
        self.current().digest.clone()
    }

    fn current(&self) -> Arc<Loaded> {
        self.inner
            .loaded
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The validating decision (WIT `validate`), within `budget`.
    pub fn validate(
        &self,
        request: &AdmissionRequest,
        settings: &Settings,
        context: &Context,
        budget: Duration,
    ) -> Result<Result<Vec<String>, Denial>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Validate, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `validate`.
                let f = unsafe { callee.typed::<sig::Validate<'_>, sig::ValidateOut>() };
                f.call(store, (request, *settings, context)).map(|(r,)| r)
            })
    }

    /// The defaulting patch (WIT `mutate`), within `budget`.
    pub fn mutate(
        &self,
        request: &AdmissionRequest,
        settings: &Settings,
        budget: Duration,
    ) -> Result<Result<Vec<PatchOperation>, String>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Mutate, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `mutate`.
                let f = unsafe { callee.typed::<sig::Mutate<'_>, sig::MutateOut>() };
                f.call(store, (request, *settings)).map(|(r,)| r)
            })
    }

    /// The endpoint filter (WIT `filter`), within `budget`: the copies of `slices` the consumer
    /// must hold. Only the slices' summaries cross into the component; the copies are assembled
    /// here from its answer (`convert::assemble`), endpoints copied from `slices`.
    pub fn filter(
        &self,
        mcs: &McsRef,
        service_ports: Option<&[ServicePort]>,
        source_cluster: &str,
        consumer_cluster: &str,
        slices: &[EndpointSlice],
        budget: Duration,
    ) -> Result<Vec<EndpointSlice>, EngineError> {
        let summaries: Vec<SliceSummary> = slices.iter().map(convert::summary).collect();
        let loaded = self.current();
        let copies =
            self.inner
                .runtime
                .run(&loaded, Function::Filter, budget, |callee, store| {
                    // SAFETY: these are the `sig` types of `filter`.
                    let f = unsafe { callee.typed::<sig::Filter<'_>, sig::FilterOut>() };
                    f.call(
                        store,
                        (
                            mcs,
                            service_ports,
                            source_cluster,
                            consumer_cluster,
                            &summaries,
                        ),
                    )
                    .map(|(r,)| r)
                })?;
        copies
            .into_iter()
            .map(|copy| convert::assemble(copy, slices))
            .collect::<Result<_, _>>()
            .map_err(|message| EngineError::Trap {
                function: Function::Filter.name(),
                message,
            })
    }
}

fn read(path: &Path) -> Result<Vec<u8>, EngineError> {
    std::fs::read(path).map_err(|source| EngineError::Read {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded component's exports carry no `post-return` (host/build_post_return.rs):
    /// wasmtime would resolve each one at every instantiation for nothing.
    #[test]
    fn embedded_component_has_no_post_return() {
        let mut lifts = 0;
        for payload in wasmparser::Parser::new(0).parse_all(EMBEDDED_COMPONENT) {
            let wasmparser::Payload::ComponentCanonicalSection(section) = payload.unwrap() else {
                continue;
            };
            for func in section {
                if let wasmparser::CanonicalFunction::Lift { options, .. } = func.unwrap() {
                    lifts += 1;
                    assert!(
                        !options
                            .iter()
                            .any(|o| matches!(o, wasmparser::CanonicalOption::PostReturn(_))),
                        "a lifted export still has post-return: {options:?}"
                    );
                }
            }
        }
        assert_eq!(lifts, 12, "one lift per exported function");
    }
}
