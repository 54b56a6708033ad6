//! Parsing request paths into what they address: discovery documents, OpenAPI documents, or a
//! resource collection, object or subresource.

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Version,
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    GroupList,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`
    ResourceList {
        group: String,
        version: String,
    },
    /// `/openapi/v3`
    OpenApiIndex,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`
    OpenApiDocument {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
    NotFound,
}

/// A resource collection (no name), object, or object subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Subresources of a namespace, which otherwise read like a resource inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

pub fn parse(path: &str) -> Route {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz"] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis"] => Route::GroupList,
        ["apis", group] => Route::Group((*group).to_owned()),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", "api", version] => Route::OpenApiDocument {
            group: String::new(),
            version: (*version).to_owned(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApiDocument {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
        },
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let at =
        |namespace: Option<&str>, plural: &str, name: Option<&str>, subresource: Option<&str>| {
            Route::Resource(ResourcePath {
                group: group.to_owned(),
                version: version.to_owned(),
                plural: plural.to_owned(),
                namespace: namespace.map(str::to_owned),
                name: name.map(str::to_owned),
                subresource: subresource.map(str::to_owned),
            })
        };
    match rest {
        [] => Route::ResourceList {
            group: group.to_owned(),
            version: version.to_owned(),
        },
        [plural] => at(None, plural, None, None),
        [plural, name] => at(None, plural, Some(name), None),
        ["namespaces", ns, sub] if NAMESPACE_SUBRESOURCES.contains(sub) => {
            at(None, "namespaces", Some(ns), Some(sub))
        }
        ["namespaces", ns, plural] => at(Some(ns), plural, None, None),
        [plural, name, sub] => at(None, plural, Some(name), Some(sub)),
        ["namespaces", ns, plural, name] => at(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => at(Some(ns), plural, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(path: &str) -> ResourcePath {
        match parse(path) {
            Route::Resource(r) => r,
            other => panic!("{path} parsed as {other:?}"),
        }
    }

    #[test]
    fn namespaced_object_paths_carry_namespace_and_name() {
        let r = resource("/apis/discovery.k8s.io/v1/namespaces/prod/endpointslices/web-abc");
        assert_eq!(r.group, "discovery.k8s.io");
        assert_eq!(r.namespace.as_deref(), Some("prod"));
        assert_eq!(r.plural, "endpointslices");
        assert_eq!(r.name.as_deref(), Some("web-abc"));
        assert_eq!(r.subresource, None);
    }

    #[test]
    fn namespace_paths_are_namespace_objects_unless_followed_by_a_resource() {
        let ns = resource("/api/v1/namespaces/prod");
        assert_eq!(
            (ns.plural.as_str(), ns.name.as_deref(), ns.namespace),
            ("namespaces", Some("prod"), None)
        );
        let status = resource("/api/v1/namespaces/prod/status");
        assert_eq!(
            (status.name.as_deref(), status.subresource.as_deref()),
            (Some("prod"), Some("status"))
        );
        let services = resource("/api/v1/namespaces/prod/services");
        assert_eq!(
            (
                services.plural.as_str(),
                services.namespace.as_deref(),
                services.name
            ),
            ("services", Some("prod"), None)
        );
    }

    #[test]
    fn status_subresource_paths_name_the_subresource() {
        let r = resource("/api/v1/namespaces/default/services/web/status");
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let cluster = resource("/apis/cluster.karmada.io/v1alpha1/clusters/member1/status");
        assert_eq!(
            (cluster.namespace, cluster.name.as_deref()),
            (None, Some("member1"))
        );
    }

    #[test]
    fn discovery_paths_are_recognised() {
        assert_eq!(parse("/api"), Route::CoreVersions);
        assert_eq!(parse("/apis/"), Route::GroupList);
        assert_eq!(
            parse("/api/v1"),
            Route::ResourceList {
                group: String::new(),
                version: "v1".into()
            }
        );
        assert_eq!(
            parse("/apis/coordination.k8s.io"),
            Route::Group("coordination.k8s.io".into())
        );
        assert_eq!(parse("/openapi/v2"), Route::NotFound);
    }
}
