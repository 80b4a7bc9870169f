//! Cron schedules as robfig/cron v3's `cron.ParseStandard` reads them (the CronJob
//! controller and the API server's CronJob validation both use it), and the times they fire
//! at. One parser serves both, so a schedule the API server accepts is one the controller can
//! run, with the same error texts.
//!
//! - [`Schedule::parse`]: five fields (minute, hour, day of month, month, day of week) with
//!   lists, ranges, steps, `*`/`?` and names (`JAN`, `mon`), the macros `@yearly`,
//!   `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every
//!   <duration>` (Go's `time.ParseDuration`), and a `TZ=`/`CRON_TZ=` prefix. Errors carry
//!   robfig's texts. Zones are looked up by the caller (this crate does no I/O):
//!   [`Schedule::parse_fields`] is the part after the prefix.
//! - [`Schedule::next`]: the first firing strictly after an instant. It walks the wall clock
//!   of the schedule's zone the way robfig does (month, then day, then hour, minute, second,
//!   starting over when a field wraps), so DST days behave as upstream's: a wall time skipped
//!   by spring-forward does not fire that day, one repeated in the autumn fires twice.
//! - [`go_date`]: Go's `time.Date`, which that walk is built on.

use k8s_openapi::jiff::civil::DateTime;
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;

use crate::gofmt::go_quote;

/// Set in a field's bits when it was `*` or `?` (not a step over them): day-of-month and
/// day-of-week then combine with AND instead of OR, as in Vixie cron.
const STAR: u64 = 1 << 63;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// Five fields (or a macro) as bit sets, in a time zone.
    Fields(Fields),
    /// `@every <duration>`: a fixed period in whole seconds (at least one).
    Every(i64),
}

/// Which values each field allows: bit `n` set means value `n` matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Fields {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    zone: TimeZone,
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
    /// The value of the first name.
    first: u64,
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[], first: 0 };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[], first: 0 };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[], first: 0 };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    first: 1,
};
const DOW: Bounds =
    Bounds { min: 0, max: 6, names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"], first: 0 };

impl Schedule {
    /// Parses `spec`; a schedule without a `TZ=` prefix runs in `default_zone` (upstream: the
    /// controller manager's local zone), and a prefix's zone comes from `load_zone` (Go's
    /// `time.LoadLocation`, whose error text follows `provided bad location <name>: `).
    pub fn parse(
        spec: &str,
        default_zone: &TimeZone,
        load_zone: impl FnOnce(&str) -> Result<TimeZone, String>,
    ) -> Result<Schedule, String> {
        if spec.is_empty() {
            return Err("empty spec string".to_string());
        }
        let mut spec = spec;
        let mut zone = default_zone.clone();
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let Some(space) = spec.find(' ') else {
                return Err(format!("missing schedule after time zone: {spec}"));
            };
            let name = &spec[spec.find('=').map_or(0, |i| i + 1)..space];
            zone = load_zone(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
            spec = spec[space..].trim();
        }
        Schedule::parse_fields(spec, zone)
    }

    /// Parses a spec without a zone prefix (five fields or a `@` descriptor), in `zone`.
    pub fn parse_fields(spec: &str, zone: TimeZone) -> Result<Schedule, String> {
        if spec.starts_with('@') {
            return descriptor(spec, zone);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        Ok(Schedule::Fields(Fields {
            second: 1,
            minute: field(fields[0], &MINUTES)?,
            hour: field(fields[1], &HOURS)?,
            dom: field(fields[2], &DOM)?,
            month: field(fields[3], &MONTHS)?,
            dow: field(fields[4], &DOW)?,
            zone,
        }))
    }

    /// The first firing strictly after `after`, in whole seconds; `None` when there is none
    /// within five years (`0 0 30 2 *`).
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        let second = after.as_second() - i64::from(after.subsec_nanosecond() < 0);
        let next = match self {
            Schedule::Every(period) => second + period,
            Schedule::Fields(fields) => fields.next(second + 1)?,
        };
        Timestamp::from_second(next).ok()
    }
}

/// One of robfig's `@` descriptors.
fn descriptor(spec: &str, zone: TimeZone) -> Result<Schedule, String> {
    let all = |b: &Bounds| bits(b.min, b.max, 1) | STAR;
    let at = |b: &Bounds| 1u64 << b.min;
    let fields = |hour, dom, month, dow| {
        Schedule::Fields(Fields { second: 1, minute: 1, hour, dom, month, dow, zone: zone.clone() })
    };
    Ok(match spec {
        "@yearly" | "@annually" => fields(at(&HOURS), at(&DOM), at(&MONTHS), all(&DOW)),
        "@monthly" => fields(at(&HOURS), at(&DOM), all(&MONTHS), all(&DOW)),
        "@weekly" => fields(at(&HOURS), all(&DOM), all(&MONTHS), at(&DOW)),
        "@daily" | "@midnight" => fields(at(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => fields(all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => match spec.strip_prefix("@every ") {
            Some(duration) => {
                let nanos = crate::gofmt::go_duration(duration)
                    .map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
                // robfig: at least a second, and whole seconds only.
                let seconds = (nanos / 1_000_000_000).max(1);
                Schedule::Every(seconds)
            }
            None => return Err(format!("unrecognized descriptor: {spec}")),
        },
    })
}

/// The bits of one field: comma-separated ranges.
fn field(text: &str, bounds: &Bounds) -> Result<u64, String> {
    let mut all = 0;
    for expr in text.split(',').filter(|e| !e.is_empty()) {
        all |= range(expr, bounds)?;
    }
    Ok(all)
}

/// `*`, `?`, `n`, `a-b`, each optionally `/step`; a single value with a step runs to the
/// field's maximum (`5/15` is `5-59/15`).
fn range(expr: &str, b: &Bounds) -> Result<u64, String> {
    let parts: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = parts[0].split('-').collect();
    let value = |s: &str| -> Result<u64, String> {
        let lower = s.to_lowercase();
        match b.names.iter().position(|n| *n == lower) {
            Some(i) => Ok(i as u64 + b.first),
            None => go_atoi(s),
        }
    };
    let mut star = 0;
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        star = STAR;
        (b.min, b.max)
    } else {
        let start = value(low_high[0])?;
        match low_high.len() {
            1 => (start, start),
            2 => (start, value(low_high[1])?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = go_atoi(parts[1])?;
            if low_high.len() == 1 {
                end = b.max;
            }
            if step > 1 {
                star = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | star)
}

/// Bits `start`, `start + step`, ... up to `end`.
fn bits(start: u64, end: u64, step: u64) -> u64 {
    (start..=end).step_by(usize::try_from(step).unwrap_or(usize::MAX)).fold(0, |b, v| b | (1 << v))
}

/// Go's `strconv.Atoi` as robfig's `mustParseInt` reports it.
fn go_atoi(s: &str) -> Result<u64, String> {
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
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

impl Fields {
    fn matches_day(&self, dom: i8, weekday: i8) -> bool {
        let dom_match = self.dom & (1 << dom) != 0;
        let dow_match = self.dow & (1 << weekday) != 0;
        if self.dom & STAR != 0 || self.dow & STAR != 0 {
            dom_match && dow_match
        } else {
            dom_match || dow_match
        }
    }

    /// The first matching second at or after `start` (seconds since the epoch). The search
    /// moves the wall clock of the schedule's zone field by field, from the month down;
    /// resetting the smaller fields the first time one moves, and starting over whenever a
    /// field wraps around, since the larger fields must then be checked again.
    fn next(&self, start: i64) -> Option<i64> {
        let z = &self.zone;
        let wall = |t: i64| wall(z, t);
        let mut t = start;
        let mut reset = false;
        let year_limit = i64::from(wall(t).year()) + 5;
        'over: loop {
            if i64::from(wall(t).year()) > year_limit {
                return None;
            }
            while self.month & (1 << wall(t).month()) == 0 {
                if !reset {
                    reset = true;
                    let w = wall(t);
                    t = go_date(z, i64::from(w.year()), i64::from(w.month()), 1, 0, 0, 0);
                }
                t = add_date(z, t, 1, 0);
                if wall(t).month() == 1 {
                    continue 'over;
                }
            }
            loop {
                let w = wall(t);
                if self.matches_day(w.day(), w.weekday().to_sunday_zero_offset()) {
                    break;
                }
                if !reset {
                    reset = true;
                    t = go_date(
                        z,
                        i64::from(w.year()),
                        i64::from(w.month()),
                        i64::from(w.day()),
                        0,
                        0,
                        0,
                    );
                }
                t = add_date(z, t, 0, 1);
                // Midnight may not exist (or exist twice) where DST changes at midnight:
                // come back to the day's start.
                let hour = i64::from(wall(t).hour());
                if hour != 0 {
                    t += if hour > 12 { (24 - hour) * 3_600 } else { -hour * 3_600 };
                }
                if wall(t).day() == 1 {
                    continue 'over;
                }
            }
            while self.hour & (1 << wall(t).hour()) == 0 {
                if !reset {
                    reset = true;
                    let w = wall(t);
                    t = go_date(
                        z,
                        i64::from(w.year()),
                        i64::from(w.month()),
                        i64::from(w.day()),
                        i64::from(w.hour()),
                        0,
                        0,
                    );
                }
                // Hours move in absolute time: a repeated hour is visited twice, a skipped
                // one never.
                t += 3_600;
                if wall(t).hour() == 0 {
                    continue 'over;
                }
            }
            while self.minute & (1 << wall(t).minute()) == 0 {
                if !reset {
                    reset = true;
                    t -= t.rem_euclid(60);
                }
                t += 60;
                if wall(t).minute() == 0 {
                    continue 'over;
                }
            }
            // Seconds: `t` is already on a whole second, so there is nothing to clear.
            while self.second & (1 << wall(t).second()) == 0 {
                reset = true;
                t += 1;
                if wall(t).second() == 0 {
                    continue 'over;
                }
            }
            return Some(t);
        }
    }
}

/// Go's `t.AddDate(0, months, days)` in `zone`: the same wall clock that many months and days
/// later, resolved as `time.Date` does.
fn add_date(zone: &TimeZone, t: i64, months: i64, days: i64) -> i64 {
    let w = wall(zone, t);
    go_date(
        zone,
        i64::from(w.year()),
        i64::from(w.month()) + months,
        i64::from(w.day()) + days,
        i64::from(w.hour()),
        i64::from(w.minute()),
        i64::from(w.second()),
    )
}

/// Seconds since the epoch of a wall-clock time in `zone`, as Go's `time.Date` computes it:
/// fields out of range carry over (month 13 is January of the next year, day 32 of January is
/// February 1st), and a time that does not exist or exists twice (DST) takes the offset Go's
/// zone lookup lands on: the one in effect at the wall time read as UTC, unless that offset
/// puts the instant outside its own period, when the offset at that instant wins.
pub fn go_date(zone: &TimeZone, y: i64, mon: i64, d: i64, h: i64, min: i64, s: i64) -> i64 {
    let months = y * 12 + (mon - 1);
    let (year, month) = (months.div_euclid(12), months.rem_euclid(12) + 1);
    let days = days_from_civil(year, month, 1) + (d - 1);
    let wall = days * 86_400 + h * 3_600 + min * 60 + s;
    let guess = offset_at(zone, wall);
    wall - offset_at(zone, wall - guess)
}

/// The zone's UTC offset in seconds at the instant `unix`.
fn offset_at(zone: &TimeZone, unix: i64) -> i64 {
    Timestamp::from_second(unix).map_or(0, |t| i64::from(zone.to_offset(t).seconds()))
}

/// The wall-clock time in `zone` at the instant `unix` (seconds since the epoch).
pub fn wall(zone: &TimeZone, unix: i64) -> DateTime {
    zone.to_datetime(Timestamp::from_second(unix).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (month 1 to 12).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm: count from March so the leap day ends a year.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// A zone loader that knows no zones, with Go's error text.
    fn no_zones(name: &str) -> Result<TimeZone, String> {
        Err(format!("unknown time zone {name}"))
    }

    fn utc(spec: &str) -> Schedule {
        Schedule::parse(spec, &TimeZone::UTC, no_zones).unwrap()
    }

    /// The first `n` firings after `from`, as RFC 3339 in UTC.
    fn firings(schedule: &Schedule, from: &str, n: usize) -> Vec<String> {
        let mut t = ts(from);
        (0..n)
            .map(|_| {
                t = schedule.next(t).unwrap();
                t.to_string()
            })
            .collect()
    }

    #[test]
    fn fields_parse_to_bits() {
        let Schedule::Fields(f) = utc("*/15 0-6,18-23 1,15 JAN-mar mon-FRI") else { panic!() };
        assert_eq!(f.minute, 1 | 1 << 15 | 1 << 30 | 1 << 45);
        assert_eq!(f.hour, 0b111_1111 | 0b11_1111 << 18);
        assert_eq!(f.dom, 1 << 1 | 1 << 15);
        assert_eq!(f.month, 0b1110);
        assert_eq!(f.dow, 0b11_1110);
        let Schedule::Fields(f) = utc("5/20 * ? * *") else { panic!() };
        assert_eq!(f.minute, 1 << 5 | 1 << 25 | 1 << 45);
        assert_eq!(f.hour, ((1 << 24) - 1) | STAR);
        assert_eq!(f.dom & STAR, STAR);
        // A step over `*` is no longer a star, except a step of one.
        let Schedule::Fields(f) = utc("* * */2 * */1") else { panic!() };
        assert_eq!(f.dom & STAR, 0);
        assert_eq!(f.dow & STAR, STAR);
    }

    #[test]
    fn errors_are_robfigs() {
        let err = |spec| Schedule::parse(spec, &TimeZone::UTC, no_zones).unwrap_err();
        assert_eq!(err(""), "empty spec string");
        assert_eq!(err("* * * *"), "expected exactly 5 fields, found 4: [* * * *]");
        assert_eq!(err("60 * * * *"), "end of range (60) above maximum (59): 60");
        assert_eq!(err("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
        assert_eq!(err("5-1 * * * *"), "beginning of range (5) beyond end of range (1): 5-1");
        assert_eq!(err("*/0 * * * *"), "step of range should be a positive number: */0");
        assert_eq!(err("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert_eq!(err("1/2/3 * * * *"), "too many slashes: 1/2/3");
        assert_eq!(
            err("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(err("* * * * 7"), "end of range (7) above maximum (6): 7");
        assert_eq!(err("@weekdays"), "unrecognized descriptor: @weekdays");
        assert_eq!(
            err("@every 5"),
            "failed to parse duration @every 5: time: missing unit in duration \"5\""
        );
        assert_eq!(err("TZ=Mars/Olympus"), "missing schedule after time zone: TZ=Mars/Olympus");
        assert_eq!(
            err("TZ=Mars/Olympus * * * * *"),
            "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"
        );
    }

    #[test]
    fn next_walks_steps_ranges_lists_and_names() {
        assert_eq!(
            firings(&utc("*/1 * * * *"), "2024-01-01T10:00:30.5Z", 2),
            ["2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z"]
        );
        // Exactly on a firing: the next one, not the same.
        assert_eq!(firings(&utc("0 * * * *"), "2024-01-01T10:00:00Z", 1), ["2024-01-01T11:00:00Z"]);
        assert_eq!(
            firings(&utc("*/20 9-10 * * *"), "2024-01-01T10:30:00Z", 3),
            ["2024-01-01T10:40:00Z", "2024-01-02T09:00:00Z", "2024-01-02T09:20:00Z"]
        );
        assert_eq!(
            firings(&utc("0 12 * FEB,dec SUN"), "2024-01-15T00:00:00Z", 3),
            ["2024-02-04T12:00:00Z", "2024-02-11T12:00:00Z", "2024-02-18T12:00:00Z"]
        );
        // Day of month and day of week both restricted: either matches (the 13th or Fridays).
        assert_eq!(
            firings(&utc("0 0 13 * 5"), "2024-09-01T00:00:00Z", 3),
            ["2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z"]
        );
        // Leap days: only in leap years.
        assert_eq!(
            firings(&utc("0 0 29 2 *"), "2024-03-01T00:00:00Z", 1),
            ["2028-02-29T00:00:00Z"]
        );
        // Never within five years: none.
        assert_eq!(utc("0 0 30 2 *").next(ts("2024-01-01T00:00:00Z")), None);
    }

    #[test]
    fn macros() {
        let from = "2024-05-15T13:45:00Z";
        assert_eq!(firings(&utc("@yearly"), from, 1), ["2025-01-01T00:00:00Z"]);
        assert_eq!(utc("@annually"), utc("@yearly"));
        assert_eq!(firings(&utc("@monthly"), from, 1), ["2024-06-01T00:00:00Z"]);
        assert_eq!(firings(&utc("@weekly"), from, 1), ["2024-05-19T00:00:00Z"]);
        assert_eq!(firings(&utc("@daily"), from, 1), ["2024-05-16T00:00:00Z"]);
        assert_eq!(utc("@midnight"), utc("@daily"));
        assert_eq!(firings(&utc("@hourly"), from, 1), ["2024-05-15T14:00:00Z"]);
        assert_eq!(utc("@hourly"), utc("0 * * * *"));
        assert_eq!(
            firings(&utc("@every 1h30m"), "2024-05-15T13:45:10.7Z", 2),
            ["2024-05-15T15:15:10Z", "2024-05-15T16:45:10Z"]
        );
        assert_eq!(utc("@every 10ms"), Schedule::Every(1));
        assert_eq!(utc("@every 1.5m"), Schedule::Every(90));
    }

    #[test]
    fn dates_carry_over_like_go() {
        let utc = TimeZone::UTC;
        assert_eq!(go_date(&utc, 1970, 1, 1, 0, 0, 0), 0);
        assert_eq!(go_date(&utc, 2024, 2, 30, 0, 0, 0), ts("2024-03-01T00:00:00Z").as_second());
        assert_eq!(go_date(&utc, 2023, 13, 1, 0, 0, 0), ts("2024-01-01T00:00:00Z").as_second());
        assert_eq!(go_date(&utc, 2024, 1, 1, 25, 0, 0), ts("2024-01-02T01:00:00Z").as_second());
        assert_eq!(go_date(&utc, 1969, 12, 31, 0, 0, 0), -86_400);
    }
}
