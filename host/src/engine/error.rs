//! Errors of the engine layer. A trap, a timeout or a memory-cap hit in the component is one of
//! these values, never a crash of the host.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("setting up the wasm engine failed: {0}")]
    Setup(String),
    #[error("loading policy component from {origin} failed: {reason}")]
    Load { origin: String, reason: String },
    #[error("reading policy component {path} failed")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("policy component trapped in `{function}`: {message}")]
    Trap {
        function: &'static str,
        message: String,
    },
    #[error("policy component exceeded its time budget of {budget:?} in `{function}`")]
    Timeout {
        function: &'static str,
        budget: Duration,
    },
    #[error("policy component exceeded its memory limit of {limit_bytes} bytes in `{function}`")]
    MemoryLimit {
        function: &'static str,
        limit_bytes: usize,
    },
}

impl EngineError {
    /// A short label for metrics (`trap`, `timeout`, `memory`, `load`).
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::Setup(_) | EngineError::Load { .. } | EngineError::Read { .. } => "load",
            EngineError::Trap { .. } => "trap",
            EngineError::Timeout { .. } => "timeout",
            EngineError::MemoryLimit { .. } => "memory",
        }
    }
}
