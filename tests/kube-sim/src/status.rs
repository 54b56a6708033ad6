//! Kubernetes `metav1.Status` failures: the `ApiError` every handler returns, rendered as the
//! apiserver does (same reasons, codes and message wording).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::registry::GroupResource;

/// A failed API call, answered as a `Status` object with a matching HTTP status code.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after_seconds: Option<u64>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after_seconds: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{gr} \"{name}\" not found"))
            .with_details(gr.details(name))
    }

    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
        )
        .with_details(gr.details(name))
    }

    pub fn conflict(gr: &GroupResource, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {why}"),
        )
        .with_details(gr.details(name))
    }

    pub fn stale_resource_version(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with one field cause, worded like `Service "web" is invalid: metadata.name: ...`.
    pub fn invalid(kind: &str, name: &str, field: &str, cause_reason: &str, detail: &str) -> Self {
        let message = format!("{kind} \"{name}\" is invalid: {field}: {detail}");
        let cause = json!({"reason": cause_reason, "message": detail, "field": field});
        Self::new(422, "Invalid", message)
            .with_details(json!({"name": name, "kind": kind, "causes": [cause]}))
    }

    /// The 422 of a JSON patch that cannot be applied (a failed `test`, a missing path):
    /// the apiserver gives no details.
    pub fn rejected() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
        .with_details(json!({}))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The failure an injected fault answers with, worded like the apiserver's own.
    pub fn injected(code: u16, retry_after_seconds: u64, gr: &GroupResource, name: &str) -> Self {
        let mut error = match code {
            409 => Self::stale_resource_version(gr, name),
            429 => Self::new(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            500 => Self::new(
                500,
                "InternalError",
                "Internal error occurred: injected by kube-sim",
            ),
            503 => Self::new(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => Self::new(
                code,
                reason_for(code),
                format!("injected failure {code} by kube-sim"),
            ),
        };
        if matches!(code, 429 | 503) {
            error.retry_after_seconds = Some(retry_after_seconds);
            let mut details = gr.details(name);
            details["retryAfterSeconds"] = json!(retry_after_seconds);
            error.details = Some(details);
        }
        error
    }

    /// The `Status` object of this failure.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        status.insert("reason".into(), json!(self.reason));
        if let Some(details) = &self.details {
            status.insert("details".into(), details.clone());
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

/// The `reason` the apiserver gives for a status code it has no more specific reason for.
fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, axum::Json(self.to_status())).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_the_resource_and_group() {
        let gr = GroupResource::new("discovery.k8s.io", "endpointslices");
        let status = ApiError::not_found(&gr, "web-1").to_status();
        assert_eq!(
            status["message"],
            "endpointslices.discovery.k8s.io \"web-1\" not found"
        );
        assert_eq!(status["details"]["group"], "discovery.k8s.io");
        assert_eq!(status["details"]["kind"], "endpointslices");
        assert_eq!(status["code"], 404);
    }

    #[test]
    fn conflict_message_matches_the_apiserver_wording() {
        let gr = GroupResource::new("", "services");
        let error = ApiError::stale_resource_version(&gr, "web");
        assert_eq!(
            error.message,
            "Operation cannot be fulfilled on services \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(error.reason, "Conflict");
    }

    #[test]
    fn injected_throttling_carries_retry_after() {
        let gr = GroupResource::new("", "services");
        let error = ApiError::injected(429, 2, &gr, "");
        assert_eq!(error.retry_after_seconds, Some(2));
        assert_eq!(error.to_status()["details"]["retryAfterSeconds"], 2);
    }
}
