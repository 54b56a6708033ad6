//! "409 Conflict = re-read and retry" ([docs/api-errors.md](../../../docs/api-errors.md)): a write that lost a race with another writer
//! is tried again at once, each attempt reading what it writes afresh. (429 and 503 are
//! retried inside the client, honouring `Retry-After`; every other failure is the step's.)

use std::future::Future;

use crate::clusters::api_error::{Kind, classify};

/// Attempts of one write while it keeps meeting 409 Conflict.
pub const CONFLICT_ATTEMPTS: u32 = 4;

/// Runs `attempt` until it succeeds, fails with anything but a 409 Conflict, or has conflicted
/// [`CONFLICT_ATTEMPTS`] times (its last error is returned).
pub async fn on_conflict<T, E, F, Fut>(mut attempt: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + 'static,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(err) if tries < CONFLICT_ATTEMPTS && classify(&err) == Kind::Conflict => {
                tracing::debug!(error = %crate::clusters::api_error::chain(&err), tries, "conflict; re-reading and retrying");
                tries += 1;
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use kube::core::Status;

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            ..Status::default()
        }))
    }

    #[tokio::test]
    async fn a_conflict_is_retried_until_the_write_goes_through() {
        let calls = Cell::new(0);
        let outcome = on_conflict(|| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 3 { Err(api(409)) } else { Ok(n) } }
        })
        .await;
        assert_eq!(outcome.unwrap(), 3);
    }

    #[tokio::test]
    async fn other_failures_and_endless_conflicts_are_given_back() {
        let calls = Cell::new(0);
        let outcome: Result<(), _> = on_conflict(|| {
            calls.set(calls.get() + 1);
            async { Err(api(422)) }
        })
        .await;
        assert!(outcome.is_err());
        assert_eq!(calls.get(), 1, "422 is permanent for the object: no retry");

        calls.set(0);
        let outcome: Result<(), _> = on_conflict(|| {
            calls.set(calls.get() + 1);
            async { Err(api(409)) }
        })
        .await;
        assert!(outcome.is_err());
        assert_eq!(calls.get(), CONFLICT_ATTEMPTS);
    }
}
