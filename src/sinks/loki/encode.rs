//! Records → Loki push entries, and entries → push bodies.
//!
//! Each record becomes one entry of the stream its rendered labels name;
//! the entry is encoded once (a protobuf `EntryAdapter`, or a JSON
//! `["<ns>", line, {metadata}]` value) and a push of any subset of the
//! entries is assembled from those bytes, so a push split to find a
//! refused entry encodes nothing again. Within a push, the entries of
//! each stream are in time order (Loki refuses an entry older than the
//! one before it in the same stream and push).

use std::collections::HashMap;
use std::ops::Range;

use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
use prost::Message as _;

use super::config::{Encoding, LineFormat, LokiSettings};
use crate::event::{Batch, EventTime, RecordRef};
use crate::format::{self, json, time::TimeFormat, Template};
use crate::protocol::msgpack::{self, Reader, Value};
use crate::sinks::http::config::Compression;

/// `logproto.PushRequest` of Loki's push API (`pkg/push/push.proto`),
/// written by hand: its fields are all this sink needs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<StreamAdapter>,
}

/// One stream: its labels in Prometheus form (`{job="x", level="info"}`)
/// and its entries.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamAdapter {
    #[prost(string, tag = "1")]
    pub labels: String,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<EntryAdapter>,
    /// Left 0: the server computes it.
    #[prost(uint64, tag = "3")]
    pub hash: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EntryAdapter {
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<Timestamp>,
    #[prost(string, tag = "2")]
    pub line: String,
    #[prost(message, repeated, tag = "3")]
    pub structured_metadata: Vec<LabelPairAdapter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPairAdapter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// A label or structured-metadata template: a line template (`{tag}`,
/// `{host}`, `{FIELD}`, literal text), where `${tag}` and
/// `${record.FIELD}` (the other sinks' name syntax) also work.
#[derive(Debug, Clone)]
pub struct FieldTemplate {
    template: Template,
    /// The record fields it names.
    fields: Vec<Vec<u8>>,
}

impl FieldTemplate {
    pub fn parse(text: &str) -> Result<FieldTemplate, String> {
        let text = braces(text)?;
        Ok(FieldTemplate {
            template: Template::parse(&text)?,
            fields: placeholders(&text)
                .into_iter()
                .filter(|n| !matches!(n.as_str(), "time" | "tag" | "host" | "message"))
                .map(String::into_bytes)
                .collect(),
        })
    }
}

/// `text` with `${tag}` as `{tag}` and `${record.FIELD}` as `{FIELD}`.
fn braces(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("{text:?}: `${{` needs a closing `}}`"))?;
        let name = &after[..close];
        out.push('{');
        out.push_str(name.strip_prefix("record.").unwrap_or(name));
        out.push('}');
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The placeholder names of a line template (`{{` and `}}` are literal).
fn placeholders(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let after = &rest[i + 1..];
        if after.starts_with(&rest[i..=i]) {
            rest = &after[1..];
            continue;
        }
        match (&rest[i..=i], after.find('}')) {
            ("{", Some(end)) => {
                names.push(after[..end].trim().to_string());
                rest = &after[end + 1..];
            }
            _ => rest = after,
        }
    }
    names
}

/// One record of a push.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Which batch of the request, and which record of it.
    pub batch: usize,
    pub record: usize,
    pub time: EventTime,
    /// Its stream, an index into [`Encoded::streams`].
    pub stream: usize,
    /// The encoded entry in [`Encoded::buf`].
    pub encoded: Range<usize>,
    /// Its line in [`Encoded::buf`], for the log of a refused entry.
    pub line: Range<usize>,
}

/// The streams of a request's records: each set of labels once.
#[derive(Debug, Clone)]
pub struct Stream {
    /// `{job="x", level="info"}` (protobuf).
    pub text: String,
    /// `{"job":"x","level":"info"}` (JSON).
    pub json: Vec<u8>,
}

/// The entries of one request, encoded once.
#[derive(Debug, Default)]
pub struct Encoded {
    pub buf: Vec<u8>,
    pub entries: Vec<Entry>,
    pub streams: Vec<Stream>,
    /// Stream by its label pairs (`name \0 value \0`…).
    by_labels: HashMap<Vec<u8>, usize>,
}

/// Makes entries of records, and pushes of entries.
pub struct LokiEncoder {
    labels: Vec<(String, FieldTemplate)>,
    metadata: Vec<(String, FieldTemplate)>,
    /// Record fields left out of a JSON line (`remove_label_fields`).
    removed: Vec<Vec<u8>>,
    line_format: LineFormat,
    encoding: Encoding,
    compression: Compression,
    /// This machine's name, for `{host}`.
    host: String,
    /// For `{time}`.
    time_format: TimeFormat,
}

impl LokiEncoder {
    pub fn new(c: &LokiSettings) -> Result<LokiEncoder, String> {
        let parse = |table: &std::collections::BTreeMap<String, String>| {
            table
                .iter()
                .map(|(k, v)| Ok((k.clone(), FieldTemplate::parse(v)?)))
                .collect::<Result<Vec<_>, String>>()
        };
        let labels = parse(&c.labels)?;
        let removed = if c.remove_label_fields {
            let mut r: Vec<Vec<u8>> = labels
                .iter()
                .flat_map(|(_, t)| t.fields.iter().cloned())
                .collect();
            r.sort();
            r.dedup();
            r
        } else {
            Vec::new()
        };
        Ok(LokiEncoder {
            labels,
            metadata: parse(&c.structured_metadata)?,
            removed,
            line_format: c.line_format,
            encoding: c.encoding,
            compression: c.compression,
            host: format::hostname(),
            time_format: TimeFormat::new(None)?,
        })
    }

    pub fn content_type(&self) -> &'static str {
        match self.encoding {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }

    pub fn content_encoding(&self) -> Option<&'static str> {
        (self.encoding == Encoding::Json && self.compression == Compression::Gzip).then_some("gzip")
    }

    /// Adds an entry for every record of `batch`, the `n`th of the request.
    pub fn batch(&mut self, n: usize, batch: &Batch, enc: &mut Encoded) -> msgpack::Result<()> {
        let tag = &batch.tag;
        let mut record = 0;
        let mut key = Vec::new();
        let mut text = Vec::new();
        let mut pairs = Vec::new();
        batch.for_each_record(|time, rec| {
            // the labels, as a key to the stream
            key.clear();
            pairs.clear();
            for (name, t) in &self.labels {
                text.clear();
                t.template
                    .render(&mut text, tag, time, rec, &self.host, &mut self.time_format);
                if !text.is_empty() {
                    key.extend_from_slice(name.as_bytes());
                    key.push(0);
                    key.extend_from_slice(&text);
                    key.push(0);
                    pairs.push((name.as_str(), String::from_utf8_lossy(&text).into_owned()));
                }
            }
            let stream = match enc.by_labels.get(&key) {
                Some(&s) => s,
                None => {
                    enc.streams.push(stream_of(&pairs));
                    enc.by_labels.insert(key.clone(), enc.streams.len() - 1);
                    enc.streams.len() - 1
                }
            };
            text.clear();
            match self.line_format {
                LineFormat::Json => write_json_without(rec, &self.removed, &mut text),
                LineFormat::Message => format::write_message(rec, &mut text),
            }
            let line = String::from_utf8_lossy(&text).into_owned();
            let mut metadata = Vec::new();
            for (name, t) in &self.metadata {
                text.clear();
                t.template
                    .render(&mut text, tag, time, rec, &self.host, &mut self.time_format);
                if !text.is_empty() {
                    metadata.push(LabelPairAdapter {
                        name: name.clone(),
                        value: String::from_utf8_lossy(&text).into_owned(),
                    });
                }
            }
            let line_at = enc.buf.len();
            enc.buf.extend_from_slice(line.as_bytes());
            let start = enc.buf.len();
            match self.encoding {
                Encoding::Protobuf => {
                    let entry = EntryAdapter {
                        timestamp: Some(Timestamp {
                            seconds: i64::from(time.secs),
                            nanos: time.nanos.min(999_999_999) as i32,
                        }),
                        line,
                        structured_metadata: metadata,
                    };
                    // a Vec grows as needed: encoding into it cannot fail
                    let _ = entry.encode(&mut enc.buf);
                }
                Encoding::Json => write_json_entry(&mut enc.buf, time, &line, &metadata),
            }
            enc.entries.push(Entry {
                batch: n,
                record,
                time,
                stream,
                encoded: start..enc.buf.len(),
                line: line_at..start,
            });
            record += 1;
        })
    }

    /// The body of a push of `group` (indices into `enc.entries`),
    /// compressed as the encoding asks.
    pub fn body(&self, enc: &Encoded, group: &[usize]) -> Vec<u8> {
        let mut order = group.to_vec();
        // stable: entries of one time keep the order they came in
        order.sort_by_key(|&i| {
            let e = &enc.entries[i];
            (e.stream, e.time.secs, e.time.nanos)
        });
        let runs = order.chunk_by(|&a, &b| enc.entries[a].stream == enc.entries[b].stream);
        let size: usize = order.iter().map(|&i| enc.entries[i].encoded.len()).sum();
        match self.encoding {
            Encoding::Protobuf => {
                let mut out = Vec::with_capacity(size + order.len() * 4 + 64);
                for run in runs {
                    let s = &enc.streams[enc.entries[run[0]].stream];
                    let entries: usize = run
                        .iter()
                        .map(|&i| {
                            let n = enc.entries[i].encoded.len();
                            1 + encoded_len_varint(n as u64) + n
                        })
                        .sum();
                    let len = 1 + encoded_len_varint(s.text.len() as u64) + s.text.len() + entries;
                    encode_key(1, WireType::LengthDelimited, &mut out);
                    encode_varint(len as u64, &mut out);
                    encode_key(1, WireType::LengthDelimited, &mut out);
                    encode_varint(s.text.len() as u64, &mut out);
                    out.extend_from_slice(s.text.as_bytes());
                    for &i in run {
                        let e = &enc.buf[enc.entries[i].encoded.clone()];
                        encode_key(2, WireType::LengthDelimited, &mut out);
                        encode_varint(e.len() as u64, &mut out);
                        out.extend_from_slice(e);
                    }
                }
                // snappy fails only on an input of more than 4 GiB, which
                // batch_bytes keeps far off; an empty push is refused
                snap::raw::Encoder::new()
                    .compress_vec(&out)
                    .unwrap_or_default()
            }
            Encoding::Json => {
                let mut out = Vec::with_capacity(size + order.len() + 64);
                out.extend_from_slice(b"{\"streams\":[");
                for (k, run) in runs.enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"stream\":");
                    out.extend_from_slice(&enc.streams[enc.entries[run[0]].stream].json);
                    out.extend_from_slice(b",\"values\":[");
                    for (j, &i) in run.iter().enumerate() {
                        if j > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(&enc.buf[enc.entries[i].encoded.clone()]);
                    }
                    out.extend_from_slice(b"]}");
                }
                out.extend_from_slice(b"]}");
                crate::sinks::http::encode::compress(self.compression, out)
            }
        }
    }
}

/// A stream of label `pairs` (in name order: the labels are a BTreeMap).
fn stream_of(pairs: &[(&str, String)]) -> Stream {
    let mut text = String::from("{");
    let mut json_text = vec![b'{'];
    for (k, (name, value)) in pairs.iter().enumerate() {
        if k > 0 {
            text.push_str(", ");
            json_text.push(b',');
        }
        text.push_str(name);
        text.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                '"' => text.push_str("\\\""),
                '\n' => text.push_str("\\n"),
                c => text.push(c),
            }
        }
        text.push('"');
        json::write_str(&mut json_text, name.as_bytes());
        json_text.push(b':');
        json::write_str(&mut json_text, value.as_bytes());
    }
    text.push('}');
    json_text.push(b'}');
    Stream {
        text,
        json: json_text,
    }
}

/// `["<unix ns>", line, {metadata}]`, the metadata left out when empty.
fn write_json_entry(out: &mut Vec<u8>, time: EventTime, line: &str, metadata: &[LabelPairAdapter]) {
    let ns = u128::from(time.secs) * 1_000_000_000 + u128::from(time.nanos.min(999_999_999));
    out.extend_from_slice(format!("[\"{ns}\",").as_bytes());
    json::write_str(out, line.as_bytes());
    if !metadata.is_empty() {
        out.extend_from_slice(b",{");
        for (k, p) in metadata.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            json::write_str(out, p.name.as_bytes());
            out.push(b':');
            json::write_str(out, p.value.as_bytes());
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// A record as one JSON object without the top-level fields `removed`
/// (sorted); a line is `{"message": line}`.
fn write_json_without(rec: RecordRef<'_>, removed: &[Vec<u8>], out: &mut Vec<u8>) {
    let RecordRef::Map(m) = rec else {
        return format::write_record_json(rec, out);
    };
    if removed.is_empty() {
        return format::write_record_json(rec, out);
    }
    let start = out.len();
    if write_map_without(m, removed, out).is_err() {
        // a key that is not a string, or a map cut short: written whole
        out.truncate(start);
        format::write_record_json(rec, out);
    }
}

fn write_map_without(m: &[u8], removed: &[Vec<u8>], out: &mut Vec<u8>) -> msgpack::Result<()> {
    let mut r = Reader::new(m);
    let n = r.read_map_len()?;
    out.push(b'{');
    let mut first = true;
    for _ in 0..n {
        let key = match r.read()? {
            Value::Str(k) | Value::Bin(k) => k,
            _ => {
                return Err(msgpack::Error::Invalid {
                    offset: r.pos(),
                    reason: "a record key that is not a string",
                })
            }
        };
        if removed.binary_search_by(|f| f.as_slice().cmp(key)).is_ok() {
            r.skip()?;
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        json::write_str(out, key);
        out.push(b':');
        json::write_value(out, &mut r)?;
    }
    out.push(b'}');
    Ok(())
}
