//! Go's string printers, so values inside messages look exactly as Karmada (Go) prints them:
//! `%q` (`strconv.Quote`) for plain strings, `encoding/json` for everything else.

use std::fmt::Write as _;

/// `strconv.Quote`: double-quoted, printable runes kept as UTF-8, the rest escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
/// Without Unicode tables in the component we exclude the categories Go excludes that occur in
/// practice: controls, format characters, non-ASCII spaces, separators and private use.
fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    !(matches!(u,
        0x80..=0xa0
        | 0xad
        | 0x600..=0x605
        | 0x61c
        | 0x6dd
        | 0x70f
        | 0x1680
        | 0x180e
        | 0x2000..=0x200f
        | 0x2028..=0x202f
        | 0x205f..=0x2064
        | 0x2066..=0x206f
        | 0x3000
        | 0xd800..=0xf8ff
        | 0xfeff
        | 0xfff9..=0xfffb
        | 0xfffe..=0xffff
        | 0xe0001
        | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff))
}

/// `json.Marshal` of a Go string: HTML-safe escapes for `<`, `>`, `&`, and U+2028/U+2029.
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `fmt.Sprintf("%#v", []string{...})`, used by the no-new-finalizers message.
pub fn go_string_slice_literal(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_strconv_quote() {
        assert_eq!(go_quote("foo"), "\"foo\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("tab\there\n"), "\"tab\\there\\n\"");
        assert_eq!(go_quote("\u{0}"), "\"\\x00\"");
        assert_eq!(go_quote("\u{7f}"), "\"\\x7f\"");
        assert_eq!(go_quote("héllo"), "\"héllo\"");
        assert_eq!(go_quote("日本"), "\"日本\"");
        assert_eq!(go_quote("🚀"), "\"🚀\"");
        assert_eq!(go_quote("\u{a0}"), "\"\\u00a0\"");
        assert_eq!(go_quote("\u{200b}"), "\"\\u200b\"");
        assert_eq!(go_quote("\u{feff}"), "\"\\ufeff\"");
        assert_eq!(go_quote("\u{f0000}"), "\"\\U000f0000\"");
    }

    #[test]
    fn encodes_like_encoding_json() {
        assert_eq!(go_json_string(""), "\"\"");
        assert_eq!(go_json_string("CrossCluster"), "\"CrossCluster\"");
        assert_eq!(go_json_string("<a&b>"), "\"\\u003ca\\u0026b\\u003e\"");
        assert_eq!(go_json_string("x\u{1}y"), "\"x\\u0001y\"");
        assert_eq!(go_json_string("é\u{2028}"), "\"é\\u2028\"");
    }

    #[test]
    fn prints_string_slices_as_go_literals() {
        assert_eq!(
            go_string_slice_literal(&["a".into(), "b/c".into()]),
            "[]string{\"a\", \"b/c\"}"
        );
    }
}
