//! The certificate material of a self-managed webhook, and the one decision about it: given what
//! the Secret holds now, what the webhook configurations trust and the time, what must the
//! Secret hold next. Pure (the clock is an argument), so every rotation rule is a unit test.
//!
//! The Secret holds four PEM texts (the keys of a `kubernetes.io/tls` Secret plus two):
//! `ca.crt` the CAs to trust, the current one first, then older ones until they expire;
//! `ca.key` the current CA's key; `tls.crt` the serving certificate; `tls.key` its key.
//!
//! Rules, in order:
//! 1. Nothing usable (no Secret, a text that does not parse, a key that does not match): a new
//!    CA and a serving certificate signed by it.
//! 2. The current CA has less than a third of its validity left: a new CA goes first in
//!    `ca.crt`; the old one stays after it until it expires.
//! 3. The serving certificate is renewed when it has less than a third of its validity left,
//!    does not name exactly the Service's DNS names, or was not signed by the current CA; but
//!    only by a CA the webhook configurations already trust, so the API server never meets a
//!    certificate it cannot verify. An expired serving certificate is renewed regardless.
//! 4. CAs that have expired leave `ca.crt`.

use std::time::Duration;

use rcgen::{Issuer, KeyPair};
use time::OffsetDateTime;

pub use super::certificates::trusted_ders;
use super::certificates::{Facts, parse_all, public_key_raw};
pub use super::issue::IssueError;
use super::issue::{new_ca, new_serving};

/// The four texts of the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    pub ca_bundle: String,
    pub ca_key: String,
    pub tls_cert: String,
    pub tls_key: String,
}

/// What the certificates must look like.
#[derive(Clone, Debug)]
pub struct Wanted {
    /// The serving certificate's DNS names, in order.
    pub dns_names: Vec<String>,
    pub ca_validity: Duration,
    pub serving_validity: Duration,
}

/// What the Secret must hold next, and why it changed.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Keep,
    Write { material: Material, why: String },
}

/// The current material, parsed and checked: the CAs of `ca.crt`, the current CA's issuer, the
/// serving certificate. `None` when any part is unusable.
struct Current {
    cas: Vec<Facts>,
    issuer: Issuer<'static, KeyPair>,
    serving: Facts,
}

fn inspect(material: &Material) -> Option<Current> {
    let cas = parse_all(&material.ca_bundle)?;
    let first = cas.first()?;
    let ca_key = KeyPair::from_pem(&material.ca_key).ok()?;
    if ca_key.public_key_raw() != public_key_raw(&first.der)?.as_slice() {
        return None;
    }
    let issuer = Issuer::from_ca_cert_pem(&first.pem, ca_key).ok()?;
    let serving = Facts::parse(&material.tls_cert)?;
    let serving_key = KeyPair::from_pem(&material.tls_key).ok()?;
    if serving_key.public_key_raw() != public_key_raw(&serving.der)?.as_slice() {
        return None;
    }
    Some(Current {
        cas,
        issuer,
        serving,
    })
}

/// What the Secret must hold next (the module's rules).
pub fn next(
    now: OffsetDateTime,
    current: Option<&Material>,
    trusted: &[Vec<u8>],
    wanted: &Wanted,
) -> Result<Next, IssueError> {
    let Some(material) = current else {
        return fresh(now, wanted, "no certificate yet");
    };
    let Some(current) = inspect(material) else {
        return fresh(now, wanted, "the Secret's certificate is unusable");
    };
    let mut why = Vec::new();
    let mut cas = current.cas.clone();
    let mut issuer = current.issuer;
    let mut ca_key = material.ca_key.clone();
    if cas[0].due(now) {
        let (ca, key, new_issuer) = new_ca(now, wanted)?;
        cas.insert(0, ca);
        ca_key = key;
        issuer = new_issuer;
        why.push("the CA is due for renewal");
    }
    let before = cas.len();
    let current_ca = cas[0].clone();
    cas.retain(|ca| !ca.expired(now) || ca.der == current_ca.der);
    if cas.len() != before {
        why.push("an expired CA left the bundle");
    }

    let serving = &current.serving;
    let renewal = if serving.expired(now) {
        Some("the serving certificate has expired")
    } else if serving.due(now) {
        Some("the serving certificate is due for renewal")
    } else if serving.dns_names != wanted.dns_names {
        Some("the serving certificate names other DNS names")
    } else if !serving.signed_by(&current_ca) {
        Some("the serving certificate is not signed by the current CA")
    } else {
        None
    };
    let trusts_current = trusted.contains(&current_ca.der);
    let (mut tls_cert, mut tls_key) = (material.tls_cert.clone(), material.tls_key.clone());
    if let Some(reason) = renewal
        && (trusts_current || serving.expired(now))
    {
        (tls_cert, tls_key) = new_serving(now, wanted, &issuer)?;
        why.push(reason);
    }

    let ca_bundle: String = cas.iter().map(|ca| ca.pem.as_str()).collect();
    let next = Material {
        ca_bundle,
        ca_key,
        tls_cert,
        tls_key,
    };
    if next == *material {
        return Ok(Next::Keep);
    }
    Ok(Next::Write {
        material: next,
        why: why.join("; "),
    })
}

fn fresh(now: OffsetDateTime, wanted: &Wanted, why: &str) -> Result<Next, IssueError> {
    let (ca, ca_key, issuer) = new_ca(now, wanted)?;
    let (tls_cert, tls_key) = new_serving(now, wanted, &issuer)?;
    Ok(Next::Write {
        material: Material {
            ca_bundle: ca.pem,
            ca_key,
            tls_cert,
            tls_key,
        },
        why: why.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn wanted() -> Wanted {
        Wanted {
            dns_names: vec![
                "mcs-policy.ns.svc".into(),
                "mcs-policy.ns.svc.cluster.local".into(),
            ],
            ca_validity: 300 * DAY,
            serving_validity: 90 * DAY,
        }
    }

    fn t0() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    fn days(n: i64) -> time::Duration {
        time::Duration::days(n)
    }

    fn written(next: Next) -> (Material, String) {
        match next {
            Next::Write { material, why } => (material, why),
            Next::Keep => panic!("expected a write"),
        }
    }

    fn first_ca_der(m: &Material) -> Vec<u8> {
        trusted_ders(&m.ca_bundle)[0].clone()
    }

    #[test]
    fn nothing_gives_a_ca_and_a_serving_certificate_for_the_names() {
        let (m, why) = written(next(t0(), None, &[], &wanted()).unwrap());
        assert_eq!(why, "no certificate yet");
        let serving = Facts::parse(&m.tls_cert).unwrap();
        assert_eq!(serving.dns_names, wanted().dns_names);
        let ca = Facts::parse(&m.ca_bundle).unwrap();
        assert!(serving.signed_by(&ca));
        assert_eq!(trusted_ders(&m.ca_bundle).len(), 1);
        // The pair loads as rustls would serve it.
        crate::tls::certified_key_from_pem(m.tls_cert.as_bytes(), m.tls_key.as_bytes()).unwrap();
    }

    #[test]
    fn a_current_material_is_kept() {
        let (m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        let trusted = vec![first_ca_der(&m)];
        assert_eq!(
            next(t0() + days(10), Some(&m), &trusted, &wanted()).unwrap(),
            Next::Keep
        );
        assert_eq!(
            next(t0() + days(10), Some(&m), &[], &wanted()).unwrap(),
            Next::Keep
        );
    }

    #[test]
    fn an_unusable_secret_is_replaced() {
        let (mut m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        m.tls_key = written(next(t0(), None, &[], &wanted()).unwrap()).0.tls_key;
        let (_, why) = written(next(t0(), Some(&m), &[], &wanted()).unwrap());
        assert_eq!(why, "the Secret's certificate is unusable");
        m.ca_bundle = "garbage".into();
        assert!(matches!(
            next(t0(), Some(&m), &[], &wanted()).unwrap(),
            Next::Write { .. }
        ));
    }

    #[test]
    fn the_serving_certificate_is_renewed_only_under_a_trusted_ca() {
        let (m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        let later = t0() + days(61); // 29 of 90 days left
        assert_eq!(next(later, Some(&m), &[], &wanted()).unwrap(), Next::Keep);
        let (renewed, why) =
            written(next(later, Some(&m), &[first_ca_der(&m)], &wanted()).unwrap());
        assert_eq!(why, "the serving certificate is due for renewal");
        assert_eq!(renewed.ca_bundle, m.ca_bundle);
        assert_ne!(renewed.tls_cert, m.tls_cert);
        let serving = Facts::parse(&renewed.tls_cert).unwrap();
        assert!(serving.not_after > later + days(89));
    }

    #[test]
    fn an_expired_serving_certificate_is_renewed_even_when_not_yet_trusted() {
        let (m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        let (_, why) = written(next(t0() + days(91), Some(&m), &[], &wanted()).unwrap());
        assert_eq!(why, "the serving certificate has expired");
    }

    #[test]
    fn other_dns_names_renew_the_serving_certificate() {
        let (m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        let mut other = wanted();
        other.dns_names = vec!["webhook.other.svc".into()];
        let (renewed, why) = written(next(t0(), Some(&m), &[first_ca_der(&m)], &other).unwrap());
        assert_eq!(why, "the serving certificate names other DNS names");
        assert_eq!(
            Facts::parse(&renewed.tls_cert).unwrap().dns_names,
            other.dns_names
        );
    }

    #[test]
    fn a_ca_rotation_is_trusted_before_it_signs_and_the_old_ca_leaves_when_expired() {
        let (m, _) = written(next(t0(), None, &[], &wanted()).unwrap());
        let old_ca = first_ca_der(&m);
        // 201 of 300 days: the CA is due; the serving certificate (renewed on the way) is not.
        let mut m = m;
        let mut now = t0();
        for step in [60, 60, 60] {
            now += days(step);
            if let Next::Write { material, .. } =
                next(now, Some(&m), std::slice::from_ref(&old_ca), &wanted()).unwrap()
            {
                m = material;
            }
        }
        now += days(21); // day 201
        let (rotated, why) =
            written(next(now, Some(&m), std::slice::from_ref(&old_ca), &wanted()).unwrap());
        assert!(why.starts_with("the CA is due for renewal"), "{why}");
        let bundle = trusted_ders(&rotated.ca_bundle);
        assert_eq!(bundle.len(), 2);
        assert_eq!(bundle[1], old_ca, "the old CA stays trusted");
        let new_ca = bundle[0].clone();
        // Not yet trusted by the configurations: the serving certificate stays under the old CA.
        assert_eq!(rotated.tls_cert, m.tls_cert);
        assert_eq!(
            next(
                now,
                Some(&rotated),
                std::slice::from_ref(&old_ca),
                &wanted()
            )
            .unwrap(),
            Next::Keep
        );
        // Once trusted, the serving certificate moves to the new CA.
        let (moved, why) = written(
            next(
                now,
                Some(&rotated),
                &[new_ca.clone(), old_ca.clone()],
                &wanted(),
            )
            .unwrap(),
        );
        // Due as well by now; either reason moves it.
        assert!(why.starts_with("the serving certificate"), "{why}");
        let ca = parse_all(&moved.ca_bundle).unwrap().remove(0);
        assert!(Facts::parse(&moved.tls_cert).unwrap().signed_by(&ca));
        // After the old CA expires it leaves the bundle.
        let (pruned, why) = written(
            next(
                t0() + days(301),
                Some(&moved),
                std::slice::from_ref(&new_ca),
                &wanted(),
            )
            .unwrap(),
        );
        assert!(why.contains("an expired CA left the bundle"), "{why}");
        assert_eq!(trusted_ders(&pruned.ca_bundle), vec![new_ca]);
    }
}
