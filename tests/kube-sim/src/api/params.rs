//! Query parameters of API requests (`labelSelector`, `watch`, `timeoutSeconds`, ...).

use std::collections::HashMap;

use axum::http::Uri;

use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// The decoded query string of a request.
#[derive(Debug, Clone, Default)]
pub struct Params(HashMap<String, String>);

impl Params {
    pub fn from_uri(uri: &Uri) -> Result<Self, ApiError> {
        let query = axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri);
        query
            .map(|q| Self(q.0))
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter: `true` or `1`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    pub fn label_selector(&self) -> Result<LabelSelector, ApiError> {
        LabelSelector::parse(self.get("labelSelector").unwrap_or_default())
    }

    pub fn field_selector(&self) -> Result<FieldSelector, ApiError> {
        FieldSelector::parse(self.get("fieldSelector").unwrap_or_default())
    }

    pub fn timeout_seconds(&self) -> Result<Option<u64>, ApiError> {
        let Some(text) = self.get("timeoutSeconds") else {
            return Ok(None);
        };
        text.parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {text:?}")))
    }
}
