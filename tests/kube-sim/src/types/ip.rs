//! IP address checks as apimachinery's `IsValidIP` (strict parsing: no leading zeros, no
//! IPv4-mapped IPv6) and core validation's `ValidateEndpointIP` report them.

use std::net::{IpAddr, Ipv4Addr};

use super::field::{ErrorList, FieldError};

/// The problem of a string that is not a valid IP address.
pub const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// The address `value` parses to, or the reason it is refused (`IsValidIP`).
pub fn parse(value: &str) -> Result<IpAddr, &'static str> {
    match value.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_some() && value.contains('.') => {
            Err("must not be an IPv4-mapped IPv6 address")
        }
        Ok(ip) => Ok(ip),
        Err(_) if sloppy_ipv4(value).is_some() => Err("must not have leading 0s"),
        Err(_) => Err(INVALID_IP),
    }
}

/// What Go's lenient parser makes of a dotted quad whose parts may have leading zeros.
fn sloppy_ipv4(value: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(&parts) {
        if part.is_empty() || part.len() > 3 || !part.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

/// `IsValidIP` as field errors on `field`.
pub fn validate(field: &str, value: &str) -> ErrorList {
    match parse(value) {
        Ok(_) => ErrorList::new(),
        Err(problem) => vec![FieldError::invalid(field, value, problem)],
    }
}

/// `ValidateEndpointIP`: addresses that make no sense as endpoints.
pub fn validate_endpoint(field: &str, ip: IpAddr, value: &str) -> ErrorList {
    let mut problems = Vec::new();
    if ip.is_unspecified() {
        problems.push(format!("may not be unspecified ({value})"));
    }
    if ip.is_loopback() {
        problems.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_owned());
    }
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    if link_local {
        problems.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_owned());
    }
    let link_local_multicast = match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => (v6.segments()[0] & 0xff0f) == 0xff02,
    };
    if link_local_multicast {
        problems.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_owned(),
        );
    }
    problems
        .iter()
        .map(|p| FieldError::invalid(field, value, p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_parsing_names_the_problem() {
        assert!(parse("10.244.1.5").is_ok());
        assert!(parse("fd00::1").is_ok());
        assert_eq!(parse("10.244.001.5"), Err("must not have leading 0s"));
        assert_eq!(
            parse("::ffff:10.1.2.3"),
            Err("must not be an IPv4-mapped IPv6 address")
        );
        assert_eq!(parse(""), Err(INVALID_IP));
        assert_eq!(parse("10.1.2"), Err(INVALID_IP));
    }

    #[test]
    fn endpoint_addresses_may_not_be_special() {
        let check = |v: &str| validate_endpoint("a", parse(v).unwrap(), v).len();
        assert_eq!(check("10.1.2.3"), 0);
        assert_eq!(check("127.0.0.1"), 1);
        assert_eq!(check("0.0.0.0"), 1);
        assert_eq!(check("169.254.1.1"), 1);
        assert_eq!(check("224.0.0.5"), 1);
        assert_eq!(check("fe80::1"), 1);
    }
}
