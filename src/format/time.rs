//! Event time → text, cached per second (formatting a date is far slower
//! than copying the bytes of the one before).

use std::io::Write;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Utc};

use crate::event::EventTime;

/// Formats event times in UTC: RFC 3339 with nanoseconds by default, or a
/// strftime pattern.
#[derive(Debug, Clone)]
pub struct TimeFormat {
    pattern: Option<String>,
    /// True if the pattern shows sub-second digits, which defeats the cache.
    subsec: bool,
    cached_secs: Option<u32>,
    cached: Vec<u8>,
}

impl TimeFormat {
    /// `None` = RFC 3339 with nanoseconds. Rejects invalid patterns here, so
    /// formatting can never fail later.
    pub fn new(pattern: Option<&str>) -> Result<Self, String> {
        if let Some(p) = pattern {
            if StrftimeItems::new(p).any(|i| matches!(i, Item::Error)) {
                return Err(format!(
                    "invalid time_format {p:?} (strftime syntax expected)"
                ));
            }
        }
        Ok(TimeFormat {
            pattern: pattern.map(str::to_string),
            subsec: pattern.is_some_and(|p| p.contains('f')),
            cached_secs: None,
            cached: Vec::new(),
        })
    }

    pub fn write(&mut self, out: &mut Vec<u8>, t: EventTime) {
        match &self.pattern {
            None => {
                self.refresh(t);
                out.extend_from_slice(&self.cached);
                // `EventTime::read` never yields 10^9 nanoseconds or more;
                // a time built in code is clamped, as in `to_datetime`, so
                // the text is always RFC 3339
                let nanos = t.nanos.min(999_999_999);
                let mut text = *b".000000000Z";
                // each digit on its own, not one division after another:
                // a chain of nine cost a few percent of writing JSON lines
                const TENS: [u32; 9] = [
                    100_000_000,
                    10_000_000,
                    1_000_000,
                    100_000,
                    10_000,
                    1_000,
                    100,
                    10,
                    1,
                ];
                for (digit, ten) in text[1..10].iter_mut().zip(TENS) {
                    *digit = b'0' + (nanos / ten % 10) as u8;
                }
                out.extend_from_slice(&text);
            }
            Some(p) if self.subsec => {
                let _ = write!(out, "{}", to_datetime(t).format(p));
            }
            Some(_) => {
                self.refresh(t);
                out.extend_from_slice(&self.cached);
            }
        }
    }

    fn refresh(&mut self, t: EventTime) {
        if self.cached_secs != Some(t.secs) {
            let pattern = self.pattern.as_deref().unwrap_or("%Y-%m-%dT%H:%M:%S");
            self.cached.clear();
            let _ = write!(
                self.cached,
                "{}",
                to_datetime(EventTime::new(t.secs, 0)).format(pattern)
            );
            self.cached_secs = Some(t.secs);
        }
    }
}

fn to_datetime(t: EventTime) -> DateTime<Utc> {
    DateTime::from_timestamp(i64::from(t.secs), t.nanos.min(999_999_999)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(p: Option<&str>, t: EventTime) -> String {
        let mut out = Vec::new();
        TimeFormat::new(p).unwrap().write(&mut out, t);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn default_is_rfc3339_with_nanoseconds() {
        assert_eq!(
            fmt(None, EventTime::new(1_700_000_000, 5)),
            "2023-11-14T22:13:20.000000005Z"
        );
    }

    #[test]
    fn every_time_prints_as_rfc3339() {
        let cases = [
            (EventTime::new(0, 0), "1970-01-01T00:00:00.000000000Z"),
            (
                EventTime::new(u32::MAX, 999_999_999),
                "2106-02-07T06:28:15.999999999Z",
            ),
            // not produced by decoding, but never printed as invalid text
            (
                EventTime::new(1_700_000_000, 2_000_000_000),
                "2023-11-14T22:13:20.999999999Z",
            ),
            (
                EventTime::new(1_700_000_000, u32::MAX),
                "2023-11-14T22:13:20.999999999Z",
            ),
            (
                EventTime::new(1_700_000_000, 123_456_789),
                "2023-11-14T22:13:20.123456789Z",
            ),
            (
                EventTime::new(1_700_000_000, 100_200_003),
                "2023-11-14T22:13:20.100200003Z",
            ),
        ];
        for (t, want) in cases {
            let text = fmt(None, t);
            assert_eq!(text, want, "{t:?}");
            assert!(DateTime::parse_from_rfc3339(&text).is_ok(), "{text}");
            assert_eq!(fmt(Some("%Y-%m-%dT%H:%M:%S%.9fZ"), t), want, "{t:?}");
        }
    }

    #[test]
    fn strftime_patterns_and_cache() {
        let mut f = TimeFormat::new(Some("%H:%M:%S")).unwrap();
        let mut out = Vec::new();
        f.write(&mut out, EventTime::new(1_700_000_000, 1));
        f.write(&mut out, EventTime::new(1_700_000_001, 1));
        assert_eq!(out, b"22:13:2022:13:21");
        assert_eq!(fmt(Some("%s.%3f"), EventTime::new(5, 250_000_000)), "5.250");
        assert!(TimeFormat::new(Some("%Q")).is_err());
    }
}
