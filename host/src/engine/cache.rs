//! On-disk cache of compiled components, keyed by the component's SHA-256, the engine's
//! compatibility hash (settings, target, wasmtime version) and our own version. A missing,
//! stale or unreadable entry is simply recompiled.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Hex SHA-256 of the component bytes.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

pub struct ArtefactCache<'a> {
    dir: &'a Path,
}

impl<'a> ArtefactCache<'a> {
    pub fn new(dir: &'a Path) -> Self {
        ArtefactCache { dir }
    }

    fn path(&self, engine: &Engine, digest: &str) -> PathBuf {
        let mut h = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        self.dir.join(format!("{digest}-{:016x}.cwasm", h.finish()))
    }

    pub fn load(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let path = self.path(engine, digest);
        // Read into memory rather than `deserialize_file`: a memory-mapped artefact that
        // something rewrites in place would crash the process with SIGBUS.
        let bytes = std::fs::read(&path).ok()?;
        // SAFETY: entries are written only by `store` below, from this engine's own
        // `precompile_component`, into a directory the operator controls; wasmtime also checks
        // the header against the engine's configuration and refuses incompatible artefacts.
        match unsafe { Component::deserialize(engine, &bytes) } {
            Ok(component) => {
                tracing::debug!(path = %path.display(), "loaded compiled component from cache");
                Some(component)
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "ignoring unusable cache entry");
                None
            }
        }
    }

    pub fn store(&self, engine: &Engine, digest: &str, compiled: &[u8]) {
        let path = self.path(engine, digest);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let written = std::fs::create_dir_all(self.dir)
            .and_then(|()| std::fs::write(&tmp, compiled))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(err) = written {
            tracing::warn!(path = %path.display(), error = %err, "could not write compiled component to cache");
            let _ = std::fs::remove_file(&tmp);
        }
    }
}
