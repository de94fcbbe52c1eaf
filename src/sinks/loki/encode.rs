//! Records → Loki push entries, and entries → push bodies.
//!
//! Each record becomes one entry of the stream its rendered labels name;
//! the entry is encoded once (a protobuf `EntryAdapter`, or a JSON
//! `["<ns>", line, {metadata}]` value) and a push of any subset of the
//! entries is assembled from those bytes, so a push split to find a
//! refused entry encodes nothing again. Within a push, the entries of
//! each stream are in time order (Loki refuses an entry older than the
//! one before it in the same stream and push).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};

use super::config::{Encoding, LineFormat, LokiSettings};
use crate::event::{read_entry_time, Batch, EventTime, RecordRef, Records};
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
    /// Whether it names anything but the tag and the host: if not, it is
    /// the same for every record of a batch and rendered once per batch.
    per_record: bool,
}

impl FieldTemplate {
    pub fn parse(text: &str) -> Result<FieldTemplate, String> {
        let text = braces(text)?;
        let names = placeholders(&text);
        Ok(FieldTemplate {
            template: Template::parse(&text)?,
            per_record: names.iter().any(|n| !matches!(n.as_str(), "tag" | "host")),
            fields: names
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
    /// The key and stream of the record before: records of one stream
    /// come in runs, and comparing with the last key is cheaper than
    /// hashing it.
    last_key: Vec<u8>,
    last_stream: Option<usize>,
}

impl Encoded {
    /// Empty, its room kept.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.entries.clear();
        self.streams.clear();
        self.by_labels.clear();
        self.last_key.clear();
        self.last_stream = None;
    }
}

/// Room for rendering a record's labels, kept from record to record.
#[derive(Default)]
struct LabelScratch {
    /// The label pairs, `name \0 value \0`…: the stream's key.
    key: Vec<u8>,
    /// Which label each value in `key` is, and where it is.
    values: Vec<(usize, Range<usize>)>,
    /// One label's value.
    text: Vec<u8>,
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
    /// The bytes the last protobuf line's length took: the next line is
    /// written after as many (see [`write_proto_line`]).
    line_len_guess: usize,
    /// A protobuf push before and after snappy, kept from push to push:
    /// fresh buffers of a few MiB cost more in page faults and zeroing
    /// than the compression itself.
    scratch: RefCell<(Vec<u8>, Vec<u8>)>,
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
            line_len_guess: 1,
            scratch: RefCell::default(),
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
    ///
    /// Per record this renders the labels into one key (a stream is
    /// looked up only when the key differs from the record before's, its
    /// label text made only when it is new, and all of it done once per
    /// batch when no label depends on the record), the metadata into
    /// scratch space kept from record to record, and writes the entry's
    /// protobuf with its line written in place (or the line and the JSON
    /// entry): nothing is allocated per record once the space has grown.
    pub fn batch(&mut self, n: usize, batch: &Batch, enc: &mut Encoded) -> msgpack::Result<()> {
        let tag = &batch.tag;
        enc.entries.reserve(batch.count);
        let per_record = self.labels.iter().any(|(_, t)| t.per_record);
        if let Records::Entries(b) = &batch.records {
            if !per_record
                && self.metadata.is_empty()
                && self.removed.is_empty()
                && self.line_format == LineFormat::Json
                && self.encoding == Encoding::Protobuf
            {
                return self.batch_in_one_pass(n, tag, b, enc);
            }
        }
        let mut batch_stream = None;
        let mut record = 0;
        let mut labels = LabelScratch::default();
        let mut text = Vec::new();
        let mut line = Vec::new();
        let mut meta = Vec::new();
        let mut pairs: Vec<(usize, Range<usize>)> = Vec::new();
        batch.for_each_record(|time, rec| {
            let stream = match batch_stream {
                Some(s) => s,
                None => {
                    let s = self.stream(enc, &mut labels, tag, time, rec);
                    if !per_record {
                        batch_stream = Some(s);
                    }
                    s
                }
            };
            meta.clear();
            pairs.clear();
            for (k, (_, t)) in self.metadata.iter().enumerate() {
                text.clear();
                t.template
                    .render(&mut text, tag, time, rec, &self.host, &mut self.time_format);
                if !text.is_empty() {
                    let at = meta.len();
                    meta.extend_from_slice(&text);
                    valid_utf8_from(&mut meta, at, &mut text);
                    pairs.push((k, at..meta.len()));
                }
            }
            let metadata = pairs
                .iter()
                .map(|(k, r)| (self.metadata[*k].0.as_bytes(), &meta[r.clone()]));
            let line_format = self.line_format;
            let removed = &self.removed;
            let (start, line) = match self.encoding {
                // the line is written once, inside the entry
                Encoding::Protobuf => {
                    let start = enc.buf.len();
                    write_proto_timestamp(&mut enc.buf, time);
                    let line = write_proto_line(&mut enc.buf, &mut self.line_len_guess, |out| {
                        let at = out.len();
                        match line_format {
                            // JSON text is valid UTF-8 as written
                            LineFormat::Json => write_json_without(rec, removed, out),
                            LineFormat::Message => {
                                format::write_message(rec, out);
                                valid_utf8_from(out, at, &mut text);
                            }
                        }
                    });
                    write_proto_metadata(&mut enc.buf, metadata);
                    (start, line)
                }
                // escaped in the entry: kept as it is before it
                Encoding::Json => {
                    line.clear();
                    match line_format {
                        LineFormat::Json => write_json_without(rec, removed, &mut line),
                        LineFormat::Message => format::write_message(rec, &mut line),
                    }
                    valid_utf8(&mut line, &mut text);
                    let line_at = enc.buf.len();
                    enc.buf.extend_from_slice(&line);
                    let start = enc.buf.len();
                    write_json_entry(&mut enc.buf, time, &line, metadata);
                    (start, line_at..start)
                }
            };
            enc.entries.push(Entry {
                batch: n,
                record,
                time,
                stream,
                encoded: start..enc.buf.len(),
                line,
            });
            record += 1;
        })
    }

    /// The entries of a batch whose labels are the same for every record
    /// and whose lines are the records as JSON, with nothing else per
    /// record: each record is read once, as its JSON is written, where
    /// [`Batch::for_each_record`] would first read over it to find its end.
    fn batch_in_one_pass(
        &mut self,
        n: usize,
        tag: &str,
        b: &[u8],
        enc: &mut Encoded,
    ) -> msgpack::Result<()> {
        let mut r = Reader::new(b);
        let mut stream = None;
        let mut record = 0;
        while !r.is_empty() {
            let time = read_entry_time(&mut r)?;
            let at = r.pos();
            let stream = *stream.get_or_insert_with(|| {
                let rec = RecordRef::Map(&b[at..]);
                self.stream(enc, &mut LabelScratch::default(), tag, time, rec)
            });
            let start = enc.buf.len();
            write_proto_timestamp(&mut enc.buf, time);
            let mut read = Ok(());
            let line = write_proto_line(&mut enc.buf, &mut self.line_len_guess, |out| {
                let from = out.len();
                if json::write_value(out, &mut r).is_err() {
                    // as `format::write_record_json` writes a record it
                    // cannot convert, if it can be read over
                    out.truncate(from);
                    r = Reader::at(b, at);
                    read = r.skip();
                    out.extend_from_slice(b"null");
                }
            });
            read?;
            enc.entries.push(Entry {
                batch: n,
                record,
                time,
                stream,
                encoded: start..enc.buf.len(),
                line,
            });
            record += 1;
        }
        Ok(())
    }

    /// The stream of a record's labels, added if it is new.
    fn stream(
        &mut self,
        enc: &mut Encoded,
        s: &mut LabelScratch,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
    ) -> usize {
        // the labels, as a key to the stream
        s.key.clear();
        s.values.clear();
        for (k, (name, t)) in self.labels.iter().enumerate() {
            s.text.clear();
            t.template.render(
                &mut s.text,
                tag,
                time,
                rec,
                &self.host,
                &mut self.time_format,
            );
            if !s.text.is_empty() {
                s.key.extend_from_slice(name.as_bytes());
                s.key.push(0);
                s.values.push((k, s.key.len()..s.key.len() + s.text.len()));
                s.key.extend_from_slice(&s.text);
                s.key.push(0);
            }
        }
        let key = &s.key;
        if let Some(s) = enc.last_stream.filter(|_| enc.last_key == *key) {
            return s;
        }
        let stream = match enc.by_labels.get(key) {
            Some(&s) => s,
            None => {
                let named: Vec<(&str, String)> = s
                    .values
                    .iter()
                    .map(|(k, r)| {
                        let value = String::from_utf8_lossy(&key[r.clone()]);
                        (self.labels[*k].0.as_str(), value.into_owned())
                    })
                    .collect();
                enc.streams.push(stream_of(&named));
                enc.by_labels.insert(key.clone(), enc.streams.len() - 1);
                enc.streams.len() - 1
            }
        };
        enc.last_key.clear();
        enc.last_key.extend_from_slice(key);
        enc.last_stream = Some(stream);
        stream
    }

    /// The body of a push of `group` (indices into `enc.entries`),
    /// compressed as the encoding asks.
    pub fn body(&self, enc: &Encoded, group: &[usize]) -> Vec<u8> {
        // stream, time and place in the group in one number: sorted as
        // numbers, entries of one stream and time keep the order they came
        // in; a group already in order (one stream's records in time order,
        // the usual case) is only looked over. A push holds far fewer
        // than 2^32 entries and streams.
        let mut keys: Vec<u128> = group
            .iter()
            .enumerate()
            .map(|(at, &i)| {
                let e = &enc.entries[i];
                (e.stream as u128) << 96
                    | u128::from(e.time.secs) << 64
                    | u128::from(e.time.nanos) << 32
                    | at as u128
            })
            .collect();
        // a merge sort (the keys are unique: stable or not, one order),
        // which takes the runs already in order whole: records of one
        // source come in time order, starting over now and then
        if !keys.is_sorted() {
            keys.sort();
        }
        let order: Vec<usize> = keys.iter().map(|&k| group[k as u32 as usize]).collect();
        let runs = order.chunk_by(|&a, &b| enc.entries[a].stream == enc.entries[b].stream);
        let size: usize = order.iter().map(|&i| enc.entries[i].encoded.len()).sum();
        match self.encoding {
            Encoding::Protobuf => {
                let mut scratch = self.scratch.borrow_mut();
                let (out, packed) = &mut *scratch;
                out.clear();
                out.reserve(size + order.len() * 4 + 64);
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
                    encode_key(1, WireType::LengthDelimited, out);
                    encode_varint(len as u64, out);
                    encode_key(1, WireType::LengthDelimited, out);
                    encode_varint(s.text.len() as u64, out);
                    out.extend_from_slice(s.text.as_bytes());
                    for &i in run {
                        let e = &enc.buf[enc.entries[i].encoded.clone()];
                        encode_key(2, WireType::LengthDelimited, out);
                        encode_varint(e.len() as u64, out);
                        out.extend_from_slice(e);
                    }
                }
                // the room snappy asks for, zeroed only where it grows
                let need = snap::raw::max_compress_len(out.len());
                if packed.len() < need {
                    packed.resize(need, 0);
                }
                // snappy fails only on an input of more than 4 GiB, which
                // batch_bytes keeps far off; an empty push is refused
                match snap::raw::Encoder::new().compress(out, packed) {
                    Ok(n) => packed[..n].to_vec(),
                    Err(_) => Vec::new(),
                }
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
fn write_json_entry<'a>(
    out: &mut Vec<u8>,
    time: EventTime,
    line: &[u8],
    metadata: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    let ns = u128::from(time.secs) * 1_000_000_000 + u128::from(time.nanos.min(999_999_999));
    out.extend_from_slice(format!("[\"{ns}\",").as_bytes());
    json::write_str(out, line);
    let mut metadata = metadata.peekable();
    if metadata.peek().is_some() {
        out.extend_from_slice(b",{");
        for (k, (name, value)) in metadata.enumerate() {
            if k > 0 {
                out.push(b',');
            }
            json::write_str(out, name);
            out.push(b':');
            json::write_str(out, value);
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// One `EntryAdapter` as prost writes it (proto3: a field at its default,
/// 0 or empty, is left out; the timestamp message is always there); where
/// in `out` its line is.
#[cfg(test)]
pub(super) fn write_proto_entry<'a>(
    out: &mut Vec<u8>,
    time: EventTime,
    line: &[u8],
    metadata: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Range<usize> {
    write_proto_timestamp(out, time);
    let at = write_proto_line(out, &mut 1, |out| out.extend_from_slice(line));
    write_proto_metadata(out, metadata);
    at
}

fn varint_field_len(v: u64) -> usize {
    if v == 0 {
        0
    } else {
        1 + encoded_len_varint(v)
    }
}

fn bytes_field_len(b: &[u8]) -> usize {
    if b.is_empty() {
        0
    } else {
        1 + encoded_len_varint(b.len() as u64) + b.len()
    }
}

fn bytes_field(tag: u32, b: &[u8], out: &mut Vec<u8>) {
    if !b.is_empty() {
        encode_key(tag, WireType::LengthDelimited, out);
        encode_varint(b.len() as u64, out);
        out.extend_from_slice(b);
    }
}

/// An `EntryAdapter`'s timestamp field.
fn write_proto_timestamp(out: &mut Vec<u8>, time: EventTime) {
    let secs = i64::from(time.secs) as u64;
    // a nanosecond field past 999,999,999 is not a valid Timestamp
    let nanos = i64::from(time.nanos.min(999_999_999) as i32) as u64;
    encode_key(1, WireType::LengthDelimited, out);
    encode_varint(
        (varint_field_len(secs) + varint_field_len(nanos)) as u64,
        out,
    );
    for (tag, v) in [(1, secs), (2, nanos)] {
        if v != 0 {
            encode_key(tag, WireType::Varint, out);
            encode_varint(v, out);
        }
    }
}

/// An `EntryAdapter`'s line field, the line written by `write` straight
/// into `out` after room for its length: `guess` bytes, as many as the
/// line before's length took (lines of a source are alike), so the line
/// is moved only when its length needs another number of bytes. Where in
/// `out` the line is.
pub(super) fn write_proto_line(
    out: &mut Vec<u8>,
    guess: &mut usize,
    write: impl FnOnce(&mut Vec<u8>),
) -> Range<usize> {
    let key_at = out.len();
    encode_key(2, WireType::LengthDelimited, out);
    let len_at = out.len();
    out.resize(len_at + *guess, 0);
    let line_at = out.len();
    write(out);
    let n = out.len() - line_at;
    if n == 0 {
        // proto3 leaves an empty string out
        out.truncate(key_at);
        return key_at..key_at;
    }
    let need = encoded_len_varint(n as u64);
    if need > *guess {
        out.resize(out.len() + need - *guess, 0);
        out.copy_within(line_at..line_at + n, len_at + need);
    } else if need < *guess {
        out.copy_within(line_at..line_at + n, len_at + need);
        out.truncate(len_at + need + n);
    }
    *guess = need;
    encode_varint(n as u64, &mut &mut out[len_at..len_at + need]);
    len_at + need..len_at + need + n
}

/// An `EntryAdapter`'s structured metadata.
fn write_proto_metadata<'a>(
    out: &mut Vec<u8>,
    metadata: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    for (name, value) in metadata {
        encode_key(3, WireType::LengthDelimited, out);
        encode_varint((bytes_field_len(name) + bytes_field_len(value)) as u64, out);
        bytes_field(1, name, out);
        bytes_field(2, value, out);
    }
}

/// Makes `buf` valid UTF-8, as a protobuf `string` must be: an invalid
/// sequence becomes U+FFFD (`scratch` is room for the conversion).
fn valid_utf8(buf: &mut Vec<u8>, scratch: &mut Vec<u8>) {
    valid_utf8_from(buf, 0, scratch)
}

/// [`valid_utf8`] for `buf[from..]`.
fn valid_utf8_from(buf: &mut Vec<u8>, from: usize, scratch: &mut Vec<u8>) {
    if std::str::from_utf8(&buf[from..]).is_ok() {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(String::from_utf8_lossy(&buf[from..]).as_bytes());
    buf.truncate(from);
    buf.extend_from_slice(scratch);
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
