//! The authorization attributes of a request, as kube-apiserver derives them from its method and
//! URL (`RequestInfoFactory.NewRequestInfo`, `k8s.io/apiserver/pkg/endpoints/request`) before
//! the authorizer checks them, whether or not anything serves the path:
//!
//! - paths under `/api/{version}/...` and `/apis/{group}/{version}/...` with at least a resource
//!   are resource requests; every other path (discovery documents, `/version`, `/openapi/v3`,
//!   health checks) is a non-resource request whose verb is the lowercase HTTP method;
//! - the verb of a resource request comes from the method (`POST` create, `GET`/`HEAD` get, `PUT`
//!   update, `PATCH` patch, `DELETE` delete) or the legacy `/watch/` prefix; a get without a name
//!   is a `watch` with `watch=true` (any value but `0`/`false`), else a `list`; a delete without a
//!   name a `deletecollection`;
//! - `namespaces/{ns}` sets the namespace, and the rest names resource, name and subresource:
//!   a Namespace (`/api/v1/namespaces/x`) is its own namespace as well as the name;
//! - a list or watch whose `fieldSelector` requires `metadata.name=N` is checked for the name N
//!   (so that RBAC `resourceNames` can allow watching one object).

use axum::http::Method;
use serde_json::{Value, json};

use super::params::Params;
use super::target::Target;
use crate::field_selector;
use crate::lifecycle::Part;

/// What the authorizer is asked about one request (`authorizer.AttributesRecord`, without the
/// user, which kube-sim does not model).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    pub resource_request: bool,
    pub verb: String,
    /// The request path (reported for non-resource requests).
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl Attributes {
    /// The attributes of a request; None where the apiserver cannot tell (a special verb with
    /// nothing after it), which it refuses before authorizing.
    pub fn of_request(method: &Method, path: &str, params: &Params) -> Option<Self> {
        let mut info = Self {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_owned(),
            ..Self::default()
        };
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let rest = match parts.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => {
                info.api_version = (*version).to_owned();
                rest
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                info.api_group = (*group).to_owned();
                info.api_version = (*version).to_owned();
                rest
            }
            _ => return Some(info),
        };
        info.resource_request = true;
        let rest = info.verb_and_rest(method, rest)?;
        let rest = info.namespace_and_rest(rest);
        info.resource_parts(rest);
        info.list_verbs(params);
        Some(info)
    }

    /// The verb, from a special verb prefix or the method; the parts after any prefix.
    fn verb_and_rest<'a, 'p>(
        &mut self,
        method: &Method,
        rest: &'a [&'p str],
    ) -> Option<&'a [&'p str]> {
        if SPECIAL_VERBS.contains(&rest[0]) {
            if rest.len() < 2 {
                return None;
            }
            self.verb = rest[0].to_owned();
            return Some(&rest[1..]);
        }
        self.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_owned();
        Some(rest)
    }

    /// `namespaces/{ns}/...`: the namespace, and the parts from the resource on (a Namespace
    /// itself, or its `status`/`finalize`, stays the resource `namespaces`).
    fn namespace_and_rest<'a, 'p>(&mut self, rest: &'a [&'p str]) -> &'a [&'p str] {
        if rest[0] != "namespaces" || rest.len() < 2 {
            return rest;
        }
        self.namespace = rest[1].to_owned();
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            &rest[2..]
        } else {
            rest
        }
    }

    /// `resource/name/subresource/...`.
    fn resource_parts(&mut self, parts: &[&str]) {
        self.resource = parts[0].to_owned();
        if let Some(name) = parts.get(1) {
            self.name = (*name).to_owned();
        }
        if let Some(subresource) = parts.get(2).filter(|_| self.verb != "proxy") {
            self.subresource = (*subresource).to_owned();
        }
    }

    /// A get without a name is a list or watch (named by a `metadata.name` field selector); a
    /// delete without a name a deletecollection.
    fn list_verbs(&mut self, params: &Params) {
        if self.name.is_empty() && self.verb == "get" {
            self.verb = if params.flag("watch") {
                "watch"
            } else {
                "list"
            }
            .to_owned();
            let selected = params
                .get("fieldSelector")
                .and_then(|s| field_selector::exact_match(s, "metadata.name"))
                .filter(|name| is_valid_path_segment_name(name));
            if let Some(name) = selected {
                self.name = name;
            }
        }
        if self.name.is_empty() && self.verb == "delete" {
            self.verb = "deletecollection".to_owned();
        }
    }

    /// The attributes as `GET /_sim/requests` lists them.
    pub fn to_json(&self) -> Value {
        if !self.resource_request {
            return json!({"resourceRequest": false, "verb": self.verb, "path": self.path});
        }
        json!({
            "resourceRequest": true,
            "verb": self.verb,
            "apiGroup": self.api_group,
            "apiVersion": self.api_version,
            "resource": self.resource,
            "subresource": self.subresource,
            "namespace": self.namespace,
            "name": self.name,
        })
    }

    /// The extra check of a PUT or apply that creates the object `target` addresses (the
    /// update and patch handlers' `createAuthorizerAttributes`): `create` on its resource and
    /// subresource, with the namespace and name the resource's scope reads from the path (a
    /// cluster-scoped object, a Namespace too, has no namespace).
    pub fn create_check(target: &Target) -> Self {
        Self {
            resource_request: true,
            verb: "create".to_owned(),
            path: String::new(),
            api_group: target.rt.group.clone(),
            api_version: target.rt.version.clone(),
            resource: target.rt.plural.clone(),
            subresource: match target.part {
                Part::Status => "status".to_owned(),
                Part::Main => String::new(),
            },
            namespace: target.key_namespace().to_owned(),
            name: target.name_or_empty().to_owned(),
        }
    }
}

/// apimachinery's `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
fn is_valid_path_segment_name(name: &str) -> bool {
    !matches!(name, "." | "..") && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use super::super::path::{self, Route::Resource as ResourceRoute};
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    fn route(path: &str) -> path::Route {
        path::parse(path)
    }

    fn info(method: Method, uri: &str) -> Value {
        let uri: axum::http::Uri = uri.parse().unwrap();
        let params = Params::from_uri(&uri).unwrap();
        Attributes::of_request(&method, uri.path(), &params)
            .unwrap()
            .to_json()
    }

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Value {
        json!({"resourceRequest": true, "verb": verb, "apiGroup": group, "apiVersion": "v1",
            "resource": resource, "subresource": sub, "namespace": ns, "name": name})
    }

    #[test]
    fn resource_requests_carry_verb_group_resource_namespace_and_name() {
        let slices = "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices";
        assert_eq!(
            info(Method::GET, slices),
            resource("list", "discovery.k8s.io", "endpointslices", "", "ns", "")
        );
        assert_eq!(
            info(Method::GET, &format!("{slices}?watch=1")),
            resource("watch", "discovery.k8s.io", "endpointslices", "", "ns", "")
        );
        assert_eq!(
            info(Method::GET, &format!("{slices}?watch=false")),
            resource("list", "discovery.k8s.io", "endpointslices", "", "ns", "")
        );
        assert_eq!(
            info(Method::DELETE, slices),
            resource(
                "deletecollection",
                "discovery.k8s.io",
                "endpointslices",
                "",
                "ns",
                ""
            )
        );
        assert_eq!(
            info(Method::PUT, "/api/v1/namespaces/ns/services/web/status"),
            resource("update", "", "services", "status", "ns", "web")
        );
        assert_eq!(
            info(Method::PATCH, "/api/v1/namespaces/ns/services/web"),
            resource("patch", "", "services", "", "ns", "web")
        );
        assert_eq!(
            info(Method::POST, "/api/v1/namespaces"),
            resource("create", "", "namespaces", "", "", "")
        );
        assert_eq!(
            info(Method::GET, "/api/v1/services"),
            resource("list", "", "services", "", "", "")
        );
        // Unknown groups and resources are authorized like any other.
        assert_eq!(
            info(Method::GET, "/apis/example.com/v1/widgets/w"),
            resource("get", "example.com", "widgets", "", "", "w")
        );
    }

    #[test]
    fn namespaces_are_their_own_namespace() {
        assert_eq!(
            info(Method::DELETE, "/api/v1/namespaces/ns"),
            resource("delete", "", "namespaces", "", "ns", "ns")
        );
        assert_eq!(
            info(Method::PUT, "/api/v1/namespaces/ns/finalize"),
            resource("update", "", "namespaces", "finalize", "ns", "ns")
        );
    }

    #[test]
    fn a_metadata_name_field_selector_names_lists_and_watches() {
        let base = "/api/v1/namespaces/ns/configmaps";
        assert_eq!(
            info(
                Method::GET,
                &format!("{base}?watch=true&fieldSelector=metadata.name%3Dcm")
            ),
            resource("watch", "", "configmaps", "", "ns", "cm")
        );
        assert_eq!(
            info(
                Method::GET,
                &format!("{base}?fieldSelector=metadata.name!%3Dcm")
            ),
            resource("list", "", "configmaps", "", "ns", "")
        );
        assert_eq!(
            info(
                Method::DELETE,
                &format!("{base}?fieldSelector=metadata.name%3Dcm")
            ),
            resource("deletecollection", "", "configmaps", "", "ns", "")
        );
    }

    #[test]
    fn the_legacy_watch_prefix_is_the_verb() {
        assert_eq!(
            info(Method::GET, "/api/v1/watch/namespaces/ns/services/web"),
            resource("watch", "", "services", "", "ns", "web")
        );
        let uri: axum::http::Uri = "/api/v1/watch".parse().unwrap();
        let params = Params::default();
        assert!(Attributes::of_request(&Method::GET, uri.path(), &params).is_none());
    }

    #[test]
    fn other_paths_are_non_resource_requests_with_the_method_as_verb() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/discovery.k8s.io/v1",
            "/version",
            "/openapi/v3",
            "/nothing/here",
        ] {
            assert_eq!(
                info(Method::GET, path),
                json!({"resourceRequest": false, "verb": "get", "path": path})
            );
        }
        assert_eq!(info(Method::POST, "/healthz")["verb"], "post");
    }

    #[test]
    fn the_create_check_names_the_resource_as_its_scope_does() {
        let registry = Registry::with_types(builtin::builtin_types());
        let check = |path: &str| {
            let ResourceRoute(resource) = route(path) else {
                unreachable!()
            };
            Attributes::create_check(&Target::resolve(&registry, resource).unwrap()).to_json()
        };
        assert_eq!(
            check("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"),
            resource("create", "coordination.k8s.io", "leases", "", "ns", "l")
        );
        // The request's attributes have namespace "ns" for a Namespace; the scope has none.
        assert_eq!(
            check("/api/v1/namespaces/ns"),
            resource("create", "", "namespaces", "", "", "ns")
        );
    }
}
