//! NDJSON: each record itself as one JSON object a line, its time (and
//! tag) added as fields: what Fluentd's `out_file` with `@type json` and
//! Vector's `json` codec write, the `ndjson` format of the file, stdout
//! and kafka sinks, and the body of the http sink's `encoding = "ndjson"`.

use std::io::Write as _;

use serde::Deserialize;

use crate::event::{map_field_raw, EventTime, RecordRef};
use crate::format::{self, json};
use crate::protocol::msgpack::{self, write, Reader};

/// How the time added under `time_key` is written.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimeFormat {
    /// Seconds since the epoch with nanoseconds (`1700000000.123456789`).
    #[default]
    Epoch,
    /// Whole milliseconds since the epoch.
    EpochMillis,
    /// A string, written by the text time format given to
    /// [`Added::write_json`]: RFC 3339 in UTC with nanoseconds (or, in a
    /// sink's `format`, its strftime pattern).
    Rfc3339,
}

/// Fields added to each JSON or msgpack record (each unless the record
/// has it already).
#[derive(Debug, Clone)]
pub struct Added {
    /// `time_key` (none when empty) and how the time is written.
    pub time_key: Option<String>,
    pub time_format: TimeFormat,
    /// `tag_key`.
    pub tag_key: Option<String>,
}

impl Added {
    /// Writes `rec` as a JSON object, with the added fields.
    pub fn write_json(
        &self,
        rfc3339: &mut format::time::TimeFormat,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
        out: &mut Vec<u8>,
    ) {
        let start = out.len();
        format::write_record_json(rec, out);
        if out.last() != Some(&b'}') {
            return;
        }
        let empty = out.len() - start == 2;
        let sep = |out: &mut Vec<u8>, first: &mut bool| {
            if !*first {
                out.push(b',');
            }
            *first = false;
        };
        out.pop();
        let mut first = empty;
        if let Some(k) = self.time_key.as_deref().filter(|k| !has(rec, k)) {
            sep(out, &mut first);
            json::write_str(out, k.as_bytes());
            out.push(b':');
            match self.time_format {
                TimeFormat::Epoch => {
                    let _ = write!(out, "{}.{:09}", time.secs, time.nanos.min(999_999_999));
                }
                TimeFormat::EpochMillis => {
                    let _ = write!(
                        out,
                        "{}",
                        u64::from(time.secs) * 1000 + u64::from(time.nanos / 1_000_000)
                    );
                }
                TimeFormat::Rfc3339 => {
                    out.push(b'"');
                    rfc3339.write(out, time);
                    out.push(b'"');
                }
            }
        }
        if let Some(k) = self.tag_key.as_deref().filter(|k| !has(rec, k)) {
            sep(out, &mut first);
            json::write_str(out, k.as_bytes());
            out.push(b':');
            json::write_str(out, tag.as_bytes());
        }
        out.push(b'}');
    }

    /// Writes `rec` as a msgpack map, with the added fields.
    pub fn write_msgpack(
        &self,
        rfc3339: &mut format::time::TimeFormat,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
        out: &mut Vec<u8>,
    ) -> msgpack::Result<()> {
        let time_key = self.time_key.as_deref().filter(|k| !has(rec, k));
        let tag_key = self.tag_key.as_deref().filter(|k| !has(rec, k));
        let added = usize::from(time_key.is_some()) + usize::from(tag_key.is_some());
        match rec {
            RecordRef::Map(m) => {
                let mut r = Reader::new(m);
                let pairs = r.read_map_len()?;
                write::map_len(out, pairs + added);
                out.extend_from_slice(&m[r.pos()..]);
            }
            RecordRef::Line(l) => {
                write::map_len(out, 1 + added);
                write::str(out, b"message");
                write::str(out, l);
            }
        }
        if let Some(k) = time_key {
            write::str(out, k.as_bytes());
            match self.time_format {
                TimeFormat::Epoch => {
                    out.push(0xcb);
                    out.extend_from_slice(&time.as_f64().to_be_bytes());
                }
                TimeFormat::EpochMillis => write::uint(
                    out,
                    u64::from(time.secs) * 1000 + u64::from(time.nanos / 1_000_000),
                ),
                TimeFormat::Rfc3339 => {
                    let mut text = Vec::with_capacity(32);
                    rfc3339.write(&mut text, time);
                    write::str(out, &text);
                }
            }
        }
        if let Some(k) = tag_key {
            write::str(out, k.as_bytes());
            write::str(out, tag.as_bytes());
        }
        Ok(())
    }
}

/// Whether the record has a top-level field `key`.
fn has(rec: RecordRef<'_>, key: &str) -> bool {
    match rec {
        RecordRef::Map(m) => map_field_raw(m, key.as_bytes()).is_some(),
        RecordRef::Line(_) => key == "message",
    }
}
