//! The wasmtime side of the engine: one `Engine` with the pooling allocator and epoch
//! interruption, the component compiled once (or loaded from the artefact cache) and
//! pre-instantiated, and a fresh bounded `Store` per call. Nothing here leaves the `engine`
//! module: callers see `PolicyEngine` and `EngineError` only.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig, Store,
    Trap,
};

use super::EngineOptions;
use super::bindings::{McsPolicy as Policy, McsPolicyPre as PolicyPre};
use super::cache::ArtefactCache;
use super::epoch::EpochClock;
use super::error::EngineError;

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
    pub pre: PolicyPre<Limits>,
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
        config
            .cranelift_opt_level(OptLevel::Speed)
            .epoch_interruption(true)
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
        let linker = Linker::<Limits>::new(&self.engine);
        let pre = linker
            .instantiate_pre(&component)
            .and_then(PolicyPre::new)
            .map_err(|e| EngineError::Load {
                origin: origin.to_string(),
                reason: format!("{e:#}"),
            })?;
        Ok(Loaded { pre, digest })
    }

    /// Instantiates `loaded` in a fresh store bounded by `budget` and the memory cap, runs `call`,
    /// and turns traps, timeouts and memory-cap hits into `EngineError`s.
    pub fn run<R>(
        &self,
        loaded: &Loaded,
        function: &'static str,
        budget: Duration,
        call: impl FnOnce(&Policy, &mut Store<Limits>) -> wasmtime::Result<R>,
    ) -> Result<R, EngineError> {
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
        let result = loaded
            .pre
            .instantiate(&mut store)
            .and_then(|policy| call(&policy, &mut store));
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
