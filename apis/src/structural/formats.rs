//! The string formats a custom resource's schema may check, as kube-openapi's `strfmt`
//! registry (with upstream's list of supported formats): a format it does not know is not
//! checked, as upstream strips unsupported formats before validating.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;

use base64::Engine;
use regex::Regex;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid format pattern"))
}

macro_rules! pattern {
    ($pattern:expr) => {{
        static CELL: OnceLock<Regex> = OnceLock::new();
        re(&CELL, $pattern)
    }};
}

/// Whether `text` is a valid value of `format` (true for formats upstream does not check).
pub(super) fn valid_format(format: &str, text: &str) -> bool {
    match format {
        "byte" => base64::engine::general_purpose::STANDARD.decode(text).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() && text.len() == 10,
        "date-time" | "datetime" => {
            chrono::DateTime::parse_from_rfc3339(text).is_ok()
                || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        }
        "uuid" => pattern!(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
            .is_match(text),
        "uuid3" => pattern!(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")
            .is_match(text),
        "uuid4" => {
            pattern!(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
                .is_match(text)
        }
        "uuid5" => {
            pattern!(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
                .is_match(text)
        }
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.contains(':') && text.parse::<IpAddr>().is_ok(),
        "cidr" => text.parse::<ipnet::IpNet>().is_ok(),
        "mac" => pattern!(
            r"(?i)^([0-9a-f]{2}([:-])[0-9a-f]{2}(([:-])[0-9a-f]{2}){4}(([:-])[0-9a-f]{2}){0,14}|[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}(\.[0-9a-f]{4}){0,7})$"
        )
        .is_match(text),
        "hostname" => {
            text.len() <= 255
                && pattern!(r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$")
                    .is_match(text)
        }
        "email" => pattern!(r"^[^@\s<>]+@[^@\s<>]+$").is_match(text),
        "uri" => pattern!(r"^([a-zA-Z][a-zA-Z0-9+.\-]*:[^\s]*|/[^\s]*)$").is_match(text),
        "hexcolor" => pattern!(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").is_match(text),
        "rgbcolor" => pattern!(
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"
        )
        .is_match(text),
        "bsonobjectid" => pattern!(r"^[0-9a-fA-F]{24}$").is_match(text),
        "ssn" => pattern!(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").is_match(text),
        "isbn10" => pattern!(r"^(?:[0-9]{9}X|[0-9]{10})$").is_match(&text.replace(['-', ' '], "")),
        "isbn13" => pattern!(r"^(?:[0-9]{13})$").is_match(&text.replace(['-', ' '], "")),
        "isbn" => valid_format("isbn10", text) || valid_format("isbn13", text),
        "creditcard" => pattern!(r"^[0-9]{13,19}$").is_match(&text.replace(['-', ' '], "")),
        "duration" => {
            crate::gofmt::go_duration(text).is_ok()
                || pattern!(r"^\s*[0-9]+\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*$")
                    .is_match(text)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::valid_format;

    #[test]
    fn formats_are_checked_as_strfmt_checks_them() {
        for (format, good, bad) in [
            ("date", "2024-02-29", "2024-02-30"),
            ("date-time", "2024-01-02T03:04:05Z", "yesterday"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "fd00::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0"),
            ("hostname", "example.com", "-bad-"),
            ("duration", "1h30m", "soon"),
        ] {
            assert!(valid_format(format, good), "{format} {good}");
            assert!(!valid_format(format, bad), "{format} {bad}");
        }
        assert!(valid_format("int32", "anything"), "formats strfmt does not know pass");
    }
}
