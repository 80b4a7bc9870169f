//! When a CronJob is due, as upstream's controller works it out over the schedules of
//! [`rkube_apis::cron`] (robfig/cron v3's parser and next-firing walk, shared with the API
//! server's validation).
//!
//! - [`parse`]: a schedule, with a `TZ=`/`CRON_TZ=` prefix's zone loaded from this machine's
//!   zoneinfo ([`zone::load_location`]).
//! - [`most_recent`]: the latest missed firing since a CronJob's last schedule time, with
//!   upstream's estimate of how many were missed, and [`requeue_after`]: how long to sleep.

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;

pub use rkube_apis::cron::Schedule;

use super::zone;

/// How much later than the next firing a CronJob is looked at again: a little slack for the
/// clock, as upstream's `nextScheduleDelta`.
pub const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// Parses `spec`; a schedule without a `TZ=` prefix runs in `default_zone` (upstream: the
/// controller manager's local zone), a prefix's zone is Go's `time.LoadLocation` of it.
pub fn parse(spec: &str, default_zone: &TimeZone) -> Result<Schedule, String> {
    Schedule::parse(spec, default_zone, zone::load_location)
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
        parse(spec, &TimeZone::UTC).unwrap()
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
    fn bad_zones_are_go_errors() {
        assert_eq!(
            parse("TZ=Mars/Olympus * * * * *", &TimeZone::UTC).unwrap_err(),
            "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"
        );
    }

    #[test]
    fn time_zones_and_dst() {
        let Some(new_york) = zone::test_zone("America/New_York") else { return };
        // A zone prefix, or a default zone (the CronJob's spec.timeZone becomes a prefix).
        let nine = parse("CRON_TZ=America/New_York 0 9 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(nine, parse("0 9 * * *", &new_york).unwrap());
        assert_eq!(
            firings(&nine, "2024-03-09T15:00:00Z", 2),
            ["2024-03-10T13:00:00Z", "2024-03-11T13:00:00Z"]
        );
        // 02:30 does not exist on 2024-03-10 in New York: no firing that day.
        let skipped = parse("TZ=America/New_York 30 2 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&skipped, "2024-03-09T08:00:00Z", 2),
            ["2024-03-11T06:30:00Z", "2024-03-12T06:30:00Z"]
        );
        // 01:30 happens twice on 2024-11-03: both fire (EDT, then EST).
        let repeated = parse("TZ=America/New_York 30 1 * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&repeated, "2024-11-02T06:00:00Z", 3),
            ["2024-11-03T05:30:00Z", "2024-11-03T06:30:00Z", "2024-11-04T06:30:00Z"]
        );
        // Every hour across spring-forward: the hour 02 is skipped, nothing doubles.
        let hourly = parse("TZ=America/New_York 0 * * * *", &TimeZone::UTC).unwrap();
        assert_eq!(
            firings(&hourly, "2024-03-10T05:30:00Z", 3),
            ["2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z"]
        );
        let Some(tokyo) = zone::test_zone("Asia/Tokyo") else { return };
        let daily = parse("@daily", &tokyo).unwrap();
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
}
