//! Request bodies to records, as Fluentd's `in_http` reads them.
//!
//! Structured bodies (JSON, msgpack, NDJSON, form fields) become
//! forward-protocol entries (`[time, record]` in msgpack), the encoding the
//! rest of the pipeline keeps. A `text/plain` body is kept as it arrived:
//! its lines are the records, each standing for `{"message": line}`.
//!
//! A record's time is the `time` query (or form) parameter if given;
//! otherwise its own `time` field, which is then removed from the record;
//! otherwise now.

use bytes::Bytes;
use serde_json::Value as Json;

use crate::event::{EventTime, Records};
use crate::protocol::msgpack::{self, write, Reader, Value};

/// How a body is encoded, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// A JSON object or an array of objects.
    Json,
    /// A msgpack map or an array of maps.
    Msgpack,
    /// One JSON object per line.
    Ndjson,
    /// One record per line, `{"message": line}`.
    Text,
    /// `application/x-www-form-urlencoded` with a `json=` or `msgpack=` field.
    Form,
}

impl BodyKind {
    /// The kind for a `Content-Type` header (parameters such as `charset`
    /// are ignored); `None` for a type this source does not read. No header
    /// means a form, as `curl -d` sends it.
    pub fn from_content_type(content_type: Option<&[u8]>) -> Option<BodyKind> {
        let Some(ct) = content_type else {
            return Some(BodyKind::Form);
        };
        const KINDS: [(&str, BodyKind); 12] = [
            ("application/json", BodyKind::Json),
            ("text/json", BodyKind::Json),
            ("application/msgpack", BodyKind::Msgpack),
            ("application/x-msgpack", BodyKind::Msgpack),
            ("application/x-ndjson", BodyKind::Ndjson),
            ("application/ndjson", BodyKind::Ndjson),
            ("application/jsonlines", BodyKind::Ndjson),
            ("application/x-jsonlines", BodyKind::Ndjson),
            ("text/plain", BodyKind::Text),
            ("text/csv", BodyKind::Text),
            ("application/x-www-form-urlencoded", BodyKind::Form),
            ("", BodyKind::Form),
        ];
        let ct = std::str::from_utf8(ct).ok()?;
        // compared without a lowercased copy: this runs for every request
        let media = ct.split(';').next().unwrap_or("").trim();
        KINDS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(media))
            .map(|(_, kind)| *kind)
    }
}

/// Records decoded from one body.
#[derive(Debug)]
pub struct Decoded {
    pub records: Records,
    pub count: usize,
}

/// Why a body could not be read; the message is sent back with the 400.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    #[error("invalid JSON{line}: {reason}", line = at_line(*.line))]
    Json { line: usize, reason: String },
    #[error("invalid msgpack: {0}")]
    Msgpack(String),
    #[error("{0}")]
    Shape(&'static str),
    #[error("invalid time {0:?}: expected unix seconds, an integer or a float")]
    Time(String),
    #[error("a form body needs a json= or msgpack= field")]
    Form,
    #[error("invalid percent-encoding in the form body")]
    Percent,
}

fn at_line(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" on line {line}")
    }
}

/// Decodes `body`. `time` is the `time` query parameter, if any, already
/// parsed; `now` is used for records without a time.
pub fn decode(
    kind: BodyKind,
    body: Bytes,
    time: Option<EventTime>,
    now: EventTime,
) -> Result<Decoded, DecodeError> {
    match kind {
        BodyKind::Text => Ok(text(body, time.unwrap_or(now))),
        BodyKind::Json => {
            let mut out = Entries::new(time, now);
            out.json(parse_json(&body, 0)?)?;
            Ok(out.finish())
        }
        BodyKind::Ndjson => {
            let mut out = Entries::new(time, now);
            for (i, line) in body.split(|c| *c == b'\n').enumerate() {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match parse_json(line, i + 1)? {
                    Json::Object(map) => out.object(map)?,
                    _ => return Err(DecodeError::Shape("each NDJSON line must be a JSON object")),
                }
            }
            Ok(out.finish())
        }
        BodyKind::Msgpack => {
            let mut out = Entries::new(time, now);
            out.msgpack(&body)?;
            Ok(out.finish())
        }
        BodyKind::Form => {
            let form = Form::parse(&body)?;
            let time = match (time, &form.time) {
                (Some(t), _) => Some(t),
                (None, Some(t)) => Some(parse_time(t)?),
                (None, None) => None,
            };
            let mut out = Entries::new(time, now);
            match (form.json, form.msgpack) {
                (Some(j), _) => out.json(parse_json(&j, 0)?)?,
                (None, Some(m)) => out.msgpack(&m)?,
                (None, None) => return Err(DecodeError::Form),
            }
            Ok(out.finish())
        }
    }
}

/// Parses a `time` parameter: unix seconds, integer or float (`0` means
/// now, as in Fluentd).
pub fn parse_time(s: &[u8]) -> Result<EventTime, DecodeError> {
    let bad = || DecodeError::Time(String::from_utf8_lossy(s).into_owned());
    let f: f64 = std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(bad)?;
    if f == 0.0 {
        return Ok(EventTime::now());
    }
    time_of_f64(f).ok_or_else(bad)
}

fn time_of_f64(f: f64) -> Option<EventTime> {
    if !(0.0..=f64::from(u32::MAX)).contains(&f) {
        return None;
    }
    Some(EventTime::new(f.trunc() as u32, (f.fract() * 1e9) as u32))
}

/// Deepest JSON nesting accepted. serde_json parses (and drops) values
/// recursively; this keeps the stack a body can use small and fixed.
pub const MAX_JSON_DEPTH: usize = 64;

/// Rejects JSON nested deeper than [`MAX_JSON_DEPTH`] before it is parsed.
fn check_depth(text: &[u8], line: usize) -> Result<(), DecodeError> {
    if too_deep(text) {
        return Err(DecodeError::Json {
            line,
            reason: format!("nested deeper than {MAX_JSON_DEPTH} levels"),
        });
    }
    Ok(())
}

/// Whether JSON `text` opens more than [`MAX_JSON_DEPTH`] arrays and
/// objects inside one another (read without parsing it).
pub fn too_deep(text: &[u8]) -> bool {
    crate::protocol::json::deeper_than(text, MAX_JSON_DEPTH)
}

fn parse_json(text: &[u8], line: usize) -> Result<Json, DecodeError> {
    check_depth(text, line)?;
    serde_json::from_slice(text).map_err(|e| DecodeError::Json {
        line,
        reason: e.to_string(),
    })
}

/// Lines of a text body. Kept as they arrived when already clean (every
/// line ends with `\n`, no `\r`, no empty line); otherwise copied once to
/// make them so.
fn text(body: Bytes, time: EventTime) -> Decoded {
    let clean = body.last() == Some(&b'\n')
        && memchr::memchr(b'\r', &body).is_none()
        && memchr::memmem::find(&body, b"\n\n").is_none()
        && body[0] != b'\n';
    let data = if clean {
        body
    } else {
        let mut out = Vec::with_capacity(body.len() + 1);
        for line in body.split(|c| *c == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.is_empty() {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        Bytes::from(out)
    };
    let count = memchr::memchr_iter(b'\n', &data).count();
    Decoded {
        records: Records::Lines { data, time },
        count,
    }
}

/// Forward-protocol entries being written.
struct Entries {
    out: Vec<u8>,
    count: usize,
    /// The `time` parameter: overrides the records' own `time` field, which
    /// then stays in the record.
    time: Option<EventTime>,
    now: EventTime,
}

impl Entries {
    fn new(time: Option<EventTime>, now: EventTime) -> Self {
        Entries {
            out: Vec::new(),
            count: 0,
            time,
            now,
        }
    }

    fn finish(self) -> Decoded {
        Decoded {
            records: Records::Entries(Bytes::from(self.out)),
            count: self.count,
        }
    }

    fn json(&mut self, v: Json) -> Result<(), DecodeError> {
        match v {
            Json::Object(map) => self.object(map),
            Json::Array(items) => {
                for item in items {
                    match item {
                        Json::Object(map) => self.object(map)?,
                        _ => return Err(DecodeError::Shape(NOT_OBJECTS)),
                    }
                }
                Ok(())
            }
            _ => Err(DecodeError::Shape(NOT_OBJECTS)),
        }
    }

    fn object(&mut self, mut map: serde_json::Map<String, Json>) -> Result<(), DecodeError> {
        let time = match self.time {
            Some(t) => t,
            None => match map.shift_remove("time") {
                None => self.now,
                Some(Json::Number(n)) => n
                    .as_f64()
                    .and_then(time_of_f64)
                    .ok_or_else(|| DecodeError::Time(n.to_string()))?,
                Some(Json::String(s)) => parse_time(s.as_bytes())?,
                Some(other) => return Err(DecodeError::Time(other.to_string())),
            },
        };
        write::array_len(&mut self.out, 2);
        write::event_time(&mut self.out, time.secs, time.nanos);
        write::map_len(&mut self.out, map.len());
        for (k, v) in map {
            write::str(&mut self.out, k.as_bytes());
            json_to_msgpack(&v, &mut self.out);
        }
        self.count += 1;
        Ok(())
    }

    /// A msgpack map or array of maps; the map bytes are copied as they
    /// are, except for a `time` entry the record's time is taken from.
    fn msgpack(&mut self, body: &[u8]) -> Result<(), DecodeError> {
        let bad = |e: msgpack::Error| DecodeError::Msgpack(e.to_string());
        let end = msgpack::skip(body, 0).map_err(bad)?;
        if end != body.len() {
            return Err(DecodeError::Msgpack(format!(
                "{} bytes after the first value: send one map or one array of maps",
                body.len() - end
            )));
        }
        // the whole value is well-formed from here on
        let mut r = Reader::new(body);
        match r.read().map_err(bad)? {
            Value::Map(n) => self.msgpack_map(&mut r, n),
            Value::Array(items) => {
                for _ in 0..items {
                    match r.read().map_err(bad)? {
                        Value::Map(n) => self.msgpack_map(&mut r, n)?,
                        _ => return Err(DecodeError::Shape(NOT_MAPS)),
                    }
                }
                Ok(())
            }
            _ => Err(DecodeError::Shape(NOT_MAPS)),
        }
    }

    fn msgpack_map(&mut self, r: &mut Reader<'_>, pairs: usize) -> Result<(), DecodeError> {
        let bad = |e: msgpack::Error| DecodeError::Msgpack(e.to_string());
        let body = r.buffer();
        let start = r.pos();
        let mut own_time = None;
        let mut time_pair = None;
        for _ in 0..pairs {
            let pair_start = r.pos();
            // a key may be any value, a container too: skip it whole
            r.skip().map_err(bad)?;
            let key = Reader::new(&body[pair_start..r.pos()]).read();
            let is_time = matches!(key, Ok(Value::Str(b"time") | Value::Bin(b"time")));
            if is_time && self.time.is_none() && own_time.is_none() {
                let at = r.pos();
                own_time = Some(
                    EventTime::read(r)
                        .map_err(|_| DecodeError::Time(describe_msgpack(&body[at..])))?,
                );
                time_pair = Some((pair_start, r.pos()));
            } else {
                r.skip().map_err(bad)?;
            }
        }
        let end = r.pos();
        let time = self.time.or(own_time).unwrap_or(self.now);
        write::array_len(&mut self.out, 2);
        write::event_time(&mut self.out, time.secs, time.nanos);
        match time_pair {
            None => {
                write::map_len(&mut self.out, pairs);
                self.out.extend_from_slice(&body[start..end]);
            }
            Some((a, b)) => {
                write::map_len(&mut self.out, pairs - 1);
                self.out.extend_from_slice(&body[start..a]);
                self.out.extend_from_slice(&body[b..end]);
            }
        }
        self.count += 1;
        Ok(())
    }
}

const NOT_OBJECTS: &str = "expected a JSON object or an array of JSON objects";
const NOT_MAPS: &str = "expected a msgpack map or an array of maps";

/// A short view of a msgpack value for an error message.
fn describe_msgpack(b: &[u8]) -> String {
    match Reader::new(b).read() {
        Ok(Value::Str(s)) => String::from_utf8_lossy(s).into_owned(),
        Ok(v) => format!("{v:?}").chars().take(64).collect(),
        Err(e) => e.to_string(),
    }
}

/// JSON to msgpack. Nesting is at most [`MAX_JSON_DEPTH`] levels, so the
/// recursion is bounded.
pub(crate) fn json_to_msgpack(v: &Json, out: &mut Vec<u8>) {
    match v {
        Json::Null => out.push(0xc0),
        Json::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Json::Number(n) => {
            if let Some(u) = n.as_u64() {
                write::uint(out, u);
            } else if let Some(i) = n.as_i64() {
                write::int(out, i);
            } else {
                out.push(0xcb);
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_be_bytes());
            }
        }
        Json::String(s) => write::str(out, s.as_bytes()),
        Json::Array(items) => {
            write::array_len(out, items.len());
            for i in items {
                json_to_msgpack(i, out);
            }
        }
        Json::Object(map) => {
            write::map_len(out, map.len());
            for (k, v) in map {
                write::str(out, k.as_bytes());
                json_to_msgpack(v, out);
            }
        }
    }
}

/// The fields of a form body this source reads.
#[derive(Default)]
struct Form {
    json: Option<Vec<u8>>,
    msgpack: Option<Vec<u8>>,
    time: Option<Vec<u8>>,
}

impl Form {
    fn parse(body: &[u8]) -> Result<Form, DecodeError> {
        let mut form = Form::default();
        for pair in body.split(|c| *c == b'&') {
            let (key, value) = match memchr::memchr(b'=', pair) {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &b""[..]),
            };
            let slot = match key {
                b"json" => &mut form.json,
                b"msgpack" => &mut form.msgpack,
                b"time" => &mut form.time,
                _ => continue,
            };
            *slot = Some(percent_decode(value)?);
        }
        Ok(form)
    }
}

/// Decodes `%XX` and `+` (a space) of a form or query value.
pub fn percent_decode(s: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(h), Some(l)) = (
                    s.get(i + 1).copied().and_then(hex),
                    s.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err(DecodeError::Percent);
                };
                out.push((h * 16 + l) as u8);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, RecordRef};

    const NOW: EventTime = EventTime {
        secs: 1000,
        nanos: 0,
    };

    /// (time, record as JSON text) for every decoded record.
    fn records(kind: BodyKind, body: &[u8], time: Option<EventTime>) -> Vec<(EventTime, String)> {
        let d = decode(kind, Bytes::copy_from_slice(body), time, NOW).unwrap();
        let batch = Batch::new("t".into(), d.records, d.count);
        let mut out = Vec::new();
        batch
            .for_each_record(|t, r| {
                let text = match r {
                    RecordRef::Line(l) => format!("line:{}", String::from_utf8_lossy(l)),
                    RecordRef::Map(m) => {
                        let mut json = Vec::new();
                        crate::format::json::write_value(&mut json, &mut Reader::new(m)).unwrap();
                        String::from_utf8(json).unwrap()
                    }
                };
                out.push((t, text));
            })
            .unwrap();
        assert_eq!(out.len(), d.count);
        out
    }

    #[test]
    fn json_object_and_array_with_the_time_field_removed() {
        let got = records(BodyKind::Json, br#"{"a":1,"time":1700000000.5}"#, None);
        assert_eq!(
            got,
            vec![(
                EventTime::new(1_700_000_000, 500_000_000),
                r#"{"a":1}"#.into()
            )]
        );
        let got = records(
            BodyKind::Json,
            br#"[{"n":-40,"s":"x"},{"b":[true,null,1.5]}]"#,
            None,
        );
        assert_eq!(got[0], (NOW, r#"{"n":-40,"s":"x"}"#.into()));
        assert_eq!(got[1], (NOW, r#"{"b":[true,null,1.5]}"#.into()));
    }

    #[test]
    fn the_time_parameter_wins_and_keeps_the_field() {
        let t = EventTime::new(5, 0);
        let got = records(BodyKind::Json, br#"{"time":7}"#, Some(t));
        assert_eq!(got, vec![(t, r#"{"time":7}"#.into())]);
    }

    #[test]
    fn ndjson_lines_and_text_lines() {
        let got = records(BodyKind::Ndjson, b"{\"a\":1}\r\n\n{\"a\":2}", None);
        assert_eq!(got.len(), 2);
        let got = records(BodyKind::Text, b"one\r\ntwo\n\nthree", None);
        let lines: Vec<_> = got.into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, ["line:one", "line:two", "line:three"]);
        let clean = Bytes::from_static(b"a\nb\n");
        let d = decode(BodyKind::Text, clean.clone(), None, NOW).unwrap();
        assert_eq!(
            d.records.bytes().as_ptr(),
            clean.as_ptr(),
            "a clean body is not copied"
        );
    }

    #[test]
    fn msgpack_maps_lose_their_time_entry() {
        let mut m = Vec::new();
        write::array_len(&mut m, 2);
        write::map_len(&mut m, 2);
        write::str(&mut m, b"k");
        write::str(&mut m, b"v");
        write::str(&mut m, b"time");
        write::uint(&mut m, 42);
        write::map_len(&mut m, 1);
        write::str(&mut m, b"k");
        write::uint(&mut m, 2);
        let got = records(BodyKind::Msgpack, &m, None);
        assert_eq!(got[0], (EventTime::new(42, 0), r#"{"k":"v"}"#.into()));
        assert_eq!(got[1], (NOW, r#"{"k":2}"#.into()));
    }

    #[test]
    fn msgpack_keys_may_be_containers() {
        // {{"time": 1}: 2, "time": 3}: the first key is a map holding "time"
        let m = [
            0x82, 0x81, 0xa4, b't', b'i', b'm', b'e', 0x01, 0x02, 0xa4, b't', b'i', b'm', b'e',
            0x03,
        ];
        let got = records(BodyKind::Msgpack, &m, None);
        // (JSON output names a container key null)
        assert_eq!(got, vec![(EventTime::new(3, 0), r#"{"null":2}"#.into())]);
    }

    #[test]
    fn form_fields() {
        let got = records(
            BodyKind::Form,
            b"json=%7B%22a%22%3A%22b+c%22%7D&time=9",
            None,
        );
        assert_eq!(got, vec![(EventTime::new(9, 0), r#"{"a":"b c"}"#.into())]);
        let got = records(BodyKind::Form, b"msgpack=%81%A1a%01", None);
        assert_eq!(got, vec![(NOW, r#"{"a":1}"#.into())]);
    }

    #[test]
    fn bad_bodies_say_what_is_wrong() {
        let err = |k, b: &[u8]| decode(k, Bytes::copy_from_slice(b), None, NOW).unwrap_err();
        assert!(matches!(
            err(BodyKind::Json, b"{\"a\":"),
            DecodeError::Json { .. }
        ));
        assert_eq!(err(BodyKind::Json, b"[1]"), DecodeError::Shape(NOT_OBJECTS));
        let deep = |n: usize| {
            let open = "[".repeat(n - 1);
            let close = "]".repeat(n - 1);
            Bytes::from(format!("{{\"a\":{open}\"[\\\"]\"{close}}}"))
        };
        assert!(decode(BodyKind::Json, deep(MAX_JSON_DEPTH), None, NOW).is_ok());
        let too_deep = decode(BodyKind::Json, deep(MAX_JSON_DEPTH + 1), None, NOW).unwrap_err();
        assert!(too_deep.to_string().contains("nested deeper"), "{too_deep}");
        assert!(err(BodyKind::Ndjson, b"{}\n{")
            .to_string()
            .contains("line 2"));
        assert!(matches!(
            err(BodyKind::Json, br#"{"time":"soon"}"#),
            DecodeError::Time(_)
        ));
        assert!(matches!(
            err(BodyKind::Json, br#"{"time":-1}"#),
            DecodeError::Time(_)
        ));
        assert!(matches!(
            err(BodyKind::Msgpack, &[0x81, 0xa1]),
            DecodeError::Msgpack(_)
        ));
        assert!(matches!(
            err(BodyKind::Msgpack, &[0x80, 0x80]),
            DecodeError::Msgpack(_)
        ));
        assert_eq!(err(BodyKind::Form, b"a=b"), DecodeError::Form);
        assert_eq!(err(BodyKind::Form, b"json=%7"), DecodeError::Percent);
    }

    #[test]
    fn content_types() {
        let k = |s: &str| BodyKind::from_content_type(Some(s.as_bytes()));
        assert_eq!(k("application/json; charset=utf-8"), Some(BodyKind::Json));
        assert_eq!(k("Application/MsgPack"), Some(BodyKind::Msgpack));
        assert_eq!(k("application/x-ndjson"), Some(BodyKind::Ndjson));
        assert_eq!(k("text/plain"), Some(BodyKind::Text));
        assert_eq!(k("image/png"), None);
        assert_eq!(BodyKind::from_content_type(None), Some(BodyKind::Form));
    }
}
