//! The syntax of label keys and values, with apimachinery's wording (`content.IsLabelKey`,
//! `content.IsLabelValue`, `content.IsDNS1123Subdomain`), and `field.Error` texts as the label
//! selector parser reports them (`values[0][app]: Invalid value: "x y": ...`).

use std::fmt;

const LABEL_KEY_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FORMAT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// A `field.Error` of type Invalid: `<path>: Invalid value: "<value>": <detail>`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub path: String,
    pub value: String,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(path: &str, value: &str, detail: &str) -> Self {
        Self {
            path: path.to_owned(),
            value: value.to_owned(),
            detail: detail.to_owned(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: Invalid value: {}: {}",
            self.path,
            go_quote(&self.value),
            self.detail
        )
    }
}

/// A string as Go's `%q` prints it (close enough: escapes quotes, backslashes and controls).
pub fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c if c.is_control() => quoted.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// `RegexError`: the message with its examples and the pattern.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

fn max_length_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_label_word(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Dot-separated `[a-z0-9]([-a-z0-9]*[a-z0-9])?` labels.
fn is_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        let bytes = label.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        bytes.first().is_some_and(alnum)
            && bytes.last().is_some_and(alnum)
            && bytes.iter().all(|b| alnum(b) || *b == b'-')
    })
}

fn subdomain_errors(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 253 {
        errors.push(max_length_error(253));
    }
    if !is_subdomain(text) {
        errors.push(regex_error(
            SUBDOMAIN_MESSAGE,
            SUBDOMAIN_FORMAT,
            &["example.com"],
        ));
    }
    errors
}

/// `content.IsLabelKey`: an optional DNS subdomain prefix and `/`, then a name.
pub fn label_key_errors(key: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = key.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                let prefixed = subdomain_errors(prefix).into_iter();
                errors.extend(prefixed.map(|e| format!("prefix part {e}")));
            }
            *name
        }
        _ => {
            let message = regex_error(LABEL_KEY_MESSAGE, LABEL_KEY_FORMAT, &examples);
            return vec![format!(
                "a valid label key {message} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_length_error(63)));
    }
    if !is_label_word(name) {
        let message = regex_error(LABEL_KEY_MESSAGE, LABEL_KEY_FORMAT, &examples);
        errors.push(format!("name part {message}"));
    }
    errors
}

/// `content.IsLabelValue`: empty, or at most 63 bytes of a label word.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_length_error(63));
    }
    if !value.is_empty() && !is_label_word(value) {
        let examples = ["MyValue", "my_value", "12345"];
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            LABEL_VALUE_FORMAT,
            &examples,
        ));
    }
    errors
}

/// The Invalid error at `path` for a bad label key, if it is one.
pub fn label_key_error(path: &str, key: &str) -> Option<FieldError> {
    let errors = label_key_errors(key);
    (!errors.is_empty()).then(|| FieldError::invalid(path, key, &errors.join("; ")))
}

/// The Invalid error at `path` for a bad label value, if it is one.
pub fn label_value_error(path: &str, value: &str) -> Option<FieldError> {
    let errors = label_value_errors(value);
    (!errors.is_empty()).then(|| FieldError::invalid(path, value, &errors.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_follow_the_qualified_name_rules() {
        assert!(label_key_errors("kubernetes.io/service-name").is_empty());
        assert!(label_key_errors("app").is_empty());
        assert_eq!(
            label_key_errors("/x"),
            vec!["prefix part must be non-empty"]
        );
        let bad_name = &label_key_errors("-x")[0];
        assert!(bad_name.starts_with("name part must consist of alphanumeric characters"));
        assert!(bad_name.ends_with(
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ));
        assert_eq!(
            label_key_errors(&"k".repeat(64))[0],
            "name part must be no more than 63 bytes"
        );
        assert!(
            label_key_errors("Bad_Prefix/x")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
        assert!(label_key_errors("a/b/c")[0].starts_with("a valid label key must consist"));
    }

    #[test]
    fn label_values_may_be_empty_but_not_malformed() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("a.b_c-1").is_empty());
        assert_eq!(label_value_errors(".a").len(), 1);
        assert_eq!(
            label_value_errors(&"v".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        let error = label_value_error("values[0][app]", "x y").unwrap();
        assert!(error.to_string().starts_with(
            "values[0][app]: Invalid value: \"x y\": a valid label must be an empty string"
        ));
    }
}
