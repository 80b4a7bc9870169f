//! The text forms of the types whose JSON is not an object: meta/v1 Time and MicroTime (RFC
//! 3339 in UTC) and meta/v1 Duration (Go's `time.Duration` string, e.g. "1h2m3s", "500ms").

use chrono::{DateTime, Datelike, SecondsFormat, Utc};

/// Seconds and nanoseconds since the Unix epoch, normalised as Go's `time.Unix` does.
fn instant(seconds: i64, nanos: i64) -> Option<DateTime<Utc>> {
    let seconds = seconds.checked_add(nanos.div_euclid(1_000_000_000))?;
    let nanos = nanos.rem_euclid(1_000_000_000) as u32;
    let t = DateTime::from_timestamp(seconds, nanos)?;
    // RFC 3339 has four-digit years; Go would print something no parser reads back.
    (0..=9999).contains(&t.year()).then_some(t)
}

/// meta/v1 Time: "2006-01-02T15:04:05Z" (the nanoseconds are not shown, as upstream).
pub(crate) fn format_time(seconds: i64, nanos: i64) -> Option<String> {
    Some(instant(seconds, nanos)?.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// meta/v1 MicroTime: "2006-01-02T15:04:05.000000Z" (always six digits, truncated).
pub(crate) fn format_micro_time(seconds: i64, nanos: i64) -> Option<String> {
    let t = instant(seconds, nanos)?;
    let micros = t.timestamp_subsec_micros();
    Some(format!("{}.{micros:06}Z", t.format("%Y-%m-%dT%H:%M:%S")))
}

/// An RFC 3339 timestamp -> (seconds, nanos) since the Unix epoch.
pub(crate) fn parse_time(text: &str) -> Option<(i64, i32)> {
    let t = DateTime::parse_from_rfc3339(text).ok()?;
    Some((t.timestamp(), t.timestamp_subsec_nanos() as i32))
}

/// Go's `time.Duration.String()`: "0s", "1.5µs", "500ms", "1m30s", "1h0m0s", "-2s".
pub(crate) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", decimal(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", decimal(n, 1_000_000));
    }
    let hours = n / 3_600_000_000_000;
    let minutes = n / 60_000_000_000 % 60;
    let seconds = decimal(n % 60_000_000_000, 1_000_000_000);
    if hours > 0 {
        format!("{sign}{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{sign}{minutes}m{seconds}s")
    } else {
        format!("{sign}{seconds}s")
    }
}

/// `n / unit` as a decimal with trailing zeros dropped: decimal(1_500, 1_000) == "1.5".
fn decimal(n: u64, unit: u64) -> String {
    let whole = n / unit;
    let frac = n % unit;
    if frac == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds; `None` for text it refuses.
pub(crate) fn parse_duration(text: &str) -> Option<i64> {
    crate::gofmt::go_duration(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(format_time(1_795_248_923, 999_999_999).unwrap(), "2026-11-21T08:15:23Z");
        assert_eq!(format_time(0, 0).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(format_time(0, -1).unwrap(), "1969-12-31T23:59:59Z");
        assert_eq!(
            format_micro_time(1_795_248_923, 123_456_789).unwrap(),
            "2026-11-21T08:15:23.123456Z"
        );
        assert_eq!(format_micro_time(0, 0).unwrap(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format_time(i64::MAX, 0), None);
        assert_eq!(format_time(-62_167_219_200, 0).unwrap(), "0000-01-01T00:00:00Z");
        assert_eq!(format_time(-62_167_219_201, 0), None, "year -1");
        assert_eq!(parse_time("2026-11-21T08:15:23Z"), Some((1_795_248_923, 0)));
        assert_eq!(parse_time("2026-11-21T09:15:23.5+01:00"), Some((1_795_248_923, 500_000_000)));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn durations_print_like_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (500_000_000, "500ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_723_000_000_000, "1h2m3s"),
            (3_600_000_000_000, "1h0m0s"),
            (-2_000_000_000, "-2s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("0"), Some(0));
        assert_eq!(parse_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_duration(".5s"), Some(500_000_000));
        assert_eq!(parse_duration("10us"), Some(10_000));
        assert_eq!(parse_duration("+3m"), Some(180_000_000_000));
        for bad in ["", "-", "1", "1d", "s", ".s", "1.2.3s", "9999999999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
