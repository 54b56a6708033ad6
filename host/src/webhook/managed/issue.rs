//! Making certificates: a CA, and a serving certificate signed by it, both ECDSA P-256 (rcgen's
//! default key), back-dated a little.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use time::OffsetDateTime;

use super::certificates::Facts;
use super::material::Wanted;

/// Certificates are back-dated by this much, for API servers whose clock is a little behind.
pub(super) const BACKDATE: time::Duration = time::Duration::minutes(5);

#[derive(Debug, thiserror::Error)]
#[error("making a certificate failed: {0}")]
pub struct IssueError(String);

impl From<rcgen::Error> for IssueError {
    fn from(err: rcgen::Error) -> Self {
        IssueError(err.to_string())
    }
}

fn validity(params: &mut CertificateParams, now: OffsetDateTime, length: Duration) {
    params.not_before = now - BACKDATE;
    params.not_after = now + time::Duration::try_from(length).unwrap_or(time::Duration::DAY);
}

pub(super) fn new_ca(
    now: OffsetDateTime,
    wanted: &Wanted,
) -> Result<(Facts, String, Issuer<'static, KeyPair>), IssueError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut name = DistinguishedName::new();
    // The time makes each CA's name its own, so a serving certificate names which one signed it.
    name.push(
        DnType::CommonName,
        format!("mcs-policy webhook CA {}", now.unix_timestamp()),
    );
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut params, now, wanted.ca_validity);
    let cert = params.self_signed(&key)?;
    let facts = Facts::parse(&cert.pem()).ok_or_else(|| IssueError("unparsable CA".into()))?;
    let key_pem = key.serialize_pem();
    Ok((facts, key_pem, Issuer::new(params, key)))
}

pub(super) fn new_serving(
    now: OffsetDateTime,
    wanted: &Wanted,
    issuer: &Issuer<'static, KeyPair>,
) -> Result<(String, String), IssueError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.subject_alt_names = wanted
        .dns_names
        .iter()
        .map(|name| Ok(SanType::DnsName(name.clone().try_into()?)))
        .collect::<Result<_, rcgen::Error>>()?;
    if let Some(first) = wanted.dns_names.first() {
        params.distinguished_name.push(DnType::CommonName, first);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut params, now, wanted.serving_validity);
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}
