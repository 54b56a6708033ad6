//! The hash map of the controller's caches and of a pass's tables.
//!
//! The standard map hashes with SipHash-1-3, which resists collision attacks at ~1 ns per byte.
//! Profiling a resync of 1,000 MCS × 20 members (`perf record -e cpu-clock -g` on the
//! controller during `scripts/bench-sync.sh`) put 7% of its CPU in SipHash, hashing slice
//! facts, names and keys. foldhash (the hasher hashbrown uses by default) is several times
//! faster and keeps a per-process random seed, so keys an API server hands us still cannot be
//! chosen to collide without knowing it.

/// A `HashMap` with foldhash's seeded fast hasher.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
