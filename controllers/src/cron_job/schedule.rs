//! Cron schedules as upstream's controller reads them (`cron.ParseStandard` of robfig/cron
//! v3), and the times they fire at.
//!
//! - [`Schedule::parse`]: five fields (minute, hour, day of month, month, day of week) with
//!   lists, ranges, steps, `*`/`?` and names (`JAN`, `mon`), the macros `@yearly`,
//!   `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every
//!   <duration>`, and a `TZ=`/`CRON_TZ=` prefix. Errors carry robfig's texts.
//! - [`Schedule::next`]: the first firing strictly after an instant. It walks the wall clock
//!   of the schedule's zone the way robfig does (month, then day, then hour, minute, second,
//!   starting over when a field wraps), so DST days behave as upstream's: a wall time skipped
//!   by spring-forward does not fire that day, one repeated in the autumn fires twice.
//! - [`most_recent`]: the latest missed firing since a CronJob's last schedule time, with
//!   upstream's estimate of how many were missed, and [`requeue_after`]: how long to sleep.

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;

use super::zone;

/// Set in a field's bits when it was `*` or `?` (not a step over them): day-of-month and
/// day-of-week then combine with AND instead of OR, as in Vixie cron.
const STAR: u64 = 1 << 63;

/// How much later than the next firing a CronJob is looked at again: a little slack for the
/// clock, as upstream's `nextScheduleDelta`.
pub const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

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
    /// controller manager's local zone).
    pub fn parse(spec: &str, default_zone: &TimeZone) -> Result<Schedule, String> {
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
            zone = zone::load_location(name)
                .map_err(|e| format!("provided bad location {name}: {e}"))?;
            spec = spec[space..].trim();
        }
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
                let nanos = go_duration(duration)
                    .map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
                // robfig: at least a second, and whole seconds only.
                let seconds = i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX).max(1);
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
            "failed to parse int from {s}: strconv.Atoi: parsing {s:?}: invalid syntax"
        ));
    }
    match s.parse::<i64>() {
        Err(_) => Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {s:?}: value out of range"
        )),
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

/// Go's `time.ParseDuration`, in nanoseconds (`1h30m`, `1.5s`, `-2m`, `0`).
fn go_duration(s: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(f) => {
                let len = f.bytes().take_while(u8::is_ascii_digit).count();
                (Some(&f[..len]), &f[len..])
            }
            None => (None, after),
        };
        if int.is_empty() && frac.is_none_or(str::is_empty) {
            return Err(invalid());
        }
        let unit_len = after.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: i128 = match unit {
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| invalid())? };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        if let Some(frac) = frac.filter(|f| !f.is_empty()) {
            // Enough digits for nanosecond precision; Go drops the rest too.
            let digits = &frac[..frac.len().min(18)];
            let numerator: i128 = digits.parse().map_err(|_| invalid())?;
            value += numerator * scale / 10i128.pow(digits.len() as u32);
        }
        total =
            total.checked_add(value).filter(|t| *t <= i128::from(i64::MAX)).ok_or_else(invalid)?;
        rest = after;
    }
    Ok(if negative { -total } else { total })
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
        let wall = |t: i64| zone::wall(z, t);
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
                    t = zone::go_date(z, i64::from(w.year()), i64::from(w.month()), 1, 0, 0, 0);
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
                    t = zone::go_date(
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
                    t = zone::go_date(
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
    let w = zone::wall(zone, t);
    zone::go_date(
        zone,
        i64::from(w.year()),
        i64::from(w.month()) + months,
        i64::from(w.day()) + days,
        i64::from(w.hour()),
        i64::from(w.minute()),
        i64::from(w.second()),
    )
}

/// What [`most_recent`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Missed {
    /// Where the search started: the last schedule time, else the creation time (not moved
    /// by the starting deadline).
    pub earliest: Timestamp,
    /// The latest firing at or before now after `earliest`, if any.
    pub most_recent: Option<Timestamp>,
    /// Upstream's estimate of how many firings were missed (0 when at most one was).
    pub count: i64,
}

/// The latest firing of `schedule` in `(max(last_scheduled or created, now - deadline),
/// now]`, as upstream's `mostRecentScheduleTime`: how many were missed is estimated from the
/// gap between the first two (so it stays cheap after a long outage), and the search for the
/// latest starts a little before the estimate. `deadline` is `startingDeadlineSeconds` when
/// the deadline should narrow the window. An error means the schedule never fires twice (its
/// first two firings are less than a second apart, or do not exist).
pub fn most_recent(
    schedule: &Schedule,
    created: Timestamp,
    last_scheduled: Option<Timestamp>,
    deadline: Option<i64>,
    now: Timestamp,
) -> Result<Missed, String> {
    let earliest = last_scheduled.unwrap_or(created);
    let mut from = earliest;
    if let Some(deadline) = deadline {
        let cutoff = nanos_to_ts(now.as_nanosecond() - i128::from(deadline) * 1_000_000_000);
        if cutoff > from {
            from = cutoff;
        }
    }
    let never = || "time difference between two schedules is less than 1 second".to_string();
    let missed = |most_recent, count| Missed { earliest, most_recent, count };
    let Some(t1) = schedule.next(from) else { return Err(never()) };
    if now < t1 {
        return Ok(missed(None, 0));
    }
    let Some(t2) = schedule.next(t1) else { return Err(never()) };
    if now < t2 {
        return Ok(missed(Some(t1), 0));
    }
    let between = round_to_seconds(t2.as_nanosecond() - t1.as_nanosecond());
    if between < 1 {
        return Err(never());
    }
    let elapsed = i64::try_from((now.as_nanosecond() - t1.as_nanosecond()) / 1_000_000_000)
        .unwrap_or(i64::MAX);
    let count = elapsed / between + 1;
    // Two periods before the estimate, so an irregular schedule (`30 6-16/4 * * 1-5`) is not
    // overshot.
    let start = t1.as_nanosecond() + i128::from(count - 2) * i128::from(between) * 1_000_000_000;
    let mut latest = None;
    let mut t = schedule.next(nanos_to_ts(start));
    while let Some(fire) = t.filter(|f| *f <= now) {
        latest = Some(fire);
        t = schedule.next(fire);
    }
    Ok(missed(latest, count))
}

/// How long until a CronJob should be looked at again: its next firing after the most recent
/// one (or after `earliest` when none was missed; after now when the schedule is broken), plus
/// [`NEXT_SCHEDULE_DELTA`]. `None` when the schedule never fires again.
pub fn requeue_after(
    schedule: &Schedule,
    created: Timestamp,
    last_scheduled: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let from = match most_recent(schedule, created, last_scheduled, None, now) {
        Err(_) => now,
        Ok(Missed { most_recent: Some(t), .. }) => t,
        Ok(Missed { earliest, count: 0, .. }) => earliest,
        Ok(Missed { .. }) => now,
    };
    let next = schedule.next(from)?;
    let wait = next.as_nanosecond() - now.as_nanosecond()
        + NEXT_SCHEDULE_DELTA.as_nanos().try_into().unwrap_or(0i128);
    Some(Duration::from_nanos(u64::try_from(wait.max(0)).unwrap_or(u64::MAX)))
}

/// Go's `Duration.Round(time.Second)` in whole seconds (halves away from zero).
fn round_to_seconds(nanos: i128) -> i64 {
    let seconds = (nanos.abs() + 500_000_000) / 1_000_000_000;
    i64::try_from(if nanos < 0 { -seconds } else { seconds }).unwrap_or(i64::MAX)
}

fn nanos_to_ts(nanos: i128) -> Timestamp {
    Timestamp::from_nanosecond(nanos).unwrap_or(Timestamp::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn utc(spec: &str) -> Schedule {
        Schedule::parse(spec, &TimeZone::UTC).unwrap()
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
        let err = |spec| Schedule::parse(spec, &TimeZone::UTC).unwrap_err();
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
    fn time_zones_and_dst() {
        let Some(new_york) = zone::test_zone("America/New_York") else { return };
        // A zone prefix, or a default zone (the CronJob's spec.timeZone becomes a prefix).
        let nine = Schedule::parse("CRON_TZ=America/New_York 0 9 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(nine, Schedule::parse("0 9 * * *", &new_york).unwrap());
        assert_eq!(
            firings(&nine, "2024-03-09T15:00:00Z", 2),
            ["2024-03-10T13:00:00Z", "2024-03-11T13:00:00Z"]
        );
        // 02:30 does not exist on 2024-03-10 in New York: no firing that day.
        let skipped = Schedule::parse("TZ=America/New_York 30 2 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&skipped, "2024-03-09T08:00:00Z", 2),
            ["2024-03-11T06:30:00Z", "2024-03-12T06:30:00Z"]
        );
        // 01:30 happens twice on 2024-11-03: both fire (EDT, then EST).
        let repeated = Schedule::parse("TZ=America/New_York 30 1 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&repeated, "2024-11-02T06:00:00Z", 3),
            ["2024-11-03T05:30:00Z", "2024-11-03T06:30:00Z", "2024-11-04T06:30:00Z"]
        );
        // Every hour across spring-forward: the hour 02 is skipped, nothing doubles.
        let hourly = Schedule::parse("TZ=America/New_York 0 * * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&hourly, "2024-03-10T05:30:00Z", 3),
            ["2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z"]
        );
        let Some(tokyo) = zone::test_zone("Asia/Tokyo") else { return };
        let daily = Schedule::parse("@daily", &tokyo).unwrap();
        assert_eq!(firings(&daily, "2024-01-01T00:00:00Z", 1), ["2024-01-01T15:00:00Z"]);
    }

    #[test]
    fn most_recent_missed_times() {
        let every_minute = utc("*/1 * * * *");
        let created = ts("2024-01-01T10:00:30Z");
        // Nothing due yet.
        let m =
            most_recent(&every_minute, created, None, None, ts("2024-01-01T10:00:59Z")).unwrap();
        assert_eq!(m, Missed { earliest: created, most_recent: None, count: 0 });
        // One due.
        let m =
            most_recent(&every_minute, created, None, None, ts("2024-01-01T10:01:10Z")).unwrap();
        assert_eq!(m.most_recent, Some(ts("2024-01-01T10:01:00Z")));
        assert_eq!(m.count, 0);
        // Several missed since the last schedule time: the latest, and how many.
        let last = Some(ts("2024-01-01T10:01:00Z"));
        let m =
            most_recent(&every_minute, created, last, None, ts("2024-01-01T10:05:30Z")).unwrap();
        assert_eq!(m.most_recent, Some(ts("2024-01-01T10:05:00Z")));
        assert_eq!(m.count, 4);
        // Days of an outage: more than 100, still the latest.
        let m =
            most_recent(&every_minute, created, last, None, ts("2024-01-03T07:42:10Z")).unwrap();
        assert_eq!(m.most_recent, Some(ts("2024-01-03T07:42:00Z")));
        assert!(m.count > 100);
        // A starting deadline narrows the window: older firings are not even looked at.
        let m = most_recent(&every_minute, created, last, Some(200), ts("2024-01-03T07:42:10Z"))
            .unwrap();
        assert_eq!(m.most_recent, Some(ts("2024-01-03T07:42:00Z")));
        assert_eq!(m.count, 4);
        assert_eq!(Some(m.earliest), last);
        // An irregular schedule (weekdays, every four hours from 06:30) after a weekend.
        let irregular = utc("30 6-16/4 * * 1-5");
        let last = Some(ts("2024-01-05T14:30:00Z")); // Friday
        let m = most_recent(&irregular, created, last, None, ts("2024-01-08T11:00:00Z")).unwrap();
        assert_eq!(m.most_recent, Some(ts("2024-01-08T10:30:00Z")));
        // A schedule that never fires twice is an error.
        assert!(most_recent(&utc("0 0 30 2 *"), created, None, None, ts("2024-03-01T00:00:00Z"))
            .is_err());
    }

    #[test]
    fn requeue_waits_for_the_next_firing() {
        let every_minute = utc("*/1 * * * *");
        let created = ts("2024-01-01T10:00:30Z");
        let wait = |last, now| requeue_after(&every_minute, created, last, ts(now)).unwrap();
        assert_eq!(wait(None, "2024-01-01T10:00:40Z"), Duration::from_millis(20_100));
        let last = Some(ts("2024-01-01T10:01:00Z"));
        assert_eq!(wait(last, "2024-01-01T10:01:00.5Z"), Duration::from_millis(59_600));
        // Missed ones: from the latest of them.
        assert_eq!(wait(last, "2024-01-01T10:05:30Z"), Duration::from_millis(30_100));
        assert_eq!(
            requeue_after(&utc("0 0 30 2 *"), created, None, ts("2024-03-01T00:00:00Z")),
            None
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(go_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(go_duration(".5s"), Ok(500_000_000));
        assert_eq!(go_duration("-2m"), Ok(-120_000_000_000));
        assert_eq!(go_duration("0"), Ok(0));
        assert_eq!(go_duration("1d"), Err("time: unknown unit \"d\" in duration \"1d\"".into()));
        assert_eq!(go_duration("."), Err("time: invalid duration \".\"".into()));
    }
}
