//! Output formats: how a sink turns records into bytes.
//!
//! | format     | one line per record                                             |
//! |------------|-----------------------------------------------------------------|
//! | `raw`      | the record's message (see [`write_message`]), or the original line |
//! | `json`     | `{"time": "<RFC 3339>", "tag": "…", "record": {…}}`             |
//! | `ndjson`   | the record itself, its time under `time_key` (and tag under `tag_key`): see [`ndjson`] |
//! | `msgpack`  | not lines: one Message-mode frame `[tag, time, record]` per record, so the file can be replayed into a forward port |
//! | `template` | a template such as `{time} {host} {message}`; `{{`/`}}` are literal braces |

pub mod json;
pub mod multiline;
pub mod ndjson;
mod template;
pub mod time;

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::event::{next_record, Batch, EventTime, RecordRef, Records};
use crate::protocol::msgpack::{self, write, Reader, Value};
pub use template::Template;
use time::TimeFormat;

/// The `format` setting of a sink: a name (`"raw"`, `"json"`, `"ndjson"`,
/// `"msgpack"`) or a table `{ type = "template", template = "…",
/// time_format = "…" }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FormatConfig {
    pub kind: FormatKind,
    /// The template text (`type = "template"` only).
    pub template: Option<String>,
    /// strftime pattern for `{time}` and JSON `time` (UTC); RFC 3339 with
    /// nanoseconds if unset. With `ndjson`: `"epoch"` (the default),
    /// `"epoch_millis"`, `"rfc3339"`, as the http sink's, or a pattern.
    pub time_format: Option<String>,
    /// `ndjson` only: the field the record's time is added to, unless the
    /// record has one (`"time"` if unset; `""` adds none).
    pub time_key: Option<String>,
    /// `ndjson` only: a field the tag is added to, unless the record has
    /// one (unset: none).
    pub tag_key: Option<String>,
    /// `raw` and `template` only: write a newline inside a record as the
    /// two characters `\n` and a backslash as `\\`, so every record is
    /// exactly one line and the text can be restored. Off by default:
    /// records are written byte for byte.
    pub escape_newlines: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FormatKind {
    #[default]
    Raw,
    Json,
    /// The record itself, one JSON object a line (Fluentd's `out_file`
    /// json, Vector's `json` codec).
    Ndjson,
    Msgpack,
    Template,
}

/// The table form of `format`; crate-visible so the documentation test
/// can list its keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FormatTable {
    #[serde(rename = "type")]
    kind: FormatKind,
    template: Option<String>,
    time_format: Option<String>,
    time_key: Option<String>,
    tag_key: Option<String>,
    #[serde(default)]
    escape_newlines: bool,
}

impl<'de> Deserialize<'de> for FormatConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FormatConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"raw\", \"json\", \"ndjson\", \"msgpack\" or a table { type = \"template\", template = \"…\" }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<FormatConfig, E> {
                let kind = FormatKind::deserialize(de::value::StrDeserializer::<E>::new(s))?;
                Ok(FormatConfig {
                    kind,
                    ..FormatConfig::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FormatConfig, A::Error> {
                let t = FormatTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(FormatConfig {
                    kind: t.kind,
                    template: t.template,
                    time_format: t.time_format,
                    time_key: t.time_key,
                    tag_key: t.tag_key,
                    escape_newlines: t.escape_newlines,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl FormatConfig {
    pub fn validate(&self) -> Result<(), String> {
        match (self.kind, &self.template) {
            (FormatKind::Template, None) => {
                return Err("format type \"template\" needs a `template` string".into())
            }
            (FormatKind::Template, Some(t)) => {
                Template::parse(t)?;
            }
            (_, Some(_)) => return Err("`template` is only used with type = \"template\"".into()),
            _ => {}
        }
        if self.escape_newlines && !matches!(self.kind, FormatKind::Raw | FormatKind::Template) {
            return Err("`escape_newlines` applies to type \"raw\" and \"template\" only (json escapes newlines already; msgpack is not lines)".into());
        }
        if self.kind != FormatKind::Ndjson && (self.time_key.is_some() || self.tag_key.is_some()) {
            return Err("`time_key` and `tag_key` apply to type \"ndjson\" only (the record itself, with its time and tag added as fields)".into());
        }
        self.text_time()?;
        Ok(())
    }

    /// How `ndjson` writes the time, and the strftime pattern of the text
    /// time (of `ndjson`'s pattern, `{time}` and `json`'s `time`).
    fn times(&self) -> Result<(ndjson::TimeFormat, Option<&str>), String> {
        let pattern = self.time_format.as_deref();
        if self.kind != FormatKind::Ndjson {
            return Ok((ndjson::TimeFormat::Rfc3339, pattern));
        }
        Ok(match pattern {
            None | Some("epoch") => (ndjson::TimeFormat::Epoch, None),
            Some("epoch_millis") => (ndjson::TimeFormat::EpochMillis, None),
            Some("rfc3339") => (ndjson::TimeFormat::Rfc3339, None),
            Some(p) if p.contains('%') => (ndjson::TimeFormat::Rfc3339, Some(p)),
            Some(p) => {
                return Err(format!(
                    "time_format {p:?}: with type \"ndjson\" it is \"epoch\", \"epoch_millis\", \"rfc3339\" or a strftime pattern (with %)"
                ))
            }
        })
    }

    /// The text time format: RFC 3339, or the strftime pattern.
    fn text_time(&self) -> Result<TimeFormat, String> {
        TimeFormat::new(self.times()?.1)
    }
}

/// Turns batches into output bytes. One per sink (it caches formatted times).
pub struct Formatter {
    kind: FormatKind,
    template: Option<Template>,
    time: TimeFormat,
    host: Arc<str>,
    /// `escape_newlines`.
    escape: bool,
    /// `ndjson`: the fields added to each record.
    added: ndjson::Added,
}

impl Formatter {
    pub fn new(config: &FormatConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Formatter {
            kind: config.kind,
            template: config
                .template
                .as_deref()
                .map(Template::parse)
                .transpose()?,
            time: config.text_time()?,
            host: hostname().into(),
            escape: config.escape_newlines,
            added: ndjson::Added {
                time_key: Some(config.time_key.as_deref().unwrap_or("time"))
                    .filter(|k| !k.is_empty())
                    .map(String::from),
                time_format: config.times()?.0,
                tag_key: config.tag_key.clone(),
            },
        })
    }

    pub fn kind(&self) -> FormatKind {
        self.kind
    }

    /// True if a record's raw text ([`raw_text`]) plus a newline is exactly
    /// what this formatter writes for it, so a sink may write it straight
    /// from the received frame.
    pub fn writes_raw_text_as_is(&self) -> bool {
        self.kind == FormatKind::Raw && !self.escape
    }

    /// Appends every record of `batch` to `out`.
    pub fn write_batch(&mut self, batch: &Batch, out: &mut Vec<u8>) -> msgpack::Result<()> {
        self.write_batch_spilling(batch, out, usize::MAX, &mut |_| {})
    }

    /// Like [`Formatter::write_batch`], but calls `spill` whenever `out`
    /// holds `spill_at` bytes or more (between records); `spill` is expected
    /// to write `out` somewhere and clear it. A sink that writes each slice
    /// while the CPU cache still holds it moves large batches much faster
    /// than one that formats everything first.
    pub fn write_batch_spilling(
        &mut self,
        batch: &Batch,
        out: &mut Vec<u8>,
        spill_at: usize,
        spill: &mut dyn FnMut(&mut Vec<u8>),
    ) -> msgpack::Result<()> {
        let mut check = |out: &mut Vec<u8>| {
            if out.len() >= spill_at {
                spill(out);
            }
        };
        match (self.writes_raw_text_as_is(), &batch.records) {
            // the fast path: tailed lines to a raw file are copied as they are
            (true, Records::Lines { data, .. }) => {
                for piece in data.chunks(spill_at.max(1)) {
                    out.extend_from_slice(piece);
                    check(out);
                }
                Ok(())
            }
            (true, Records::Entries(entries)) => {
                let mut r = Reader::new(entries);
                while !r.is_empty() {
                    write_next_raw_entry(&mut r, out)?;
                    check(out);
                }
                Ok(())
            }
            (false, Records::Entries(entries)) if self.kind == FormatKind::Json => {
                // each record converted as it is read: not walked once to
                // find its end and again to convert it
                let tag = batch.tag.clone();
                let mut r = Reader::new(entries);
                while !r.is_empty() {
                    let time = crate::event::read_entry_time(&mut r)?;
                    let line = out.len();
                    let written =
                        self.write_json_line(&tag, time, out, |out| json::write_value(out, &mut r));
                    if let Err(e) = written {
                        // what comes before is whole lines, as when each
                        // record's end is found first
                        out.truncate(line);
                        return Err(e);
                    }
                    check(out);
                }
                Ok(())
            }
            _ => {
                let tag = batch.tag.clone();
                batch.for_each_record(|time, rec| {
                    self.write_record(&tag, time, rec, out);
                    check(out);
                })
            }
        }
    }

    /// Appends one line of the `json` format, the record written by
    /// `record`.
    fn write_json_line<E>(
        &mut self,
        tag: &str,
        time: EventTime,
        out: &mut Vec<u8>,
        record: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        out.extend_from_slice(b"{\"time\":\"");
        self.time.write(out, time);
        out.extend_from_slice(b"\",\"tag\":");
        json::write_str(out, tag.as_bytes());
        out.extend_from_slice(b",\"record\":");
        record(out)?;
        out.extend_from_slice(b"}\n");
        Ok(())
    }

    /// Appends one record in this format (newline included, except msgpack).
    pub fn write_record(
        &mut self,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
        out: &mut Vec<u8>,
    ) {
        let start = out.len();
        match self.kind {
            FormatKind::Raw => {
                write_message(rec, out);
                if self.escape {
                    escape_newlines_from(out, start);
                }
                out.push(b'\n');
            }
            FormatKind::Json => {
                let _ = self.write_json_line(tag, time, out, |out| {
                    write_record_json(rec, out);
                    Ok::<(), std::convert::Infallible>(())
                });
            }
            FormatKind::Ndjson => {
                self.added.write_json(&mut self.time, tag, time, rec, out);
                out.push(b'\n');
            }
            FormatKind::Msgpack => {
                write::array_len(out, 3);
                write::str(out, tag.as_bytes());
                write::event_time(out, time.secs, time.nanos);
                match rec {
                    RecordRef::Map(m) => out.extend_from_slice(m),
                    RecordRef::Line(l) => {
                        write::map_len(out, 1);
                        write::str(out, b"message");
                        write::str(out, l);
                    }
                }
            }
            FormatKind::Template => {
                if let Some(t) = &self.template {
                    t.render(out, tag, time, rec, &self.host, &mut self.time);
                }
                if self.escape {
                    escape_newlines_from(out, start);
                }
                out.push(b'\n');
            }
        }
    }
}

/// `escape_newlines`: rewrites `out[start..]` with each newline as `\\n`
/// and each backslash as `\\\\` (untouched, and not copied, if it has
/// neither).
#[inline(never)]
fn escape_newlines_from(out: &mut Vec<u8>, start: usize) {
    let Some(first) = memchr::memchr2(b'\n', b'\\', &out[start..]) else {
        return;
    };
    let tail = out.split_off(start + first);
    for &b in &tail {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b => out.push(b),
        }
    }
}

/// The raw-format text of a record when it is a string as it stands (see
/// [`write_message`]), so a sink can write it without copying; `None` when
/// it must be formatted with [`write_raw_record`].
pub fn raw_text(rec: RecordRef<'_>) -> Option<&[u8]> {
    match rec {
        RecordRef::Line(l) => Some(l),
        RecordRef::Map(m) => match message_field(m)?.1 {
            Value::Str(s) | Value::Bin(s) => Some(s),
            _ => None,
        },
    }
}

/// Reads the next entry of `r` and appends its record in raw format. The
/// usual forward entry, `[time, {"message": str}]`, is read in one pass
/// (it ends where its message does); any other shape is found with
/// [`next_record`] and written by [`write_raw_record`].
fn write_next_raw_entry(r: &mut Reader<'_>, out: &mut Vec<u8>) -> msgpack::Result<()> {
    let entries = r.buffer();
    match lone_message_entry(entries, r.pos()) {
        Some((text, end)) => {
            out.extend_from_slice(text);
            out.push(b'\n');
            *r = Reader::at(entries, end);
        }
        None => write_raw_record(RecordRef::Map(next_record(r)?), out),
    }
    Ok(())
}

/// The message of the entry at `at` in `entries` when it is
/// `[time, {"message": str}]` (the time an integer, a float or an
/// EventTime; the map holding that one field), and where the entry ends.
/// `None` for any other shape.
fn lone_message_entry(entries: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let entry = entries.get(at..)?;
    if *entry.first()? != 0x92 {
        return None;
    }
    let time_len = match *entry.get(1)? {
        0x00..=0x7f => 1,
        0xcc => 2,
        0xcd => 3,
        0xca | 0xce => 5,
        0xcb | 0xcf => 9,
        0xd7 => 10,
        0xc7 if entry.get(2) == Some(&8) => 11,
        _ => return None,
    };
    let map = entry.get(1 + time_len..)?;
    if *map.first()? != 0x81 {
        return None;
    }
    let (_, Value::Str(text)) = leading_message_str(map)? else {
        return None;
    };
    // `text` lies in `entries`: its end, as an offset into them
    let end = text.as_ptr() as usize + text.len() - entries.as_ptr() as usize;
    Some((text, end))
}

/// Appends one record in raw format, newline included.
pub fn write_raw_record(rec: RecordRef<'_>, out: &mut Vec<u8>) {
    write_message(rec, out);
    out.push(b'\n');
}

/// Appends a record's message, the text `raw` writes and `{message}`
/// inserts: the record's `message` field if it has one, else its `log`
/// field (Docker and Fluent Bit name the line `log`); a string as it is,
/// any other value (number, array, map…) as JSON. A record with neither
/// field is written whole as JSON; a line (tail, generator) as it is.
pub fn write_message(rec: RecordRef<'_>, out: &mut Vec<u8>) {
    let map = match rec {
        RecordRef::Line(l) => return out.extend_from_slice(l),
        RecordRef::Map(m) => m,
    };
    let written = match message_field(map) {
        Some((_, Value::Str(s) | Value::Bin(s))) => {
            out.extend_from_slice(s);
            return;
        }
        Some((start, _)) => json::write_value(out, &mut Reader::at(map, start)),
        None => json::write_value(out, &mut Reader::new(map)),
    };
    if written.is_err() {
        out.extend_from_slice(b"null");
    }
}

/// An encoded value as text: a string as it is, anything else as JSON.
pub(crate) fn write_value_text(out: &mut Vec<u8>, raw: &[u8]) {
    let mut r = Reader::new(raw);
    match r.clone().read() {
        Ok(Value::Str(s) | Value::Bin(s)) => out.extend_from_slice(s),
        Ok(_) => {
            if json::write_value(out, &mut r).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        Err(_) => {}
    }
}

/// The value of a record's `message` field, else of its `log` field,
/// whatever their types and order: where it starts in `map`, and the value
/// (for a container, its header). Reads no further than it must: this
/// runs once per record on the raw and template paths.
fn message_field(map: &[u8]) -> Option<(usize, Value<'_>)> {
    leading_message_str(map).or_else(|| any_message_field(map))
}

/// [`message_field`] for a map of any shape.
fn any_message_field(map: &[u8]) -> Option<(usize, Value<'_>)> {
    let mut r = Reader::new(map);
    let n = r.read_map_len().ok()?;
    let mut log = None;
    for _ in 0..n {
        match r.read().ok()? {
            Value::Str(b"message") | Value::Bin(b"message") => {
                let start = r.pos();
                return Some((start, r.read().ok()?));
            }
            Value::Str(b"log") | Value::Bin(b"log") if log.is_none() => {
                let start = r.pos();
                let v = r.read().ok()?;
                crate::event::skip_rest(&mut r, v).ok()?;
                log = Some((start, v));
            }
            Value::Str(_) | Value::Bin(_) => r.skip().ok()?,
            // a non-string key was only read as far as its header
            other => {
                crate::event::skip_rest(&mut r, other).ok()?;
                r.skip().ok()?;
            }
        }
    }
    log
}

/// [`message_field`] for the usual record, read without the general
/// decoder: a map whose first key is the string `message` and whose value
/// is a string (what forward senders and the tail, tcp and http sources
/// write). `None` for any other shape. The string header is decoded here,
/// not with `Reader::read`: through it, the Kafka encoder's bench
/// (`kafka_encode/raw`) takes twice as long.
fn leading_message_str(map: &[u8]) -> Option<(usize, Value<'_>)> {
    let at = match *map.first()? {
        0x81..=0x8f => 1,
        0xde if map.get(1..3)? != [0, 0] => 3,
        0xdf if map.get(1..5)? != [0, 0, 0, 0] => 5,
        _ => return None,
    };
    if map.get(at..at + 8)? != b"\xa7message" {
        return None;
    }
    let start = at + 8;
    let be = |n: usize| -> Option<usize> {
        let b = map.get(start + 1..start + 1 + n)?;
        Some(b.iter().fold(0usize, |v, &x| v << 8 | usize::from(x)))
    };
    let (len, header) = match *map.get(start)? {
        b @ 0xa0..=0xbf => (usize::from(b & 0x1f), 1),
        0xd9 => (be(1)?, 2),
        0xda => (be(2)?, 3),
        0xdb => (be(4)?, 5),
        _ => return None,
    };
    let text = map.get(start + header..(start + header).checked_add(len)?)?;
    Some((start, Value::Str(text)))
}

/// Appends a record as one JSON object (a line as `{"message": line}`).
pub fn write_record_json(rec: RecordRef<'_>, out: &mut Vec<u8>) {
    match rec {
        RecordRef::Map(m) => {
            if json::write_value(out, &mut Reader::new(m)).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        RecordRef::Line(l) => {
            out.extend_from_slice(b"{\"message\":");
            json::write_str(out, l);
            out.push(b'}');
        }
    }
}

/// This machine's host name, for `{host}`.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most
    // that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn entry(out: &mut Vec<u8>, fields: &[(&str, &str)]) {
        write::array_len(out, 2);
        write::event_time(out, 1_700_000_000, 0);
        write::map_len(out, fields.len());
        for (k, v) in fields {
            write::str(out, k.as_bytes());
            write::str(out, v.as_bytes());
        }
    }

    fn render(config: FormatConfig, batch: &Batch) -> String {
        let mut out = Vec::new();
        Formatter::new(&config)
            .unwrap()
            .write_batch(batch, &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn sample() -> Batch {
        let mut e = Vec::new();
        entry(&mut e, &[("level", "info"), ("message", "hello")]);
        entry(&mut e, &[("log", "from docker")]);
        entry(&mut e, &[("other", "x\"y")]);
        Batch::new("app.web".into(), Records::Entries(e.into()), 3)
    }

    #[test]
    fn raw_entries_read_in_one_pass_write_what_the_general_path_writes() {
        // times in every encoding a sender may use
        let times: [&[u8]; 9] = [
            &[0x05],
            &[0xcc, 0xff],
            &[0xcd, 0x12, 0x34],
            &[0xce, 0x65, 0x53, 0xf1, 0x00],
            &[0xcf, 0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00],
            &[0xca, 0x4f, 0, 0, 0],
            &[0xcb, 0x41, 0xd9, 0, 0, 0, 0, 0, 0],
            &[0xd7, 0x00, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 7],
            &[0xc7, 0x08, 0x00, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 7],
        ];
        let mut entries = Vec::new();
        let mut count = 0;
        let mut push = |entries: &mut Vec<u8>, time: &[u8], record: &dyn Fn(&mut Vec<u8>)| {
            write::array_len(entries, 2);
            entries.extend_from_slice(time);
            record(entries);
            count += 1;
        };
        for time in times {
            // a message string of every header size, and the empty one
            for len in [0, 5, 31, 32, 255, 256, 70_000] {
                push(&mut entries, time, &|e| {
                    write::map_len(e, 1);
                    write::str(e, b"message");
                    write::str(e, "m".repeat(len).as_bytes());
                });
            }
        }
        let t = times[7];
        // shapes read by the general path: more fields, another key, a
        // message that is not a string, a later message, an ext of another
        // length, a negative time
        push(&mut entries, t, &|e| {
            write::map_len(e, 2);
            write::str(e, b"message");
            write::str(e, b"first");
            write::str(e, b"level");
            write::str(e, b"info");
        });
        push(&mut entries, t, &|e| {
            write::map_len(e, 1);
            write::str(e, b"log");
            write::str(e, b"docker");
        });
        push(&mut entries, t, &|e| {
            write::map_len(e, 1);
            write::str(e, b"message");
            write::uint(e, 42);
        });
        push(&mut entries, t, &|e| {
            write::map_len(e, 2);
            write::str(e, b"a");
            write::uint(e, 1);
            write::str(e, b"message");
            write::str(e, b"late");
        });
        push(&mut entries, &[0xc7, 0x04, 0x00, 1, 2, 3, 4], &|e| {
            write::map_len(e, 1);
            write::str(e, b"message");
            write::str(e, b"ext4");
        });
        push(&mut entries, &[0xff], &|e| {
            write::map_len(e, 1);
            write::str(e, b"message");
            write::str(e, b"negative");
        });
        let mut general = Vec::new();
        let mut r = Reader::new(&entries);
        let mut ends = Vec::new();
        while !r.is_empty() {
            write_raw_record(RecordRef::Map(next_record(&mut r).unwrap()), &mut general);
            ends.push(r.pos());
        }
        let mut fast = Vec::new();
        let mut r = Reader::new(&entries);
        let mut fast_ends = Vec::new();
        while !r.is_empty() {
            write_next_raw_entry(&mut r, &mut fast).unwrap();
            fast_ends.push(r.pos());
        }
        assert_eq!(ends.len(), count);
        assert_eq!(
            fast_ends, ends,
            "each entry ends where the general path finds its end"
        );
        assert_eq!(fast, general);
        assert!(String::from_utf8(fast)
            .unwrap()
            .ends_with("first\ndocker\n42\nlate\next4\nnegative\n"));
    }

    #[test]
    fn a_truncated_lone_message_entry_is_an_error_not_a_short_record() {
        let mut e = Vec::new();
        write::array_len(&mut e, 2);
        write::event_time(&mut e, 1, 0);
        write::map_len(&mut e, 1);
        write::str(&mut e, b"message");
        write::str(&mut e, b"cut short");
        e.truncate(e.len() - 3);
        let mut out = Vec::new();
        assert!(write_next_raw_entry(&mut Reader::new(&e), &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn raw_prefers_message_then_log_then_json() {
        assert_eq!(
            render(FormatConfig::default(), &sample()),
            "hello\nfrom docker\n{\"other\":\"x\\\"y\"}\n"
        );
    }

    #[test]
    fn raw_lines_pass_through_byte_for_byte() {
        let data = Bytes::from_static(b"caf\xc3\xa9\n\xff\xfe\n\n");
        let batch = Batch::new(
            "t".into(),
            Records::Lines {
                data: data.clone(),
                time: EventTime::new(1, 0),
            },
            3,
        );
        let mut out = Vec::new();
        Formatter::new(&FormatConfig::default())
            .unwrap()
            .write_batch(&batch, &mut out)
            .unwrap();
        assert_eq!(out, &data[..]);
    }

    #[test]
    fn json_has_time_tag_and_record() {
        let cfg = FormatConfig {
            kind: FormatKind::Json,
            ..Default::default()
        };
        let text = render(cfg, &sample());
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["time"], "2023-11-14T22:13:20.000000000Z");
        assert_eq!(first["tag"], "app.web");
        assert_eq!(first["record"]["message"], "hello");
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn json_lines_of_a_batch_are_those_of_each_record() {
        // the batch is converted in one walk; each record alone through
        // `write_record`: the same lines, nested values and escapes too
        let mut e = Vec::new();
        entry(
            &mut e,
            &[("message", "a \"quoted\" line\n"), ("level", "info")],
        );
        write::array_len(&mut e, 2);
        write::event_time(&mut e, 1_700_000_001, 123_456_789);
        write::map_len(&mut e, 2);
        write::str(&mut e, b"resource");
        write::map_len(&mut e, 1);
        write::str(&mut e, b"service.name");
        write::str(&mut e, b"api");
        write::str(&mut e, b"list");
        write::array_len(&mut e, 2);
        write::uint(&mut e, 1);
        e.push(0xc0);
        entry(&mut e, &[]);
        let batch = Batch::new("t\u{e9}".into(), Records::Entries(e.into()), 3);
        let cfg = FormatConfig {
            kind: FormatKind::Json,
            ..Default::default()
        };
        let mut f = Formatter::new(&cfg).unwrap();
        let mut whole = Vec::new();
        f.write_batch(&batch, &mut whole).unwrap();
        let mut each = Vec::new();
        batch
            .for_each_record(|time, rec| f.write_record("t\u{e9}", time, rec, &mut each))
            .unwrap();
        assert_eq!(
            String::from_utf8(whole).unwrap(),
            String::from_utf8(each).unwrap()
        );
        // an entry of three items is refused (its third is no entry), as
        // `for_each_record` refuses it
        let mut bad = Vec::new();
        write::array_len(&mut bad, 3);
        write::event_time(&mut bad, 1, 0);
        write::map_len(&mut bad, 0);
        bad.push(0xc0);
        let batch = Batch::new("t".into(), Records::Entries(bad.into()), 1);
        assert!(f.write_batch(&batch, &mut Vec::new()).is_err());
        // a record cut short after a whole one: the whole line stays, and
        // nothing of the cut one
        let mut cut = Vec::new();
        entry(&mut cut, &[("a", "b")]);
        entry(&mut cut, &[("c", "d")]);
        cut.truncate(cut.len() - 2);
        let batch = Batch::new("t".into(), Records::Entries(cut.into()), 2);
        let mut out = Vec::new();
        assert!(f.write_batch(&batch, &mut out).is_err());
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.ends_with("\"record\":{\"a\":\"b\"}}\n"), "{text}");
    }

    #[test]
    fn msgpack_frames_replay_as_message_mode() {
        let cfg = FormatConfig {
            kind: FormatKind::Msgpack,
            ..Default::default()
        };
        let mut out = Vec::new();
        Formatter::new(&cfg)
            .unwrap()
            .write_batch(&sample(), &mut out)
            .unwrap();
        let mut buf = bytes::BytesMut::from(&out[..]);
        let mut hint = crate::protocol::forward::Scan::default();
        let limits = crate::protocol::forward::Limits::default();
        let mut n = 0;
        while let Some(f) =
            crate::protocol::forward::next_frame(&mut buf, &limits, &mut hint).unwrap()
        {
            assert_eq!(f.tag, "app.web");
            n += f.count;
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn template_k2hftfuse_style() {
        let cfg = FormatConfig {
            kind: FormatKind::Template,
            template: Some(
                "{time} +0000 {{'message':'{message}','host':'{host}','level':'{level}'}}".into(),
            ),
            time_format: Some("%H:%M:%S".into()),
            ..Default::default()
        };
        let text = render(cfg, &sample());
        let host = hostname();
        assert_eq!(
            text.lines().next().unwrap(),
            format!("22:13:20 +0000 {{'message':'hello','host':'{host}','level':'info'}}")
        );
        // no message field: the record as JSON, as raw writes it
        assert!(text
            .lines()
            .nth(2)
            .unwrap()
            .contains("'message':'{\"other\":\"x\\\"y\"}'"));
    }

    fn template(text: &str) -> FormatConfig {
        FormatConfig {
            kind: FormatKind::Template,
            template: Some(text.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_usual_record_is_read_as_every_record_is() {
        let text = |n: usize| "m".repeat(n);
        let mut records = Vec::new();
        for (pairs, header) in [
            (1usize, vec![0x81u8]),
            (2, vec![0x82]),
            (1, vec![0xde, 0, 1]),
            (1, vec![0xdf, 0, 0, 0, 1]),
        ] {
            for len in [0, 5, 31, 32, 255, 256, 70_000] {
                let mut m = header.clone();
                write::str(&mut m, b"message");
                write::str(&mut m, text(len).as_bytes());
                if pairs == 2 {
                    write::str(&mut m, b"level");
                    write::str(&mut m, b"info");
                }
                records.push(m);
            }
        }
        // shapes the fast path leaves to the general one
        let mut bin = vec![0x81];
        write::str(&mut bin, b"message");
        write::bin_header(&mut bin, 2);
        bin.extend_from_slice(b"hi");
        let mut second = vec![0x82];
        for (k, v) in [("log", "from log"), ("message", "the message")] {
            write::str(&mut second, k.as_bytes());
            write::str(&mut second, v.as_bytes());
        }
        let mut number = vec![0x81];
        write::str(&mut number, b"message");
        write::uint(&mut number, 7);
        // an empty map with what looks like the usual pair after it
        let mut empty = vec![0xde, 0, 0];
        write::str(&mut empty, b"message");
        write::str(&mut empty, b"not in the map");
        records.extend([
            bin,
            second,
            number,
            empty,
            vec![0x80],
            vec![0xdf, 0, 0, 0, 0],
        ]);
        for rec in &records {
            // whole, and cut anywhere (a record is always whole; the fast
            // path must still never read past the end or disagree)
            for end in (0..=rec.len()).rev().take(300) {
                let m = &rec[..end];
                if let Some(fast) = leading_message_str(m) {
                    assert_eq!(
                        Some(fast),
                        any_message_field(m),
                        "{:x?}",
                        &m[..m.len().min(16)]
                    );
                }
            }
            assert_eq!(message_field(rec), any_message_field(rec));
        }
        assert!(leading_message_str(&records[0]).is_some());
        assert_eq!(
            raw_text(RecordRef::Map(&records[4])),
            Some(text(255).as_bytes())
        );
    }

    #[test]
    fn raw_and_template_message_follow_one_rule() {
        use crate::protocol::msgpack::write;
        let mut e = Vec::new();
        let mut n = 0;
        let mut rec = |fields: &dyn Fn(&mut Vec<u8>) -> usize| {
            write::array_len(&mut e, 2);
            write::uint(&mut e, 1);
            let mut body = Vec::new();
            let len = fields(&mut body);
            write::map_len(&mut e, len);
            e.extend(body);
            n += 1;
        };
        // message is an array
        rec(&|b| {
            write::str(b, b"message");
            write::array_len(b, 2);
            write::str(b, b"a");
            write::uint(b, 1);
            1
        });
        // log (a map) comes first, message is a string
        rec(&|b| {
            write::str(b, b"log");
            write::map_len(b, 1);
            write::str(b, b"k");
            write::str(b, b"v");
            write::str(b, b"message");
            write::str(b, b"the message");
            2
        });
        // only log, a map
        rec(&|b| {
            write::str(b, b"log");
            write::map_len(b, 1);
            write::str(b, b"k");
            write::uint(b, 2);
            1
        });
        // message is a number, log a string
        rec(&|b| {
            write::str(b, b"log");
            write::str(b, b"from log");
            write::str(b, b"message");
            write::uint(b, 42);
            2
        });
        // neither
        rec(&|b| {
            write::str(b, b"level");
            write::str(b, b"info");
            1
        });
        let batch = Batch::new("t".into(), Records::Entries(e.into()), n);
        let raw = render(FormatConfig::default(), &batch);
        assert_eq!(
            raw,
            "[\"a\",1]\nthe message\n{\"k\":2}\n42\n{\"level\":\"info\"}\n"
        );
        assert_eq!(render(template("{message}"), &batch), raw);
        // the zero-copy text agrees: only string messages have one
        let entries = batch.records.bytes().clone();
        let mut r = Reader::new(&entries);
        let mut texts = Vec::new();
        while !r.is_empty() {
            texts.push(raw_text(RecordRef::Map(next_record(&mut r).unwrap())).map(<[u8]>::to_vec));
        }
        assert_eq!(
            texts,
            vec![None, Some(b"the message".to_vec()), None, None, None]
        );
    }

    fn unescape(line: &str) -> String {
        let mut out = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('\\') => out.push('\\'),
                    other => panic!("bad escape {other:?} in {line:?}"),
                },
                (c, false) => out.push(c),
            }
        }
        out
    }

    #[test]
    fn escape_newlines_keeps_one_line_per_record_and_is_reversible() {
        let messages = ["one\ntwo\n", "back\\slash\\n", "plain", "\n", ""];
        let mut e = Vec::new();
        for m in messages {
            entry(&mut e, &[("message", m)]);
        }
        let batch = Batch::new("t".into(), Records::Entries(e.into()), messages.len());
        // default: byte for byte, so a message with newlines spans lines
        let plain = render(FormatConfig::default(), &batch);
        assert!(plain.lines().count() > messages.len());
        let raw = FormatConfig {
            escape_newlines: true,
            ..Default::default()
        };
        let text = render(raw, &batch);
        assert_eq!(text.lines().count(), messages.len(), "{text:?}");
        assert_eq!(text.lines().next(), Some("one\\ntwo\\n"));
        let back: Vec<String> = text.lines().map(unescape).collect();
        assert_eq!(back, messages);
        // a template escapes its whole line
        let mut t = template("[{message}]");
        t.escape_newlines = true;
        let text = render(t, &batch);
        let back: Vec<String> = text.lines().map(unescape).collect();
        assert_eq!(back[0], "[one\ntwo\n]");
        assert_eq!(back[1], "[back\\slash\\n]");
        // tailed lines hold no newline, but their backslashes are escaped
        let lines = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"a\\b\nc\n"),
                time: EventTime::new(1, 0),
            },
            2,
        );
        let raw = FormatConfig {
            escape_newlines: true,
            ..Default::default()
        };
        assert_eq!(render(raw, &lines), "a\\\\b\nc\n");
        // json escapes already; msgpack is not lines
        let json = FormatConfig {
            kind: FormatKind::Json,
            escape_newlines: true,
            ..Default::default()
        };
        assert!(json.validate().unwrap_err().contains("escape_newlines"));
        #[derive(Deserialize)]
        struct S {
            format: FormatConfig,
        }
        let s: S = toml::from_str("format = { type = \"raw\", escape_newlines = true }").unwrap();
        assert!(s.format.escape_newlines);
    }

    #[test]
    fn config_accepts_names_and_tables() {
        #[derive(Deserialize)]
        struct S {
            format: FormatConfig,
        }
        let s: S = toml::from_str("format = \"json\"").unwrap();
        assert_eq!(s.format.kind, FormatKind::Json);
        let s: S =
            toml::from_str("format = { type = \"template\", template = \"{tag}\" }").unwrap();
        assert_eq!(s.format.template.as_deref(), Some("{tag}"));
        assert!(toml::from_str::<S>("format = \"yaml\"").is_err());
        assert!(toml::from_str::<S>("format = { type = \"json\", colour = 1 }").is_err());
        let missing = FormatConfig {
            kind: FormatKind::Template,
            ..Default::default()
        };
        assert!(missing.validate().is_err());
    }

    #[test]
    fn ndjson_writes_the_record_itself_with_the_fields_added() {
        #[derive(Deserialize)]
        struct S {
            format: FormatConfig,
        }
        let mut e = Vec::new();
        entry(&mut e, &[("message", "a\nb"), ("time", "own")]);
        entry(&mut e, &[("level", "info")]);
        let batch = Batch::new("app.web".into(), Records::Entries(e.into()), 2);
        let format = |text: &str| toml::from_str::<S>(text).map(|s| s.format);
        let text = render(format("format = \"ndjson\"").unwrap(), &batch);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"message":"a\nb","time":"own"}"#);
        assert!(lines[1].starts_with(r#"{"level":"info","time":"#), "{text}");
        let with = format("format = { type = \"ndjson\", time_key = \"\", tag_key = \"tag\" }");
        let text = render(with.unwrap(), &batch);
        assert_eq!(
            text,
            "{\"message\":\"a\\nb\",\"time\":\"own\",\"tag\":\"app.web\"}\n{\"level\":\"info\",\"tag\":\"app.web\"}\n"
        );
        let pattern = format("format = { type = \"ndjson\", time_format = \"%Y\" }").unwrap();
        assert!(render(pattern, &batch)
            .lines()
            .nth(1)
            .unwrap()
            .ends_with("\"time\":\"2023\"}"));
        let json_tag = format("format = { type = \"json\", tag_key = \"t\" }").unwrap();
        assert!(json_tag.validate().unwrap_err().contains("tag_key"));
        let typo = format("format = { type = \"ndjson\", time_format = \"rfc3999\" }").unwrap();
        assert!(typo.validate().unwrap_err().contains("rfc3339"));
    }
}
