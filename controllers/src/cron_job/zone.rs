//! Time zones the way the Go runtime under kube-controller-manager sees them: `LoadLocation`
//! over the system's zoneinfo files, the process's local zone from `TZ` or `/etc/localtime`,
//! and Go's time layouts. The schedules of [`super::schedule`] run in these zones (the wall
//! clock arithmetic, `time.Date` included, is in [`rkube_apis::cron`], which does no I/O), so
//! that a schedule fires at the same instants as upstream's, DST days included.
//!
//! Zones come from TZif files read with `jiff` (`TimeZone::tzif`): rkube's `jiff` has no
//! bundled database, so a machine without `/usr/share/zoneinfo` (or `$ZONEINFO`) knows only
//! `UTC`, where upstream would fall back to Go's embedded copy.

use std::sync::OnceLock;

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;

/// Where Go looks for zoneinfo files on Unix, after `$ZONEINFO`.
const ZONE_SOURCES: [&str; 4] =
    ["/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ", "/etc/zoneinfo"];

/// TZif files are small; anything bigger is not one (Go refuses past 10 MB too).
const MAX_TZIF: u64 = 10 << 20;

/// Go's `time.LoadLocation`: `""` and `UTC` are UTC, `Local` the process's zone, anything else
/// a zoneinfo file. The error is Go's text (`unknown time zone X`).
pub fn load_location(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => return Ok(TimeZone::UTC),
        "Local" => return Ok(local()),
        _ => {}
    }
    // A name must not climb out of the zoneinfo directory.
    if name.split('/').any(|part| part == "..") || name.starts_with(['/', '\\']) {
        return Err("time: invalid location name".to_string());
    }
    let from_env = std::env::var("ZONEINFO").ok().filter(|d| !d.is_empty());
    let mut first_error = None;
    for dir in from_env.iter().map(String::as_str).chain(ZONE_SOURCES) {
        match read_tzif(name, &format!("{dir}/{name}")) {
            Ok(Some(zone)) => return Ok(zone),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| format!("unknown time zone {name}")))
}

/// A zoneinfo file as a zone named `name`; `None` when there is no such (regular) file.
fn read_tzif(name: &str, path: &str) -> Result<Option<TimeZone>, String> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(None) };
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > MAX_TZIF {
        return Err(format!("{path}: file too large"));
    }
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    TimeZone::tzif(name, &data).map(Some).map_err(|_| "malformed time zone information".to_string())
}

/// The controller manager's own zone (Go's `time.Local`), which schedules without a zone
/// follow: `TZ` if set (empty means UTC), else `/etc/localtime`, else UTC. Read once, as Go
/// does at start-up.
pub fn local() -> TimeZone {
    static LOCAL: OnceLock<TimeZone> = OnceLock::new();
    LOCAL.get_or_init(load_local).clone()
}

fn load_local() -> TimeZone {
    let loaded = match std::env::var("TZ") {
        Err(_) => read_tzif("Local", "/etc/localtime").ok().flatten(),
        Ok(tz) => {
            let tz = tz.strip_prefix(':').unwrap_or(&tz);
            if tz.is_empty() || tz == "UTC" {
                None
            } else if tz.starts_with('/') {
                read_tzif("Local", tz).ok().flatten()
            } else {
                load_location(tz).ok()
            }
        }
    };
    loaded.unwrap_or(TimeZone::UTC)
}

/// `t` as Go's `time.RFC3339` layout prints it in `zone`: `2024-03-10T09:00:00-04:00`, with `Z`
/// for a zero offset.
pub fn rfc3339(t: Timestamp, zone: &TimeZone) -> String {
    let w = zone.to_datetime(t);
    let offset = zone.to_offset(t).seconds();
    let suffix = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let minutes = offset.unsigned_abs() / 60;
        format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{suffix}",
        w.year(),
        w.month(),
        w.day(),
        w.hour(),
        w.minute(),
        w.second()
    )
}

/// `t` in UTC as Go's `time.RFC1123Z` layout prints it: `Mon, 02 Jan 2006 15:04:05 +0000`.
pub fn rfc1123z_utc(t: Timestamp) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let w = TimeZone::UTC.to_datetime(t);
    let day = DAYS[usize::try_from(w.weekday().to_sunday_zero_offset()).unwrap_or(0)];
    let month = MONTHS[usize::try_from(w.month() - 1).unwrap_or(0)];
    format!(
        "{day}, {:02} {month} {:04} {:02}:{:02}:{:02} +0000",
        w.day(),
        w.year(),
        w.hour(),
        w.minute(),
        w.second()
    )
}

/// A zone for tests: `None` on a machine without its zoneinfo file (the test then skips the
/// zone's cases), and a failure if the file is there but does not load.
#[cfg(test)]
pub(super) fn test_zone(name: &str) -> Option<TimeZone> {
    let present = std::path::Path::new(ZONE_SOURCES[0]).join(name).is_file();
    present.then(|| load_location(name).expect("a zoneinfo file that is there loads"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apis::cron::go_date;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn names_are_checked_and_special_names_need_no_files() {
        assert_eq!(load_location("").unwrap(), TimeZone::UTC);
        assert_eq!(load_location("UTC").unwrap(), TimeZone::UTC);
        assert_eq!(load_location("../etc/passwd").unwrap_err(), "time: invalid location name");
        assert_eq!(load_location("/etc/passwd").unwrap_err(), "time: invalid location name");
        assert_eq!(load_location("Mars/Olympus").unwrap_err(), "unknown time zone Mars/Olympus");
    }

    #[test]
    fn skipped_and_repeated_wall_times_resolve_as_go_does() {
        let Some(new_york) = test_zone("America/New_York") else { return };
        // 2024-03-10 02:30 does not exist in New York: Go lands on 01:30 EST (06:30Z).
        assert_eq!(
            go_date(&new_york, 2024, 3, 10, 2, 30, 0),
            ts("2024-03-10T06:30:00Z").as_second()
        );
        // 2024-11-03 01:30 happens twice: Go takes the first (EDT, 05:30Z).
        assert_eq!(
            go_date(&new_york, 2024, 11, 3, 1, 30, 0),
            ts("2024-11-03T05:30:00Z").as_second()
        );
        let Some(berlin) = test_zone("Europe/Berlin") else { return };
        // East of UTC the lookup lands on the other side: 02:30 skipped -> 03:30 CEST (01:30Z),
        // 02:30 repeated -> the second one, CET (01:30Z).
        assert_eq!(go_date(&berlin, 2024, 3, 31, 2, 30, 0), ts("2024-03-31T01:30:00Z").as_second());
        assert_eq!(
            go_date(&berlin, 2024, 10, 27, 2, 30, 0),
            ts("2024-10-27T01:30:00Z").as_second()
        );
    }

    #[test]
    fn times_print_like_go_layouts() {
        let t = ts("2024-03-10T14:00:00Z");
        assert_eq!(rfc3339(t, &TimeZone::UTC), "2024-03-10T14:00:00Z");
        assert_eq!(rfc1123z_utc(t), "Sun, 10 Mar 2024 14:00:00 +0000");
        if let Some(new_york) = test_zone("America/New_York") {
            assert_eq!(rfc3339(t, &new_york), "2024-03-10T10:00:00-04:00");
        }
        if let Some(kolkata) = test_zone("Asia/Kolkata") {
            assert_eq!(rfc3339(t, &kolkata), "2024-03-10T19:30:00+05:30");
        }
    }
}
