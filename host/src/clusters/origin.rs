//! Where the hub and the members are reached from, decided from `sync`'s cluster flags alone
//! (no I/O), so a contradiction or a missing piece refuses to start before anything is read,
//! with a message naming the flag. See `docs/sync.md`, "Clusters and readiness".
//!
//! | flags | hub | members |
//! | --- | --- | --- |
//! | `--kubeconfig F --hub C` | context C of F | F's other contexts |
//! | `--kubeconfig F [--hub C] --member-kubeconfig M` | C, or F's current context | M's contexts |
//! | `--kubeconfig F [--hub C] --karmada-clusters` | C, or F's current context | Karmada's Clusters |
//! | `--member-kubeconfig M` | the cluster this process runs in | M's contexts |
//! | `--karmada-clusters` | the cluster this process runs in | Karmada's Clusters |
//!
//! `--member [NAME=]CONTEXT` selects and names members among the contexts of whichever
//! kubeconfig holds them; with `--karmada-clusters` it takes Cluster names.

use std::path::{Path, PathBuf};

use super::MemberSpec;

/// The cluster flags of `mcs-policy sync`, as given.
#[derive(Clone, Copy, Debug)]
pub struct ClusterFlags<'a> {
    pub kubeconfig: Option<&'a Path>,
    pub hub: Option<&'a str>,
    pub member_kubeconfig: Option<&'a Path>,
    pub karmada_clusters: bool,
    pub members: &'a [MemberSpec],
}

/// How the hub is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubOrigin {
    /// A context of a kubeconfig; `None`: its current context.
    Kubeconfig {
        path: PathBuf,
        context: Option<String>,
    },
    /// The cluster this process runs in, with its Pod's ServiceAccount (kube's in-cluster
    /// configuration).
    InCluster,
}

/// Where the members come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberOrigin {
    /// The contexts of the hub's kubeconfig other than the hub's.
    HubKubeconfig,
    /// The contexts of a kubeconfig of their own (`--member-kubeconfig`).
    Kubeconfig(PathBuf),
    /// Karmada's Cluster objects in the hub (`--karmada-clusters`).
    Karmada,
}

/// Where the hub and the members are reached from, and the `--member` selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origins {
    pub hub: HubOrigin,
    pub members: MemberOrigin,
    /// `--member` values: kubeconfig contexts (named), or Karmada Cluster names.
    pub selected: Vec<MemberSpec>,
}

/// Why the cluster flags cannot work together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error(
        "--hub {hub:?} names a context of --kubeconfig, which is not given: without \
         --kubeconfig the hub is the cluster this process runs in (its Pod's ServiceAccount); \
         give --kubeconfig FILE --hub {hub}, or drop --hub"
    )]
    HubWithoutKubeconfig { hub: String },
    #[error(
        "--kubeconfig {path} without --hub: the members are its other contexts, so name the \
         hub's context with --hub CONTEXT (or take the members from --member-kubeconfig FILE or \
         --karmada-clusters, and the hub is its current context)"
    )]
    HubContextRequired { path: String },
    #[error(
        "no member clusters: without --kubeconfig the hub is the cluster this process runs in, \
         and the members come from --member-kubeconfig FILE (a kubeconfig whose contexts are \
         the members) or --karmada-clusters (Karmada's Cluster objects in the hub); give one"
    )]
    NoMemberSource,
    #[error(
        "--member-kubeconfig and --karmada-clusters both say where the members come from; give \
         one of them"
    )]
    TwoMemberSources,
    #[error(
        "--member {name}={context}: with --karmada-clusters, --member takes the name of a \
         Karmada Cluster object, not NAME=CONTEXT"
    )]
    ContextWithKarmada { name: String, context: String },
}

/// Where the hub and the members are reached from, or why the flags do not say.
pub fn origins(flags: &ClusterFlags<'_>) -> Result<Origins, FlagError> {
    let members = member_origin(flags)?;
    let hub = match (flags.kubeconfig, flags.hub) {
        (None, Some(hub)) => {
            return Err(FlagError::HubWithoutKubeconfig {
                hub: hub.to_string(),
            });
        }
        (None, None) => HubOrigin::InCluster,
        (Some(path), None) if members == MemberOrigin::HubKubeconfig => {
            return Err(FlagError::HubContextRequired {
                path: path.display().to_string(),
            });
        }
        (Some(path), context) => HubOrigin::Kubeconfig {
            path: path.to_path_buf(),
            context: context.map(str::to_string),
        },
    };
    Ok(Origins {
        hub,
        members,
        selected: flags.members.to_vec(),
    })
}

fn member_origin(flags: &ClusterFlags<'_>) -> Result<MemberOrigin, FlagError> {
    match (flags.member_kubeconfig, flags.karmada_clusters) {
        (Some(_), true) => Err(FlagError::TwoMemberSources),
        (Some(path), false) => Ok(MemberOrigin::Kubeconfig(path.to_path_buf())),
        (None, true) => match flags.members.iter().find(|m| m.is_named()) {
            Some(named) => Err(FlagError::ContextWithKarmada {
                name: named.name.clone(),
                context: named.context.clone(),
            }),
            None => Ok(MemberOrigin::Karmada),
        },
        (None, false) if flags.kubeconfig.is_some() => Ok(MemberOrigin::HubKubeconfig),
        (None, false) => Err(FlagError::NoMemberSource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The origins of `kubeconfig`, `hub`, `member_kubeconfig`, `karmada` and `--member`s.
    fn decide(
        kubeconfig: Option<&str>,
        hub: Option<&str>,
        member_kubeconfig: Option<&str>,
        karmada_clusters: bool,
        members: &[&str],
    ) -> Result<Origins, FlagError> {
        let members: Vec<MemberSpec> = members.iter().map(|m| m.parse().unwrap()).collect();
        origins(&ClusterFlags {
            kubeconfig: kubeconfig.map(Path::new),
            hub,
            member_kubeconfig: member_kubeconfig.map(Path::new),
            karmada_clusters,
            members: &members,
        })
    }

    fn kubeconfig_hub(path: &str, context: Option<&str>) -> HubOrigin {
        HubOrigin::Kubeconfig {
            path: path.into(),
            context: context.map(str::to_string),
        }
    }

    #[test]
    fn one_kubeconfig_with_a_hub_context_holds_every_cluster_as_before() {
        let o = decide(Some("k.yaml"), Some("hub"), None, false, &["m1"]).unwrap();
        assert_eq!(o.hub, kubeconfig_hub("k.yaml", Some("hub")));
        assert_eq!(o.members, MemberOrigin::HubKubeconfig);
        assert_eq!(o.selected, vec![MemberSpec::context("m1")]);
    }

    #[test]
    fn without_a_kubeconfig_the_hub_is_the_cluster_it_runs_in() {
        let o = decide(None, None, Some("/etc/members/kubeconfig"), false, &[]).unwrap();
        assert_eq!(o.hub, HubOrigin::InCluster);
        assert_eq!(
            o.members,
            MemberOrigin::Kubeconfig("/etc/members/kubeconfig".into())
        );
        let o = decide(None, None, None, true, &["m1"]).unwrap();
        assert_eq!(
            (o.hub, o.members),
            (HubOrigin::InCluster, MemberOrigin::Karmada)
        );
    }

    #[test]
    fn a_member_kubeconfig_wins_over_the_hub_kubeconfigs_other_contexts() {
        let o = decide(Some("k.yaml"), Some("hub"), Some("m.yaml"), false, &[]).unwrap();
        assert_eq!(o.hub, kubeconfig_hub("k.yaml", Some("hub")));
        assert_eq!(o.members, MemberOrigin::Kubeconfig("m.yaml".into()));
    }

    #[test]
    fn the_hub_defaults_to_the_current_context_only_when_the_members_come_from_elsewhere() {
        let o = decide(Some("k.yaml"), None, None, true, &[]).unwrap();
        assert_eq!(o.hub, kubeconfig_hub("k.yaml", None));
        let o = decide(Some("k.yaml"), None, Some("m.yaml"), false, &[]).unwrap();
        assert_eq!(o.hub, kubeconfig_hub("k.yaml", None));
        let err = decide(Some("k.yaml"), None, None, false, &[]).unwrap_err();
        assert_eq!(
            err,
            FlagError::HubContextRequired {
                path: "k.yaml".into()
            }
        );
        assert!(err.to_string().contains("--hub CONTEXT"), "{err}");
    }

    #[test]
    fn a_hub_context_needs_a_kubeconfig() {
        let err = decide(None, Some("hub"), Some("m.yaml"), false, &[]).unwrap_err();
        assert!(
            matches!(err, FlagError::HubWithoutKubeconfig { .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("--hub \"hub\"") && text.contains("--kubeconfig"),
            "{text}"
        );
    }

    #[test]
    fn in_a_cluster_the_members_must_come_from_somewhere() {
        let err = decide(None, None, None, false, &["m1"]).unwrap_err();
        assert_eq!(err, FlagError::NoMemberSource);
        let text = err.to_string();
        for flag in ["--member-kubeconfig", "--karmada-clusters", "--kubeconfig"] {
            assert!(text.contains(flag), "{flag}: {text}");
        }
    }

    #[test]
    fn two_member_sources_contradict_each_other() {
        for kubeconfig in [None, Some("k.yaml")] {
            let err = decide(kubeconfig, None, Some("m.yaml"), true, &[]).unwrap_err();
            assert_eq!(err, FlagError::TwoMemberSources);
        }
    }

    #[test]
    fn karmada_members_are_cluster_names_not_contexts() {
        let err = decide(None, None, None, true, &["m1=ctx"]).unwrap_err();
        assert_eq!(
            err,
            FlagError::ContextWithKarmada {
                name: "m1".into(),
                context: "ctx".into()
            }
        );
    }
}
