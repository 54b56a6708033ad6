//! The label and field selectors of a list, watch or deletecollection request, with the field
//! labels converted for the requested kind (a custom resource's selectable fields come from
//! its CustomResourceDefinition).

use super::params::Params;
use super::target::Target;
use crate::app::App;
use crate::field_selector::{FieldSelector, SelectableFields};
use crate::registry::GroupResource;
use crate::selector::LabelSelector;
use crate::status::ApiError;

#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selection {
    /// The request's `labelSelector` and `fieldSelector` (400 when malformed or not selectable).
    pub fn from_request(app: &App, target: &Target, params: &Params) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or_default())?;
        let fields = Self::fields(app, target, params.get("fieldSelector").unwrap_or_default())?;
        Ok(Self { labels, fields })
    }

    fn fields(app: &App, target: &Target, text: &str) -> Result<FieldSelector, ApiError> {
        if text.is_empty() {
            return Ok(FieldSelector::default());
        }
        let crd = target.rt.defined_by.as_deref().and_then(|name| {
            let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
            app.read().get(&crds, "", name)
        });
        let selectable = SelectableFields::of(&target.rt, crd.as_deref());
        FieldSelector::parse(text, &selectable)
    }
}
