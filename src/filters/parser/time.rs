//! `time_format`: how a parser filter reads a `time_key` value. strptime
//! notation as chrono reads it, with what Fluent Bit's `Time_Format` adds,
//! so that a Fluent Bit parser's format reads the same times:
//!
//! - `%L`: the fraction of a second, as digits after whatever the format
//!   puts before it (`%S.%L`, `%S,%L`, `%S:%L`); past nine digits the
//!   rest is read and ignored;
//! - `%z` (and `%:z`) take `Z` for UTC beside `+0200` and `+02:00`;
//! - a weekday name (`%a`, `%A`) is read, not checked against the date;
//! - a format without a year (`%b %d %H:%M:%S`, old syslog) reads the
//!   time in the current year, or the year before for a date more than a
//!   day ahead (a December line read in January).
//!
//! Without a zone the time is UTC.

use chrono::format::{parse_and_remainder, Fixed, Item, Parsed, StrftimeItems};
use chrono::{DateTime, Datelike, Utc};

use crate::event::EventTime;

/// A compiled `time_format`.
#[derive(Debug)]
pub(super) struct TimeFormat {
    /// The format as written, for messages.
    text: String,
    /// What it reads before `%L`; all of it without one.
    head: Vec<Item<'static>>,
    /// What it reads after `%L`, if it has one.
    tail: Option<Vec<Item<'static>>>,
}

impl TimeFormat {
    /// Compiles `format`; an error names what chrono does not know.
    pub(super) fn new(format: &str) -> Result<TimeFormat, String> {
        let (head, tail) = match split_at_fraction(format) {
            Some((h, t)) => (h, Some(t)),
            None => (format, None),
        };
        let items = |part: &str| -> Result<Vec<Item<'static>>, String> {
            let items = StrftimeItems::new(part)
                .parse_to_owned()
                .map_err(|_| format!("time_format {format:?}: not a strptime format"))?;
            Ok(weekday_unchecked(
                items.into_iter().map(zone_takes_z).collect(),
            ))
        };
        Ok(TimeFormat {
            text: format.to_string(),
            head: items(head)?,
            tail: tail.map(items).transpose()?,
        })
    }

    /// The format as written.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// The time `text` stands for; `now` gives the year a format without
    /// one reads in.
    pub(super) fn read(&self, text: &str, now: EventTime) -> Option<EventTime> {
        let mut parsed = Parsed::new();
        let mut rest = parse_and_remainder(&mut parsed, text, self.head.iter()).ok()?;
        if let Some(tail) = &self.tail {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            let mut nanos = 0i64;
            for (i, d) in rest.bytes().take(9).enumerate().take(digits) {
                nanos += i64::from(d - b'0') * 10i64.pow(8 - i as u32);
            }
            parsed.set_nanosecond(nanos).ok()?;
            rest = parse_and_remainder(&mut parsed, &rest[digits..], tail.iter()).ok()?;
        }
        if !rest.trim_end().is_empty() {
            return None;
        }
        let offset = parsed.offset().unwrap_or(0);
        let without_year = parsed.year().is_none()
            && parsed.year_mod_100().is_none()
            && parsed.isoyear().is_none()
            && parsed.isoyear_mod_100().is_none()
            && parsed.timestamp().is_none();
        let at = if without_year {
            let now = i64::from(now.secs);
            let this_year = DateTime::from_timestamp(now, 0)?.year();
            let in_year = |year: i32| -> Option<DateTime<Utc>> {
                let mut p = parsed.clone();
                p.set_year(i64::from(year)).ok()?;
                Some(p.to_naive_datetime_with_offset(offset).ok()?.and_utc())
            };
            let t = in_year(this_year)?;
            if t.timestamp() - i64::from(offset) > now + 86_400 {
                in_year(this_year - 1)?
            } else {
                t
            }
        } else {
            parsed.to_naive_datetime_with_offset(offset).ok()?.and_utc()
        };
        let secs = at.timestamp() - i64::from(offset);
        Some(EventTime::new(
            u32::try_from(secs).ok()?,
            at.timestamp_subsec_nanos(),
        ))
    }
}

/// The format before and after its `%L`, if it has one (`%%L` is a `%`
/// and an `L`).
fn split_at_fraction(format: &str) -> Option<(&str, &str)> {
    let bytes = format.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'%' {
            if bytes[i + 1] == b'L' {
                return Some((&format[..i], &format[i + 2..]));
            }
            // skip the directive's letter, so `%%L` is not taken
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// A weekday name (`%a`, `%A`) followed by a space or the end is read and
/// not checked against the date, as Fluent Bit's strptime does (its own
/// test reads `Fri Jul 17 … 2017`, a Monday): it becomes an item that
/// takes a word and sets nothing. One followed by something else stays
/// checked.
fn weekday_unchecked(mut items: Vec<Item<'static>>) -> Vec<Item<'static>> {
    for i in 0..items.len() {
        let is_weekday = matches!(
            items[i],
            Item::Fixed(Fixed::ShortWeekdayName | Fixed::LongWeekdayName)
        );
        let word_ends = match items.get(i + 1) {
            None => true,
            Some(Item::Space(_) | Item::OwnedSpace(_)) => true,
            Some(Item::Literal(l)) => l.starts_with(char::is_whitespace),
            Some(Item::OwnedLiteral(l)) => l.starts_with(char::is_whitespace),
            Some(_) => false,
        };
        if is_weekday && word_ends {
            // a zone name is read as a word and kept nowhere
            items[i] = Item::Fixed(Fixed::TimezoneName);
        }
    }
    items
}

/// `%z` and `%:z` read `Z` as UTC too, as Fluent Bit's do.
fn zone_takes_z(item: Item<'static>) -> Item<'static> {
    match item {
        Item::Fixed(Fixed::TimezoneOffset | Fixed::TimezoneOffsetColon) => {
            Item::Fixed(Fixed::TimezoneOffsetZ)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-27T12:00:00Z
    const NOW: EventTime = EventTime {
        secs: 1_795_780_800,
        nanos: 0,
    };

    fn read(format: &str, text: &str) -> Option<(u32, u32)> {
        let t = TimeFormat::new(format).unwrap().read(text, NOW)?;
        Some((t.secs, t.nanos))
    }

    #[test]
    fn fluent_bits_own_cases_read_the_same() {
        // the cases of Fluent Bit's time lookup test that name a zone or
        // are UTC: 07/17/2017 20:17:03 UTC is 1500322623
        let t = 1_500_322_623;
        let cases: &[(&str, &str, u32)] = &[
            ("%m/%d/%Y %H:%M:%S %z", "07/17/2017 20:17:03 +0000", 0),
            ("%m/%d/%Y %H:%M:%S %z", "07/18/2017 01:47:03 +0530", 0),
            ("%m/%d/%Y %H:%M:%S %z", "07/18/2017 05:17:03 +0900", 0),
            ("%m/%d/%Y %H:%M:%S %z", "07/17/2017 22:17:03 +0200", 0),
            (
                "%m/%d/%Y %H:%M:%S.%L %z",
                "07/17/2017 22:17:03.1 +0200",
                100_000_000,
            ),
            (
                "%m/%d/%Y %H:%M:%S,%L %z",
                "07/17/2017 22:17:03,1 +0200",
                100_000_000,
            ),
            ("%m/%d/%Y %H:%M:%S %z", "07/18/2017 01:47:03 +05:30", 0),
            (
                "%m/%d/%Y %H:%M:%S.%L %z",
                "07/17/2017 22:17:03.1 +02:00",
                100_000_000,
            ),
            (
                "%m/%d/%Y %H:%M:%S,%L %z",
                "07/17/2017 22:17:03,1 +02:00",
                100_000_000,
            ),
            (
                "%m/%d/%Y %H:%M:%S:%L %z",
                "07/17/2017 22:17:03:1 +02:00",
                100_000_000,
            ),
            ("%m/%d/%Y %H:%M:%S", "07/17/2017 20:17:03", 0),
            ("%m/%d/%Y %H:%M:%SZ", "07/17/2017 20:17:03Z", 0),
            (
                "%m/%d/%Y %H:%M:%S.%LZ",
                "07/17/2017 20:17:03.1234Z",
                123_400_000,
            ),
            (
                "%m/%d/%Y %H:%M:%S,%LZ",
                "07/17/2017 20:17:03,1234Z",
                123_400_000,
            ),
            (
                "%a %b %d %H:%M:%S.%L %Y",
                "Fri Jul 17 20:17:03.1234 2017",
                123_400_000,
            ),
            (
                "%Y-%m-%dT%H:%M:%S.%L",
                "2017-07-17T20:17:03.123",
                123_000_000,
            ),
            (
                "%Y-%m-%dT%H:%M:%S.%L%z",
                "2017-07-17T20:17:03.123456789Z",
                123_456_789,
            ),
            (
                "%Y-%m-%dT%H:%M:%S.%L%z",
                "2017-07-17T20:17:03.1234567891+00:00",
                123_456_789,
            ),
        ];
        for (format, text, nanos) in cases {
            assert_eq!(read(format, text), Some((t, *nanos)), "{format} {text}");
        }
    }

    #[test]
    fn zone_z_is_utc() {
        assert_eq!(
            read("%Y-%m-%dT%H:%M:%S%z", "2017-07-17T20:17:03Z"),
            Some((1_500_322_623, 0))
        );
        assert_eq!(
            read("%Y-%m-%dT%H:%M:%S%:z", "2017-07-17T20:17:03z"),
            Some((1_500_322_623, 0))
        );
    }

    #[test]
    fn no_year_is_this_year_or_last_for_a_date_ahead() {
        // Feb 16 04:06:58 of 2026, as Fluent Bit's no_year cases (UTC)
        assert_eq!(
            read("%b %d %H:%M:%S", "Feb 16 04:06:58"),
            Some((1_771_214_818, 0))
        );
        assert_eq!(
            read("%b %d %H:%M:%S.%L %z", "Feb 16 04:06:58.1234 -0600"),
            Some((1_771_214_818 + 6 * 3600, 123_400_000))
        );
        // Dec 31 read on 2026-11-27 is more than a day ahead: 2025
        assert_eq!(
            read("%b %d %H:%M:%S", "Dec 31 23:00:00"),
            Some((1_767_222_000, 0))
        );
        // tomorrow is still this year
        assert_eq!(
            read("%b %d %H:%M:%S", "Nov 28 12:00:00"),
            Some((NOW.secs + 86_400, 0))
        );
    }

    #[test]
    fn what_does_not_read() {
        assert_eq!(read("%m/%d/%Y %H:%M:%S.%L", "07/17/2017 20:17:03."), None);
        assert_eq!(read("%m/%d/%Y %H:%M:%S", "07/17/2017 20:17:03 extra"), None);
        assert_eq!(
            read("%m/%d/%Y %H:%M:%S %z", "07/17/2017 20:17:03 +00:90"),
            None
        );
        assert_eq!(read("%m/%d/%Y", "not a date"), None);
        assert!(TimeFormat::new("%Q").is_err());
        assert!(TimeFormat::new("%S.%L.%L").is_err());
        // `%%L` is a percent sign and an L
        assert_eq!(
            read("%Y-%m-%d %H:%M:%S %%L", "2017-07-17 20:17:03 %L"),
            Some((1_500_322_623, 0))
        );
    }
}
