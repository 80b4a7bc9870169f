//! Cron schedules, as `cron.ParseStandard` (robfig/cron v3, which the CronJob controller and
//! validation use) reads them, with its error texts: five fields or a `@descriptor`, and
//! `@every <duration>` with Go's `time.ParseDuration` errors. The parser is [`crate::cron`],
//! the one the controller runs schedules with.

use k8s_openapi::jiff::tz::TimeZone;

use crate::cron::Schedule;

/// Checks a standard five-field schedule (or a `@descriptor`) and returns the parser's
/// error text. A `TZ=`/`CRON_TZ=` prefix is skipped (the zone itself is not looked up: the
/// API server does not load zoneinfo, and a zone in the schedule is rejected separately).
pub fn parse_schedule(spec: &str) -> Result<(), String> {
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        spec = spec.find(' ').map_or("", |i| spec[i..].trim());
    }
    Schedule::parse_fields(spec, TimeZone::UTC).map(drop)
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
        assert_eq!(parse_schedule("@every 1h30m"), Ok(()));
        assert_eq!(
            parse_schedule("@every 5"),
            Err("failed to parse duration @every 5: time: missing unit in duration \"5\"".into())
        );
        assert_eq!(
            parse_schedule("@every x"),
            Err("failed to parse duration @every x: time: invalid duration \"x\"".into())
        );
        // A zone prefix is skipped, whatever the zone; a prefix alone leaves no fields.
        assert_eq!(parse_schedule("TZ=Mars/Olympus 0 0 * * *"), Ok(()));
        assert_eq!(
            parse_schedule("CRON_TZ=UTC"),
            Err("expected exactly 5 fields, found 0: []".into())
        );
    }
}
