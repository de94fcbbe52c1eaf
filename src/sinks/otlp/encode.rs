//! Records → OpenTelemetry log records, grouped by resource, as the
//! bytes of one `ExportLogsServiceRequest`.
//!
//! The protobuf is written straight from each record's msgpack
//! (src/protocol/protobuf.rs), not through `opentelemetry-proto`'s
//! structs and `prost`: a profile of forward → `otlp` sink at full speed
//! had building, sizing, encoding and freeing those structs (a `String`
//! and a `Vec` per field, `encoded_len` walked again at every level of
//! nesting) take over half of the sink's CPU. What the bytes decode to is
//! tested with prost (tests.rs).
//!
//! A record maps as Fluent Bit's `opentelemetry` output maps it with
//! `logs_body_key_attributes` on:
//! - `time_unix_nano` is the record's time; `observed_time_unix_nano` the
//!   time the request was made;
//! - the body is the value of the first of `body_keys` the record has (a
//!   string stays a string), and every other field is an attribute; a
//!   record with none of them is its own body, a key/value list, with no
//!   attributes; a tailed line is a string body;
//! - the first of `severity_keys` gives `severity_text` (a name) and
//!   `severity_number` (from the name, or a number from 1 to 24);
//! - `trace_id_key` and `span_id_key`, when they hold hex ids of the right
//!   length, give `trace_id` and `span_id`;
//! - the map in `resource_key` is the resource, with `resource_attributes`
//!   for the keys it lacks; records with the same resource (the same
//!   bytes) go in one `ResourceLogs`, with one scope, `logferry`.
//!
//! A field the mapping did not use (a severity that is neither a name nor
//! a number, an id that is not hex, a resource that is not a map) stays
//! an attribute, so nothing of a record is lost. Values keep their types:
//! maps are key/value lists, arrays array values, integers, floats,
//! booleans and binaries their own kinds; an integer above `i64::MAX` is
//! a string of its digits; text that is not UTF-8 is bytes.
//!
//! The `otlp` source is to write an OTLP record's resource attributes as a
//! map in the `resource` field, this sink's default `resource_key`: a
//! record that comes in over OTLP then goes out with its resource.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use super::config::OtlpSettings;
use crate::event::{skip_rest, Batch, EventTime, RecordRef};
use crate::protocol::msgpack::{self, Reader, Value};
use crate::protocol::protobuf::{
    bytes_field, bytes_field_len, fixed64_field, key, message, varint, varint_field, LEN,
};

/// Nesting kept as key/value lists and arrays; a value nested deeper is
/// sent as the bytes of its msgpack encoding (records are read without
/// recursion limits of their own here).
const MAX_DEPTH: usize = 32;

/// The scope every record is sent under.
pub const SCOPE_NAME: &str = "logferry";

/// Field numbers of the OTLP messages written here
/// (opentelemetry/proto/{collector/logs,logs,common,resource}/v1).
mod field {
    // ExportLogsServiceRequest, ResourceLogs, ScopeLogs
    pub const RESOURCE_LOGS: u32 = 1;
    pub const RESOURCE: u32 = 1;
    pub const SCOPE_LOGS: u32 = 2;
    pub const SCOPE: u32 = 1;
    pub const LOG_RECORDS: u32 = 2;
    // Resource, InstrumentationScope
    pub const RESOURCE_ATTRIBUTES: u32 = 1;
    pub const SCOPE_NAME: u32 = 1;
    pub const SCOPE_VERSION: u32 = 2;
    // LogRecord
    pub const TIME: u32 = 1;
    pub const OBSERVED_TIME: u32 = 11;
    pub const SEVERITY_NUMBER: u32 = 2;
    pub const SEVERITY_TEXT: u32 = 3;
    pub const BODY: u32 = 5;
    pub const ATTRIBUTES: u32 = 6;
    pub const TRACE_ID: u32 = 9;
    pub const SPAN_ID: u32 = 10;
    // KeyValue, KeyValueList, ArrayValue
    pub const KEY: u32 = 1;
    pub const VALUE: u32 = 2;
    pub const VALUES: u32 = 1;
    // AnyValue
    pub const STRING: u32 = 1;
    pub const BOOL: u32 = 2;
    pub const INT: u32 = 3;
    pub const DOUBLE: u32 = 4;
    pub const ARRAY: u32 = 5;
    pub const KVLIST: u32 = 6;
    pub const BYTES: u32 = 7;
}

/// Maps records to log records.
pub struct LogEncoder {
    body_keys: Vec<Vec<u8>>,
    severity_keys: Vec<Vec<u8>>,
    trace_id_key: Vec<u8>,
    span_id_key: Vec<u8>,
    resource_key: Vec<u8>,
    /// `resource_attributes`.
    resource_attributes: Vec<(String, String)>,
    /// The `InstrumentationScope` every record is sent under, encoded.
    scope: Vec<u8>,
}

/// The log records of one request so far, by resource, encoded.
#[derive(Default)]
pub struct Grouped {
    groups: Vec<Group>,
    /// Where each resource's group is in `groups`.
    index: HashMap<Vec<u8>, usize>,
    /// The group the last record went to.
    last: usize,
    /// Records so far.
    pub records: usize,
    /// One record's fields, kept from one record to the next.
    fields: Vec<FieldAt>,
}

/// The records of one resource.
struct Group {
    /// The resource's map as the records hold it (empty: none).
    resource: Vec<u8>,
    /// Its log records, each as a `ScopeLogs.log_records` field.
    records: Vec<u8>,
}

/// A field of a record's map, by where it is in the map's bytes.
struct FieldAt {
    /// Its key: where it is, or written out (a number or a boolean).
    key: Key,
    value: Range<usize>,
    /// Mapped to something other than an attribute (body, severity, ids,
    /// resource).
    used: bool,
}

enum Key {
    At(Range<usize>),
    Text(String),
}

impl FieldAt {
    fn key<'a>(&'a self, map: &'a [u8]) -> &'a [u8] {
        match &self.key {
            Key::At(r) => &map[r.clone()],
            Key::Text(s) => s.as_bytes(),
        }
    }
}

impl LogEncoder {
    pub fn new(c: &OtlpSettings) -> LogEncoder {
        let bytes = |s: &String| s.as_bytes().to_vec();
        let mut scope = Vec::new();
        bytes_field(&mut scope, field::SCOPE_NAME, SCOPE_NAME.as_bytes());
        bytes_field(
            &mut scope,
            field::SCOPE_VERSION,
            env!("CARGO_PKG_VERSION").as_bytes(),
        );
        LogEncoder {
            body_keys: c.body_keys.iter().map(bytes).collect(),
            severity_keys: c.severity_keys.iter().map(bytes).collect(),
            trace_id_key: bytes(&c.trace_id_key),
            span_id_key: bytes(&c.span_id_key),
            resource_key: bytes(&c.resource_key),
            resource_attributes: c
                .resource_attributes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            scope,
        }
    }

    /// Adds every record of `batch` to `out`; nothing of it if one cannot
    /// be read.
    pub fn batch(&self, batch: &Batch, observed: u64, out: &mut Grouped) -> msgpack::Result<()> {
        let before: Vec<usize> = out.groups.iter().map(|g| g.records.len()).collect();
        let (groups, records) = (out.groups.len(), out.records);
        let mut failed = None;
        let read = batch.for_each_record(|time, rec| {
            if failed.is_none() {
                if let Err(e) = self.record(time, rec, observed, out) {
                    failed = Some(e);
                }
            }
        });
        if let Some(e) = read.err().or(failed) {
            // back to where the batch began
            for (g, len) in out.groups.iter_mut().zip(before) {
                g.records.truncate(len);
            }
            for g in out.groups.drain(groups..) {
                out.index.remove(&g.resource);
            }
            out.records = records;
            out.last = 0;
            return Err(e);
        }
        Ok(())
    }

    /// Adds one record to its resource's group.
    fn record(
        &self,
        time: EventTime,
        rec: RecordRef<'_>,
        observed: u64,
        out: &mut Grouped,
    ) -> msgpack::Result<()> {
        let time = u64::from(time.secs) * 1_000_000_000 + u64::from(time.nanos);
        let map = match rec {
            RecordRef::Line(l) => {
                let g = out.group(&[]);
                message(&mut g.records, field::LOG_RECORDS, |o| {
                    fixed64_field(o, field::TIME, time);
                    fixed64_field(o, field::OBSERVED_TIME, observed);
                    message(o, field::BODY, |o| text(o, l));
                });
                out.records += 1;
                return Ok(());
            }
            RecordRef::Map(m) => m,
        };
        let mut fields = std::mem::take(&mut out.fields);
        let r = self.map_record(map, time, observed, &mut fields, out);
        out.fields = fields;
        r
    }

    fn map_record(
        &self,
        map: &[u8],
        time: u64,
        observed: u64,
        fields: &mut Vec<FieldAt>,
        out: &mut Grouped,
    ) -> msgpack::Result<()> {
        read_fields(map, fields)?;
        let find = |fields: &[FieldAt], key: &[u8]| fields.iter().position(|f| f.key(map) == key);
        let value = |f: &FieldAt| &map[f.value.clone()];
        let body = self.body_keys.iter().find_map(|k| find(fields, k));
        let mut severity = None;
        if let Some(i) = self.severity_keys.iter().find_map(|k| find(fields, k)) {
            severity = read_severity(value(&fields[i]));
            fields[i].used = severity.is_some();
        }
        let mut ids = [None, None];
        for (id, key, len) in [(0, &self.trace_id_key, 16), (1, &self.span_id_key, 8)] {
            if let Some(i) = find(fields, key) {
                ids[id] = id_bytes(value(&fields[i]), len);
                fields[i].used = ids[id].is_some();
            }
        }
        let mut resource: &[u8] = &[];
        if let Some(i) = find(fields, &self.resource_key) {
            if matches!(Reader::new(value(&fields[i])).read(), Ok(Value::Map(_))) {
                resource = value(&fields[i]);
                fields[i].used = true;
            }
        }
        if let Some(i) = body {
            fields[i].used = true;
        }
        let g = out.group(resource);
        let r = message(&mut g.records, field::LOG_RECORDS, |o| {
            fixed64_field(o, field::TIME, time);
            fixed64_field(o, field::OBSERVED_TIME, observed);
            if let Some((number, text)) = &severity {
                if *number != 0 {
                    varint_field(o, field::SEVERITY_NUMBER, *number as u64);
                }
                if !text.is_empty() {
                    bytes_field(o, field::SEVERITY_TEXT, text.as_bytes());
                }
            }
            let attributes = |o: &mut Vec<u8>, list_field: u32| {
                for f in fields.iter().filter(|f| !f.used) {
                    message(o, list_field, |o| {
                        key_value(o, f.key(map), &mut Reader::new(value(f)), 0)
                    })?;
                }
                Ok(())
            };
            match body {
                Some(i) => {
                    message(o, field::BODY, |o| {
                        any_value(o, &mut Reader::new(value(&fields[i])), 0)
                    })?;
                    attributes(o, field::ATTRIBUTES)?;
                }
                // the record is its own body
                None => message(o, field::BODY, |o| {
                    message(o, field::KVLIST, |o| attributes(o, field::VALUES))
                })?,
            }
            for (id, f) in ids.iter().zip([field::TRACE_ID, field::SPAN_ID]) {
                if let Some(id) = id {
                    bytes_field(o, f, id);
                }
            }
            Ok(())
        });
        // on an error `batch` takes the group back to where the batch began
        if r.is_ok() {
            out.records += 1;
        }
        r
    }

    /// The `Resource` of records whose resource map is `raw` (empty: none).
    fn resource(&self, raw: &[u8], out: &mut Vec<u8>) -> msgpack::Result<()> {
        let mut keys: Vec<Cow<'_, [u8]>> = Vec::new();
        if !raw.is_empty() {
            let mut r = Reader::new(raw);
            for _ in 0..r.read_map_len()? {
                let Some(k) = read_key(&mut r)? else {
                    continue;
                };
                message(out, field::RESOURCE_ATTRIBUTES, |o| {
                    key_value(o, &k, &mut r, 0)
                })?;
                keys.push(k);
            }
        }
        for (k, v) in &self.resource_attributes {
            if !keys.iter().any(|have| have.as_ref() == k.as_bytes()) {
                message(out, field::RESOURCE_ATTRIBUTES, |o| {
                    bytes_field(o, field::KEY, k.as_bytes());
                    message(o, field::VALUE, |o| {
                        bytes_field(o, field::STRING, v.as_bytes())
                    });
                });
            }
        }
        Ok(())
    }

    /// The encoded `ExportLogsServiceRequest` holding every record of `g`.
    pub fn request(&self, g: Grouped) -> Vec<u8> {
        let total: usize = g.groups.iter().map(|g| g.records.len() + 64).sum();
        let mut out = Vec::with_capacity(total + 256 * g.groups.len());
        let mut resource = Vec::new();
        for group in &g.groups {
            resource.clear();
            // read once already, as each record was mapped
            if self.resource(&group.resource, &mut resource).is_err() {
                resource.clear();
            }
            let scope_logs = bytes_field_len(field::SCOPE, self.scope.len()) + group.records.len();
            let resource_logs = bytes_field_len(field::RESOURCE, resource.len())
                + bytes_field_len(field::SCOPE_LOGS, scope_logs);
            // lengths known: the records are not moved again
            key(&mut out, field::RESOURCE_LOGS, LEN);
            varint(&mut out, resource_logs as u64);
            bytes_field(&mut out, field::RESOURCE, &resource);
            key(&mut out, field::SCOPE_LOGS, LEN);
            varint(&mut out, scope_logs as u64);
            bytes_field(&mut out, field::SCOPE, &self.scope);
            out.extend_from_slice(&group.records);
        }
        out
    }
}

impl Grouped {
    /// The group of records with resource `resource`, made if new.
    fn group(&mut self, resource: &[u8]) -> &mut Group {
        let i = match self.groups.get(self.last) {
            Some(g) if g.resource == resource => self.last,
            _ => match self.index.get(resource) {
                Some(&i) => i,
                None => {
                    self.groups.push(Group {
                        resource: resource.to_vec(),
                        records: Vec::new(),
                    });
                    self.index.insert(resource.to_vec(), self.groups.len() - 1);
                    self.groups.len() - 1
                }
            },
        };
        self.last = i;
        &mut self.groups[i]
    }
}

/// Reads the fields of the encoded map `map` into `out`.
fn read_fields(map: &[u8], out: &mut Vec<FieldAt>) -> msgpack::Result<()> {
    out.clear();
    let mut r = Reader::new(map);
    let n = r.read_map_len()?;
    for _ in 0..n {
        let key = match r.read()? {
            Value::Str(k) | Value::Bin(k) => {
                // a slice of `map`: where it starts in it
                let at = k.as_ptr() as usize - map.as_ptr() as usize;
                Key::At(at..at + k.len())
            }
            Value::Int(i) => Key::Text(i.to_string()),
            Value::UInt(u) => Key::Text(u.to_string()),
            Value::Bool(b) => Key::Text(b.to_string()),
            k => {
                skip_rest(&mut r, k)?;
                r.skip()?;
                continue;
            }
        };
        let start = r.pos();
        r.skip()?;
        out.push(FieldAt {
            key,
            value: start..r.pos(),
            used: false,
        });
    }
    Ok(())
}

/// Appends a `KeyValue`'s content: `key` and the value `r` reads next.
fn key_value(
    out: &mut Vec<u8>,
    key: &[u8],
    r: &mut Reader<'_>,
    depth: usize,
) -> msgpack::Result<()> {
    bytes_field(out, field::KEY, String::from_utf8_lossy(key).as_bytes());
    message(out, field::VALUE, |o| any_value(o, r, depth))
}

/// The next map key as text (a number or boolean written out); `None`,
/// with its value skipped, for a key no attribute can be named after (a
/// container, nil, a float).
fn read_key<'a>(r: &mut Reader<'a>) -> msgpack::Result<Option<Cow<'a, [u8]>>> {
    let k = r.read()?;
    Ok(Some(match k {
        Value::Str(s) | Value::Bin(s) => s.into(),
        Value::Int(i) => i.to_string().into_bytes().into(),
        Value::UInt(u) => u.to_string().into_bytes().into(),
        Value::Bool(b) => b.to_string().into_bytes().into(),
        _ => {
            skip_rest(r, k)?;
            r.skip()?;
            return Ok(None);
        }
    }))
}

/// Appends an `AnyValue`'s content for text: a string, or bytes when it
/// is not UTF-8.
fn text(out: &mut Vec<u8>, b: &[u8]) {
    let f = match std::str::from_utf8(b) {
        Ok(_) => field::STRING,
        Err(_) => field::BYTES,
    };
    bytes_field(out, f, b);
}

/// Appends an `AnyValue`'s content for the msgpack value `r` reads next.
fn any_value(out: &mut Vec<u8>, r: &mut Reader<'_>, depth: usize) -> msgpack::Result<()> {
    let start = r.pos();
    let v = r.read()?;
    match v {
        Value::Array(_) | Value::Map(_) if depth >= MAX_DEPTH => {
            skip_rest(r, v)?;
            bytes_field(out, field::BYTES, &r.buffer()[start..r.pos()]);
        }
        Value::Nil => {}
        Value::Bool(b) => varint_field(out, field::BOOL, u64::from(b)),
        Value::Int(i) => varint_field(out, field::INT, i as u64),
        Value::UInt(u) => match i64::try_from(u) {
            Ok(i) => varint_field(out, field::INT, i as u64),
            Err(_) => bytes_field(out, field::STRING, u.to_string().as_bytes()),
        },
        Value::Float(f) => fixed64_field(out, field::DOUBLE, f.to_bits()),
        // the f32's shortest digits, not those of its widened value
        Value::Float32(f) => fixed64_field(
            out,
            field::DOUBLE,
            f.to_string().parse().unwrap_or(f64::from(f)).to_bits(),
        ),
        Value::Str(s) => text(out, s),
        Value::Bin(b) | Value::Ext(_, b) => bytes_field(out, field::BYTES, b),
        Value::Array(n) => message(out, field::ARRAY, |o| {
            for _ in 0..n {
                message(o, field::VALUES, |o| any_value(o, r, depth + 1))?;
            }
            Ok(())
        })?,
        Value::Map(n) => message(out, field::KVLIST, |o| {
            for _ in 0..n {
                let Some(key) = read_key(r)? else {
                    continue;
                };
                message(o, field::VALUES, |o| key_value(o, &key, r, depth + 1))?;
            }
            Ok(())
        })?,
    }
    Ok(())
}

/// The severity number and text of a field's value; `None` if it is
/// neither a name nor a severity number (it then stays an attribute).
fn read_severity(raw: &[u8]) -> Option<(i32, Cow<'_, str>)> {
    match Reader::new(raw).read() {
        Ok(Value::Str(s)) => {
            let name = String::from_utf8_lossy(s);
            Some((severity_number(&name), name))
        }
        Ok(Value::Int(n)) if (1..=24).contains(&n) => Some((n as i32, "".into())),
        Ok(Value::UInt(n)) if (1..=24).contains(&n) => Some((n as i32, "".into())),
        _ => None,
    }
}

pub use crate::protocol::otlp::severity_number;

/// A trace or span id of `len` (at most 16) bytes: hex text, or the bytes
/// themselves.
fn id_bytes(raw: &[u8], len: usize) -> Option<IdBytes> {
    let mut id = IdBytes {
        bytes: [0; 16],
        len,
    };
    match Reader::new(raw).read().ok()? {
        Value::Str(s) if s.len() == 2 * len => {
            for (b, pair) in id.bytes.iter_mut().zip(s.chunks(2)) {
                let digit = |c: u8| (c as char).to_digit(16);
                *b = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
            }
        }
        Value::Bin(b) if b.len() == len => id.bytes[..len].copy_from_slice(b),
        _ => return None,
    }
    Some(id)
}

/// A trace id (16 bytes) or a span id (8).
struct IdBytes {
    bytes: [u8; 16],
    len: usize,
}

impl std::ops::Deref for IdBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}
