//! Go's `time.Parse` for the two layouts Kubernetes timestamps use, `time.RFC3339`
//! (`metav1.Time`) and `metav1.RFC3339Micro` (`metav1.MicroTime`), reduced to what matters
//! here: whether a string parses, and if not Go's `*time.ParseError` message (`parsing time
//! "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`, `parsing time "...": month
//! out of range`, `...: extra text: "..."`). It follows `time.parse` element by element.

/// The layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Rfc3339,
    Rfc3339Micro,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elem {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// `.000000`: exactly this many fractional digits.
    Frac(usize),
    /// `Z07:00`.
    Zone,
}

impl Layout {
    fn text(self) -> &'static str {
        match self {
            Self::Rfc3339 => "2006-01-02T15:04:05Z07:00",
            Self::Rfc3339Micro => "2006-01-02T15:04:05.000000Z07:00",
        }
    }

    /// `(literal prefix, element, the element's layout text)`, as `nextStdChunk` cuts the layout.
    fn chunks(self) -> Vec<(&'static str, Elem, &'static str)> {
        let mut chunks = vec![
            ("", Elem::Year, "2006"),
            ("-", Elem::Month, "01"),
            ("-", Elem::Day, "02"),
            ("T", Elem::Hour, "15"),
            (":", Elem::Minute, "04"),
            (":", Elem::Second, "05"),
        ];
        if self == Self::Rfc3339Micro {
            chunks.push(("", Elem::Frac(6), ".000000"));
        }
        chunks.push(("", Elem::Zone, "Z07:00"));
        chunks
    }
}

/// Why an element did not parse.
enum Failure {
    /// `errBad`: reported with the element and the value from where it started.
    Bad,
    /// A value out of range (`month`, `hour`, ...).
    Range(&'static str),
}

/// Go's error for parsing `value` with `layout`; None when it parses.
pub fn parse_error(layout: Layout, value: &str) -> Option<String> {
    let quoted = quote(value.as_bytes());
    let cannot = |elem: &[u8], layout_elem: &str| {
        format!(
            "parsing time {quoted} as {}: cannot parse {} as {}",
            quote(layout.text().as_bytes()),
            quote(elem),
            quote(layout_elem.as_bytes())
        )
    };
    let mut rest = value.as_bytes();
    let chunks = layout.chunks();
    let (mut year, mut month, mut day) = (0, 0, 0);
    for (i, (prefix, elem, text)) in chunks.iter().enumerate() {
        rest = match rest.strip_prefix(prefix.as_bytes()) {
            Some(r) => r,
            None => return Some(cannot(rest, prefix)),
        };
        let hold = rest;
        let next_is_frac = matches!(chunks.get(i + 1), Some((_, Elem::Frac(_), _)));
        let parsed = element(*elem, &mut rest, next_is_frac);
        match parsed {
            Ok(n) => match elem {
                Elem::Year => year = n,
                Elem::Month => month = n,
                Elem::Day => day = n,
                _ => {}
            },
            Err(Failure::Range(what)) => {
                return Some(format!("parsing time {quoted}: {what} out of range"));
            }
            Err(Failure::Bad) => return Some(cannot(hold, text)),
        }
    }
    if !rest.is_empty() {
        return Some(format!(
            "parsing time {quoted}: extra text: {}",
            quote(rest)
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Some(format!("parsing time {quoted}: day out of range"));
    }
    None
}

/// Parses one element off the front of `rest`; its number where it has one.
fn element(elem: Elem, rest: &mut &[u8], next_is_frac: bool) -> Result<i64, Failure> {
    let value = *rest;
    match elem {
        Elem::Year => {
            if value.len() < 4 || !value[..4].iter().all(u8::is_ascii_digit) {
                return Err(Failure::Bad);
            }
            *rest = &value[4..];
            Ok(number(&value[..4]))
        }
        Elem::Month => ranged(getnum(rest, true)?, 1, 12, "month"),
        Elem::Day => getnum(rest, true),
        Elem::Hour => ranged(getnum(rest, false)?, 0, 23, "hour"),
        Elem::Minute => ranged(getnum(rest, true)?, 0, 59, "minute"),
        Elem::Second => {
            let second = ranged(getnum(rest, true)?, 0, 59, "second")?;
            // A fractional second the layout does not have is taken, whatever its length.
            let after = *rest;
            let fraction = after.len() >= 2 && matches!(after[0], b'.' | b',');
            if fraction && after[1].is_ascii_digit() && !next_is_frac {
                let digits = after[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                *rest = &after[1 + digits..];
            }
            Ok(second)
        }
        Elem::Frac(digits) => {
            let width = 1 + digits;
            let well_formed = value.len() >= width
                && matches!(value[0], b'.' | b',')
                && value[1..width].iter().all(u8::is_ascii_digit);
            if !well_formed {
                return Err(Failure::Bad);
            }
            *rest = &value[width..];
            Ok(0)
        }
        Elem::Zone => zone(rest),
    }
}

/// `Z`, or `±hh:mm` with hours up to 24 and minutes up to 60.
fn zone(rest: &mut &[u8]) -> Result<i64, Failure> {
    let value = *rest;
    if value.first() == Some(&b'Z') {
        *rest = &value[1..];
        return Ok(0);
    }
    if value.len() < 6 || value[3] != b':' {
        return Err(Failure::Bad);
    }
    let (mut hour, mut minute) = (&value[1..3], &value[4..6]);
    *rest = &value[6..];
    let hours = getnum(&mut hour, true)?;
    let minutes = getnum(&mut minute, true)?;
    if hours > 24 {
        return Err(Failure::Range("time zone offset hour"));
    }
    if minutes > 60 {
        return Err(Failure::Range("time zone offset minute"));
    }
    if !matches!(value[0], b'+' | b'-') {
        return Err(Failure::Bad);
    }
    Ok(0)
}

fn ranged(n: i64, min: i64, max: i64, what: &'static str) -> Result<i64, Failure> {
    if n < min || n > max {
        Err(Failure::Range(what))
    } else {
        Ok(n)
    }
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(rest: &mut &[u8], fixed: bool) -> Result<i64, Failure> {
    let value = *rest;
    let digit = |i: usize| value.get(i).filter(|c| c.is_ascii_digit());
    let Some(first) = digit(0) else {
        return Err(Failure::Bad);
    };
    match digit(1) {
        Some(second) => {
            *rest = &value[2..];
            Ok(i64::from(first - b'0') * 10 + i64::from(second - b'0'))
        }
        None if fixed => Err(Failure::Bad),
        None => {
            *rest = &value[1..];
            Ok(i64::from(first - b'0'))
        }
    }
}

fn number(digits: &[u8]) -> i64 {
    digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'))
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The time package's `quote`: quotes and backslashes escaped, other bytes outside printable
/// ASCII as `\xNN`.
fn quote(text: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in text {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            b' '..=b'~' => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc(value: &str) -> Option<String> {
        parse_error(Layout::Rfc3339, value)
    }

    #[test]
    fn valid_times_parse() {
        for value in [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.123Z",
            "2024-02-29T23:59:59+01:00",
            "2026-01-01T1:00:00Z",
        ] {
            assert_eq!(rfc(value), None, "{value}");
        }
        assert_eq!(
            parse_error(Layout::Rfc3339Micro, "2026-01-01T00:00:00.000000Z"),
            None
        );
    }

    #[test]
    fn errors_name_the_element_that_failed_as_go_does() {
        const AS: &str = "as \"2006-01-02T15:04:05Z07:00\"";
        assert_eq!(
            rfc("x").unwrap(),
            format!("parsing time \"x\" {AS}: cannot parse \"x\" as \"2006\"")
        );
        assert_eq!(
            rfc("").unwrap(),
            format!("parsing time \"\" {AS}: cannot parse \"\" as \"2006\"")
        );
        assert_eq!(
            rfc("2026-01-01").unwrap(),
            format!("parsing time \"2026-01-01\" {AS}: cannot parse \"\" as \"T\"")
        );
        assert_eq!(
            rfc("2026-1-01T00:00:00Z").unwrap(),
            format!(
                "parsing time \"2026-1-01T00:00:00Z\" {AS}: cannot parse \"1-01T00:00:00Z\" as \"01\""
            )
        );
        assert_eq!(
            rfc("2026-01-01T00:00:00").unwrap(),
            format!("parsing time \"2026-01-01T00:00:00\" {AS}: cannot parse \"\" as \"Z07:00\"")
        );
        assert_eq!(
            rfc("2026-13-01T00:00:00Z").unwrap(),
            "parsing time \"2026-13-01T00:00:00Z\": month out of range"
        );
        assert_eq!(
            rfc("2026-02-30T00:00:00Z").unwrap(),
            "parsing time \"2026-02-30T00:00:00Z\": day out of range"
        );
        assert_eq!(
            rfc("2026-01-01T00:00:00Zx").unwrap(),
            "parsing time \"2026-01-01T00:00:00Zx\": extra text: \"x\""
        );
        assert_eq!(
            parse_error(Layout::Rfc3339Micro, "2026-01-01T00:00:00Z").unwrap(),
            "parsing time \"2026-01-01T00:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
        );
    }
}
