//! Messages into forward-protocol entries (`[time, record]` in msgpack).

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::syslog::{Syslog, FACILITIES, SEVERITIES};
use crate::event::EventTime;
use crate::protocol::msgpack::write;

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
    let result = if line.iter().find(|c| !c.is_ascii_whitespace()) != Some(&b'{') {
        Err("not a JSON object".to_string())
    } else {
        let mut de = serde_json::Deserializer::from_slice(line);
        Transcode(out)
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| e.to_string())
    };
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

/// Writes the JSON value it is deserialized from as msgpack, with no
/// intermediate tree. serde_json limits nesting to 128 levels, so hostile
/// input cannot exhaust the stack.
struct Transcode<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(0xc0);
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(if v { 0xc3 } else { 0xc2 });
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        write::uint(self.0, v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        if v >= 0 {
            write::uint(self.0, v as u64);
        } else if v >= -32 {
            self.0.push(v as i8 as u8);
        } else {
            self.0.push(0xd3);
            self.0.extend_from_slice(&v.to_be_bytes());
        }
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0.push(0xcb);
        self.0.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write::str(self.0, v.as_bytes());
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // the length is known only at the end: write the items, then move
        // them behind a header of the right size
        let start = self.0.len();
        let mut n = 0;
        while seq.next_element_seed(Transcode(self.0))?.is_some() {
            n += 1;
        }
        let mut header = Vec::new();
        write::array_len(&mut header, n);
        self.0.splice(start..start, header);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let start = self.0.len();
        let mut n = 0;
        while map.next_key_seed(Transcode(self.0))?.is_some() {
            map.next_value_seed(Transcode(self.0))?;
            n += 1;
        }
        let mut header = Vec::new();
        write::map_len(&mut header, n);
        self.0.splice(start..start, header);
        Ok(())
    }
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
        let p = super::super::syslog::parse(
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
