//! Records → OpenTelemetry log records, grouped by resource, as one
//! `ExportLogsServiceRequest` (the types are `opentelemetry-proto`'s,
//! encoded by `prost`).
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

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::config::OtlpSettings;
use crate::event::{skip_rest, Batch, EventTime, RecordRef};
use crate::protocol::msgpack::{self, Reader, Value};

/// Nesting kept as key/value lists and arrays; a value nested deeper is
/// sent as the bytes of its msgpack encoding (records are read without
/// recursion limits of their own here).
const MAX_DEPTH: usize = 32;

/// The scope every record is sent under.
pub const SCOPE_NAME: &str = "logferry";

/// Maps records to log records.
pub struct LogEncoder {
    body_keys: Vec<Vec<u8>>,
    severity_keys: Vec<Vec<u8>>,
    trace_id_key: Vec<u8>,
    span_id_key: Vec<u8>,
    resource_key: Vec<u8>,
    /// `resource_attributes`.
    resource_attributes: Vec<KeyValue>,
}

/// The log records of one request so far, by resource.
#[derive(Default)]
pub struct Grouped {
    /// The resource's bytes in the records (empty: none), and its records.
    groups: Vec<(Vec<u8>, Vec<LogRecord>)>,
    /// Where each resource's group is in `groups`.
    index: HashMap<Vec<u8>, usize>,
    /// Records so far.
    pub records: usize,
}

/// One record mapped, with the bytes of its resource map (if any).
type Mapped<'a> = (Option<&'a [u8]>, LogRecord);

impl LogEncoder {
    pub fn new(c: &OtlpSettings) -> LogEncoder {
        let bytes = |s: &String| s.as_bytes().to_vec();
        LogEncoder {
            body_keys: c.body_keys.iter().map(bytes).collect(),
            severity_keys: c.severity_keys.iter().map(bytes).collect(),
            trace_id_key: bytes(&c.trace_id_key),
            span_id_key: bytes(&c.span_id_key),
            resource_key: bytes(&c.resource_key),
            resource_attributes: c
                .resource_attributes
                .iter()
                .map(|(k, v)| key_value(k.clone(), Some(Any::StringValue(v.clone()))))
                .collect(),
        }
    }

    /// Adds every record of `batch` to `out`; nothing of it if one cannot
    /// be read.
    pub fn batch(&self, batch: &Batch, observed: u64, out: &mut Grouped) -> msgpack::Result<()> {
        let mut mapped: Vec<(Option<Vec<u8>>, LogRecord)> = Vec::with_capacity(batch.count);
        let mut failed = None;
        batch.for_each_record(|time, rec| {
            if failed.is_some() {
                return;
            }
            match self.record(time, rec, observed) {
                Ok((resource, record)) => mapped.push((resource.map(<[u8]>::to_vec), record)),
                Err(e) => failed = Some(e),
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        for (resource, record) in mapped {
            out.push(resource.unwrap_or_default(), record);
        }
        Ok(())
    }

    /// One record as a log record.
    pub fn record<'a>(
        &self,
        time: EventTime,
        rec: RecordRef<'a>,
        observed: u64,
    ) -> msgpack::Result<Mapped<'a>> {
        let mut out = LogRecord {
            time_unix_nano: u64::from(time.secs) * 1_000_000_000 + u64::from(time.nanos),
            observed_time_unix_nano: observed,
            ..LogRecord::default()
        };
        let map = match rec {
            RecordRef::Line(l) => {
                out.body = Some(AnyValue {
                    value: Some(text(l)),
                });
                return Ok((None, out));
            }
            RecordRef::Map(m) => m,
        };
        let fields = fields(map)?;
        let find = |key: &[u8]| fields.iter().position(|(k, _)| k.as_ref() == key);
        let mut used = vec![false; fields.len()];
        let body = self.body_keys.iter().find_map(|k| find(k));
        if let Some(i) = body {
            used[i] = true;
            out.body = Some(any_value(fields[i].1)?);
        }
        if let Some(i) = self.severity_keys.iter().find_map(|k| find(k)) {
            used[i] = severity(fields[i].1, &mut out);
        }
        if let Some(i) = find(&self.trace_id_key) {
            if let Some(id) = id_bytes(fields[i].1, 16) {
                out.trace_id = id;
                used[i] = true;
            }
        }
        if let Some(i) = find(&self.span_id_key) {
            if let Some(id) = id_bytes(fields[i].1, 8) {
                out.span_id = id;
                used[i] = true;
            }
        }
        let mut resource = None;
        if let Some(i) = find(&self.resource_key) {
            if matches!(Reader::new(fields[i].1).read(), Ok(Value::Map(_))) {
                resource = Some(fields[i].1);
                used[i] = true;
            }
        }
        let mut rest = Vec::with_capacity(fields.len());
        for ((k, raw), used) in fields.iter().zip(used) {
            if !used {
                rest.push(key_value(
                    String::from_utf8_lossy(k).into_owned(),
                    any_value(raw)?.value,
                ));
            }
        }
        if body.is_some() {
            out.attributes = rest;
        } else {
            out.body = Some(AnyValue {
                value: Some(Any::KvlistValue(KeyValueList { values: rest })),
            });
        }
        Ok((resource, out))
    }

    /// The resource of records whose resource map is `raw` (empty: none).
    fn resource(&self, raw: &[u8]) -> msgpack::Result<Resource> {
        let mut attributes = Vec::new();
        if !raw.is_empty() {
            for (k, v) in fields(raw)? {
                attributes.push(key_value(
                    String::from_utf8_lossy(&k).into_owned(),
                    any_value(v)?.value,
                ));
            }
        }
        for kv in &self.resource_attributes {
            if !attributes.iter().any(|a| a.key == kv.key) {
                attributes.push(kv.clone());
            }
        }
        Ok(Resource {
            attributes,
            ..Resource::default()
        })
    }

    /// The request holding every record of `g`.
    pub fn request(&self, g: Grouped) -> ExportLogsServiceRequest {
        let scope = InstrumentationScope {
            name: SCOPE_NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..InstrumentationScope::default()
        };
        let resource_logs = g
            .groups
            .into_iter()
            .map(|(raw, log_records)| ResourceLogs {
                // read once already, as each record was mapped
                resource: Some(self.resource(&raw).unwrap_or_default()),
                scope_logs: vec![ScopeLogs {
                    scope: Some(scope.clone()),
                    log_records,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            })
            .collect();
        ExportLogsServiceRequest { resource_logs }
    }
}

impl Grouped {
    fn push(&mut self, resource: Vec<u8>, record: LogRecord) {
        self.records += 1;
        let i = match self.index.get(&resource) {
            Some(&i) => i,
            None => {
                self.groups.push((resource.clone(), Vec::new()));
                self.index.insert(resource, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        self.groups[i].1.push(record);
    }
}

fn key_value(key: String, value: Option<Any>) -> KeyValue {
    KeyValue {
        key,
        value: Some(AnyValue { value }),
    }
}

/// A field of a map: its key and the bytes of its value.
type Field<'a> = (Cow<'a, [u8]>, &'a [u8]);

/// The fields of an encoded map.
fn fields(map: &[u8]) -> msgpack::Result<Vec<Field<'_>>> {
    let mut r = Reader::new(map);
    let n = r.read_map_len()?;
    let mut out = Vec::with_capacity(n.min(map.len()));
    for _ in 0..n {
        let Some(key) = read_key(&mut r)? else {
            continue;
        };
        let start = r.pos();
        r.skip()?;
        out.push((key, &map[start..r.pos()]));
    }
    Ok(out)
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

/// Text as a string value, or bytes when it is not UTF-8.
fn text(b: &[u8]) -> Any {
    match std::str::from_utf8(b) {
        Ok(s) => Any::StringValue(s.to_string()),
        Err(_) => Any::BytesValue(b.to_vec()),
    }
}

/// An encoded msgpack value as an OTLP value.
pub fn any_value(raw: &[u8]) -> msgpack::Result<AnyValue> {
    value(&mut Reader::new(raw), 0)
}

fn value(r: &mut Reader<'_>, depth: usize) -> msgpack::Result<AnyValue> {
    let start = r.pos();
    let v = r.read()?;
    if matches!(v, Value::Array(_) | Value::Map(_)) && depth >= MAX_DEPTH {
        skip_rest(r, v)?;
        let raw = &r.buffer()[start..r.pos()];
        return Ok(AnyValue {
            value: Some(Any::BytesValue(raw.to_vec())),
        });
    }
    // a hostile length costs no allocation beyond the bytes there are
    let room = |n: usize| n.min(r.buffer().len() - r.pos());
    let value = match v {
        Value::Nil => None,
        Value::Bool(b) => Some(Any::BoolValue(b)),
        Value::Int(i) => Some(Any::IntValue(i)),
        Value::UInt(u) => Some(match i64::try_from(u) {
            Ok(i) => Any::IntValue(i),
            Err(_) => Any::StringValue(u.to_string()),
        }),
        Value::Float(f) => Some(Any::DoubleValue(f)),
        // the f32's shortest digits, not those of its widened value
        Value::Float32(f) => Some(Any::DoubleValue(
            f.to_string().parse().unwrap_or(f64::from(f)),
        )),
        Value::Str(s) => Some(text(s)),
        Value::Bin(b) | Value::Ext(_, b) => Some(Any::BytesValue(b.to_vec())),
        Value::Array(n) => {
            let mut values = Vec::with_capacity(room(n));
            for _ in 0..n {
                values.push(value(r, depth + 1)?);
            }
            Some(Any::ArrayValue(ArrayValue { values }))
        }
        Value::Map(n) => {
            let mut values = Vec::with_capacity(room(n));
            for _ in 0..n {
                let Some(key) = read_key(r)? else {
                    continue;
                };
                let key = String::from_utf8_lossy(&key).into_owned();
                values.push(key_value(key, value(r, depth + 1)?.value));
            }
            Some(Any::KvlistValue(KeyValueList { values }))
        }
    };
    Ok(AnyValue { value })
}

/// Sets the severity from a field's value; false if it is neither a name
/// nor a severity number (it then stays an attribute).
fn severity(raw: &[u8], out: &mut LogRecord) -> bool {
    match Reader::new(raw).read() {
        Ok(Value::Str(s)) => {
            let name = String::from_utf8_lossy(s).into_owned();
            out.severity_number = severity_number(&name);
            out.severity_text = name;
            true
        }
        Ok(Value::Int(n)) if (1..=24).contains(&n) => {
            out.severity_number = n as i32;
            true
        }
        Ok(Value::UInt(n)) if (1..=24).contains(&n) => {
            out.severity_number = n as i32;
            true
        }
        _ => false,
    }
}

pub use crate::protocol::otlp::severity_number;

/// A trace or span id of `len` bytes: hex text, or the bytes themselves.
fn id_bytes(raw: &[u8], len: usize) -> Option<Vec<u8>> {
    match Reader::new(raw).read().ok()? {
        Value::Str(s) if s.len() == 2 * len => s
            .chunks(2)
            .map(|pair| {
                // from_str_radix alone would take a sign ("+f")
                let hex = std::str::from_utf8(pair).ok()?;
                pair.iter()
                    .all(u8::is_ascii_hexdigit)
                    .then(|| u8::from_str_radix(hex, 16).ok())?
            })
            .collect(),
        Value::Bin(b) if b.len() == len => Some(b.to_vec()),
        _ => None,
    }
}
