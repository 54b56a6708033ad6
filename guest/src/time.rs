//! `metav1.Time` as Kubernetes handles it: parsed from RFC 3339, compared as an instant, printed
//! back in UTC with second precision. The component has no clock; these are plain calculations.

/// An instant, as seconds and nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    secs: i64,
    nanos: u32,
}

const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";

impl Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; the error is Go's `time.Parse` message.
    pub fn parse_rfc3339(s: &str) -> Result<Timestamp, String> {
        parse(s).ok_or_else(|| {
            format!(
                "parsing time {} as \"{LAYOUT}\": cannot parse {} as \"2006\"",
                crate::gofmt::go_quote(s),
                crate::gofmt::go_quote(s)
            )
        })
    }

    /// `metav1.Time.MarshalJSON`: `"YYYY-MM-DDTHH:MM:SSZ"` in UTC.
    pub fn to_json(self) -> String {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "\"{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z\"",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        )
    }
}

/// JSON of an optional time as Go prints a `metav1.Time` / `*metav1.Time`: `null` when unset.
pub fn json_or_null(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "null".to_string(), Timestamp::to_json)
}

/// The value of a run of ASCII digits (at most 9 here, so it never overflows); `None` when empty
/// or when any byte is not a digit.
fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0i64, |value, &c| {
        c.is_ascii_digit().then(|| value * 10 + i64::from(c - b'0'))
    })
}

fn parse(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (hour, min, sec) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || min > 59
        || sec > 59
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos: u32 = 0;
    if rest.first() == Some(&b'.') {
        let frac_len = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if frac_len == 0 || frac_len > 9 {
            return None;
        }
        let frac = digits(&rest[1..1 + frac_len])?;
        nanos = u32::try_from(frac * 10i64.pow(9 - frac_len as u32)).ok()?;
        rest = &rest[1 + frac_len..];
    }
    let offset = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let off = h * 3600 + m * 60;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec - offset;
    Some(Timestamp { secs, nanos })
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_utc_timestamps() {
        for s in [
            "2024-02-29T23:59:59Z",
            "1970-01-01T00:00:00Z",
            "2000-03-01T12:00:00Z",
        ] {
            assert_eq!(
                Timestamp::parse_rfc3339(s).unwrap().to_json(),
                format!("\"{s}\"")
            );
        }
    }

    #[test]
    fn compares_instants_across_offsets() {
        let a = Timestamp::parse_rfc3339("2024-01-01T01:00:00+01:00").unwrap();
        let b = Timestamp::parse_rfc3339("2024-01-01T00:00:00Z").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_json(), "\"2024-01-01T00:00:00Z\"");
        let c = Timestamp::parse_rfc3339("2024-01-01T00:00:00.5Z").unwrap();
        assert_ne!(b, c);
    }

    #[test]
    fn rejects_malformed_timestamps() {
        for s in [
            "",
            "2024-01-01",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01 00:00:00Z",
            "+024-01-01T00:00:00Z",
            "2024-0a-01T00:00:00Z",
            "2024-01-01T00:00:00+0x:00",
            "2024-01-01T00:00:00.Z",
        ] {
            assert!(Timestamp::parse_rfc3339(s).is_err(), "{s}");
        }
        assert_eq!(json_or_null(None), "null");
    }
}
