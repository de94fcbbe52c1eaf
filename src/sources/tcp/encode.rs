//! Messages into forward-protocol entries (`[time, record]` in msgpack).

use super::config::{LineFormat, Parser};
use crate::event::EventTime;
use crate::protocol::msgpack::write;
use crate::protocol::syslog::{self, Clock, Syslog, FACILITIES, SEVERITIES};

/// Why a message was kept as `{"message": msg}` instead of read as its
/// `format` or `parser` says; the source counts it by [`Unread::kind`].
#[derive(Debug)]
pub enum Unread {
    /// `format = "json"` and the message is not one JSON object.
    Json(String),
    /// `parser = "syslog"` and the message is neither RFC 5424 nor 3164.
    Syslog(String),
}

impl Unread {
    /// The `kind` label of the source's message error counter.
    pub fn kind(&self) -> &'static str {
        match self {
            Unread::Json(_) => "invalid_json",
            Unread::Syslog(_) => "invalid_syslog",
        }
    }
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Json(e) | Unread::Syslog(e) => {
                write!(f, "{e}; kept as {{\"message\": line}}")
            }
        }
    }
}

/// One message (a TCP line or frame, a UDP datagram) as `format` and
/// `parser` say: always one entry, `{"message": msg}` when it does not
/// read, and then the reason.
pub fn record(
    out: &mut Vec<u8>,
    clock: &Clock,
    msg: &[u8],
    format: LineFormat,
    parser: Parser,
) -> Result<(), Unread> {
    let now = clock.now();
    let unread = match (format, parser) {
        (LineFormat::Json, _) => json(out, now, msg).err().map(Unread::Json),
        (LineFormat::Raw, Parser::Syslog) => match syslog::parse_with(msg, clock) {
            Ok(p) => {
                self::syslog(out, now, &p);
                None
            }
            Err(e) => Some(Unread::Syslog(e.to_string())),
        },
        (LineFormat::Raw, Parser::None) => {
            message(out, now, msg);
            None
        }
    };
    match unread {
        None => Ok(()),
        Some(e) => {
            message(out, now, msg);
            Err(e)
        }
    }
}

/// `[time, {"message": msg}]`.
pub fn message(out: &mut Vec<u8>, time: EventTime, msg: &[u8]) {
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, 1);
    write::str(out, b"message");
    write::str(out, msg);
}

/// `[time, record]` from a JSON object. On error `out` is left as it was.
pub fn json(out: &mut Vec<u8>, time: EventTime, line: &[u8]) -> Result<(), String> {
    let start = out.len();
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    let result = crate::protocol::json::object_to_msgpack(out, line);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// `[time, {facility, severity, …}]`; the time is the message's own if it
/// has one, else `now`.
pub fn syslog(out: &mut Vec<u8>, now: EventTime, p: &Syslog<'_>) {
    let time = p.time.unwrap_or(now);
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    let optional = [
        (&b"timestamp"[..], p.timestamp),
        (b"hostname", p.hostname),
        (b"app_name", p.app_name),
        (b"procid", p.procid),
        (b"msgid", p.msgid),
    ];
    let fields = 3
        + usize::from(p.version.is_some())
        + optional.iter().filter(|(_, v)| v.is_some()).count()
        + usize::from(!p.structured_data.is_empty());
    write::map_len(out, fields);
    write::str(out, b"facility");
    write::str(out, FACILITIES[usize::from(p.facility)].as_bytes());
    write::str(out, b"severity");
    write::str(out, SEVERITIES[usize::from(p.severity)].as_bytes());
    if let Some(v) = p.version {
        write::str(out, b"version");
        write::uint(out, u64::from(v));
    }
    for (k, v) in optional {
        if let Some(v) = v {
            write::str(out, k);
            write::str(out, v);
        }
    }
    if !p.structured_data.is_empty() {
        write::str(out, b"structured_data");
        write::map_len(out, p.structured_data.len());
        for (id, params) in &p.structured_data {
            write::str(out, id);
            write::map_len(out, params.len());
            for (name, value) in params {
                write::str(out, name);
                write::str(out, value);
            }
        }
    }
    write::str(out, b"message");
    write::str(out, p.message);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, Records};

    fn as_json(entries: Vec<u8>) -> serde_json::Value {
        let batch = Batch::new("t".into(), Records::Entries(entries.into()), 1);
        let mut out = Vec::new();
        let config = crate::format::FormatConfig {
            kind: crate::format::FormatKind::Json,
            ..Default::default()
        };
        crate::format::Formatter::new(&config)
            .unwrap()
            .write_batch(&batch, &mut out)
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        v["record"].clone()
    }

    #[test]
    fn json_objects_keep_every_value() {
        let line = br#"{"a": 1, "b": -5, "c": -100000, "d": 1.5, "e": "x\ny", "f": [true, false, null, {}], "g": {"h": []}, "big": 18446744073709551615}"#;
        let mut out = Vec::new();
        json(&mut out, EventTime::new(1, 0), line).unwrap();
        let want: serde_json::Value = serde_json::from_slice(line).unwrap();
        assert_eq!(as_json(out), want);
    }

    #[test]
    fn json_that_is_not_one_object_is_an_error_and_writes_nothing() {
        for line in [
            &b"[1]"[..],
            b"5",
            b"{\"a\":",
            b"{} {}",
            b"nope",
            b"{\"a\":1}x",
        ] {
            let mut out = vec![7];
            assert!(
                json(&mut out, EventTime::new(1, 0), line).is_err(),
                "{line:?}"
            );
            assert_eq!(out, [7]);
        }
        let mut deep = "[".repeat(100_000);
        deep.insert(0, '{');
        assert!(json(&mut Vec::new(), EventTime::new(1, 0), deep.as_bytes()).is_err());
    }

    #[test]
    fn syslog_fields() {
        let p = crate::protocol::syslog::parse(
            br#"<165>1 2003-10-11T22:14:15.003Z host app 42 ID7 [a@1 k="v"] text"#,
            EventTime::new(2_000_000_000, 0),
        )
        .unwrap();
        let mut out = Vec::new();
        syslog(&mut out, EventTime::new(5, 0), &p);
        let r = as_json(out);
        assert_eq!(
            r,
            serde_json::json!({"facility": "local4", "severity": "notice", "version": 1,
                "hostname": "host", "app_name": "app", "procid": "42", "msgid": "ID7",
                "structured_data": {"a@1": {"k": "v"}}, "message": "text"})
        );
    }
}
