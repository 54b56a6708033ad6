//! Reaching the clusters the [`Origins`] name: the hub (a kubeconfig context, or the cluster
//! this process runs in) and the members (a kubeconfig's contexts, or Karmada's Clusters).
//! Building clients reads files but sends no request.

use std::path::Path;

use kube::Config;

use super::karmada::Karmada;
use super::origin::{FlagError, HubOrigin, MemberOrigin, Origins};
use super::{
    ClientOptions, Cluster, ClusterError, MemberSpec, Registry, Source, build_client,
    check_member_names, cluster, read_kubeconfig,
};
use crate::engine::PolicyEngine;

/// The hub's name (logs, metric labels) when it is the cluster this process runs in.
pub const IN_CLUSTER_HUB: &str = "hub";

/// The clusters `origins` name: the hub, and the members' source. `name_problem` is the
/// component's cluster-name rule for members from a kubeconfig (`None` = a valid name);
/// Karmada's source asks `policy` itself.
pub async fn open(
    origins: &Origins,
    options: &ClientOptions,
    policy: &PolicyEngine,
    name_problem: impl Fn(&str) -> Option<String>,
) -> Result<Source, ClusterError> {
    let hub = hub(&origins.hub, options).await?;
    // The file of the members, and the hub's context when they share it.
    let (path, except) = match (&origins.members, &origins.hub) {
        (MemberOrigin::Karmada, _) => {
            let only = origins.selected.iter().map(|m| m.name.clone()).collect();
            let karmada = Karmada::new(hub, only, options.clone(), policy.clone());
            return Ok(Source::Karmada(karmada));
        }
        (MemberOrigin::Kubeconfig(path), _) => (path, None),
        (MemberOrigin::HubKubeconfig, HubOrigin::Kubeconfig { path, .. }) => {
            (path, Some(hub.name.as_str()))
        }
        // origins() never pairs these.
        (MemberOrigin::HubKubeconfig, HubOrigin::InCluster) => {
            return Err(FlagError::NoMemberSource.into());
        }
    };
    let members =
        members_from_kubeconfig(path, except, &origins.selected, options, name_problem).await?;
    let registry = Registry {
        hub,
        members,
        unsynced: Vec::new(),
    };
    Ok(Source::Fixed(registry, super::Unanswered::default()))
}

/// The hub: the kubeconfig context `origin` names (its current context when none is named),
/// named after that context; or the cluster this process runs in, named [`IN_CLUSTER_HUB`].
pub async fn hub(origin: &HubOrigin, options: &ClientOptions) -> Result<Cluster, ClusterError> {
    match origin {
        HubOrigin::Kubeconfig { path, context } => {
            let kubeconfig = read_kubeconfig(path)?;
            let shown = path.display().to_string();
            let context = match context.clone().or(kubeconfig.current_context.clone()) {
                Some(context) if !context.is_empty() => context,
                _ => return Err(ClusterError::NoCurrentContext { path: shown }),
            };
            if !kubeconfig.contexts.iter().any(|c| c.name == context) {
                return Err(ClusterError::UnknownContext {
                    path: shown,
                    context,
                });
            }
            cluster(&kubeconfig, &context, &context, options).await
        }
        HubOrigin::InCluster => {
            let config =
                Config::incluster().map_err(|source| ClusterError::NotInCluster { source })?;
            let client = build_client(config, options).map_err(|source| ClusterError::Connect {
                context: IN_CLUSTER_HUB.to_string(),
                source: Box::new(source),
            })?;
            Ok(Cluster::new(IN_CLUSTER_HUB.to_string(), client))
        }
    }
}

/// The members of the kubeconfig at `path`: the contexts `selected` names, or else every
/// context but `except` (the hub's), each named after its context. Every name must pass
/// `name_problem` and be unique, and there must be at least one member.
pub async fn members_from_kubeconfig(
    path: &Path,
    except: Option<&str>,
    selected: &[MemberSpec],
    options: &ClientOptions,
    name_problem: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Cluster>, ClusterError> {
    let shown = path.display().to_string();
    let kubeconfig = read_kubeconfig(path)?;
    let contexts: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let specs: Vec<MemberSpec> = if selected.is_empty() {
        contexts
            .iter()
            .filter(|c| Some(**c) != except)
            .map(|c| MemberSpec::context(c))
            .collect()
    } else {
        if let Some(missing) = selected
            .iter()
            .find(|m| !contexts.contains(&m.context.as_str()))
        {
            return Err(ClusterError::UnknownContext {
                path: shown,
                context: missing.context.clone(),
            });
        }
        selected.to_vec()
    };
    if specs.is_empty() {
        let why = match except {
            Some(hub) => format!(
                "the kubeconfig {shown} has no context but the hub's ({hub:?}); add the \
                 members' contexts, or give --member-kubeconfig FILE or --karmada-clusters"
            ),
            None => format!("the kubeconfig {shown} (--member-kubeconfig) has no context"),
        };
        return Err(ClusterError::NoMembers { why });
    }
    check_member_names(&specs, name_problem)?;
    let mut members = Vec::with_capacity(specs.len());
    for spec in &specs {
        members.push(cluster(&kubeconfig, &spec.name, &spec.context, options).await?);
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A kubeconfig in its own temporary directory with a context per name (all at an address
    /// nothing listens on: building clients sends no request), current context `current`.
    fn kubeconfig(test: &str, contexts: &[&str], current: Option<&str>) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcs-policy-open-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        text += "- name: c\n  cluster: {server: \"http://127.0.0.1:9\"}\n";
        text += "users:\n- name: u\n  user: {token: t}\ncontexts:\n";
        for name in contexts {
            text += &format!("- name: {name}\n  context: {{cluster: c, user: u}}\n");
        }
        if let Some(current) = current {
            text += &format!("current-context: {current}\n");
        }
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn names(members: &[Cluster]) -> Vec<&str> {
        members.iter().map(|m| m.name.as_str()).collect()
    }

    async fn members(
        path: &Path,
        except: Option<&str>,
        selected: &[&str],
    ) -> Result<Vec<Cluster>, ClusterError> {
        let selected: Vec<MemberSpec> = selected.iter().map(|s| s.parse().unwrap()).collect();
        let options = ClientOptions::default();
        members_from_kubeconfig(path, except, &selected, &options, |_| None).await
    }

    #[tokio::test]
    async fn every_context_but_the_hubs_is_a_member_unless_members_are_selected() {
        let path = kubeconfig("all", &["hub", "m1", "m2"], Some("hub"));
        let all = members(&path, Some("hub"), &[]).await.unwrap();
        assert_eq!(names(&all), ["m1", "m2"]);
        let own_file = members(&path, None, &[]).await.unwrap();
        assert_eq!(names(&own_file), ["hub", "m1", "m2"]);
        let chosen = members(&path, Some("hub"), &["east=m2"]).await.unwrap();
        assert_eq!(names(&chosen), ["east"]);
        let err = members(&path, None, &["m3"]).await.err().expect("refused");
        assert!(matches!(err, ClusterError::UnknownContext { ref context, .. } if context == "m3"));
    }

    #[tokio::test]
    async fn a_kubeconfig_without_members_refuses_to_start() {
        let path = kubeconfig("hub-only", &["hub"], Some("hub"));
        let err = members(&path, Some("hub"), &[])
            .await
            .err()
            .expect("refused");
        let text = err.to_string();
        assert!(matches!(err, ClusterError::NoMembers { .. }), "{text}");
        assert!(
            text.contains("--member-kubeconfig") && text.contains("\"hub\""),
            "{text}"
        );
        let empty = kubeconfig("empty", &[], None);
        let text = members(&empty, None, &[])
            .await
            .err()
            .expect("refused")
            .to_string();
        assert!(
            text.contains("(--member-kubeconfig) has no context"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_hub_is_the_named_context_or_else_the_current_one() {
        let path = kubeconfig("hub", &["a", "b"], Some("b"));
        let options = ClientOptions::default();
        let hub_of = |context: Option<&str>| HubOrigin::Kubeconfig {
            path: path.clone(),
            context: context.map(str::to_string),
        };
        assert_eq!(hub(&hub_of(Some("a")), &options).await.unwrap().name, "a");
        assert_eq!(hub(&hub_of(None), &options).await.unwrap().name, "b");
        let err = hub(&hub_of(Some("c")), &options)
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, ClusterError::UnknownContext { .. }), "{err}");

        let no_current = kubeconfig("no-current", &["a"], None);
        let origin = HubOrigin::Kubeconfig {
            path: no_current,
            context: None,
        };
        let err = hub(&origin, &options).await.err().expect("refused");
        assert!(err.to_string().contains("--hub CONTEXT"), "{err}");
    }
}
