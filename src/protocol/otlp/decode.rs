//! An OTLP `ExportLogsServiceRequest` (protobuf or JSON) to records: the
//! inverse of the `otlp` sink's mapping (`sinks::otlp::encode`), so a
//! record the sink exports comes back the same.
//!
//! Each `LogRecord` becomes one forward entry `[time, map]`:
//! - the body is `message` (a string stays a string, other values keep
//!   their types); a key/value-list body of a record without attributes is
//!   the record itself: its entries are the fields (the sink sends a
//!   record with none of its `body_keys` that way);
//! - each attribute is a field;
//! - `severity` is `severity_text`; `severity_number` is written too when
//!   it is not the number the text names (`severity_number("WARN")` is
//!   13); without a text, `severity` is the number;
//! - `trace_id` and `span_id` as lowercase hex, when set;
//! - `event_name`, when set;
//! - `resource`: the resource's attributes as a map (the sink's default
//!   `resource_key`), `scope`: the scope's `name`, `version` and
//!   `attributes`, when there are any;
//! - the time is `time_unix_nano`, else `observed_time_unix_nano`, else
//!   now.
//!
//! A key already written is not written again (the first wins): a map
//! has each key once. Records go in one batch per tag; the tag is rendered
//! from each `ResourceLogs`' resource.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;

use super::tag::TagTemplate;
use crate::event::{EventTime, Records, Tag};
use crate::protocol::msgpack::write;

/// The records of one tag.
#[derive(Debug)]
pub struct Tagged {
    pub tag: Tag,
    pub records: Records,
    pub count: usize,
}

/// Every record of a request, by tag, in the order their tags first came.
pub fn records(req: &ExportLogsServiceRequest, tag: &TagTemplate, now: EventTime) -> Vec<Tagged> {
    let mut out: Vec<(Tag, Vec<u8>, usize)> = Vec::new();
    // one record's fields at a time, the allocations kept from one to the next
    let mut fields = Fields {
        keys: Vec::new(),
        body: Vec::new(),
    };
    for rl in &req.resource_logs {
        let resource: &[KeyValue] = rl
            .resource
            .as_ref()
            .map_or(&[], |r| r.attributes.as_slice());
        let tag = tag.render(resource);
        let i = match out.iter().position(|(t, _, _)| *t == tag) {
            Some(i) => i,
            None => {
                out.push((tag, Vec::new(), 0));
                out.len() - 1
            }
        };
        let (_, buf, count) = &mut out[i];
        // what every record of the resource (and of a scope) repeats is
        // encoded once
        let resource = (!resource.is_empty()).then(|| {
            let mut m = Vec::new();
            kv_map(resource, &mut m);
            m
        });
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref().and_then(scope_map);
            let shared = Shared {
                resource: resource.as_deref(),
                scope: scope.as_deref(),
            };
            for record in &sl.log_records {
                entry(record, &shared, now, &mut fields, buf);
                *count += 1;
            }
        }
    }
    out.into_iter()
        .filter(|(_, _, count)| *count > 0)
        .map(|(tag, buf, count)| Tagged {
            tag,
            records: Records::Entries(buf.into()),
            count,
        })
        .collect()
}

/// The keys of the map being written, to write each once.
struct Fields<'a> {
    keys: Vec<&'a str>,
    /// The map's entries, written after its length is known.
    body: Vec<u8>,
}

impl<'a> Fields<'a> {
    /// Starts an entry for `key`: false (write nothing) if it is there.
    fn key(&mut self, key: &'a str) -> bool {
        // attributes are few: a scan is cheaper than hashing
        if self.keys.contains(&key) {
            return false;
        }
        self.keys.push(key);
        write::str(&mut self.body, key.as_bytes());
        true
    }

    fn value(&mut self, key: &'a str, v: &AnyValue) {
        if self.key(key) {
            any(v.value.as_ref(), &mut self.body);
        }
    }

    fn str(&mut self, key: &'a str, s: &str) {
        if self.key(key) {
            write::str(&mut self.body, s.as_bytes());
        }
    }

    fn int(&mut self, key: &'a str, i: i64) {
        if self.key(key) {
            int(i, &mut self.body);
        }
    }

    /// `value`, already encoded.
    fn encoded(&mut self, key: &'a str, value: &[u8]) {
        if self.key(key) {
            self.body.extend_from_slice(value);
        }
    }
}

/// The encoded maps every record of a scope repeats.
struct Shared<'s> {
    /// The resource's attributes.
    resource: Option<&'s [u8]>,
    /// The scope's name, version and attributes.
    scope: Option<&'s [u8]>,
}

/// The `scope` map, if the scope has a name or attributes.
fn scope_map(s: &InstrumentationScope) -> Option<Vec<u8>> {
    if s.name.is_empty() && s.attributes.is_empty() {
        return None;
    }
    let mut m = Vec::new();
    let n = 1 + usize::from(!s.version.is_empty()) + usize::from(!s.attributes.is_empty());
    write::map_len(&mut m, n);
    write::str(&mut m, b"name");
    write::str(&mut m, s.name.as_bytes());
    if !s.version.is_empty() {
        write::str(&mut m, b"version");
        write::str(&mut m, s.version.as_bytes());
    }
    if !s.attributes.is_empty() {
        write::str(&mut m, b"attributes");
        kv_map(&s.attributes, &mut m);
    }
    Some(m)
}

/// One log record as a forward entry.
fn entry<'a>(
    r: &'a LogRecord,
    shared: &Shared<'_>,
    now: EventTime,
    f: &mut Fields<'a>,
    out: &mut Vec<u8>,
) {
    f.keys.clear();
    f.body.clear();
    match r.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(Any::KvlistValue(list)) if r.attributes.is_empty() => {
            for kv in &list.values {
                field(f, kv);
            }
        }
        Some(_) => f.value("message", r.body.as_ref().expect("matched above")),
        None => {}
    }
    for kv in &r.attributes {
        field(f, kv);
    }
    let text = r.severity_text.as_str();
    if !text.is_empty() {
        f.str("severity", text);
        if r.severity_number != crate::protocol::otlp::severity_number(text) {
            f.int("severity_number", i64::from(r.severity_number));
        }
    } else if r.severity_number != 0 {
        f.int("severity", i64::from(r.severity_number));
    }
    if !r.trace_id.is_empty() {
        f.str("trace_id", &hex(&r.trace_id));
    }
    if !r.span_id.is_empty() {
        f.str("span_id", &hex(&r.span_id));
    }
    if !r.event_name.is_empty() {
        f.str("event_name", &r.event_name);
    }
    if let Some(resource) = shared.resource {
        f.encoded("resource", resource);
    }
    if let Some(scope) = shared.scope {
        f.encoded("scope", scope);
    }
    let time = time_of(r.time_unix_nano)
        .or_else(|| time_of(r.observed_time_unix_nano))
        .unwrap_or(now);
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
}

fn field<'a>(f: &mut Fields<'a>, kv: &'a KeyValue) {
    match &kv.value {
        Some(v) => f.value(&kv.key, v),
        None => {
            if f.key(&kv.key) {
                f.body.push(0xc0);
            }
        }
    }
}

/// Nanoseconds since the epoch as an event time; `None` for 0 (unset) and
/// for times past what an event time holds (2106).
fn time_of(nanos: u64) -> Option<EventTime> {
    if nanos == 0 {
        return None;
    }
    let secs = u32::try_from(nanos / 1_000_000_000).ok()?;
    Some(EventTime::new(secs, (nanos % 1_000_000_000) as u32))
}

/// A key/value list as a msgpack map (a repeated key: the first wins).
fn kv_map(kvs: &[KeyValue], out: &mut Vec<u8>) {
    let mut f = Fields {
        keys: Vec::with_capacity(kvs.len()),
        body: Vec::new(),
    };
    for kv in kvs {
        field(&mut f, kv);
    }
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
}

/// An OTLP value as msgpack. Nesting is bounded by the decoders (prost's
/// recursion limit, the JSON depth check), so the recursion is too.
fn any(v: Option<&Any>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0xc0),
        Some(Any::StringValue(s)) => write::str(out, s.as_bytes()),
        Some(Any::BoolValue(b)) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Some(Any::IntValue(i)) => int(*i, out),
        Some(Any::DoubleValue(d)) => {
            out.push(0xcb);
            out.extend_from_slice(&d.to_be_bytes());
        }
        Some(Any::BytesValue(b)) => {
            write::bin_header(out, b.len());
            out.extend_from_slice(b);
        }
        Some(Any::ArrayValue(a)) => {
            write::array_len(out, a.values.len());
            for v in &a.values {
                any(v.value.as_ref(), out);
            }
        }
        Some(Any::KvlistValue(l)) => kv_map(&l.values, out),
    }
}

fn int(i: i64, out: &mut Vec<u8>) {
    if i >= 0 {
        write::uint(out, i as u64);
    } else if i >= -32 {
        out.push(i as i8 as u8);
    } else {
        out.push(0xd3);
        out.extend_from_slice(&i.to_be_bytes());
    }
}

/// Lowercase hex, as the `otlp` sink reads ids and OTLP/JSON writes them.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}
