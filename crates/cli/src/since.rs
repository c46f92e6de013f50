//! `--since` (`probity export`, `probity monitor`): a time as the store
//! writes run times, `YYYY-MM-DDTHH:MM:SSZ` in UTC, so that comparing the
//! text compares the times.

use crate::failure::Failure;
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};

/// The stored-time form of `since`: a UTC date (its midnight), a UTC time
/// (`2026-11-20T14:00:00Z`, the `Z` optional, or any RFC 3339 offset), or
/// a span back from now (`30m`, `24h`, `7d`).
pub fn stamp(since: &str) -> Result<String, Failure> {
    stamp_at(since, Utc::now())
}

fn stamp_at(since: &str, now: DateTime<Utc>) -> Result<String, Failure> {
    let s = since.trim();
    let at = if let Some(span) = span(s) {
        span.and_then(|d| now.checked_sub_signed(d))
    } else if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        d.and_hms_opt(0, 0, 0).map(|t| t.and_utc())
    } else if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        Some(t.with_timezone(&Utc))
    } else {
        NaiveDateTime::parse_from_str(s.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S")
            .ok()
            .map(|t| t.and_utc())
    };
    at.map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .ok_or_else(|| {
            Failure::usage(format!(
                "--since {since:?}: expected a UTC date or time, such as 2026-11-20 or 2026-11-20T14:00:00Z, or a span back from now, such as 24h or 7d"
            ))
        })
}

/// `N` followed by `m`, `h` or `d`: `Some(None)` when it has that form but
/// is out of range, `None` when it is not a span at all. Three units are
/// all `--since` needs; a duration crate would add a dependency for them.
fn span(s: &str) -> Option<Option<TimeDelta>> {
    let unit = s.chars().last()?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().ok()?;
    let minutes = match unit {
        'm' => Some(1),
        'h' => Some(60),
        'd' => Some(24 * 60),
        _ => return None,
    };
    Some(
        minutes
            .and_then(|m| n.checked_mul(m))
            .filter(|&m| m >= 0)
            .and_then(TimeDelta::try_minutes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-24T21:30:15Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn ok(s: &str) -> String {
        stamp_at(s, now()).unwrap_or_else(|e| panic!("{s}: {}", e.message))
    }

    #[test]
    fn dates_times_and_spans() {
        assert_eq!(ok("2026-11-20"), "2026-11-20T00:00:00Z");
        assert_eq!(ok("2026-11-20T14:00:00Z"), "2026-11-20T14:00:00Z");
        assert_eq!(ok("2026-11-20T14:00:00"), "2026-11-20T14:00:00Z");
        assert_eq!(ok("2026-11-20T15:00:00+01:00"), "2026-11-20T14:00:00Z");
        assert_eq!(ok("24h"), "2026-11-23T21:30:15Z");
        assert_eq!(ok("7d"), "2026-11-17T21:30:15Z");
        assert_eq!(ok("30m"), "2026-11-24T21:00:15Z");
        assert_eq!(ok("0m"), "2026-11-24T21:30:15Z");
    }

    #[test]
    fn bad_times_name_the_flag_and_the_forms() {
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "yesterday",
            "24",
            "h",
            "-3d",
            "99999999999999999d",
            "2026-11-20T25:00:00Z",
            "",
        ] {
            let e = stamp_at(bad, now())
                .err()
                .unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(
                e.message.contains(&format!("--since {bad:?}")) && e.message.contains("24h"),
                "{bad}: {}",
                e.message
            );
        }
    }
}
