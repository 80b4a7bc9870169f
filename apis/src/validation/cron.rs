//! Cron schedules, as `cron.ParseStandard` (robfig/cron v3, which the CronJob controller and
//! validation use) reads them, with its error texts: five fields or a `@descriptor`, and
//! `@every <duration>` with Go's `time.ParseDuration` errors.

use crate::gofmt::go_quote;

/// Checks a standard five-field schedule (or a `@descriptor`) and returns the parser's
/// error text. A `TZ=`/`CRON_TZ=` prefix is skipped (the zone itself is not looked up).
pub fn parse_schedule(spec: &str) -> Result<(), String> {
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        spec = spec.find(' ').map_or("", |i| spec[i..].trim());
    }
    if let Some(descriptor) = spec.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => {
                Ok(())
            }
            d => match d.strip_prefix("every ") {
                Some(duration) => go_duration(duration)
                    .map_err(|e| format!("failed to parse duration {spec}: {e}")),
                None => Err(format!("unrecognized descriptor: {spec}")),
            },
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    const MONTHS: [&str; 12] =
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let bounds: [(u64, u64, &[&str], u64); 5] =
        [(0, 59, &[], 0), (0, 23, &[], 0), (1, 31, &[], 0), (1, 12, &MONTHS, 1), (0, 6, &DAYS, 0)];
    for (field, (min, max, names, first)) in fields.iter().zip(bounds) {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            cron_range(expr, min, max, names, first)?;
        }
    }
    Ok(())
}

/// One `a-b/step` range of a cron field.
fn cron_range(expr: &str, min: u64, max: u64, names: &[&str], first: u64) -> Result<(), String> {
    let parts: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = parts[0].split('-').collect();
    let number = |s: &str| -> Result<u64, String> {
        let lower = s.to_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(i as u64 + first);
        }
        cron_int(s)
    };
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (min, max)
    } else {
        let start = number(low_high[0])?;
        match low_high.len() {
            1 => (start, start),
            2 => (start, number(low_high[1])?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = cron_int(parts[1])?;
            if low_high.len() == 1 {
                end = max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!("beginning of range ({start}) below minimum ({min}): {expr}"));
    }
    if end > max {
        return Err(format!("end of range ({end}) above maximum ({max}): {expr}"));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `mustParseInt`, with Go's `strconv.Atoi` error text.
fn cron_int(s: &str) -> Result<u64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    match s.parse::<i64>() {
        Err(_) => Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: value out of range",
            go_quote(s)
        )),
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => Ok(n as u64),
    }
}

/// Go's `time.ParseDuration`, for `@every`: only whether it parses, and its error.
fn go_duration(s: &str) -> Result<(), String> {
    let quoted = go_quote(s);
    let invalid = || format!("time: invalid duration {quoted}");
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {quoted}"));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!("time: unknown unit {} in duration {quoted}", go_quote(unit)));
        }
        rest = &rest[unit_len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_schedules_parse() {
        for schedule in [
            "0 0 * * *",
            "@hourly",
            "@every 1h30m",
            "0 9 * JAN-MAR mon-fri",
            "*/15 0-6,18-23 1,15 * ?",
        ] {
            assert_eq!(parse_schedule(schedule), Ok(()), "{schedule}");
        }
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(go_duration("1h30m"), Ok(()));
        assert_eq!(go_duration("5"), Err("time: missing unit in duration \"5\"".to_string()));
        assert_eq!(go_duration("x"), Err("time: invalid duration \"x\"".to_string()));
    }
}
