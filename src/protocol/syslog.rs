//! Syslog messages (RFC 5424 and RFC 3164) into their parts, for the TCP
//! source (`parser = "syslog"`) and the parser filter (`format = "syslog"`),
//! which name the parts differently.
//!
//! A message starts with `<PRI>`; `1 ` after it means RFC 5424, anything
//! else is read as RFC 3164, whose layout senders vary: the timestamp and
//! the host name may be missing (a local `logger`, Python's
//! `SysLogHandler`), and the tag is taken only where it looks like one.
//! Fields a message leaves out (or gives as `-`) are absent from the record.

use std::borrow::Cow;

use chrono::{Datelike, Local, NaiveDate, TimeZone};

use crate::event::EventTime;

/// One parsed message; byte fields borrow from the input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Syslog<'a> {
    pub facility: u8,
    pub severity: u8,
    /// RFC 5424's VERSION; `None` for RFC 3164.
    pub version: Option<u8>,
    /// The message's timestamp, if it has one that parses.
    pub time: Option<EventTime>,
    /// The timestamp text when it did not parse (kept, not lost).
    pub timestamp: Option<&'a [u8]>,
    /// The timestamp as written, parsed or not.
    pub time_text: Option<&'a [u8]>,
    pub hostname: Option<&'a [u8]>,
    /// RFC 5424 APP-NAME, or RFC 3164's tag (ident).
    pub app_name: Option<&'a [u8]>,
    /// RFC 5424 PROCID, or the `[pid]` of an RFC 3164 tag.
    pub procid: Option<&'a [u8]>,
    pub msgid: Option<&'a [u8]>,
    /// RFC 5424 STRUCTURED-DATA: SD-ID → (PARAM-NAME, unescaped value).
    pub structured_data: Vec<SdElement<'a>>,
    /// RFC 5424 STRUCTURED-DATA as it was written (`[id k="v"]…`), for
    /// those who keep it as one text (Fluent Bit's `extradata`).
    pub structured_data_text: Option<&'a [u8]>,
    pub message: &'a [u8],
}

/// One SD-ELEMENT: its SD-ID and its (PARAM-NAME, unescaped value) pairs.
pub type SdElement<'a> = (&'a [u8], Vec<(&'a [u8], Cow<'a, [u8]>)>);

/// Why a message is not syslog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyslogError {
    /// It does not start with `<PRI>` (1 to 3 digits, at most 191).
    NoPri,
    /// RFC 5424 header fields are missing or malformed.
    BadHeader(&'static str),
}

impl std::fmt::Display for SyslogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyslogError::NoPri => f.write_str("no <PRI> at the start (not a syslog message)"),
            SyslogError::BadHeader(what) => write!(f, "RFC 5424 header: {what}"),
        }
    }
}

pub const FACILITIES: [&str; 24] = [
    "kern",
    "user",
    "mail",
    "daemon",
    "auth",
    "syslog",
    "lpr",
    "news",
    "uucp",
    "cron",
    "authpriv",
    "ftp",
    "ntp",
    "security",
    "console",
    "solaris-cron",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];

pub const SEVERITIES: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

/// What reading an RFC 3164 timestamp needs (the year and the local UTC
/// offset), worked out once per batch: asking the time zone for every
/// message costs more than parsing it.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    now: EventTime,
    year: i32,
    /// Seconds east of UTC, at `now`.
    utc_offset: i64,
}

impl Clock {
    pub fn new(now: EventTime) -> Self {
        let (year, utc_offset) = match Local.timestamp_opt(i64::from(now.secs), 0).single() {
            Some(t) => (t.year(), i64::from(t.offset().local_minus_utc())),
            None => (1970, 0),
        };
        Clock {
            now,
            year,
            utc_offset,
        }
    }

    pub fn now(&self) -> EventTime {
        self.now
    }
}

/// Parses one message (without its framing). `now` decides the year of an
/// RFC 3164 timestamp, which has none.
pub fn parse(msg: &[u8], now: EventTime) -> Result<Syslog<'_>, SyslogError> {
    parse_with(msg, &Clock::new(now))
}

/// [`parse`] with the clock worked out beforehand.
pub fn parse_with<'a>(msg: &'a [u8], clock: &Clock) -> Result<Syslog<'a>, SyslogError> {
    let msg = trim_end(msg);
    let (pri, rest) = pri(msg).ok_or(SyslogError::NoPri)?;
    let mut out = Syslog {
        facility: pri / 8,
        severity: pri % 8,
        ..Syslog::default()
    };
    if let Some(rest) = rest.strip_prefix(b"1 ") {
        rfc5424(&mut out, rest)?;
    } else {
        rfc3164(&mut out, rest, clock);
    }
    Ok(out)
}

fn trim_end(mut b: &[u8]) -> &[u8] {
    while let [head @ .., b'\n' | b'\r' | b'\0'] = b {
        b = head;
    }
    b
}

fn pri(msg: &[u8]) -> Option<(u8, &[u8])> {
    let rest = msg.strip_prefix(b"<")?;
    let close = rest.iter().take(4).position(|c| *c == b'>')?;
    let digits = &rest[..close];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let pri: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (pri <= 191).then_some((pri as u8, &rest[close + 1..]))
}

/// Splits off the next space-delimited header field.
fn field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    if rest.is_empty() {
        return None;
    }
    let (f, r) = match memchr::memchr(b' ', rest) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (*rest, &b""[..]),
    };
    *rest = r;
    Some(f)
}

fn nil(f: &[u8]) -> Option<&[u8]> {
    (f != b"-" && !f.is_empty()).then_some(f)
}

fn rfc5424<'a>(out: &mut Syslog<'a>, mut rest: &'a [u8]) -> Result<(), SyslogError> {
    out.version = Some(1);
    let missing =
        SyslogError::BadHeader("expected TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA");
    let ts = field(&mut rest).ok_or(missing)?;
    if let Some(ts) = nil(ts) {
        out.time_text = Some(ts);
        match rfc3339(ts) {
            Some(t) => out.time = Some(t),
            None => out.timestamp = Some(ts),
        }
    }
    out.hostname = nil(field(&mut rest).ok_or(missing)?);
    out.app_name = nil(field(&mut rest).ok_or(missing)?);
    out.procid = nil(field(&mut rest).ok_or(missing)?);
    out.msgid = nil(field(&mut rest).ok_or(missing)?);
    if rest.starts_with(b"-") {
        rest = &rest[1..];
    } else if rest.starts_with(b"[") {
        let start = rest;
        rest = structured_data(out, rest)?;
        out.structured_data_text = Some(&start[..start.len() - rest.len()]);
    } else {
        return Err(SyslogError::BadHeader(
            "STRUCTURED-DATA must be \"-\" or start with '['",
        ));
    }
    let msg = rest.strip_prefix(b" ").unwrap_or(rest);
    out.message = msg.strip_prefix("\u{feff}".as_bytes()).unwrap_or(msg);
    Ok(())
}

/// Reads `[id name="value" …]…` and returns what follows it.
fn structured_data<'a>(out: &mut Syslog<'a>, mut rest: &'a [u8]) -> Result<&'a [u8], SyslogError> {
    let bad = |what| Err(SyslogError::BadHeader(what));
    while let Some(r) = rest.strip_prefix(b"[") {
        let id_end = r
            .iter()
            .position(|c| matches!(c, b' ' | b']'))
            .ok_or(SyslogError::BadHeader("unterminated SD-ELEMENT"))?;
        let id = &r[..id_end];
        if id.is_empty() {
            return bad("empty SD-ID");
        }
        let mut r = &r[id_end..];
        let mut params = Vec::new();
        loop {
            match r.first() {
                Some(b']') => {
                    r = &r[1..];
                    break;
                }
                Some(b' ') => r = &r[1..],
                None => return bad("unterminated SD-ELEMENT"),
                Some(_) => {
                    let eq = memchr::memchr(b'=', r)
                        .ok_or(SyslogError::BadHeader("SD-PARAM without '='"))?;
                    let name = &r[..eq];
                    r = r[eq + 1..]
                        .strip_prefix(b"\"")
                        .ok_or(SyslogError::BadHeader("SD-PARAM value must be quoted"))?;
                    let (value, after) =
                        sd_value(r).ok_or(SyslogError::BadHeader("unterminated SD-PARAM value"))?;
                    params.push((name, value));
                    r = after;
                }
            }
        }
        out.structured_data.push((id, params));
        rest = r;
    }
    Ok(rest)
}

/// A quoted SD-PARAM value up to its closing quote, with `\"`, `\\` and
/// `\]` unescaped (any other backslash is kept, as RFC 5424 says).
fn sd_value(r: &[u8]) -> Option<(Cow<'_, [u8]>, &[u8])> {
    let mut i = 0;
    let mut owned: Option<Vec<u8>> = None;
    while i < r.len() {
        match r[i] {
            b'"' => {
                let v = match owned {
                    Some(v) => Cow::Owned(v),
                    None => Cow::Borrowed(&r[..i]),
                };
                return Some((v, &r[i + 1..]));
            }
            b'\\' if matches!(r.get(i + 1), Some(b'"' | b'\\' | b']')) => {
                let v = owned.get_or_insert_with(|| r[..i].to_vec());
                v.push(r[i + 1]);
                i += 2;
            }
            c => {
                if let Some(v) = owned.as_mut() {
                    v.push(c);
                }
                i += 1;
            }
        }
    }
    None
}

/// An RFC 3339 time (`2026-12-06T05:12:07.123456789Z`, or with an offset).
pub fn rfc3339(ts: &[u8]) -> Option<EventTime> {
    let s = std::str::from_utf8(ts).ok()?;
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    let secs = u32::try_from(t.timestamp()).ok()?;
    Some(EventTime::new(secs, t.timestamp_subsec_nanos()))
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

fn rfc3164<'a>(out: &mut Syslog<'a>, mut rest: &'a [u8], clock: &Clock) {
    // `Mmm dd hh:mm:ss `, local time of the sender (taken as ours)
    if rest.len() >= 16 && rest[15] == b' ' {
        if let Some(t) = bsd_timestamp(&rest[..15], clock) {
            out.time = Some(t);
            out.time_text = Some(&rest[..15]);
            rest = &rest[16..];
            rest = host_then_tag(out, rest);
            out.message = rest;
            return;
        }
    }
    // some senders (rsyslog's high-precision format) use RFC 3339 here
    if rest.first().is_some_and(u8::is_ascii_digit) {
        let mut r = rest;
        let ts = field(&mut r).unwrap_or_default();
        if let Some(t) = rfc3339(ts) {
            out.time = Some(t);
            out.time_text = Some(ts);
            rest = host_then_tag(out, r);
            out.message = rest;
            return;
        }
    }
    rest = tag(out, rest);
    out.message = rest;
}

/// After a timestamp: `HOSTNAME TAG: MSG`, or `TAG: MSG` if the first word
/// is already the tag.
fn host_then_tag<'a>(out: &mut Syslog<'a>, rest: &'a [u8]) -> &'a [u8] {
    let mut r = rest;
    match field(&mut r) {
        Some(word) if !word.is_empty() && !word.ends_with(b":") && !word.contains(&b'[') => {
            out.hostname = Some(word);
            tag(out, r)
        }
        _ => tag(out, rest),
    }
}

/// `ident[pid]: ` or `ident: ` at the start of the message, if it looks like
/// a tag (up to 48 characters of letters, digits and `-_./`).
fn tag<'a>(out: &mut Syslog<'a>, rest: &'a [u8]) -> &'a [u8] {
    let len = rest
        .iter()
        .take(49)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/'))
        .count();
    if len == 0 || len > 48 {
        return rest;
    }
    let ident = &rest[..len];
    let after = &rest[len..];
    let (pid, after) = match after.strip_prefix(b"[") {
        Some(r) => match memchr::memchr(b']', r) {
            Some(close) if close > 0 && close <= 20 => (Some(&r[..close]), &r[close + 1..]),
            _ => return rest,
        },
        None => (None, after),
    };
    let Some(msg) = after.strip_prefix(b":") else {
        return rest;
    };
    out.app_name = Some(ident);
    out.procid = pid;
    msg.strip_prefix(b" ").unwrap_or(msg)
}

fn bsd_timestamp(ts: &[u8], clock: &Clock) -> Option<EventTime> {
    let month = MONTHS.iter().position(|m| ts[..3] == m[..])? as u32 + 1;
    let num = |b: &[u8]| -> Option<u32> {
        let s = std::str::from_utf8(b).ok()?.trim_start();
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if ts[3] != b' ' || ts[6] != b' ' || ts[9] != b':' || ts[12] != b':' {
        return None;
    }
    let day = num(&ts[4..6])?;
    let (h, m, s) = (num(&ts[7..9])?, num(&ts[10..12])?, num(&ts[13..15])?);
    // the offset of now, not of the message's own time: a message from the
    // other side of a daylight-saving change is an hour off
    let at = |year: i32| -> Option<i64> {
        let t = NaiveDate::from_ymd_opt(year, month, day)?.and_hms_opt(h, m, s)?;
        Some(t.and_utc().timestamp() - clock.utc_offset)
    };
    let mut t = at(clock.year)?;
    // a December message read in January belongs to last year
    if t > i64::from(clock.now.secs) + 86_400 {
        t = at(clock.year - 1)?;
    }
    Some(EventTime::new(u32::try_from(t).ok()?, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> EventTime {
        // 2026-11-22T12:00:00Z
        EventTime::new(1_795_348_800, 0)
    }

    fn s(b: Option<&[u8]>) -> Option<&str> {
        b.map(|b| std::str::from_utf8(b).unwrap())
    }

    #[test]
    fn rfc5424_from_util_linux_logger() {
        let m = b"<13>1 2026-11-22T12:34:56.789012+00:00 web1 alice - - [timeQuality tzKnown=\"1\" isSynced=\"1\" syncAccuracy=\"98000\"] hello world\n";
        let p = parse(m, now()).unwrap();
        assert_eq!(
            (
                FACILITIES[p.facility as usize],
                SEVERITIES[p.severity as usize]
            ),
            ("user", "notice")
        );
        assert_eq!(p.version, Some(1));
        assert_eq!(p.time, Some(EventTime::new(1_795_350_896, 789_012_000)));
        assert_eq!(s(p.hostname), Some("web1"));
        assert_eq!(s(p.app_name), Some("alice"));
        assert_eq!((p.procid, p.msgid), (None, None));
        assert_eq!(p.structured_data.len(), 1);
        assert_eq!(p.structured_data[0].0, b"timeQuality");
        assert_eq!(p.structured_data[0].1[2].0, b"syncAccuracy");
        assert_eq!(&*p.structured_data[0].1[2].1, b"98000");
        assert_eq!(p.message, b"hello world");
    }

    #[test]
    fn rfc5424_examples_of_the_rfc() {
        // RFC 5424 section 6.5, example 1 (with its BOM) and example 3
        let p = parse("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \u{feff}'su root' failed for lonvick on /dev/pts/8".as_bytes(), now()).unwrap();
        assert_eq!((p.facility, p.severity), (4, 2));
        assert_eq!(p.time, Some(EventTime::new(1_065_910_455, 3_000_000)));
        assert_eq!(s(p.msgid), Some("ID47"));
        assert_eq!(p.message, b"'su root' failed for lonvick on /dev/pts/8");
        let p = parse(br#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] An application event"#, now()).unwrap();
        assert_eq!((FACILITIES[p.facility as usize], p.severity), ("local4", 5));
        assert_eq!(s(p.procid), Some("8710"));
        assert_eq!(p.structured_data.len(), 2);
        assert_eq!(p.structured_data[1].0, b"examplePriority@32473");
        assert_eq!(p.message, b"An application event");
        // escapes in values; no message at all
        let p = parse(br#"<14>1 - - - - - [x@1 a="q\"b\\s\]e\n"]"#, now()).unwrap();
        assert_eq!(&*p.structured_data[0].1[0].1, br#"q"b\s]e\n"#);
        assert_eq!((p.time, p.hostname, p.message), (None, None, &b""[..]));
    }

    #[test]
    fn rfc5424_bad_headers_are_errors() {
        assert!(matches!(
            parse(b"<13>1 2026-11-22T12:00:00Z host", now()),
            Err(SyslogError::BadHeader(_))
        ));
        assert!(matches!(
            parse(b"<13>1 - h a p m [unterminated a=\"1\"", now()),
            Err(SyslogError::BadHeader(_))
        ));
        assert!(matches!(
            parse(b"<13>1 - h a p m x msg", now()),
            Err(SyslogError::BadHeader(_))
        ));
        // an unparseable timestamp is kept as text
        let p = parse(b"<13>1 yesterday h a p m - msg", now()).unwrap();
        assert_eq!((p.time, s(p.timestamp)), (None, Some("yesterday")));
    }

    #[test]
    fn rfc3164_variants() {
        // a classic sysklogd/rsyslog forwarded line
        let p = parse(
            b"<38>Nov 22 11:59:01 gateway sshd[4242]: Accepted publickey for root",
            now(),
        )
        .unwrap();
        assert_eq!(
            (
                FACILITIES[p.facility as usize],
                SEVERITIES[p.severity as usize]
            ),
            ("auth", "info")
        );
        assert_eq!(p.version, None);
        assert!(p.time.is_some());
        assert_eq!(
            (s(p.hostname), s(p.app_name), s(p.procid)),
            (Some("gateway"), Some("sshd"), Some("4242"))
        );
        assert_eq!(p.message, b"Accepted publickey for root");
        // single-digit day is space-padded; no host name (logger to a local socket)
        let p = parse(b"<13>Nov  2 08:00:00 root: hello", now()).unwrap();
        assert_eq!((s(p.hostname), s(p.app_name)), (None, Some("root")));
        assert_eq!(p.message, b"hello");
        // Python's SysLogHandler: no timestamp, no host, NUL terminated
        let p = parse(b"<11>myapp: disk full\0", now()).unwrap();
        assert_eq!((p.facility, p.severity), (1, 3));
        assert_eq!((p.time, s(p.app_name)), (None, Some("myapp")));
        assert_eq!(p.message, b"disk full");
        let p = parse(b"<14>just a message: with a colon later", now()).unwrap();
        assert_eq!(p.app_name, None);
        assert_eq!(p.message, b"just a message: with a colon later");
        // rsyslog's RFC 3339 timestamp in a 3164 layout
        let p = parse(b"<30>2026-11-22T10:00:00+00:00 host cron[1]: job", now()).unwrap();
        assert_eq!(p.time, Some(EventTime::new(1_795_341_600, 0)));
        assert_eq!((s(p.hostname), s(p.app_name)), (Some("host"), Some("cron")));
    }

    #[test]
    fn rfc3164_year_is_guessed_from_now() {
        let p = parse(b"<13>Dec 31 23:59:59 h t: m", now()).unwrap();
        let year = |t: EventTime| Local.timestamp_opt(i64::from(t.secs), 0).unwrap().year();
        // late December seen in November 2026 is December 2025
        assert_eq!(year(p.time.unwrap()), 2025);
        let p = parse(b"<13>Jan  1 00:00:00 h t: m", now()).unwrap();
        assert_eq!(year(p.time.unwrap()), 2026);
    }

    #[test]
    fn not_syslog() {
        for m in [&b"hello"[..], b"<>x", b"<192>x", b"<1a>x", b"<13", b""] {
            assert_eq!(parse(m, now()), Err(SyslogError::NoPri), "{m:?}");
        }
    }
}
