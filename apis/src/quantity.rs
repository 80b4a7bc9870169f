//! Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`): parsed once (`split`) into
//! sign, digits, exponent and suffix, then read either as integers (CPU in thousandths with
//! [`parse_milli`], bytes and counts in whole units with [`parse_units`], rounded up as
//! upstream's `ScaledValue`), or as an exact [`Quantity`] that validation and admission
//! compare, add and print back in upstream's canonical form.

use serde_json::Value;

/// Which suffix family a quantity was written in; it decides the canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `m`, `k`, `M`, ... or none.
    DecimalSI,
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySI,
    /// `e3`, `E-2`.
    DecimalExponent,
}

/// A quantity's parts: `-1.5Gi` is negative, mantissa 15, power of ten -1, binary multiplier
/// 2^30.
struct Parts {
    negative: bool,
    /// The digits without the decimal point (never negative).
    mantissa: i128,
    exp10: i32,
    binary: i128,
    format: Format,
}

/// Splits a quantity into its [`Parts`]; `None` when it is not one.
fn split(q: &str) -> Option<Parts> {
    let (negative, rest) = match q.as_bytes().first()? {
        b'-' => (true, &q[1..]),
        b'+' => (false, &q[1..]),
        _ => (false, q),
    };
    let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    if number.is_empty() || number.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let mantissa: i128 = format!("{int}{frac}").parse().ok()?;
    let mut exp10 = -(frac.len() as i32);
    let (mut binary, mut format) = (1i128, Format::DecimalSI);
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
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = "KMGTPE".find(&suffix[..1])? as u32 + 1;
            binary = 1i128 << (10 * power);
            format = Format::BinarySI;
        }
        s if s.starts_with(['e', 'E']) => {
            exp10 = exp10.checked_add(s[1..].parse::<i32>().ok()?)?;
            format = Format::DecimalExponent;
        }
        _ => return None,
    }
    Some(Parts { negative, mantissa, exp10, binary, format })
}

/// The value times 10^`scale`, rounded up (as upstream's `ScaledValue`).
fn scaled(q: &str, scale: i32) -> Option<i64> {
    let parts = split(q.trim())?;
    let signed = if parts.negative { -parts.mantissa } else { parts.mantissa };
    let value = signed.checked_mul(parts.binary)?;
    let exp = parts.exp10.checked_add(scale)?;
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

/// A resource quantity as upstream holds it (`resource.Quantity`): the exact value in
/// billionths, and the format its suffix chose (which decides how it is printed back).
/// Quantities compare by value (`Cmp`, and `Semantic.DeepEqual`): `1Gi` equals `1024Mi`.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    pub(crate) nanos: i128,
    format: Format,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl Quantity {
    /// A quantity string (or JSON number); `None` when it does not parse (upstream refuses
    /// such an object when decoding it, before validation). Unlike [`parse_milli`] and
    /// [`parse_units`], surrounding whitespace is not allowed.
    pub fn parse(v: &Value) -> Option<Quantity> {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let parts = split(&text)?;
        let value = parts.mantissa.checked_mul(parts.binary)?;
        let exp = parts.exp10.checked_add(9)?;
        let nanos = if exp >= 0 {
            value.checked_mul(10i128.checked_pow(exp as u32)?)?
        } else {
            // Finer than a billionth rounds up (away from zero), as upstream does.
            let div = 10i128.checked_pow((-exp) as u32)?;
            value / div + i128::from(value % div != 0)
        };
        Some(Quantity { nanos: if parts.negative { -nanos } else { nanos }, format: parts.format })
    }

    /// A count (`pods: 3`), printed as upstream's `DecimalSI` quantities are.
    pub fn count(n: i64) -> Quantity {
        Quantity { nanos: i128::from(n) * 1_000_000_000, format: Format::DecimalSI }
    }

    /// The value in billionths of a unit.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// `self + other`, in `self`'s format (`other`'s when `self` is zero), as upstream's
    /// `Quantity.Add`: `0` plus `1Gi` prints `1Gi`, `1Gi` plus `512Mi` prints `1536Mi`.
    #[must_use]
    pub fn add(&self, other: &Quantity) -> Quantity {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Quantity { nanos: self.nanos.saturating_add(other.nanos), format }
    }

    /// `self - other`, formatted as [`Quantity::add`] formats.
    #[must_use]
    pub fn sub(&self, other: &Quantity) -> Quantity {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Quantity { nanos: self.nanos.saturating_sub(other.nanos), format }
    }

    /// Rounded up to a whole unit (storage is charged in whole bytes, as upstream).
    pub fn round_up(&self) -> Quantity {
        const NANO: i128 = 1_000_000_000;
        let whole = self.nanos.div_euclid(NANO) + i128::from(self.nanos.rem_euclid(NANO) != 0);
        Quantity { nanos: whole * NANO, format: self.format }
    }

    /// Upstream's canonical form (`Quantity.String()`): `1500m`, `1`, `1536Mi`, `1e3`.
    pub fn canonical(&self) -> String {
        const NANO: i128 = 1_000_000_000;
        if self.nanos == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySI && (self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0)
        {
            format = Format::DecimalSI;
        }
        if format == Format::BinarySI {
            let (mut m, mut e) = (self.nanos / NANO, 0);
            while m % 1024 == 0 && e < 6 {
                m /= 1024;
                e += 1;
            }
            return format!("{m}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e]);
        }
        let (mut m, mut e) = (self.nanos, -9i32);
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        let r = e.rem_euclid(3);
        m *= 10i128.pow(r as u32);
        e -= r;
        let suffix = match (format, e) {
            (Format::DecimalExponent, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 0) => String::new(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{m}{suffix}")
    }
}

impl Quantity {
    /// Upstream's `Value()`: in whole units, rounded up.
    pub fn value(&self) -> i128 {
        ceil_div(self.nanos, 1_000_000_000)
    }

    /// Upstream's `MilliValue()`: in thousandths, rounded up.
    pub fn milli_value(&self) -> i128 {
        ceil_div(self.nanos, 1_000_000)
    }
}

/// `n / d` rounded towards positive infinity (`d` > 0), as `ScaledValue` rounds.
fn ceil_div(n: i128, d: i128) -> i128 {
    n.div_euclid(d) + i128::from(n.rem_euclid(d) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn quantities_print_canonically() {
        let canonical = |q: Value| Quantity::parse(&q).unwrap().canonical();
        for (input, out) in [
            (json!("1000m"), "1"),
            (json!("1.5"), "1500m"),
            (json!(0.5), "500m"),
            (json!("100m"), "100m"),
            (json!("1024Mi"), "1Gi"),
            (json!("1.5Gi"), "1536Mi"),
            (json!("512"), "512"),
            (json!("0.5Ki"), "512"),
            (json!("1000"), "1k"),
            (json!("2e3"), "2e3"),
            (json!("-1Gi"), "-1Gi"),
            (json!("0Mi"), "0"),
            (json!(2), "2"),
        ] {
            assert_eq!(canonical(input.clone()), out, "{input}");
        }
        assert!(Quantity::parse(&json!("1 Gi")).is_none());
    }

    #[test]
    fn quantities_compare_add_and_scale_as_upstream() {
        let q = |s: &str| Quantity::parse(&json!(s)).unwrap();
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert!(q("500m") < q("1"));
        assert!(q("1G") < q("1Gi"));
        let mut sum = q("500m");
        sum = sum.add(&q("1500m"));
        assert_eq!(sum.canonical(), "2");
        // The sum keeps the first format, unless the first is zero.
        let mut memory = q("1Gi");
        memory = memory.add(&q("512Mi"));
        assert_eq!(memory.canonical(), "1536Mi");
        let mut from_zero = q("0");
        from_zero = from_zero.add(&q("1Ki"));
        assert_eq!(from_zero.canonical(), "1Ki");
        let mut decimal = q("1k");
        decimal = decimal.add(&q("24"));
        assert_eq!(decimal.canonical(), "1024");
        assert_eq!((q("100m").milli_value(), q("100m").value()), (100, 1));
        assert_eq!((q("1500u").milli_value(), q("1Ki").value()), (2, 1024));
        assert_eq!(q("1n").milli_value(), 1, "rounded up");
        assert_eq!(q("0").milli_value(), 0);
    }
}
