//! A self-managed serving certificate (`serve --certificate-secret`): the server makes its CA
//! and serving certificate, keeps them in a Secret of its namespace, rotates them, and patches
//! the CAs into the `caBundle` of the Validating/MutatingWebhookConfiguration that send
//! admission requests to it. With it, installing needs neither cert-manager nor a certificate
//! made by hand.
//!
//! The configurations themselves belong to whoever installs the server (the Helm chart, the
//! manifests): the server never creates nor deletes one, and patches `caBundle` only once its
//! HTTPS listener serves. So an upgrade or an uninstall that removes them is final, and the API
//! server is never told to trust a CA before a server presents a certificate of it.
//!
//! Several replicas agree on one certificate because the Secret is the only source: each
//! replica reads it, and a write carries the resourceVersion it read (a create, none), so of
//! two replicas that decide at once one wins and the other reads the winner's material on its
//! next try. The rules of what to write are [`material`]'s; [`keeper`] does the I/O.

mod args;
mod certificates;
pub mod configurations;
mod issue;
pub mod keeper;
pub mod material;

use std::path::PathBuf;

use kube::Client;

use crate::clusters::origin::HubOrigin;
use crate::clusters::{self as open, ClientOptions};
use crate::manifests::MANAGED_BY;
pub use args::{ManagedArgs, UnregisterArgs};
pub use configurations::{ConfigurationError, Removed};
pub use keeper::Keeper;
pub use material::{Material, Wanted};

/// Where a Pod's namespace is, when neither the flag nor `POD_NAMESPACE` says.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

#[derive(Debug, thiserror::Error)]
pub enum ManagedError {
    #[error(
        "--certificate-secret needs a namespace: give --certificate-namespace, set POD_NAMESPACE, \
         or run in a Pod with a ServiceAccount"
    )]
    NoNamespace,
    #[error(transparent)]
    Cluster(#[from] Box<crate::clusters::ClusterError>),
    #[error("{verb} Secret {namespace}/{name} failed: {source}")]
    Secret {
        verb: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(transparent)]
    Configuration(#[from] ConfigurationError),
    #[error(transparent)]
    Issue(#[from] material::IssueError),
    #[error(
        "Secret {0} or its webhook configurations kept changing under this server; trying again \
         later"
    )]
    Contended(String),
}

/// A client of the kubeconfig's current context, or of the cluster this Pod runs in.
async fn client(kubeconfig: &Option<PathBuf>) -> Result<Client, ManagedError> {
    let origin = match kubeconfig {
        Some(path) => HubOrigin::Kubeconfig {
            path: path.clone(),
            context: None,
        },
        None => HubOrigin::InCluster,
    };
    let cluster = open::hub(&origin, &ClientOptions::default())
        .await
        .map_err(Box::new)?;
    Ok(cluster.client)
}

fn namespace(args: &ManagedArgs) -> Result<String, ManagedError> {
    args.certificate_namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .or_else(|| {
            std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|ns| !ns.is_empty())
        })
        .or_else(|| {
            std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
                .ok()
                .map(|ns| ns.trim().to_string())
                .filter(|ns| !ns.is_empty())
        })
        .ok_or(ManagedError::NoNamespace)
}

/// Deletes the two configurations when they carry our label: those an earlier build's
/// self-managed server created itself, or that `mcs-policy manifests | kubectl apply` made.
/// Prints one line per configuration.
pub async fn unregister(args: &UnregisterArgs) -> Result<(), ManagedError> {
    let client = client(&args.webhook_kubeconfig).await?;
    for (kind, removed) in configurations::unregister(&client, &args.webhook_configuration).await? {
        let name = &args.webhook_configuration;
        match removed {
            Removed::Deleted => println!("{kind} {name}: deleted"),
            Removed::Absent => println!("{kind} {name}: not there"),
            Removed::NotOurs => println!(
                "{kind} {name}: left alone, it is not labelled {}={}",
                MANAGED_BY.0, MANAGED_BY.1
            ),
        }
    }
    Ok(())
}
