//! Policy settings and the optional environment context, loaded from files, and the argument
//! group that names them (`--policy`, `--context`). The component owns the rules; this module
//! only reads which of them an operator switched on (see `docs/policies.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::engine::types::{Context, ServicePort, Settings};

/// The settings shipped in `policies/`, built in so `--policy strict` works without the file.
pub const BUILTIN_POLICIES: &[(&str, &str)] = &[
    (
        "karmada-compatible",
        include_str!("../../policies/karmada-compatible.yaml"),
    ),
    ("strict", include_str!("../../policies/strict.yaml")),
];

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("reading policy settings {path} failed")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid policy settings in {origin}: {reason}")]
    Invalid { origin: String, reason: String },
    #[error("reading context file {path} failed")]
    ReadContext {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid context file {path}: {reason}")]
    InvalidContext { path: String, reason: String },
}

/// Which policy to apply, and what is known about the environment.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    /// Policy settings: a built-in name (`karmada-compatible`, `strict`) or a settings file
    /// (see policies/).
    #[arg(
        long,
        env = "MCS_POLICY_POLICY",
        default_value = "karmada-compatible",
        value_name = "NAME|FILE"
    )]
    pub policy: String,

    /// What is known about the environment, for the rules that need it: a YAML/JSON file with
    /// `registeredClusters` (list of names), `servicePorts` (ports of the hub Service) and/or
    /// `services` (`namespace/name` → ports). Without it those rules do not apply.
    #[arg(long, env = "MCS_POLICY_CONTEXT", value_name = "FILE")]
    pub context: Option<PathBuf>,
}

impl PolicyArgs {
    /// The policy `--policy` names and the context of `--context` (empty without it).
    pub fn load(&self) -> Result<(Policy, ContextFile), SettingsError> {
        let policy = load_policy(&self.policy)?;
        let context = match &self.context {
            Some(path) => ContextFile::load(path)?,
            None => ContextFile::default(),
        };
        Ok((policy, context))
    }
}

/// The settings document: a name plus one switch per rule beyond Karmada (all default off).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SettingsFile {
    #[allow(dead_code)]
    name: String,
    #[serde(default)]
    reject_empty_types: bool,
    #[serde(default)]
    reject_repeated_types: bool,
    #[serde(default)]
    reject_duplicate_cluster_names: bool,
    #[serde(default)]
    reject_unknown_port_names: bool,
    #[serde(default)]
    warn_unregistered_clusters: bool,
}

/// A named policy: its settings and where they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub name: String,
    pub settings: Settings,
}

/// Loads `--policy`: a built-in name (`karmada-compatible`, `strict`) or a settings file.
pub fn load_policy(name_or_path: &str) -> Result<Policy, SettingsError> {
    if let Some((name, text)) = BUILTIN_POLICIES.iter().find(|(n, _)| *n == name_or_path) {
        return parse_policy(text, &format!("built-in policy {name}"));
    }
    let text = std::fs::read_to_string(name_or_path).map_err(|source| SettingsError::Read {
        path: name_or_path.to_string(),
        source,
    })?;
    parse_policy(&text, name_or_path)
}

/// Parses a settings document; errors name the offending field.
pub fn parse_policy(text: &str, origin: &str) -> Result<Policy, SettingsError> {
    let file: SettingsFile = serde_yaml::from_str(text).map_err(|e| SettingsError::Invalid {
        origin: origin.to_string(),
        reason: e.to_string(),
    })?;
    if file.name.trim().is_empty() {
        return Err(SettingsError::Invalid {
            origin: origin.to_string(),
            reason: "field `name` must not be empty".to_string(),
        });
    }
    Ok(Policy {
        name: file.name,
        settings: Settings {
            reject_empty_types: file.reject_empty_types,
            reject_repeated_types: file.reject_repeated_types,
            reject_duplicate_cluster_names: file.reject_duplicate_cluster_names,
            reject_unknown_port_names: file.reject_unknown_port_names,
            warn_unregistered_clusters: file.warn_unregistered_clusters,
        },
    })
}

/// What the host knows about clusters and Services, from `--context FILE`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContextFile {
    /// Names of the registered member clusters.
    #[serde(default)]
    pub registered_clusters: Option<Vec<String>>,
    /// Ports of the hub Service, for any MCS (handy for a single `eval`).
    #[serde(default)]
    pub service_ports: Option<Vec<PortEntry>>,
    /// Ports of hub Services by `namespace/name`; wins over `servicePorts`.
    #[serde(default)]
    pub services: BTreeMap<String, Vec<PortEntry>>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PortEntry {
    #[serde(default)]
    pub name: String,
    pub port: i32,
}

impl ContextFile {
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::ReadContext {
            path: path.display().to_string(),
            source,
        })?;
        serde_yaml::from_str(&text).map_err(|e| SettingsError::InvalidContext {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// The WIT context for an MCS `namespace/name`.
    pub fn for_object(&self, namespace: &str, name: &str) -> Context {
        let ports = self
            .services
            .get(&format!("{namespace}/{name}"))
            .or(self.service_ports.as_ref());
        Context {
            registered_clusters: self.registered_clusters.clone(),
            service_ports: ports.map(|ports| {
                ports
                    .iter()
                    .map(|p| ServicePort {
                        name: p.name.clone(),
                        port: p.port,
                    })
                    .collect()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_policies_parse() {
        let compatible = load_policy("karmada-compatible").unwrap();
        assert_eq!(compatible.settings, Settings::default());
        let strict = load_policy("strict").unwrap();
        assert!(strict.settings.reject_empty_types && strict.settings.warn_unregistered_clusters);
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let err = parse_policy("name: x\nrejectEmptyType: true\n", "test.yaml").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("test.yaml") && msg.contains("rejectEmptyType"),
            "{msg}"
        );
    }

    #[test]
    fn wrong_types_are_refused_by_name() {
        let err = parse_policy("name: x\nrejectEmptyTypes: maybe\n", "p.yaml").unwrap_err();
        assert!(err.to_string().contains("rejectEmptyTypes"), "{err}");
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = load_policy("/nonexistent/policy.yaml").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/policy.yaml"));
    }

    #[test]
    fn per_service_ports_win_over_global_ones() {
        let ctx: ContextFile = serde_yaml::from_str(
            "servicePorts: [{name: a, port: 1}]\nservices:\n  shop/web: [{name: http, port: 80}]\n",
        )
        .unwrap();
        let web = ctx.for_object("shop", "web").service_ports.unwrap();
        assert_eq!(web[0].name, "http");
        let other = ctx.for_object("shop", "api").service_ports.unwrap();
        assert_eq!(other[0].name, "a");
        assert_eq!(ctx.for_object("x", "y").registered_clusters, None);
    }
}
