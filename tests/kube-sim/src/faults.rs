//! Injected failures: rules queued through `/_sim/faults` that answer the next matching API
//! requests with an error status instead of serving them, or serve them and hold the answer
//! back for a while (`delayMs`: the write is done and watched, its client not told yet).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::status::ApiError;

/// The verbs a fault can be limited to (the Kubernetes verb of a request).
pub const VERBS: [&str; 8] = [
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "get",
    "list",
    "watch",
];

/// One queued fault, as posted to `/_sim/faults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultSpec {
    /// The HTTP status to answer with (e.g. 409, 429, 500, 503); absent for a delay.
    #[serde(default)]
    pub status: u16,
    /// Serve the request, then hold its answer back this many milliseconds (no `status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// How many matching requests fail (then the fault is gone).
    #[serde(default = "one")]
    pub count: u32,
    /// The `Retry-After` of 429 and 503 answers.
    #[serde(default = "one_second")]
    pub retry_after_seconds: u64,
    /// Only requests with one of these verbs fail; all verbs when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbs: Option<Vec<String>>,
    /// Only requests for this resource fail (`endpointslices`, `endpointslices.discovery.k8s.io`
    /// or `services/status`); all resources when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

fn one() -> u32 {
    1
}

fn one_second() -> u64 {
    1
}

impl FaultSpec {
    /// Why this fault cannot be queued, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if self.delay_ms.is_some() {
            if self.status != 0 {
                return Some("a delay serves the request: give no status with delayMs".into());
            }
        } else if !(400..=599).contains(&self.status) {
            return Some(format!(
                "status must be an HTTP error status (400-599), not {}",
                self.status
            ));
        }
        let unknown = self
            .verbs
            .iter()
            .flatten()
            .find(|v| !VERBS.contains(&v.as_str()));
        unknown.map(|verb| format!("unknown verb {verb:?}; known verbs: {}", VERBS.join(", ")))
    }

    fn matches(&self, request: &RequestInfo<'_>) -> bool {
        let verb_ok = self
            .verbs
            .as_ref()
            .is_none_or(|verbs| verbs.iter().any(|v| v == request.verb));
        let resource_ok = self
            .resource
            .as_deref()
            .is_none_or(|r| request.names_resource(r));
        verb_ok && resource_ok
    }
}

/// What a fault rule is matched against.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
}

impl RequestInfo<'_> {
    fn names_resource(&self, name: &str) -> bool {
        let (base, sub) = match name.split_once('/') {
            Some((base, sub)) => (base, Some(sub)),
            None => (name, None),
        };
        let base_ok = base == self.resource || base == format!("{}.{}", self.resource, self.group);
        base_ok && (sub.is_none() || sub == self.subresource)
    }
}

/// The queue of pending faults.
#[derive(Debug, Default)]
pub struct Faults(Mutex<Vec<FaultSpec>>);

impl Faults {
    pub fn push(&self, fault: FaultSpec) {
        self.lock().push(fault);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    pub fn pending(&self) -> Vec<FaultSpec> {
        self.lock().clone()
    }

    /// The status of the first queued fault matching `request`, consuming one of its count.
    pub fn take(&self, request: &RequestInfo<'_>) -> Option<(u16, u64)> {
        let mut faults = self.lock();
        let index = faults
            .iter()
            .position(|f| f.count > 0 && f.delay_ms.is_none() && f.matches(request))?;
        let fault = &mut faults[index];
        fault.count -= 1;
        let answer = (fault.status, fault.retry_after_seconds);
        if fault.count == 0 {
            faults.remove(index);
        }
        Some(answer)
    }

    /// How long the answer to `request` is held back by the first queued delay matching it,
    /// consuming one of its count.
    pub fn delay(&self, request: &RequestInfo<'_>) -> Option<std::time::Duration> {
        let mut faults = self.lock();
        let index = faults
            .iter()
            .position(|f| f.count > 0 && f.delay_ms.is_some() && f.matches(request))?;
        let fault = &mut faults[index];
        fault.count -= 1;
        let delay = std::time::Duration::from_millis(fault.delay_ms.unwrap_or_default());
        if fault.count == 0 {
            faults.remove(index);
        }
        Some(delay)
    }

    /// The error a request matching a queued fault gets, if any.
    pub fn injected_error(&self, request: &RequestInfo<'_>, name: &str) -> Option<ApiError> {
        let (status, retry_after) = self.take(request)?;
        let gr = crate::registry::GroupResource::new(request.group, request.resource);
        Some(ApiError::injected(status, retry_after, &gr, name))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<FaultSpec>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> FaultSpec {
        serde_json::from_str(json).unwrap()
    }

    fn request<'a>(verb: &'a str, resource: &'a str) -> RequestInfo<'a> {
        RequestInfo {
            verb,
            group: "discovery.k8s.io",
            resource,
            subresource: None,
        }
    }

    #[test]
    fn a_fault_fails_exactly_count_matching_requests() {
        let faults = Faults::default();
        faults.push(spec(
            r#"{"status": 503, "count": 2, "retryAfterSeconds": 3}"#,
        ));
        assert_eq!(
            faults.take(&request("get", "endpointslices")),
            Some((503, 3))
        );
        assert_eq!(
            faults.take(&request("list", "endpointslices")),
            Some((503, 3))
        );
        assert_eq!(faults.take(&request("get", "endpointslices")), None);
    }

    #[test]
    fn a_delay_holds_answers_back_and_fails_nothing() {
        let faults = Faults::default();
        faults.push(spec(r#"{"delayMs": 300, "verbs": ["patch"]}"#));
        assert_eq!(faults.take(&request("patch", "endpointslices")), None);
        assert_eq!(faults.delay(&request("get", "endpointslices")), None);
        assert_eq!(
            faults.delay(&request("patch", "endpointslices")),
            Some(std::time::Duration::from_millis(300))
        );
        assert_eq!(faults.delay(&request("patch", "endpointslices")), None);
        assert!(spec(r#"{"delayMs": 1, "status": 500}"#).problem().is_some());
        assert!(spec(r#"{"delayMs": 1}"#).problem().is_none());
        assert!(
            spec(r#"{"count": 1}"#).problem().is_some(),
            "no status, no delay"
        );
    }

    #[test]
    fn verb_and_resource_filters_skip_other_requests() {
        let faults = Faults::default();
        faults.push(spec(r#"{"status": 409, "verbs": ["update"], "resource": "endpointslices.discovery.k8s.io"}"#));
        assert_eq!(faults.take(&request("get", "endpointslices")), None);
        assert_eq!(faults.take(&request("update", "services")), None);
        assert_eq!(
            faults.take(&request("update", "endpointslices")),
            Some((409, 1))
        );
    }

    #[test]
    fn subresource_filters_match_only_that_subresource() {
        let faults = Faults::default();
        faults.push(spec(
            r#"{"status": 500, "resource": "endpointslices/status"}"#,
        ));
        assert_eq!(faults.take(&request("patch", "endpointslices")), None);
        let status = RequestInfo {
            subresource: Some("status"),
            ..request("patch", "endpointslices")
        };
        assert_eq!(faults.take(&status), Some((500, 1)));
    }

    #[test]
    fn unknown_verbs_and_non_error_statuses_are_refused() {
        assert!(spec(r#"{"status": 200}"#).problem().is_some());
        assert!(
            spec(r#"{"status": 500, "verbs": ["explode"]}"#)
                .problem()
                .is_some()
        );
        assert!(
            spec(r#"{"status": 500, "verbs": ["watch"]}"#)
                .problem()
                .is_none()
        );
    }
}
