//! The *read* step of a pass: [`snapshot`] takes everything one pass reads from the caches;
//! here, the errors of that step and the MCS as the component reads it.

pub mod snapshot;

use kube::api::DynamicObject;

use crate::controller::names::object_name;

/// What could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cluster {cluster} is not ready: {why}")]
    NotReady {
        cluster: String,
        /// What "ready" means for the cluster source ([`crate::clusters::Source::not_ready`]).
        why: &'static str,
    },
    #[error("encoding multiclusterservice {object} as JSON")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

/// The MCS as the JSON text `plan` takes.
pub fn mcs_json(mcs: &DynamicObject) -> Result<String, ReadError> {
    serde_json::to_string(mcs).map_err(|source| ReadError::Encode {
        object: object_name(mcs),
        source,
    })
}
