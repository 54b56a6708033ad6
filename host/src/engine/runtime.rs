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

use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
    ProfilingStrategy, Store, Trap,
};

use super::EngineOptions;
use super::cache::ArtefactCache;
use super::epoch::EpochClock;
use super::error::EngineError;
use super::exports::{Callee, Exports, Function};

/// Set to `1` to have wasmtime write `/tmp/perf-PID.map`, so that `perf report` names the
/// component's own functions instead of showing bare JIT addresses (BENCHMARKS.md profiles).
pub const PERFMAP_ENV: &str = "MCS_POLICY_WASM_PERFMAP";

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
                .get_func(&mut store, *loaded.exports.index(function))
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
