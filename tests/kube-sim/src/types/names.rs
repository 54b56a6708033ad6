//! The string checks of apimachinery's `k8s.io/apimachinery/pkg/util/validation`
//! (`IsDNS1123Label`, `IsDNS1123Subdomain`, `IsDNS1035Label`, `IsQualifiedName`,
//! `IsValidLabelValue`) with their exact messages. Each returns the list of problems, empty
//! when the value is valid.

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

const CONFIG_MAP_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";

/// `IsConfigMapKey`: a key of a ConfigMap's or Secret's data.
pub fn config_map_key(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len_chars(253));
    }
    let valid = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !valid {
        errors.push(regex_error(
            CONFIG_MAP_KEY_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    // `hasChDirPrefix`
    if value == "." {
        errors.push("must not be '.'".to_owned());
    } else if value == ".." {
        errors.push("must not be '..'".to_owned());
    } else if value.starts_with("..") {
        errors.push("must not start with '..'".to_owned());
    }
    errors
}

/// `RegexError`: the message, examples and the regex.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut text = msg.to_owned();
    text.push_str(" (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            text.push_str(" or ");
        }
        text.push_str(&format!("'{example}', "));
    }
    text.push_str(&format!("regex used for validation is '{fmt}')"));
    text
}

fn max_len_chars(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(value: &str) -> bool {
    let (Some(first), Some(last)) = (value.chars().next(), value.chars().last()) else {
        return false;
    };
    is_lower_alnum(first)
        && is_lower_alnum(last)
        && value.chars().all(|c| is_lower_alnum(c) || c == '-')
}

/// `IsDNS1123Label`: at most 63 characters, lower case alphanumerics and '-'.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_chars(63));
    }
    if !matches_dns1123_label(value) {
        errors.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

/// `IsDNS1123Subdomain`: at most 253 characters, dot-separated DNS-1123 labels.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len_chars(253));
    }
    if !value.split('.').all(matches_dns1123_label) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1035Label`: a DNS-1123 label that starts with a letter.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_chars(63));
    }
    let starts_alpha = value.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    if !(starts_alpha && matches_dns1123_label(value)) {
        errors.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_part(value: &str) -> bool {
    let (Some(first), Some(last)) = (value.chars().next(), value.chars().last()) else {
        return false;
    };
    is_alnum(first)
        && is_alnum(last)
        && value
            .chars()
            .all(|c| is_alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and '/', then a name of at most 63
/// characters (label keys, annotation keys, finalizers).
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                let problems = dns1123_subdomain(prefix);
                errors.extend(problems.into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            let regex = regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            );
            errors.push(format!(
                "a qualified name {regex} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_chars(63)));
    }
    if !matches_qualified_part(name) {
        let regex = regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        );
        errors.push(format!("name part {regex}"));
    }
    errors
}

/// `IsValidLabelValue`: empty, or at most 63 bytes of a qualified name's characters.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_owned());
    }
    if !value.is_empty() && !matches_qualified_part(value) {
        errors.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// `path.IsValidPathSegmentName`: a name usable in a URL path.
pub fn path_segment_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value == "." || value == ".." {
        errors.push(format!("may not be '{value}'"));
    }
    for illegal in ["/", "%"] {
        if value.contains(illegal) {
            errors.push(format!("may not contain '{illegal}'"));
        }
    }
    errors
}

/// `maskTrailingDash`: a generateName prefix may end with '-' (a suffix follows).
pub fn mask_trailing_dash(prefix: &str) -> String {
    match prefix.strip_suffix('-') {
        Some(rest) if prefix.len() > 1 => format!("{rest}a"),
        _ => prefix.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_and_subdomains() {
        assert!(dns1123_label("web-1").is_empty());
        assert!(dns1123_label("1web").is_empty());
        assert_eq!(dns1123_label("Web_Bad").len(), 1);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert!(dns1123_label("web-").len() == 1 && dns1123_label("").len() == 1);
        assert!(dns1035_label("web").is_empty());
        assert_eq!(dns1035_label("1web").len(), 1);
        assert!(dns1123_subdomain("a.b-c.d").is_empty());
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
        assert!(dns1123_subdomain(&"a".repeat(253)).is_empty());
        assert_eq!(dns1123_subdomain(&"a".repeat(254)).len(), 1);
        assert!(dns1123_label("Web_Bad")[0].starts_with("a lowercase RFC 1123 label must"));
        assert!(dns1123_label("x_")[0].ends_with(
            "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ));
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(qualified_name("kubernetes.io/service-name").is_empty());
        assert!(qualified_name("Bad_Name.x").is_empty());
        assert_eq!(qualified_name("/x"), vec!["prefix part must be non-empty"]);
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert!(qualified_name("x/-y")[0].starts_with("name part must consist"));
        assert!(label_value("").is_empty());
        assert!(label_value("my_value.1").is_empty());
        assert_eq!(
            label_value(&"s".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        assert_eq!(label_value("-x").len(), 1);
    }

    #[test]
    fn generate_name_prefixes_may_end_with_a_dash() {
        assert_eq!(mask_trailing_dash("gen-"), "gena");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert!(path_segment_name("a/b").len() == 1 && path_segment_name("..").len() == 1);
    }
}
