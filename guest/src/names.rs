//! Kubernetes name and value syntax (`k8s.io/apimachinery/pkg/util/validation`): each check
//! returns the messages Kubernetes returns, in its order. Lengths are in bytes, as Go's `len`.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

pub const DNS1123_LABEL_MAX: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
const DNS1035_LABEL_MAX: usize = 63;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const CLUSTER_NAME_MAX: usize = 48;

/// `validation.MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `validation.RegexError`: `msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(ex);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, whole string.
fn matches_dns1123_label(s: &str) -> bool {
    matches_dns1123_label_bytes(s.as_bytes())
}

fn matches_dns1123_label_bytes(b: &[u8]) -> bool {
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Labels joined by single dots. Split as bytes: `str::split` looks for the dot with `memchr`,
/// whose set-up costs more than the short names it scans, in the component most of all.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.as_bytes()
        .split(|&c| c == b'.')
        .all(matches_dns1123_label_bytes)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, whole string.
fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, whole string.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_alnum(f)
                && is_alnum(l)
                && b.iter()
                    .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
        }
        _ => false,
    }
}

/// `validation.IsDNS1123Label`.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `validation.IsDNS1123Subdomain`.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsDNS1035Label`.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX {
        errs.push(max_len_error(DNS1035_LABEL_MAX));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `apimachineryvalidation.NameIsDNS1035Label`: for a `generateName` prefix, a trailing `-` is
/// allowed, so the last two bytes are replaced by `a` before checking.
pub fn dns1035_name(value: &str, prefix: bool) -> Vec<String> {
    if prefix && value.len() > 1 && value.ends_with('-') {
        let cut = value.len() - 2;
        // Go slices bytes; a multi-byte rune here fails the label check either way.
        let head = String::from_utf8_lossy(&value.as_bytes()[..cut]);
        return dns1035_label(&format!("{head}a"));
    }
    dns1035_label(value)
}

/// Karmada's `clustervalidation.ValidateClusterName`: the messages, joined by the caller.
pub fn cluster_name(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["must be not empty".to_string()];
    }
    if name.len() > CLUSTER_NAME_MAX {
        return vec![max_len_error(CLUSTER_NAME_MAX)];
    }
    dns1123_label(name)
}

/// Why `name` cannot name a cluster: [`cluster_name`]'s messages joined with `,` as Karmada's
/// validation error joins them; `None` for a valid name.
pub fn cluster_name_problem(name: &str) -> Option<String> {
    let messages = cluster_name(name);
    (!messages.is_empty()).then(|| messages.join(","))
}

/// `validation.IsQualifiedName`: `[prefix/]name`.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    // `[prefix/]name`: no slash, or exactly one (found byte by byte, as above).
    let slash = value.bytes().position(|c| c == b'/');
    let name = match slash.map(|at| value.split_at(at)) {
        None => value,
        Some((prefix, rest)) if !rest.bytes().skip(1).any(|c| c == b'/') => {
            let name = &rest[1..];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !(value.is_empty() || matches_qualified_name_part(value)) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `netutils.ParseIPSloppy(s) != nil`: IPv4 dotted quads (leading zeros allowed) or IPv6
/// (optionally ending in a dotted quad); no zones, no brackets.
pub fn is_ip_sloppy(s: &str) -> bool {
    if s.contains(':') {
        return is_ipv6(s);
    }
    is_ipv4_sloppy(s)
}

fn is_ipv4_sloppy(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.trim_start_matches('0').len() <= 3
                && p.parse::<u32>().is_ok_and(|n| n <= 255)
        })
}

fn is_ipv6(s: &str) -> bool {
    // Go accepts an embedded IPv4 tail with leading zeros; normalise it before std parses.
    if let Some(pos) = s.rfind(':') {
        let tail = &s[pos + 1..];
        if tail.contains('.') {
            if !is_ipv4_sloppy(tail) {
                return false;
            }
            let octets: Vec<u32> = tail.split('.').filter_map(|p| p.parse().ok()).collect();
            let hex = format!(
                "{:x}:{:x}",
                (octets[0] << 8) | octets[1],
                (octets[2] << 8) | octets[3]
            );
            return format!("{}{}", &s[..=pos], hex)
                .parse::<std::net::Ipv6Addr>()
                .is_ok();
        }
    }
    s.parse::<std::net::Ipv6Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL_REGEX_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_REGEX_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn dns1123_label_accepts_valid_labels() {
        for ok in ["a", "0", "a-b", "abc-123", "x".repeat(63).as_str()] {
            assert!(dns1123_label(ok).is_empty(), "{ok}");
        }
    }

    #[test]
    fn dns1123_label_reports_dots_separately_from_other_characters() {
        assert_eq!(dns1123_label("foo.withdot"), vec!["must not contain dots"]);
        for bad in ["", "-a", "a-", "A", "a_b", "é", "a..b", ".a"] {
            assert_eq!(dns1123_label(bad), vec![LABEL_REGEX_MSG], "{bad:?}");
        }
    }

    #[test]
    fn dns1123_label_reports_length_and_syntax_together() {
        let long_bad = format!("{}_", "a".repeat(64));
        assert_eq!(
            dns1123_label(&long_bad),
            vec![
                "must be no more than 63 characters".to_string(),
                LABEL_REGEX_MSG.to_string()
            ]
        );
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn dns1035_label_requires_a_leading_letter() {
        assert!(dns1035_label("abc-123").is_empty());
        assert_eq!(dns1035_label("1abc"), vec![DNS1035_REGEX_MSG]);
        assert_eq!(dns1035_label("a.b"), vec![DNS1035_REGEX_MSG]);
    }

    #[test]
    fn generate_name_prefix_masks_the_trailing_dash() {
        assert!(dns1035_name("web-", true).is_empty());
        assert!(dns1035_name("w-", true).is_empty());
        assert!(dns1035_name("a", true).is_empty());
        assert_eq!(dns1035_name("-", true), vec![DNS1035_REGEX_MSG]);
        assert_eq!(dns1035_name("web-", false), vec![DNS1035_REGEX_MSG]);
        // "1-" becomes "a" and passes: the mask hides the leading digit
        assert!(dns1035_name("1-", true).is_empty());
    }

    #[test]
    fn cluster_names_follow_karmada() {
        assert_eq!(cluster_name(""), vec!["must be not empty"]);
        assert_eq!(
            cluster_name(&"a".repeat(49)),
            vec!["must be no more than 48 characters"]
        );
        assert_eq!(cluster_name("Member1"), vec![LABEL_REGEX_MSG]);
        assert!(cluster_name("member1").is_empty());
        assert_eq!(cluster_name_problem("member1"), None);
        assert_eq!(
            cluster_name_problem("Member1").as_deref(),
            Some(LABEL_REGEX_MSG)
        );
    }

    #[test]
    fn qualified_names_check_prefix_and_name() {
        assert!(qualified_name("app").is_empty());
        assert!(qualified_name("example.com/My_Name.1").is_empty());
        assert_eq!(qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name("a/"),
            vec![
                "name part must be non-empty".to_string(),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()
            ]
        );
        assert_eq!(
            qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(
            qualified_name("Bad_Prefix/x"),
            vec![
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }

    #[test]
    fn label_values_may_be_empty() {
        assert!(label_value("").is_empty());
        assert!(label_value("my_value-1.2").is_empty());
        assert_eq!(label_value("-x").len(), 1);
        assert_eq!(
            label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn parses_ips_as_go_does_sloppily() {
        for ok in [
            "1.2.3.4",
            "010.001.0.255",
            "::1",
            "fe80::1",
            "::ffff:1.2.3.4",
            "::ffff:01.02.03.004",
        ] {
            assert!(is_ip_sloppy(ok), "{ok}");
        }
        for bad in [
            "1.2.3",
            "1.2.3.256",
            "a.b.c.d",
            "",
            "fe80::1%eth0",
            "[::1]",
            "1.2.3.4.5",
            "example.com",
        ] {
            assert!(!is_ip_sloppy(bad), "{bad}");
        }
    }
}
