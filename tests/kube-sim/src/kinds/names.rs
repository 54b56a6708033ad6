//! Name formats of apimachinery's `k8s.io/apimachinery/pkg/util/validation`, with their
//! messages: `IsQualifiedName` (finalizers, an Event's reporting controller). Generic metadata
//! validation needs the same checks; whichever copy the merge keeps can serve both.

const QUALIFIED_NAME_ERROR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const SUBDOMAIN_ERROR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// apimachinery's `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of
/// at most 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut problems = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else if prefix.len() > 253 {
                problems.push("prefix part must be no more than 253 characters".to_owned());
            } else if !is_subdomain(prefix) {
                problems.push(format!("prefix part {SUBDOMAIN_ERROR}"));
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_ERROR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_owned());
    }
    if !is_qualified_name_part(name) {
        problems.push(format!("name part {QUALIFIED_NAME_ERROR}"));
    }
    problems
}

fn is_qualified_name_part(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_subdomain(value: &str) -> bool {
    value.split('.').all(|label| {
        let bytes = label.as_bytes();
        let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
            return false;
        };
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("bad_finalizer").is_empty());
        assert!(is_qualified_name("networking.karmada.io/mcs-policy-sync").is_empty());
        assert_eq!(is_qualified_name("-x").len(), 1);
        assert_eq!(
            is_qualified_name("Example.com/x"),
            vec![format!("prefix part {SUBDOMAIN_ERROR}")]
        );
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert_eq!(is_qualified_name(&"a".repeat(64)).len(), 1);
    }
}
