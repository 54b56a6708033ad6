//! A minimal controller built on `PolicyEngine`: it mirrors one Service's EndpointSlices from a
//! provider cluster into a consumer cluster, exactly as the policy component says (names,
//! labels, annotations, port filtering, loop guard). Everything that decides is the component;
//! this program only watches, calls `filter`, and applies.
//!
//! ```sh
//! cargo run -p mcs-policy --example endpoint_mirror -- \
//!     --provider-kubeconfig member1.yaml --provider-name member1 \
//!     --consumer-kubeconfig member2.yaml --consumer-name member2 \
//!     --namespace shop --service web [--port http]...
//! ```
//! It does not prune copies whose source slice is gone: that is the sync controller's job.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client, Config};
use mcs_policy::engine::types::{ExposurePort, McsRef};
use mcs_policy::engine::{EngineOptions, PolicyEngine, convert};

/// Mirror a Service's EndpointSlices from one cluster to another through the MCS policy.
#[derive(Parser)]
struct Args {
    #[arg(long)]
    provider_kubeconfig: PathBuf,
    #[arg(long, default_value = "provider")]
    provider_name: String,
    #[arg(long)]
    consumer_kubeconfig: PathBuf,
    #[arg(long, default_value = "consumer")]
    consumer_name: String,
    #[arg(long)]
    namespace: String,
    /// The Service (and MultiClusterService) name.
    #[arg(long)]
    service: String,
    /// Service port names to expose (`spec.ports`); none = every port.
    #[arg(long = "port")]
    ports: Vec<String>,
}

async fn client(path: &PathBuf) -> anyhow::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// One pass: read the provider's slices, ask the component for the copies, apply them.
async fn sync(
    args: &Args,
    engine: &PolicyEngine,
    provider: &Api<EndpointSlice>,
    consumer: &Api<EndpointSlice>,
) -> anyhow::Result<usize> {
    let selector = format!("kubernetes.io/service-name={}", args.service);
    let slices = provider
        .list(&ListParams::default().labels(&selector))
        .await?;
    let input: Vec<_> = slices.items.iter().map(convert::slice_to_wit).collect();
    let mcs = McsRef {
        name: args.service.clone(),
        namespace: args.namespace.clone(),
        ports: args
            .ports
            .iter()
            .map(|name| ExposurePort {
                name: name.clone(),
                port: 0,
            })
            .collect(),
    };
    let copies = engine.filter(
        &mcs,
        None,
        &args.provider_name,
        &args.consumer_name,
        &input,
        Duration::from_secs(1),
    )?;
    let apply = PatchParams::apply("endpoint-mirror-example").force();
    for copy in &copies {
        let object = convert::slice_from_wit(copy.clone());
        consumer
            .patch(&copy.name, &apply, &Patch::Apply(&object))
            .await?;
    }
    Ok(copies.len())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let engine = PolicyEngine::embedded(EngineOptions::default())?;
    let provider: Api<EndpointSlice> =
        Api::namespaced(client(&args.provider_kubeconfig).await?, &args.namespace);
    let consumer: Api<EndpointSlice> =
        Api::namespaced(client(&args.consumer_kubeconfig).await?, &args.namespace);

    let selector = format!("kubernetes.io/service-name={}", args.service);
    let mut changes = watcher(
        provider.clone(),
        watcher::Config::default().labels(&selector),
    )
    .boxed();
    // Every change in the provider triggers a full pass: simple, and idempotent.
    while changes.try_next().await?.is_some() {
        match sync(&args, &engine, &provider, &consumer).await {
            Ok(n) => println!("synced {n} EndpointSlice copies to {}", args.consumer_name),
            Err(err) => eprintln!("sync failed: {err:#}"),
        }
    }
    Ok(())
}
