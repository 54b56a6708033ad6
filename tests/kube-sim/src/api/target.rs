//! Resolving a resource path against the registry into a `Target` (type, namespace, name,
//! subresource) and working out the Kubernetes verb of a request.

use std::sync::Arc;

use axum::http::Method;

use super::params::Params;
use super::path::ResourcePath;
use crate::faults::RequestInfo;
use crate::lifecycle::Part;
use crate::registry::{Registry, ResourceType};
use crate::status::ApiError;

/// The Kubernetes verbs kube-sim serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }

    pub fn writes(self) -> bool {
        !matches!(self, Self::Get | Self::List | Self::Watch)
    }
}

/// What a resource request addresses, resolved against the served types.
#[derive(Debug, Clone)]
pub struct Target {
    pub rt: Arc<ResourceType>,
    /// The request's namespace: always set for objects of namespaced types, None for
    /// cluster-scoped types and for collections across all namespaces.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub part: Part,
}

impl Target {
    pub fn resolve(registry: &Registry, path: ResourcePath) -> Result<Self, ApiError> {
        let rt = registry
            .lookup(&path.group, &path.version, &path.plural)
            .ok_or_else(ApiError::path_not_found)?;
        let scope_ok = match (rt.namespaced, &path.namespace) {
            (true, None) => path.name.is_none(),
            (true, Some(_)) => true,
            (false, ns) => ns.is_none(),
        };
        let part = match path.subresource.as_deref() {
            None => Part::Main,
            Some("status") if rt.status_subresource => Part::Status,
            Some(_) => return Err(ApiError::path_not_found()),
        };
        if !scope_ok {
            return Err(ApiError::path_not_found());
        }
        Ok(Self {
            rt,
            namespace: path.namespace,
            name: path.name,
            part,
        })
    }

    /// The verb of a request with `method` to this target, or 405 if none applies.
    pub fn verb(&self, method: &Method, params: &Params) -> Result<Verb, ApiError> {
        let named = self.name.is_some();
        let verb = match *method {
            Method::GET if named => Verb::Get,
            Method::GET if params.flag("watch") => Verb::Watch,
            Method::GET => Verb::List,
            Method::POST if !named && (self.namespace.is_some() || !self.rt.namespaced) => {
                Verb::Create
            }
            Method::PUT if named => Verb::Update,
            Method::PATCH if named => Verb::Patch,
            Method::DELETE if named => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => return Err(ApiError::method_not_allowed()),
        };
        let status_ok =
            self.part == Part::Main || matches!(verb, Verb::Get | Verb::Update | Verb::Patch);
        if status_ok {
            Ok(verb)
        } else {
            Err(ApiError::method_not_allowed())
        }
    }

    pub fn request_info(&self, verb: Verb) -> RequestInfo<'_> {
        RequestInfo {
            verb: verb.as_str(),
            group: &self.rt.group,
            resource: &self.rt.plural,
            subresource: (self.part == Part::Status).then_some("status"),
        }
    }

    /// The namespace of the storage key ("" for cluster-scoped objects).
    pub fn key_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }

    pub fn name_or_empty(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}
