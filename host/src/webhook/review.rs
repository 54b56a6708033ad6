//! The AdmissionReview protocol (`admission.k8s.io/v1`): parse a review into the WIT request,
//! and turn the component's verdict into the response review. Pure functions, shared by the
//! HTTPS server and `mcs-policy eval`. Responses are shaped as controller-runtime (Karmada's
//! webhook framework) shapes them: every response carries `status.code`.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::engine::EngineError;
use crate::engine::types::{AdmissionRequest, Denial, Operation, PatchOp, PatchOperation};

const API_VERSIONS: &[&str] = &["admission.k8s.io/v1", "admission.k8s.io/v1beta1"];

/// A review that cannot be answered at all (not an AdmissionReview, no request, no uid).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReviewError {
    #[error("request body is not valid JSON: {0}")]
    Json(String),
    #[error("unsupported AdmissionReview apiVersion {0:?}: expected \"admission.k8s.io/v1\"")]
    ApiVersion(String),
    #[error("expected kind \"AdmissionReview\", got {0:?}")]
    Kind(String),
    #[error("AdmissionReview has no request")]
    NoRequest,
    #[error("AdmissionReview request has no uid")]
    NoUid,
    #[error("unsupported operation {0:?}: expected CREATE, UPDATE, DELETE or CONNECT")]
    Operation(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(borrow)]
    request: Option<RequestIn<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestIn<'a> {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    // Borrowed from the body: copied once, into the request the component gets.
    #[serde(borrow)]
    object: Option<&'a RawValue>,
    #[serde(borrow)]
    old_object: Option<&'a RawValue>,
}

/// A parsed review: the WIT request plus what the response and the logs need.
#[derive(Clone, Debug, PartialEq)]
pub struct Review {
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub request: AdmissionRequest,
}

/// Parses an AdmissionReview from JSON bytes.
pub fn parse_review(body: &[u8]) -> Result<Review, ReviewError> {
    // UTF-8 checked once for the whole body, so the parser does not check every string (and
    // the object) again; invalid UTF-8 is reported by serde_json's own reader, with its
    // position.
    let parsed = match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str::<ReviewIn<'_>>(text),
        Err(_) => serde_json::from_slice::<ReviewIn<'_>>(body),
    };
    let review = parsed.map_err(|e| ReviewError::Json(e.to_string()))?;
    if !API_VERSIONS.contains(&review.api_version.as_str()) {
        return Err(ReviewError::ApiVersion(review.api_version));
    }
    if review.kind != "AdmissionReview" {
        return Err(ReviewError::Kind(review.kind));
    }
    let req = review.request.ok_or(ReviewError::NoRequest)?;
    if req.uid.is_empty() {
        return Err(ReviewError::NoUid);
    }
    let operation = match req.operation.as_str() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        other => return Err(ReviewError::Operation(other.to_string())),
    };
    let raw = |v: Option<&RawValue>| {
        v.map(RawValue::get)
            .filter(|s| *s != "null")
            .map(str::to_string)
    };
    Ok(Review {
        api_version: review.api_version,
        namespace: req.namespace,
        name: req.name,
        request: AdmissionRequest {
            uid: req.uid,
            operation,
            object: raw(req.object).unwrap_or_default(),
            old_object: raw(req.old_object),
        },
    })
}

/// `metav1.Status` as it appears in `response.status`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Status {
    pub metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub reason: String,
    pub code: u16,
}

/// `AdmissionResponse`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub uid: String,
    pub allowed: bool,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub patch_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
}

/// The response AdmissionReview.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReviewOut {
    pub api_version: String,
    pub kind: String,
    pub response: Response,
}

impl ReviewOut {
    /// The response body: JSON written once into a buffer sized for it.
    pub fn to_json(&self) -> Vec<u8> {
        let response = &self.response;
        let size = 256
            + response.status.message.len()
            + response.patch.as_ref().map_or(0, String::len)
            + response.warnings.iter().map(String::len).sum::<usize>();
        let mut body = Vec::with_capacity(size);
        serde_json::to_writer(&mut body, self).expect("a ReviewOut always serializes");
        body
    }

    fn new(api_version: &str, response: Response) -> Self {
        ReviewOut {
            api_version: api_version.to_string(),
            kind: "AdmissionReview".to_string(),
            response,
        }
    }

    /// Short outcome label for metrics and logs.
    pub fn outcome(&self) -> &'static str {
        match (self.response.allowed, self.response.status.code) {
            (true, _) if self.response.patch.is_some() => "patched",
            (true, _) => "allowed",
            (false, 403) => "denied",
            (false, 400) => "invalid",
            (false, 429) => "overloaded",
            (false, _) => "error",
        }
    }
}

fn allowed(uid: &str) -> Response {
    Response {
        uid: uid.to_string(),
        allowed: true,
        status: Status {
            code: 200,
            ..Status::default()
        },
        ..Response::default()
    }
}

fn errored(uid: &str, code: u16, message: String) -> Response {
    Response {
        uid: uid.to_string(),
        allowed: false,
        status: Status {
            code,
            message,
            ..Status::default()
        },
        ..Response::default()
    }
}

/// The validating webhook's answer.
pub fn validation_response(review: &Review, verdict: Result<Vec<String>, Denial>) -> ReviewOut {
    let uid = &review.request.uid;
    let response = match verdict {
        Ok(warnings) => Response {
            warnings,
            ..allowed(uid)
        },
        Err(Denial::Malformed(message)) => errored(uid, 400, message),
        Err(Denial::Forbidden(rejection)) => Response {
            uid: uid.clone(),
            allowed: false,
            status: Status {
                code: 403,
                reason: "Forbidden".to_string(),
                message: rejection.message,
                ..Status::default()
            },
            warnings: rejection.warnings,
            ..Response::default()
        },
    };
    ReviewOut::new(&review.api_version, response)
}

/// The mutating webhook's answer: a base64 JSONPatch when something changes.
pub fn mutation_response(review: &Review, patch: Result<Vec<PatchOperation>, String>) -> ReviewOut {
    let uid = &review.request.uid;
    let response = match patch {
        Ok(ops) if ops.is_empty() => allowed(uid),
        Ok(ops) => Response {
            patch: Some(base64::engine::general_purpose::STANDARD.encode(patch_json(&ops))),
            patch_type: Some("JSONPatch".to_string()),
            ..allowed(uid)
        },
        Err(message) => errored(uid, 400, message),
    };
    ReviewOut::new(&review.api_version, response)
}

/// The answer when the component itself failed (trap, timeout, memory cap): not allowed, 500.
pub fn engine_failure_response(review: &Review, err: &EngineError) -> ReviewOut {
    ReviewOut::new(
        &review.api_version,
        errored(
            &review.request.uid,
            500,
            format!("policy evaluation failed: {err}"),
        ),
    )
}

/// The answer when the server is too busy to start the evaluation before the deadline.
pub fn overload_response(review: &Review) -> ReviewOut {
    ReviewOut::new(
        &review.api_version,
        errored(
            &review.request.uid,
            429,
            "policy server overloaded: evaluation could not start before the request deadline"
                .to_string(),
        ),
    )
}

/// The answer to a body that is not an AdmissionReview (sent with HTTP 400).
pub fn bad_request_response(err: &ReviewError) -> ReviewOut {
    ReviewOut::new(API_VERSIONS[0], errored("", 400, err.to_string()))
}

/// The RFC 6902 document for the component's operations.
pub fn patch_json(ops: &[PatchOperation]) -> String {
    let items: Vec<String> = ops
        .iter()
        .map(|op| {
            let name = match op.op {
                PatchOp::Add => "add",
                PatchOp::Replace => "replace",
            };
            format!(
                "{{\"op\":\"{name}\",\"path\":{},\"value\":{}}}",
                serde_json::Value::String(op.path.clone()),
                op.value
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests;
