//! The resource types the server knows (built-in ones plus those CustomResourceDefinitions add),
//! and lookups by group/version/plural for routing and discovery.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

/// A group and a plural resource name, as the apiserver names them in messages
/// (`services`, `endpointslices.discovery.k8s.io`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// The `details` of a `Status` about the object `name` of this resource.
    pub fn details(&self, name: &str) -> Value {
        let mut details = json!({"kind": self.resource});
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        details
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// When `metadata.generation` is set and bumped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationPolicy {
    /// Never set by the server.
    None,
    /// 1 on create; +1 when anything but `metadata` (and `status`, where it is a subresource) changes.
    Spec,
    /// 1 on create; +1 when anything but `metadata` changes, or the labels do (EndpointSlices).
    ContentOrLabels,
}

/// Resource-specific behaviour beyond generic storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    None,
    /// Namespaces: see `types::namespace`.
    Namespace,
    /// CustomResourceDefinitions register the resources they define and get an Established status.
    CustomResourceDefinition,
}

/// One served resource at one group/version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    /// The version objects are stored at (for discovery's `storageVersionHash`).
    pub storage_version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub status_subresource: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub generation: GenerationPolicy,
    pub special: Special,
    /// The CustomResourceDefinition that defines this resource, if any.
    pub defined_by: Option<String>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

/// Every served group/version/resource.
#[derive(Debug, Default)]
pub struct Registry {
    types: BTreeMap<(String, String, String), Arc<ResourceType>>,
    /// Groups in the order `/apis` lists them: built-in groups first, then the others.
    group_order: Vec<String>,
}

/// A group and its served versions, highest priority first.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupVersions {
    pub group: String,
    pub versions: Vec<String>,
}

impl Registry {
    pub fn with_types(types: impl IntoIterator<Item = ResourceType>) -> Self {
        let mut registry = Self::default();
        for resource_type in types {
            registry.insert(resource_type);
        }
        registry
    }

    fn insert(&mut self, resource_type: ResourceType) {
        if !self.group_order.contains(&resource_type.group) {
            self.group_order.push(resource_type.group.clone());
        }
        let key = (
            resource_type.group.clone(),
            resource_type.version.clone(),
            resource_type.plural.clone(),
        );
        self.types.insert(key, Arc::new(resource_type));
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// All resource types served at `group`/`version`, by plural name.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .values()
            .filter(|t| t.group == group && t.version == version)
            .cloned()
            .collect()
    }

    /// Every resource type, at every version.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// The named API groups (not the core group) with their versions, in discovery order.
    pub fn groups(&self) -> Vec<GroupVersions> {
        self.group_order
            .iter()
            .filter(|group| !group.is_empty())
            .filter_map(|group| {
                let mut versions: Vec<String> = self
                    .types
                    .keys()
                    .filter(|(g, _, _)| g == group)
                    .map(|(_, v, _)| v.clone())
                    .collect();
                versions.dedup();
                versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
                (!versions.is_empty()).then(|| GroupVersions {
                    group: group.clone(),
                    versions,
                })
            })
            .collect()
    }

    /// Replaces whatever the CustomResourceDefinition `crd` served before with `types`.
    pub fn define(&mut self, crd: &str, types: Vec<ResourceType>) {
        self.undefine(crd);
        for resource_type in types {
            self.insert(resource_type);
        }
    }

    /// Stops serving what the CustomResourceDefinition `crd` defined; returns what it served.
    pub fn undefine(&mut self, crd: &str) -> Vec<Arc<ResourceType>> {
        let (removed, kept) = std::mem::take(&mut self.types)
            .into_iter()
            .partition(|(_, t)| t.defined_by.as_deref() == Some(crd));
        self.types = kept;
        let removed: Vec<Arc<ResourceType>> = BTreeMap::into_values(removed).collect();
        let still_served: Vec<String> = self.types.keys().map(|(g, _, _)| g.clone()).collect();
        self.group_order.retain(|g| still_served.contains(g));
        removed
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, others last.
pub fn version_priority(version: &str) -> (u8, u32, u32) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u32>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    let minor_of = |s: &str| s.parse::<u32>().ok();
    match tail {
        "" => (3, major, 0),
        _ if tail.starts_with("beta") => minor_of(&tail[4..]).map_or((0, 0, 0), |m| (2, major, m)),
        _ if tail.starts_with("alpha") => minor_of(&tail[5..]).map_or((0, 0, 0), |m| (1, major, m)),
        _ => (0, 0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_resource_display_includes_group_only_when_named() {
        assert_eq!(GroupResource::new("", "services").to_string(), "services");
        assert_eq!(
            GroupResource::new("coordination.k8s.io", "leases").to_string(),
            "leases.coordination.k8s.io"
        );
    }

    #[test]
    fn versions_sort_ga_then_beta_then_alpha() {
        let mut versions = vec!["v1alpha1", "v2beta1", "v1", "v1beta2", "v2", "foo"];
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(
            versions,
            vec!["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]
        );
    }
}
