//! Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`) as integers: CPU in
//! thousandths, bytes and counts in whole units, rounded up as upstream's `ScaledValue`.

/// Splits a quantity into its number and suffix, and returns (mantissa, power of ten, binary
/// multiplier): `1.5Gi` is (15, -1, 2^30).
fn split(q: &str) -> Option<(i128, i32, i128)> {
    let q = q.trim();
    if q.is_empty() {
        return None;
    }
    let (sign, q) = match q.as_bytes()[0] {
        b'-' => (-1, &q[1..]),
        b'+' => (1, &q[1..]),
        _ => (1, q),
    };
    let number_end = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (number, suffix) = q.split_at(number_end);
    if number.is_empty() || number.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int}{frac}");
    let mantissa: i128 = digits.parse().ok()?;
    let mut exp10 = -(frac.len() as i32);
    let mut binary: i128 = 1;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => binary = 1 << 10,
        "Mi" => binary = 1 << 20,
        "Gi" => binary = 1 << 30,
        "Ti" => binary = 1 << 40,
        "Pi" => binary = 1 << 50,
        "Ei" => binary = 1 << 60,
        s if s.starts_with(['e', 'E']) => exp10 += s[1..].parse::<i32>().ok()?,
        _ => return None,
    }
    Some((sign * mantissa, exp10, binary))
}

/// The value times 10^`scale`, rounded up (as upstream's `ScaledValue`).
fn scaled(q: &str, scale: i32) -> Option<i64> {
    let (mantissa, exp10, binary) = split(q)?;
    let value = mantissa.checked_mul(binary)?;
    let exp = exp10 + scale;
    let result = if exp >= 0 {
        value.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else {
        let div = 10i128.checked_pow((-exp) as u32)?;
        // Round up, as upstream does for requests.
        let q = value / div;
        if value % div > 0 {
            q + 1
        } else {
            q
        }
    };
    i64::try_from(result).ok()
}

/// A quantity in thousandths (CPU millicores): `100m` is 100, `1.5` is 1500.
pub fn parse_milli(q: &str) -> Option<i64> {
    scaled(q, 3)
}

/// A quantity in whole units (bytes, counts): `1Gi` is 1073741824, `1k` is 1000.
pub fn parse_units(q: &str) -> Option<i64> {
    scaled(q, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_like_upstream() {
        assert_eq!(parse_milli("100m"), Some(100));
        assert_eq!(parse_milli("1"), Some(1000));
        assert_eq!(parse_milli("1.5"), Some(1500));
        assert_eq!(parse_milli("0.1"), Some(100));
        assert_eq!(parse_milli("1500u"), Some(2), "rounded up");
        assert_eq!(parse_units("1Gi"), Some(1 << 30));
        assert_eq!(parse_units("512Mi"), Some(512 << 20));
        assert_eq!(parse_units("1.5Gi"), Some(3 << 29));
        assert_eq!(parse_units("1k"), Some(1000));
        assert_eq!(parse_units("2e3"), Some(2000));
        assert_eq!(parse_units("110"), Some(110));
        assert_eq!(parse_units("bogus"), None);
        assert_eq!(parse_units(""), None);
    }
}
