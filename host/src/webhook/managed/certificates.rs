//! Reading certificates back: what the rotation rules ([`super::material`]) need to know of
//! a PEM certificate (its validity, DNS names, key, issuer), through rcgen's own X.509 parser.

use base64::Engine as _;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};

use super::issue::BACKDATE;

/// One parsed certificate: what the rules read of it.
#[derive(Clone, Debug)]
pub(super) struct Facts {
    pub(super) der: Vec<u8>,
    pub(super) pem: String,
    pub(super) not_after: OffsetDateTime,
    pub(super) not_before: OffsetDateTime,
    pub(super) dns_names: Vec<String>,
}

impl Facts {
    pub(super) fn parse(pem: &str) -> Option<Facts> {
        let mut all = parse_all(pem)?;
        (all.len() == 1).then(|| all.remove(0))
    }

    pub(super) fn from_der(der: Vec<u8>) -> Option<Facts> {
        let (_, cert) = X509Certificate::from_der(&der).ok()?;
        let validity = cert.validity();
        let dns_names = cert
            .extensions()
            .iter()
            .filter_map(|ext| match ext.parsed_extension() {
                ParsedExtension::SubjectAlternativeName(san) => Some(san),
                _ => None,
            })
            .flat_map(|san| san.general_names.iter())
            .filter_map(|name| match name {
                GeneralName::DNSName(dns) => Some(dns.to_string()),
                _ => None,
            })
            .collect();
        Some(Facts {
            not_after: validity.not_after.to_datetime(),
            not_before: validity.not_before.to_datetime(),
            dns_names,
            pem: pem_certificate(&der),
            der,
        })
    }

    /// Less than a third of its validity (as asked, without the back-dating) left at `now`.
    pub(super) fn due(&self, now: OffsetDateTime) -> bool {
        let life = self.not_after - self.not_before - BACKDATE;
        self.not_after - now < life / 3
    }

    pub(super) fn expired(&self, now: OffsetDateTime) -> bool {
        self.not_after <= now
    }

    pub(super) fn signed_by(&self, ca: &Facts) -> bool {
        let (Ok((_, cert)), Ok((_, issuer))) = (
            X509Certificate::from_der(&self.der),
            X509Certificate::from_der(&ca.der),
        ) else {
            return false;
        };
        cert.verify_signature(Some(issuer.public_key())).is_ok()
    }
}

/// Every PEM certificate in `text`, parsed; `None` when one does not parse or there is none.
pub(super) fn parse_all(text: &str) -> Option<Vec<Facts>> {
    let ders = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    if ders.is_empty() {
        return None;
    }
    ders.into_iter()
        .map(|der| Facts::from_der(der.to_vec()))
        .collect()
}

/// `der` as a PEM `CERTIFICATE` block, 64 characters a line.
pub(super) fn pem_certificate(der: &[u8]) -> String {
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in text.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// The CA certificates of a webhook configuration's `caBundle` (PEM), as DER.
pub fn trusted_ders(ca_bundle_pem: &str) -> Vec<Vec<u8>> {
    parse_all(ca_bundle_pem)
        .unwrap_or_default()
        .into_iter()
        .map(|f| f.der)
        .collect()
}

/// The certificate's public key, as rcgen's `KeyPair::public_key_raw` gives a key's.
pub(super) fn public_key_raw(cert_der: &[u8]) -> Option<Vec<u8>> {
    let (_, cert) = X509Certificate::from_der(cert_der).ok()?;
    Some(cert.public_key().subject_public_key.data.to_vec())
}
