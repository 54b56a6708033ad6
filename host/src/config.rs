//! The command line: the `Args`/`Command` tree and nothing else. Each subsystem owns its
//! argument group (the engine's [`EngineArgs`](crate::engine::EngineArgs), the policy's
//! [`PolicyArgs`](crate::settings::PolicyArgs), `serve`'s [`ServeArgs`], `sync`'s
//! [`SyncArgs`], ...); this module only assembles them, and only `main.rs` imports it. Doc
//! comments are the `--help`; every flag with an environment fallback says so.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::controller::SyncArgs;
use crate::dns::DnsArgs;
use crate::eval::EvalArgs;
use crate::manifests::ManifestsArgs;
use crate::webhook::ServeArgs;
pub use crate::webhook::managed::UnregisterArgs;

/// Karmada MultiClusterService admission webhook and endpoint sync, driven by one WebAssembly
/// policy component.
///
/// Every decision (is this MultiClusterService valid, what are its defaults, which
/// EndpointSlices may a consumer cluster see) is taken by the policy component embedded in this
/// binary (or the one given with --component). This program reads, calls it, and writes.
///
/// A flag that takes one value may be given more than once: the last one wins (so arguments
/// appended after a chart's own, such as its extraArgs, override them). Flags that collect
/// values (sync --member) keep every occurrence.
#[derive(Debug, Parser)]
#[command(
    name = "mcs-policy",
    version = crate::build_info::LONG_VERSION,
    propagate_version = true,
    args_override_self = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,

    /// Log format on stderr: `text` or `json`. Log level from RUST_LOG (default `info`). Text
    /// is coloured only when stderr is a terminal and NO_COLOR is unset or empty.
    #[arg(long, global = true, env = "MCS_POLICY_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the validating and mutating admission webhooks over HTTPS.
    Serve(Box<ServeArgs>),
    /// Sync EndpointSlices between member clusters for every MultiClusterService in the hub.
    Sync(Box<SyncArgs>),
    /// Serve `clusterset.local` DNS (KEP-1645) from this cluster's ServiceImports and imported
    /// EndpointSlices, over UDP and TCP.
    ///
    /// Names under the zone (--zone, default clusterset.local): `<svc>.<ns>.svc.<zone>` A/AAAA
    /// (a ClusterSetIP import's spec.ips; a Headless import's ready endpoints, every source
    /// cluster), `_<port>._<proto>.<svc>.<ns>.svc.<zone>` SRV for named ports, and
    /// `<hostname>.<clusterid>.<svc>.<ns>.svc.<zone>` A/AAAA for a Headless import's endpoints
    /// (the endpoint's hostname, or its address with `-` for `.` and `:`; clusterid is the
    /// slice's multicluster.kubernetes.io/source-cluster). A missing name is NXDOMAIN, a name
    /// without records of the type asked NODATA (both with the zone's SOA), a name outside the
    /// zone REFUSED; every query is SERVFAIL until the caches have synced. Records live --ttl
    /// seconds.
    ///
    /// DNS is served on --listen (UDP and TCP, one port; 5353 so no root is needed), the probes
    /// and metrics on --metrics-listen. Each member's CoreDNS forwards the zone here: in the
    /// ConfigMap `coredns` of kube-system (`kubectl -n kube-system edit configmap coredns`), add
    /// the server block `clusterset.local:53 { forward . <ClusterIP of this server's Service> }`.
    /// See docs/dns.md.
    Dns(Box<DnsArgs>),
    /// Evaluate one request offline and print the answer as JSON.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Print the Validating/MutatingWebhookConfiguration YAML that points an API server here.
    Manifests(ManifestsArgs),
    /// Write the embedded policy component (for the wasmtime CLI, jco or another host).
    Component(ComponentArgs),
    /// Delete the two webhook configurations of a name when they carry the label
    /// app.kubernetes.io/managed-by=mcs-policy: those an earlier build's `serve
    /// --certificate-secret` created itself, which nothing else removes.
    Unregister(UnregisterArgs),
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Validate: REQUEST is an AdmissionReview; prints the response AdmissionReview.
    Validate(EvalArgs),
    /// Default (mutate): REQUEST is an AdmissionReview; prints the response AdmissionReview,
    /// with a base64 JSONPatch when something changes.
    Mutate(EvalArgs),
    /// Endpoint filter: REQUEST is a filter input (mcs, servicePorts, sourceCluster,
    /// consumerCluster, slices); prints the EndpointSlice copies as a JSON list.
    Filter(EvalArgs),
    /// Service propagation: REQUEST is a service input (template, existing); prints what a
    /// member cluster must do with its copy of the Service (unchanged, create or replace).
    Service(EvalArgs),
    /// Load balancer status: REQUEST is a load-balancer input (providers, current); prints the
    /// MultiClusterService's status.loadBalancer.ingress and its condition.
    LoadBalancer(EvalArgs),
    /// One sync pass's decisions: REQUEST is a decide input (pass: the MultiClusterService,
    /// members, template; settings: staleTimeoutMs); prints {"ok": decision} with the plan,
    /// finalizer, copies, deletions, Services, status.loadBalancer.ingress and what the status
    /// reports, or {"err": message} for an object that is not a MultiClusterService.
    Decide(EvalArgs),
    /// The end of a sync pass: REQUEST is a conclude input (basis: the status of a decide
    /// answer; failures; current: conditions, generation, now; reported); prints the conditions
    /// to write, the Events due, what to remember as reported and whether to retry.
    Conclude(EvalArgs),
    /// One pass of the Multi-Cluster Services API over one exported name: REQUEST is a
    /// clusterset-decide input (namespace, name, now, members with their ServiceExport,
    /// Service, slices, ServiceImport, derived Service and imported slices); prints
    /// {"ok": decision} with every member's writes, or {"err": message}.
    ClustersetDecide(EvalArgs),
}

/// `mcs-policy component`.
#[derive(Debug, clap::Args)]
pub struct ComponentArgs {
    /// Where to write the component; `-` writes to stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn eval_takes_policy_and_component_after_the_subcommand() {
        let args = Args::try_parse_from([
            "mcs-policy",
            "eval",
            "validate",
            "--policy",
            "strict",
            "--component",
            "p.wasm",
            "req.json",
        ])
        .unwrap();
        let Command::Eval(EvalCommand::Validate(eval)) = args.command else {
            panic!("expected eval validate");
        };
        assert_eq!(eval.policy.policy, "strict");
        assert_eq!(eval.engine.component, Some(PathBuf::from("p.wasm")));
        assert_eq!(eval.request, "req.json");
    }

    #[test]
    fn a_flag_given_twice_takes_the_last_value_in_every_command() {
        let args = Args::try_parse_from([
            "mcs-policy",
            "serve",
            "--listen",
            "127.0.0.1:1",
            "--policy",
            "strict",
            "--listen",
            ":8443",
            "--policy",
            "karmada-compatible",
            "--log-format",
            "text",
            "--log-format",
            "json",
        ])
        .unwrap();
        assert_eq!(args.log_format, "json");
        let Command::Serve(serve) = args.command else {
            panic!("expected serve");
        };
        assert_eq!(serve.listen, crate::listen::ListenAddr::Any(8443));
        assert_eq!(serve.policy.policy, "karmada-compatible");

        let args = Args::try_parse_from([
            "mcs-policy",
            "sync",
            "--workers",
            "2",
            "--member",
            "m1",
            "--workers",
            "3",
            "--member",
            "m2",
            "--metrics-listen",
            "127.0.0.1:8080",
            "--metrics-listen",
            ":8080",
        ])
        .unwrap();
        let Command::Sync(sync) = args.command else {
            panic!("expected sync");
        };
        assert_eq!(sync.workers, 3);
        assert_eq!(
            sync.metrics_listen,
            Some(crate::listen::ListenAddr::Any(8080))
        );
        // --member collects: both occurrences stay, in order.
        let members: Vec<_> = sync.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(members, ["m1", "m2"]);

        // Two levels down (eval validate) and a command without a subcommand of its own.
        let args = Args::try_parse_from([
            "mcs-policy",
            "eval",
            "validate",
            "--budget-ms",
            "1",
            "--budget-ms",
            "2",
            "req.json",
        ])
        .unwrap();
        let Command::Eval(EvalCommand::Validate(eval)) = args.command else {
            panic!("expected eval validate");
        };
        assert_eq!(eval.budget_ms, 2);
        let args = Args::try_parse_from([
            "mcs-policy",
            "unregister",
            "--webhook-configuration",
            "a",
            "--webhook-configuration",
            "b",
        ])
        .unwrap();
        let Command::Unregister(unregister) = args.command else {
            panic!("expected unregister");
        };
        assert_eq!(unregister.webhook_configuration, "b");
    }

    #[test]
    fn dns_has_the_zone_port_and_ttl_of_its_help() {
        let args = Args::try_parse_from(["mcs-policy", "dns"]).unwrap();
        let Command::Dns(dns) = args.command else {
            panic!("expected dns");
        };
        assert_eq!(dns.zone, "clusterset.local");
        assert_eq!(dns.listen, crate::listen::ListenAddr::Any(5353));
        assert_eq!(dns.metrics_listen, crate::listen::ListenAddr::Any(8080));
        assert_eq!(dns.ttl, 5);
        assert_eq!(dns.kubeconfig, None);
        // --context only with --kubeconfig.
        assert!(Args::try_parse_from(["mcs-policy", "dns", "--context", "m1"]).is_err());
        let args = Args::try_parse_from([
            "mcs-policy",
            "dns",
            "--kubeconfig",
            "k",
            "--context",
            "m1",
            "--listen",
            "127.0.0.1:53",
            "--ttl",
            "30",
            "--ttl",
            "1",
        ])
        .unwrap();
        let Command::Dns(dns) = args.command else {
            panic!("expected dns");
        };
        assert_eq!(dns.context.as_deref(), Some("m1"));
        assert_eq!(dns.listen.to_string(), "127.0.0.1:53");
        assert_eq!(dns.ttl, 1);
    }

    #[test]
    fn sync_keeps_its_flags_defaults_and_members() {
        let args = Args::try_parse_from([
            "mcs-policy",
            "sync",
            "--kubeconfig",
            "k.yaml",
            "--hub",
            "hub",
            "--member",
            "m1=gke_p_z_m1",
            "--member",
            "m2",
            "--leader-elect",
        ])
        .unwrap();
        let Command::Sync(sync) = args.command else {
            panic!("expected sync");
        };
        assert_eq!(sync.members.len(), 2);
        assert_eq!(sync.members[0].name, "m1");
        assert_eq!(sync.members[0].context, "gke_p_z_m1");
        assert_eq!(sync.members[1].name, "m2");
        assert_eq!(sync.resync_interval, std::time::Duration::from_secs(30));
        assert_eq!(sync.workers, 8);
        assert!(sync.leader.leader_elect);
        assert_eq!(sync.engine.memory_limit_mib, 128);
    }
}
