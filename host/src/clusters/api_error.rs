//! What a cluster's answer means (see `docs/api-errors.md`): failures told apart by kind, for
//! the retry decisions of the controller and the `reason` label of its error metric, and
//! rendered for people (logs, the MultiClusterService's condition messages) without client
//! internals.

use std::error::Error;

/// The kind of a failed request to a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 401: the cluster does not accept our credentials.
    Unauthorized,
    /// 403: our credentials lack a permission.
    Forbidden,
    /// 404.
    NotFound,
    /// 409: the object changed since it was read (re-read and retry).
    Conflict,
    /// 422: the cluster refuses the object as written (permanent for that object).
    Invalid,
    /// 429 (after the client's own retries honouring `Retry-After`).
    Throttled,
    /// 5xx (503 after the client's own retries).
    ServerError,
    /// Any other HTTP answer.
    OtherStatus,
    /// No answer: connection refused or closed, timeout, TLS.
    Unreachable,
    /// Anything else (a policy call, an encoding error).
    Other,
}

impl Kind {
    /// The Prometheus label value.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Unauthorized => "unauthorized",
            Kind::Forbidden => "forbidden",
            Kind::NotFound => "not_found",
            Kind::Conflict => "conflict",
            Kind::Invalid => "invalid",
            Kind::Throttled => "throttled",
            Kind::ServerError => "server_error",
            Kind::OtherStatus => "other_status",
            Kind::Unreachable => "unreachable",
            Kind::Other => "other",
        }
    }

    /// A credentials problem (401/403), to be fixed by an operator, not by retrying.
    pub fn is_credentials(self) -> bool {
        matches!(self, Kind::Unauthorized | Kind::Forbidden)
    }
}

/// The kind of one client error.
pub fn kind_of(err: &kube::Error) -> Kind {
    match err {
        kube::Error::Api(status) => match status.code {
            401 => Kind::Unauthorized,
            403 => Kind::Forbidden,
            404 => Kind::NotFound,
            409 => Kind::Conflict,
            422 => Kind::Invalid,
            429 => Kind::Throttled,
            500..=599 => Kind::ServerError,
            _ => Kind::OtherStatus,
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => Kind::Unreachable,
        _ => Kind::Other,
    }
}

/// The kind of the first client error among `err` and its sources ([`Kind::Other`] if none).
pub fn classify(err: &(dyn Error + 'static)) -> Kind {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(kube) = as_client_error(e) {
            return kind_of(kube);
        }
        next = e.source();
    }
    Kind::Other
}

/// `err` as a client error, also when an error type holds it boxed (`#[source]
/// Box<kube::Error>` makes the box, not the error, the source).
fn as_client_error<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a kube::Error> {
    err.downcast_ref::<kube::Error>()
        .or_else(|| err.downcast_ref::<Box<kube::Error>>().map(|b| &**b))
}

/// `err` and its sources, joined with `: `. An API error ends the chain as the server worded
/// it, with its code and reason (`services "web" is invalid: ... (422 Invalid)`), instead of
/// the client's debug dump.
pub fn chain(err: &(dyn Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(kube::Error::Api(status)) = as_client_error(e) {
            let reason = if status.reason.is_empty() {
                String::new()
            } else {
                format!(" {}", status.reason)
            };
            parts.push(format!("{} ({}{reason})", status.message, status.code));
            break;
        }
        parts.push(e.to_string());
        next = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    #[derive(Debug, thiserror::Error)]
    #[error("applying endpointslice shop/m1-web to cluster member2")]
    struct Step(#[source] Box<kube::Error>);

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Status::default()
        }))
    }

    #[test]
    fn an_api_error_is_shown_as_the_server_worded_it() {
        let err = Step(Box::new(api(
            422,
            "Invalid",
            "EndpointSlice.discovery.k8s.io \"m1-web\" is invalid",
        )));
        assert_eq!(
            chain(&err),
            "applying endpointslice shop/m1-web to cluster member2: \
             EndpointSlice.discovery.k8s.io \"m1-web\" is invalid (422 Invalid)"
        );
    }

    #[test]
    fn failures_are_told_apart_through_their_sources() {
        let cases = [
            (401, "Unauthorized", Kind::Unauthorized),
            (403, "Forbidden", Kind::Forbidden),
            (409, "Conflict", Kind::Conflict),
            (422, "Invalid", Kind::Invalid),
            (429, "TooManyRequests", Kind::Throttled),
            (503, "ServiceUnavailable", Kind::ServerError),
            (418, "", Kind::OtherStatus),
        ];
        for (code, reason, kind) in cases {
            let err = Step(Box::new(api(code, reason, "m")));
            assert_eq!(classify(&err), kind, "{code}");
        }
        assert!(Kind::Unauthorized.is_credentials() && Kind::Forbidden.is_credentials());
        assert!(!Kind::Conflict.is_credentials());
        let plain = std::io::Error::other("not a client error");
        assert_eq!(classify(&plain), Kind::Other);
    }
}
