//! Query parameters of API requests (`labelSelector`, `watch`, `timeoutSeconds`, ...).

use std::collections::HashMap;

use axum::http::Uri;

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

    /// A boolean parameter as the apiserver reads it: present and neither `0` nor `false`.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(super::list_options::go_bool)
    }
}
