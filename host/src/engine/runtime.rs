//! The wasmtime side of the engine: one `Engine` with the pooling allocator and epoch
//! interruption, the component compiled once (or loaded from the artefact cache) and
//! pre-instantiated, and a fresh bounded `Store` per call. Nothing here leaves the `engine`
//! module: callers see `PolicyEngine` and `EngineError` only.
//!
//! The exports are looked up and type-checked once, when a component is loaded (`Exports`), not
//! on every instantiation: the bindgen-generated `McsPolicyPre::instantiate` type-checks all
//! seven functions of the interface for each new instance, which cost about as much as the
//! instantiation itself (BENCHMARKS.md, "Webhook CPU per request").

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{
    Component, ComponentExportIndex, ComponentNamedList, Func, InstancePre, Lift, Linker, Lower,
    TypedFunc,
};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
    ProfilingStrategy, Store, Trap,
};

use super::EngineOptions;
use super::cache::ArtefactCache;
use super::epoch::EpochClock;
use super::error::EngineError;
use super::types::{
    AdmissionRequest, ClustersetDecision, ClustersetRead, Context, Denial, EndpointSlice,
    LoadBalancerIngress, LoadBalancerReport, McsRef, PassDecision, PassRead, PatchOperation,
    ProviderLoadBalancer, Reported, ServiceAction, ServicePort, Settings, SliceCopy, SliceSummary,
    StatusBasis, StatusNow, StatusUpdate, SyncPlan, SyncSettings, WriteFailures,
};

/// Set to `1` to have wasmtime write `/tmp/perf-PID.map`, so that `perf report` names the
/// component's own functions instead of showing bare JIT addresses (BENCHMARKS.md profiles).
pub const PERFMAP_ENV: &str = "MCS_POLICY_WASM_PERFMAP";

/// The exported interface (`wit/policy.wit`).
const INTERFACE: &str = "karmada:mcs-policy/policy@0.1.0";

/// The Rust signatures of the interface's functions, as `(parameters, results)` tuples: what
/// `Exports::check` verifies once per component and every call relies on.
pub mod sig {
    use super::*;

    pub type Validate<'a> = (&'a AdmissionRequest, Settings, &'a Context);
    pub type ValidateOut = (Result<Vec<String>, Denial>,);
    pub type Mutate<'a> = (&'a AdmissionRequest, Settings);
    pub type MutateOut = (Result<Vec<PatchOperation>, String>,);
    pub type Filter<'a> = (
        &'a McsRef,
        Option<&'a [ServicePort]>,
        &'a str,
        &'a str,
        &'a [SliceSummary],
    );
    pub type FilterOut = (Vec<SliceCopy>,);
    pub type Plan<'a> = (&'a str, &'a [String]);
    pub type PlanOut = (Result<SyncPlan, String>,);
    pub type Prune<'a> = (&'a McsRef, &'a [EndpointSlice], &'a [String], &'a [String]);
    pub type PruneOut = (Vec<String>,);
    pub type Service<'a> = (&'a str, Option<&'a str>);
    pub type ServiceOut = (Result<ServiceAction, String>,);
    pub type ClusterNameProblem<'a> = (&'a str,);
    pub type ClusterNameProblemOut = (Option<String>,);
    pub type LoadBalancerStatus<'a> = (&'a [ProviderLoadBalancer], &'a [LoadBalancerIngress]);
    pub type LoadBalancerStatusOut = (LoadBalancerReport,);
    pub type Decide<'a> = (&'a PassRead, SyncSettings);
    pub type DecideOut = (Result<PassDecision, String>,);
    pub type Conclude<'a> = (
        &'a StatusBasis,
        &'a WriteFailures,
        &'a StatusNow,
        Option<&'a Reported>,
    );
    pub type ConcludeOut = (StatusUpdate,);
    pub type ClustersetDecide<'a> = (&'a ClustersetRead,);
    pub type ClustersetDecideOut = (Result<ClustersetDecision, String>,);
}

/// A function of the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Validate,
    Mutate,
    Filter,
    Plan,
    Prune,
    Service,
    ClusterNameProblem,
    LoadBalancerStatus,
    Decide,
    Conclude,
    ClustersetDecide,
}

impl Function {
    const ALL: [Function; 11] = [
        Function::Validate,
        Function::Mutate,
        Function::Filter,
        Function::Plan,
        Function::Prune,
        Function::Service,
        Function::ClusterNameProblem,
        Function::LoadBalancerStatus,
        Function::Decide,
        Function::Conclude,
        Function::ClustersetDecide,
    ];

    /// The WIT name, as in errors and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Function::Validate => "validate",
            Function::Mutate => "mutate",
            Function::Filter => "filter",
            Function::Plan => "plan",
            Function::Prune => "prune",
            Function::Service => "service",
            Function::ClusterNameProblem => "cluster-name-problem",
            Function::LoadBalancerStatus => "load-balancer-status",
            Function::Decide => "decide",
            Function::Conclude => "conclude",
            Function::ClustersetDecide => "clusterset-decide",
        }
    }
}

/// The export index of every function, checked against `sig` when the component was loaded.
struct Exports([ComponentExportIndex; 11]);

impl Exports {
    fn find(component: &Component) -> Result<Self, String> {
        let interface = component
            .get_export_index(None, INTERFACE)
            .ok_or_else(|| format!("the component does not export `{INTERFACE}`"))?;
        let mut found = Vec::with_capacity(Function::ALL.len());
        for function in Function::ALL {
            found.push(
                component
                    .get_export_index(Some(&interface), function.name())
                    .ok_or_else(|| {
                        format!("`{INTERFACE}` has no function `{}`", function.name())
                    })?,
            );
        }
        Ok(Exports(found.try_into().map_err(|_| "export count")?))
    }

    /// Type-checks every export against `sig` on one instance; after this, `TypedFunc`s of
    /// any instance of the same component may be made without checking again.
    fn check(
        &self,
        instance: &wasmtime::component::Instance,
        store: &mut Store<Limits>,
    ) -> wasmtime::Result<()> {
        fn one<P, R>(
            instance: &wasmtime::component::Instance,
            store: &mut Store<Limits>,
            index: &ComponentExportIndex,
            name: &str,
        ) -> wasmtime::Result<()>
        where
            P: ComponentNamedList + Lower,
            R: ComponentNamedList + Lift,
        {
            instance
                .get_typed_func::<P, R>(&mut *store, index)
                .map(drop)
                .map_err(|e| e.context(format!("type-checking export `{name}`")))
        }
        for function in Function::ALL {
            let index = &self.0[function as usize];
            let name = function.name();
            match function {
                Function::Validate => {
                    one::<sig::Validate<'_>, sig::ValidateOut>(instance, store, index, name)
                }
                Function::Mutate => {
                    one::<sig::Mutate<'_>, sig::MutateOut>(instance, store, index, name)
                }
                Function::Filter => {
                    one::<sig::Filter<'_>, sig::FilterOut>(instance, store, index, name)
                }
                Function::Plan => one::<sig::Plan<'_>, sig::PlanOut>(instance, store, index, name),
                Function::Prune => {
                    one::<sig::Prune<'_>, sig::PruneOut>(instance, store, index, name)
                }
                Function::Service => {
                    one::<sig::Service<'_>, sig::ServiceOut>(instance, store, index, name)
                }
                Function::ClusterNameProblem => one::<
                    sig::ClusterNameProblem<'_>,
                    sig::ClusterNameProblemOut,
                >(instance, store, index, name),
                Function::LoadBalancerStatus => one::<
                    sig::LoadBalancerStatus<'_>,
                    sig::LoadBalancerStatusOut,
                >(instance, store, index, name),
                Function::Decide => {
                    one::<sig::Decide<'_>, sig::DecideOut>(instance, store, index, name)
                }
                Function::Conclude => {
                    one::<sig::Conclude<'_>, sig::ConcludeOut>(instance, store, index, name)
                }
                Function::ClustersetDecide => one::<
                    sig::ClustersetDecide<'_>,
                    sig::ClustersetDecideOut,
                >(instance, store, index, name),
            }?;
        }
        Ok(())
    }
}

/// A function of one fresh instance, to be called with its `sig` types.
pub struct Callee(Func);

impl Callee {
    /// The typed function.
    ///
    /// # Safety
    /// `P` and `R` must be the `sig` types of the `Function` passed to `Runtime::run`:
    /// `Exports::check` verified exactly those for this component when it was loaded, and every
    /// instance of a component has the same types.
    pub unsafe fn typed<P, R>(self) -> TypedFunc<P, R>
    where
        P: ComponentNamedList + Lower,
        R: ComponentNamedList + Lift,
    {
        // SAFETY: see the function's contract.
        unsafe { TypedFunc::new_unchecked(self.0) }
    }
}

/// Per-store state: the memory cap and whether a call ran into it.
pub struct Limits {
    memory_limit: usize,
    hit_memory_limit: bool,
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.hit_memory_limit = true;
            return Err(wasmtime::format_err!(
                "memory limit of {} bytes exceeded",
                self.memory_limit
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// The compiled engine plus the background thread that advances its epoch.
pub struct Runtime {
    engine: Engine,
    options: EngineOptions,
    clock: Arc<EpochClock>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.clock.stop();
    }
}

/// A component ready to instantiate, with the digest it was built from.
pub struct Loaded {
    pre: InstancePre<Limits>,
    exports: Exports,
    pub digest: String,
}

impl Runtime {
    pub fn new(options: EngineOptions) -> Result<Self, EngineError> {
        let mut pool = PoolingAllocationConfig::default();
        let slots = options.max_concurrency.saturating_mul(2).max(4);
        pool.total_component_instances(slots)
            .total_core_instances(slots)
            .total_memories(slots)
            .total_tables(slots)
            .max_memory_size(options.memory_limit_bytes)
            .linear_memory_keep_resident(options.keep_resident_bytes)
            .table_keep_resident(64 << 10);
        let mut config = Config::new();
        pool.pagemap_scan(Enabled::Auto);
        if std::env::var(PERFMAP_ENV).is_ok_and(|v| v == "1") {
            config.profiler(ProfilingStrategy::PerfMap);
        }
        config
            .cranelift_opt_level(OptLevel::Speed)
            .epoch_interruption(true)
            .parallel_compilation(options.parallel_compilation)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).map_err(|e| EngineError::Setup(e.to_string()))?;

        let clock = EpochClock::start(engine.clone(), options.epoch_tick);
        Ok(Runtime {
            engine,
            options,
            clock,
        })
    }

    /// Compiles (or loads from the cache) and pre-instantiates a component.
    pub fn load(&self, bytes: &[u8], origin: &str) -> Result<Loaded, EngineError> {
        let digest = super::cache::digest(bytes);
        let cache = self.options.cache_dir.as_deref().map(ArtefactCache::new);
        let component = match cache.as_ref().and_then(|c| c.load(&self.engine, &digest)) {
            Some(component) => component,
            None => {
                let compiled =
                    self.engine
                        .precompile_component(bytes)
                        .map_err(|e| EngineError::Load {
                            origin: origin.to_string(),
                            reason: format!("{e:#}"),
                        })?;
                if let Some(cache) = &cache {
                    cache.store(&self.engine, &digest, &compiled);
                }
                // SAFETY: `compiled` was produced just now by this very engine.
                unsafe { Component::deserialize(&self.engine, &compiled) }.map_err(|e| {
                    EngineError::Load {
                        origin: origin.to_string(),
                        reason: format!("{e:#}"),
                    }
                })?
            }
        };
        let load_error = |reason: String| EngineError::Load {
            origin: origin.to_string(),
            reason,
        };
        let exports = Exports::find(&component).map_err(load_error)?;
        let linker = Linker::<Limits>::new(&self.engine);
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| load_error(format!("{e:#}")))?;
        // One probe instance to type-check the exports (a component with the wrong exports
        // is refused here, never at a call).
        let mut probe = self.store(Duration::from_secs(60));
        pre.instantiate(&mut probe)
            .and_then(|instance| exports.check(&instance, &mut probe))
            .map_err(|e| load_error(format!("{e:#}")))?;
        Ok(Loaded {
            pre,
            exports,
            digest,
        })
    }

    fn store(&self, budget: Duration) -> Store<Limits> {
        let mut store = Store::new(
            &self.engine,
            Limits {
                memory_limit: self.options.memory_limit_bytes,
                hit_memory_limit: false,
            },
        );
        store.limiter(|limits| limits);
        store.set_epoch_deadline(self.clock.deadline_ticks(budget));
        store.epoch_deadline_trap();
        store
    }

    /// Instantiates `loaded` in a fresh store bounded by `budget` and the memory cap, runs `call`,
    /// and turns traps, timeouts and memory-cap hits into `EngineError`s.
    pub fn run<R>(
        &self,
        loaded: &Loaded,
        function: Function,
        budget: Duration,
        call: impl FnOnce(Callee, &mut Store<Limits>) -> wasmtime::Result<R>,
    ) -> Result<R, EngineError> {
        let mut store = self.store(budget);
        let result = instantiate(loaded, &mut store).and_then(|instance| {
            let func = instance
                .get_func(&mut store, loaded.exports.0[function as usize])
                .ok_or_else(|| wasmtime::format_err!("export `{}` vanished", function.name()))?;
            call(Callee(func), &mut store)
        });
        let function = function.name();
        result.map_err(|err| {
            if store.data().hit_memory_limit {
                return EngineError::MemoryLimit {
                    function,
                    limit_bytes: self.options.memory_limit_bytes,
                };
            }
            match err.downcast_ref::<Trap>() {
                Some(Trap::Interrupt) => EngineError::Timeout { function, budget },
                _ => EngineError::Trap {
                    function,
                    message: format!("{err:#}"),
                },
            }
        })
    }
}

/// A fresh instance of `loaded` in `store`. Kept out of line so that a profile shows instance
/// set-up as one function whatever the compiler inlines (`scripts/profile-webhook.sh`).
#[inline(never)]
fn instantiate(
    loaded: &Loaded,
    store: &mut Store<Limits>,
) -> wasmtime::Result<wasmtime::component::Instance> {
    loaded.pre.instantiate(store)
}
